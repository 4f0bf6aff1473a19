// Topology: capacities and bandwidths from the environment, and their checks
// (torchrec/distributed/planner/types.py Topology; include/tzrec/planner/planner.hpp).
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

std::optional<double> ReadEnvDouble(const char* name) {
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(raw, &end);
  while (end != nullptr && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (errno != 0 || end == raw || (end != nullptr && *end != '\0') || !std::isfinite(value)) {
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + raw +
                                "' is not a number; unset it or give a plain number");
  }
  return value;
}

std::int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) {
    return static_cast<std::int64_t>(pages) * static_cast<std::int64_t>(page_size);
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return Topology::kDefaultDdrCap;
}

}  // namespace

std::string_view ToString(ComputeDevice device) {
  return device == ComputeDevice::kCuda ? "cuda" : "cpu";
}

Topology Topology::FromEnvironment(int world_size, int local_world_size, ComputeDevice device,
                                   std::int64_t hbm_cap_bytes) {
  Topology topo;
  topo.world_size = world_size;
  topo.local_world_size = local_world_size;
  topo.device = device;
  if (local_world_size <= 0) {
    throw std::invalid_argument("local_world_size is " + std::to_string(local_world_size) +
                                "; it must be > 0 (LOCAL_WORLD_SIZE / --local-world-size)");
  }
  topo.hbm_cap = device == ComputeDevice::kCuda ? hbm_cap_bytes : 0;
  topo.ddr_cap = PhysicalMemoryBytes() / local_world_size;
  if (auto bw = ReadEnvDouble("INTRA_NODE_BANDWIDTH")) topo.intra_host_bw = *bw;
  if (auto bw = ReadEnvDouble("CROSS_NODE_BANDWIDTH")) topo.inter_host_bw = *bw;
  if (auto pct = ReadEnvDouble("STORAGE_RESERVE_PERCENT")) topo.storage_reserve_percent = *pct;
  topo.Validate();
  return topo;
}

void Topology::Validate() const {
  if (world_size <= 0) {
    throw std::invalid_argument("world_size is " + std::to_string(world_size) + "; it must be > 0");
  }
  if (local_world_size <= 0) {
    throw std::invalid_argument("local_world_size is " + std::to_string(local_world_size) +
                                "; it must be > 0");
  }
  if (world_size % local_world_size != 0) {
    throw std::invalid_argument(
        "world_size " + std::to_string(world_size) + " is not a multiple of local_world_size " +
        std::to_string(local_world_size) + "; every host must run the same number of ranks");
  }
  if (hbm_cap < 0 || ddr_cap < 0) {
    throw std::invalid_argument("negative storage capacity (hbm_cap " + std::to_string(hbm_cap) +
                                ", ddr_cap " + std::to_string(ddr_cap) + " bytes)");
  }
  if (device == ComputeDevice::kCuda && hbm_cap <= 0) {
    throw std::invalid_argument("hbm_cap is " + std::to_string(hbm_cap) +
                                " on a cuda topology; give the GPU memory per rank");
  }
  if (device == ComputeDevice::kCpu && ddr_cap <= 0) {
    throw std::invalid_argument("ddr_cap is " + std::to_string(ddr_cap) +
                                " on a cpu topology; give the host memory per rank");
  }
  const std::pair<const char*, double> bandwidths[] = {{"hbm_mem_bw", hbm_mem_bw},
                                                       {"ddr_mem_bw", ddr_mem_bw},
                                                       {"INTRA_NODE_BANDWIDTH", intra_host_bw},
                                                       {"CROSS_NODE_BANDWIDTH", inter_host_bw}};
  for (const auto& [name, value] : bandwidths) {
    if (!(value > 0) || !std::isfinite(value)) {
      throw std::invalid_argument(std::string(name) + " is " + std::to_string(value) +
                                  "; a bandwidth must be > 0 bytes/ms");
    }
  }
  if (!(storage_reserve_percent >= 0 && storage_reserve_percent < 1)) {
    throw std::invalid_argument("STORAGE_RESERVE_PERCENT is " +
                                std::to_string(storage_reserve_percent) +
                                "; it must be in [0, 1), e.g. 0.15");
  }
}

std::string Topology::HostLayoutProblem(const std::vector<int>& local_world_sizes) {
  if (local_world_sizes.empty()) return "";
  const int first = local_world_sizes.front();
  const auto world = static_cast<int>(local_world_sizes.size());
  bool uniform = true;
  std::string listed;
  for (int size : local_world_sizes) {
    uniform = uniform && size == first;
    listed += (listed.empty() ? "" : ", ") + std::to_string(size);
  }
  if (!uniform) {
    return "the ranks run on hosts with different numbers of processes (LOCAL_WORLD_SIZE by "
           "rank: " +
           listed +
           "); the sharding planner needs the same number on every host: start every node "
           "with the same --nproc-per-node";
  }
  if (first <= 0 || world % first != 0) {
    return "world size " + std::to_string(world) + " is not a multiple of LOCAL_WORLD_SIZE " +
           std::to_string(first) +
           "; the sharding planner needs whole hosts: start every node with the same "
           "--nproc-per-node";
  }
  return "";
}

}  // namespace tzrec
