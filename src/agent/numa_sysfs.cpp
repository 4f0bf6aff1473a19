// --numa-binding's sysfs reads and the per-rank plan (see numa_sysfs.hpp).
#include "numa_sysfs.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "agent_error.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

namespace fs = std::filesystem;

constexpr int kNvidiaVendor = 0x10de;

std::optional<std::string> ReadText(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

// A decimal ("-1", "3") or 0x-prefixed hex ("0x030200") integer file.
std::optional<long long> ReadNumber(const fs::path& path) {
  const auto text = ReadText(path);
  if (!text) return std::nullopt;
  std::string s = base::Strip(*text);
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s = s.substr(2);
    base = 16;
  }
  long long v = 0;
  const auto* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v, base);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<CpuSet> ReadCpuList(const fs::path& path) {
  const auto text = ReadText(path);
  if (!text) return std::nullopt;
  return ParseCpuList(*text);
}

bool IsNvidiaGpu(const fs::path& dev) {
  const auto vendor = ReadNumber(dev / "vendor");
  const auto cls = ReadNumber(dev / "class");
  if (!vendor || *vendor != kNvidiaVendor || !cls) return false;
  const long long base_sub = *cls >> 8;  // class and subclass; the low byte is the interface
  if (base_sub != 0x0300 && base_sub != 0x0302) return false;
  std::error_code ec;
  const auto driver = fs::read_symlink(dev / "driver", ec);  // CUDA sees what nvidia.ko drives
  return !ec && driver.filename() == "nvidia";
}

// The shared_cpu_list of the highest-level Data or Unified cache under cpu<N>/cache (torch's
// _get_logical_cpus_sharing_same_max_level_cache_as: the first index of that level wins).
CpuSet TopCache(const fs::path& cache_dir) {
  std::map<int, fs::path> indices;  // index<k> in numeric order
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("index") || name.size() == 5) continue;
    const std::string digits = name.substr(5);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        digits.size() > 6) {
      continue;
    }
    indices[std::stoi(digits)] = e.path();
  }
  long long top = -1;
  CpuSet shared;
  for (const auto& [k, dir] : indices) {
    const auto type = ReadText(dir / "type");
    const std::string t = type ? base::Strip(*type) : "";
    const auto level = ReadNumber(dir / "level");
    if ((t != "Unified" && t != "Data") || !level || *level <= top) continue;
    top = *level;
    shared = ReadCpuList(dir / "shared_cpu_list").value_or(CpuSet{});
  }
  return shared;
}

std::string GpuList(const std::vector<PciGpu>& gpus) {
  std::vector<std::string> parts;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    parts.push_back(std::to_string(k) + "=" + gpus[k].address);
  }
  return parts.empty() ? "none" : base::Join(parts, ", ");
}

std::optional<std::string> EnvValue(const std::map<std::string, std::string>& env,
                                    const char* key) {
  const auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<PciGpu> ReadPciGpus(const std::string& sysfs_root) {
  std::vector<PciGpu> gpus;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(sysfs_root) / "bus/pci/devices", ec)) {
    if (!IsNvidiaGpu(e.path())) continue;
    PciGpu g;
    g.address = e.path().filename().string();
    g.device_id = base::Lower(base::Strip(ReadText(e.path() / "device").value_or("")));
    if (const auto n = ReadNumber(e.path() / "numa_node")) g.numa_node = static_cast<int>(*n);
    gpus.push_back(std::move(g));
  }
  return SortByBusId(std::move(gpus));
}

NumaTopology ReadNumaTopology(const std::string& sysfs_root,
                              const std::vector<PciGpu>& cuda_devices, CpuSet allowed) {
  const fs::path node_dir = fs::path(sysfs_root) / "devices/system/node";
  const fs::path cpu_dir = fs::path(sysfs_root) / "devices/system/cpu";
  NumaTopology t;
  t.possible_nodes = ReadCpuList(node_dir / "possible");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(node_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("node") || name.size() == 4 || name.size() > 10) continue;
    const std::string digits = name.substr(4);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    if (auto cpus = ReadCpuList(e.path() / "cpulist")) t.node_cpus[std::stoi(digits)] = *cpus;
  }
  for (const int cpu : allowed) {
    const fs::path dir = cpu_dir / ("cpu" + std::to_string(cpu));
    if (const auto p = ReadNumber(dir / "topology/physical_package_id")) {
      t.cpu_package[cpu] = static_cast<int>(*p);
    }
    if (auto s = ReadCpuList(dir / "topology/thread_siblings_list")) t.cpu_core[cpu] = *s;
    t.cpu_top_cache[cpu] = TopCache(dir / "cache");
  }
  for (const auto& g : cuda_devices) {
    t.gpu_node.push_back(g.numa_node ? std::optional<int>(std::max(*g.numa_node, 0))
                                     : std::nullopt);
  }
  t.allowed = std::move(allowed);
  return t;
}

CpuSet ThisThreadCpus() {
  for (int n = 1024; n <= (1 << 20); n *= 4) {
    const std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(n),
                                                               [](cpu_set_t* s) { CPU_FREE(s); });
    const std::size_t size = CPU_ALLOC_SIZE(n);
    if (::sched_getaffinity(0, size, set.get()) != 0) {
      const int err = errno;
      if (err == EINVAL) continue;  // more CPUs than the mask holds
      throw AgentError(
          "--numa-binding: cannot read this process's CPU affinity "
          "(sched_getaffinity: " +
              base::ErrnoText(err) + "); drop --numa-binding",
          exit_code::kUsage);
    }
    CpuSet out;
    for (int c = 0; c < n; ++c) {
      if (CPU_ISSET_S(c, size, set.get())) out.insert(c);
    }
    return out;
  }
  throw AgentError("--numa-binding: this machine has more than 2^20 CPUs; drop --numa-binding",
                   exit_code::kUsage);
}

namespace {

constexpr const char* kBindsNearDevice =
    "torchrun binds local rank N to the CPUs near CUDA device N";

// The CUDA devices local ranks 0.. bind to, in CUDA order. A machine without any NVIDIA GPU is
// named as such before CUDA_VISIBLE_DEVICES is looked at, since no value of it could help.
std::vector<PciGpu> BindableDevices(const std::string& flag, const std::string& root,
                                    const std::map<std::string, std::string>& env) {
  const auto pci = ReadPciGpus(root);
  if (pci.empty()) {
    throw AgentError(
        flag + ": local rank 0 has no GPU to bind to: this machine has no NVIDIA GPU " +
            "(none is bound to the nvidia driver under " + root + "/bus/pci/devices), and " +
            kBindsNearDevice + "; drop --numa-binding on a machine without GPUs",
        exit_code::kUsage);
  }
  try {
    return CudaDevices(pci, EnvValue(env, "CUDA_VISIBLE_DEVICES"),
                       EnvValue(env, "CUDA_DEVICE_ORDER"));
  } catch (const NumaError& e) {
    throw AgentError(flag + ": " + e.what(), exit_code::kUsage);
  }
}

// Refuses when fewer CUDA devices are visible than local ranks (none: CUDA_VISIBLE_DEVICES hides
// every GPU).
void CheckEnoughDevices(const std::string& flag, const std::string& root,
                        const std::map<std::string, std::string>& env,
                        const std::vector<PciGpu>& cuda, int nproc) {
  const auto visible = EnvValue(env, "CUDA_VISIBLE_DEVICES");
  const std::string where = "bound to the nvidia driver under " + root + "/bus/pci/devices" +
                            (visible ? ", CUDA_VISIBLE_DEVICES=" + *visible : std::string());
  if (cuda.empty()) {
    throw AgentError(flag + ": local rank 0 has no GPU to bind to: no NVIDIA GPU is visible (" +
                         where + "), and " + kBindsNearDevice +
                         "; list GPU indices in CUDA_VISIBLE_DEVICES or drop --numa-binding",
                     exit_code::kUsage);
  }
  if (static_cast<int>(cuda.size()) < nproc) {
    throw AgentError(flag + ": local rank " + std::to_string(cuda.size()) +
                         " has no GPU to bind to: " + kBindsNearDevice + ", and " +
                         std::to_string(cuda.size()) + " NVIDIA GPU(s) are visible (" +
                         GpuList(cuda) + "; " + where + "); run at most " +
                         std::to_string(cuda.size()) +
                         " worker(s) per node (--nproc-per-node) or drop --numa-binding",
                     exit_code::kUsage);
  }
}

}  // namespace

std::vector<CpuSet> PlanNumaBinding(NumaMode mode, int nproc,
                                    const std::map<std::string, std::string>& env) {
  const std::string flag = "--numa-binding=" + NumaModeName(mode);
  const std::string root = EnvValue(env, "TZRUN_SYSFS_ROOT").value_or("/sys");
  const std::vector<PciGpu> cuda = BindableDevices(flag, root, env);
  CheckEnoughDevices(flag, root, env, cuda, nproc);
  const NumaTopology topology = ReadNumaTopology(root, cuda, ThisThreadCpus());
  std::vector<CpuSet> plan;
  for (int lr = 0; lr < nproc; ++lr) {
    try {
      plan.push_back(CpusForGpu(mode, lr, topology));
    } catch (const NumaError& e) {
      throw AgentError(flag + ": cannot bind local rank " + std::to_string(lr) + " (CUDA device " +
                           std::to_string(lr) + ", PCI " +
                           cuda[static_cast<std::size_t>(lr)].address + "): " + e.what() +
                           " (read under " + root +
                           "); drop --numa-binding or pick another mode (node binds to the "
                           "whole NUMA node)",
                       exit_code::kUsage);
    }
  }
  return plan;
}

}  // namespace tzrun::agent
