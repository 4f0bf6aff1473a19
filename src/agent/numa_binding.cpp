// --numa-binding's CPU choice (see numa_binding.hpp): torch/numa/binding.py's four modes.
#include "numa_binding.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <utility>

#include "tzrun/base/strings.hpp"

namespace tzrun::agent {
namespace {

constexpr int kMaxCpu = 1 << 16;  // far above Linux's NR_CPUS (8192): a corrupt list, not a CPU

std::optional<int> ParseIndex(std::string_view text) {
  const std::string s = base::Strip(text);
  int v = 0;
  const auto* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end || v < 0) return std::nullopt;
  return v;
}

CpuSet Intersect(const CpuSet& a, const CpuSet& b) {
  CpuSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

std::string Shown(const CpuSet& cpus) {
  return cpus.empty() ? "none" : CpuListText(cpus);
}

// The NUMA node of CUDA device `gpu` (torch's _get_numa_node_index_for_gpu_index).
int GpuNode(const NumaTopology& t, int gpu) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= t.gpu_node.size()) {
    throw NumaError("there is no CUDA device " + std::to_string(gpu) + " (" +
                    std::to_string(t.gpu_node.size()) + " visible)");
  }
  const auto& node = t.gpu_node[static_cast<std::size_t>(gpu)];
  if (!node) {
    throw NumaError("the NUMA node of CUDA device " + std::to_string(gpu) +
                    " is unknown (its PCI device has no readable numa_node file)");
  }
  return *node;
}

// torch's _get_allowed_logical_cpu_indices_for_numa_node.
CpuSet AllowedCpusOfNode(const NumaTopology& t, int node) {
  const auto it = t.node_cpus.find(node);
  if (it == t.node_cpus.end()) {
    throw NumaError("the CPUs of NUMA node " + std::to_string(node) +
                    " are unknown (no readable node" + std::to_string(node) + "/cpulist)");
  }
  return Intersect(it->second, t.allowed);
}

// torch's _get_socket_index_for_numa_node: the package of the node's lowest allowed CPU.
int SocketOfNode(const NumaTopology& t, int node) {
  const CpuSet cpus = AllowedCpusOfNode(t, node);
  if (cpus.empty()) {
    throw NumaError("NUMA node " + std::to_string(node) +
                    " has no CPU this process may use (its CPUs: " + Shown(t.node_cpus.at(node)) +
                    "; allowed: " + Shown(t.allowed) + "), so its socket is unknown");
  }
  const int cpu = *cpus.begin();
  const auto it = t.cpu_package.find(cpu);
  if (it == t.cpu_package.end()) {
    throw NumaError("the socket of CPU " + std::to_string(cpu) +
                    " is unknown (no readable topology/physical_package_id)");
  }
  return it->second;
}

// The CUDA indices of the GPUs on `node`, ascending (torch's _get_gpu_indices_for_numa_node).
std::vector<int> GpusOfNode(const NumaTopology& t, int node) {
  std::vector<int> gpus;
  for (int g = 0; static_cast<std::size_t>(g) < t.gpu_node.size(); ++g) {
    if (GpuNode(t, g) == node) gpus.push_back(g);
  }
  return gpus;
}

// `cpus` grouped by the lowest CPU of their set in `sets` (torch's _group_by with a min key).
std::map<int, CpuSet> GroupByLowest(const CpuSet& cpus, const std::map<int, CpuSet>& sets,
                                    const std::string& what) {
  std::map<int, CpuSet> groups;
  for (const int cpu : cpus) {
    const auto it = sets.find(cpu);
    if (it == sets.end() || it->second.empty()) {
      throw NumaError("the " + what + " of CPU " + std::to_string(cpu) + " is unknown");
    }
    groups[*it->second.begin()].insert(cpu);
  }
  return groups;
}

CpuSet SocketCpus(const NumaTopology& t, int node) {
  const int socket = SocketOfNode(t, node);
  if (!t.possible_nodes) {
    throw NumaError("the NUMA nodes of this machine are unknown (no readable node/possible)");
  }
  CpuSet out;
  for (const int n : *t.possible_nodes) {
    if (SocketOfNode(t, n) != socket) continue;
    const CpuSet cpus = AllowedCpusOfNode(t, n);
    out.insert(cpus.begin(), cpus.end());
  }
  return out;
}

CpuSet ExclusiveCpus(const NumaTopology& t, int gpu, int node) {
  const auto gpus = GpusOfNode(t, node);
  const auto rel =
      static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), gpu) - gpus.begin());
  const auto cores =
      GroupByLowest(AllowedCpusOfNode(t, node), t.cpu_core, "physical core (thread_siblings_list)");
  const std::size_t per_gpu = cores.size() / gpus.size();
  const std::size_t extra = cores.size() % gpus.size();
  if (per_gpu < 1) {
    throw NumaError("NUMA node " + std::to_string(node) + " has " + std::to_string(cores.size()) +
                    " physical core(s) this process may use for its " +
                    std::to_string(gpus.size()) + " GPUs; exclusive needs one core per GPU");
  }
  const std::size_t start = rel * per_gpu + std::min(rel, extra);
  const std::size_t end = start + per_gpu + (rel < extra ? 1 : 0);
  CpuSet out;
  std::size_t k = 0;
  for (const auto& [core, cpus] : cores) {
    if (k >= start && k < end) out.insert(cpus.begin(), cpus.end());
    ++k;
  }
  return out;
}

CpuSet CoreComplexCpus(const NumaTopology& t, int gpu, int node) {
  const auto gpus = GpusOfNode(t, node);
  const auto rel =
      static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), gpu) - gpus.begin());
  const auto by_cache = GroupByLowest(AllowedCpusOfNode(t, node), t.cpu_top_cache,
                                      "highest-level cache (cache/index*/shared_cpu_list)");
  if (by_cache.empty()) {
    throw NumaError("NUMA node " + std::to_string(node) + " has no CPU this process may use");
  }
  std::vector<std::pair<int, CpuSet>> groups(by_cache.begin(), by_cache.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second.size() != b.second.size() ? a.second.size() > b.second.size()
                                              : a.first < b.first;
  });
  return groups[rel % groups.size()].second;
}

}  // namespace

std::optional<NumaMode> ParseNumaMode(std::string_view text) {
  if (text == "node") return NumaMode::kNode;
  if (text == "socket") return NumaMode::kSocket;
  if (text == "exclusive") return NumaMode::kExclusive;
  if (text == "core-complex") return NumaMode::kCoreComplex;
  return std::nullopt;
}

std::string NumaModeName(NumaMode mode) {
  switch (mode) {
    case NumaMode::kNode:
      return "node";
    case NumaMode::kSocket:
      return "socket";
    case NumaMode::kExclusive:
      return "exclusive";
    case NumaMode::kCoreComplex:
      return "core-complex";
  }
  return "?";
}

std::optional<CpuSet> ParseCpuList(std::string_view text) {
  CpuSet out;
  for (const auto& item : base::Split(text, ',')) {
    const std::string s = base::Strip(item);
    if (s.empty()) continue;
    const auto dash = s.find('-');
    if (dash == std::string::npos) {
      const auto v = ParseIndex(s);
      if (!v || *v > kMaxCpu) return std::nullopt;
      out.insert(*v);
      continue;
    }
    const auto lo = ParseIndex(std::string_view(s).substr(0, dash));
    const auto hi = ParseIndex(std::string_view(s).substr(dash + 1));
    if (!lo || !hi || *hi > kMaxCpu) return std::nullopt;
    for (int c = *lo; c <= *hi; ++c) out.insert(c);
  }
  return out;
}

std::string CpuListText(const CpuSet& cpus) {
  std::vector<std::string> parts;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int lo = *it;
    int hi = lo;
    for (++it; it != cpus.end() && *it == hi + 1; ++it) hi = *it;
    parts.push_back(lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi));
  }
  return base::Join(parts, ",");
}

CpuSet CpusForGpu(NumaMode mode, int gpu_index, const NumaTopology& topology) {
  const int node = GpuNode(topology, gpu_index);
  CpuSet cpus;
  switch (mode) {
    case NumaMode::kNode:
      cpus = AllowedCpusOfNode(topology, node);
      break;
    case NumaMode::kSocket:
      cpus = SocketCpus(topology, node);
      break;
    case NumaMode::kExclusive:
      cpus = ExclusiveCpus(topology, gpu_index, node);
      break;
    case NumaMode::kCoreComplex:
      cpus = CoreComplexCpus(topology, gpu_index, node);
      break;
  }
  if (cpus.empty()) {
    const auto it = topology.node_cpus.find(node);
    throw NumaError("no CPU to bind to: NUMA node " + std::to_string(node) + " of CUDA device " +
                    std::to_string(gpu_index) + " has CPUs " +
                    Shown(it == topology.node_cpus.end() ? CpuSet{} : it->second) +
                    ", this process may use " + Shown(topology.allowed));
  }
  return cpus;
}

}  // namespace tzrun::agent
