// tzrun agent internals: --numa-binding's decision — which CPUs the worker of a GPU may run on
// (torch/numa/binding.py, torchrun 2.11), as pure functions of the machine's topology.
//
// torchrun binds local rank N to CUDA device N: the device's PCI address gives its NUMA node
// (/sys/bus/pci/devices/<addr>/numa_node, -1 read as 0), and the mode picks CPUs there, always
// intersected with the CPUs the agent may use (its sched_getaffinity):
//   node          every allowed CPU of that NUMA node;
//   socket        every allowed CPU of every NUMA node of the node's socket (the
//                 physical_package_id of the lowest allowed CPU of each node);
//   exclusive     the node's allowed CPUs grouped by physical core (the lowest CPU of
//                 thread_siblings_list), cores in that order split evenly among the node's GPUs
//                 by their CUDA index, the first `cores % gpus` GPUs one core more;
//   core-complex  the node's allowed CPUs grouped by their highest-level data or unified cache
//                 (the lowest CPU of its shared_cpu_list), groups ordered by size (largest
//                 first) then lowest CPU; GPU k of the node (by CUDA index) takes group
//                 k % groups.
// Whatever makes torch's functions raise is an error here too (NumaError, its message says
// what is missing and where): a NUMA node without a cpulist, under socket any possible node
// without an allowed CPU, under exclusive fewer cores than GPUs, an empty result.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tzrun::agent {

enum class NumaMode { kNode, kSocket, kExclusive, kCoreComplex };

/// "node", "socket", "exclusive", "core-complex" (torch's AffinityMode values); nullopt else.
[[nodiscard]] std::optional<NumaMode> ParseNumaMode(std::string_view text);
[[nodiscard]] std::string NumaModeName(NumaMode mode);

using CpuSet = std::set<int>;

/// A sysfs CPU list ("0-3,8,10-11\n"; blanks around items ignored, "" is empty) as
/// torch's _get_set_of_int_from_ranges_str reads it; nullopt when it is not one.
[[nodiscard]] std::optional<CpuSet> ParseCpuList(std::string_view text);
/// The compact form ("0-3,8,10-11"), torch's _get_ranges_str_from_ints, which numactl
/// --physcpubind receives.
[[nodiscard]] std::string CpuListText(const CpuSet& cpus);

/// What torch's binding functions read, with the files it could not read left out.
struct NumaTopology {
  std::optional<std::set<int>> possible_nodes;  ///< /sys/devices/system/node/possible
  std::map<int, CpuSet> node_cpus;              ///< node<N>/cpulist
  std::map<int, int> cpu_package;               ///< cpu<N>/topology/physical_package_id
  std::map<int, CpuSet> cpu_core;               ///< cpu<N>/topology/thread_siblings_list
  std::map<int, CpuSet> cpu_top_cache;          ///< shared_cpu_list of cpu<N>'s highest-level
                                                ///< Data/Unified cache (empty: it has none)
  std::vector<std::optional<int>> gpu_node;     ///< by CUDA index: numa_node of its PCI device,
                                                ///< -1 read as 0; nullopt: unreadable
  CpuSet allowed;                               ///< the agent's CPU affinity
};

class NumaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The CPUs of CUDA device `gpu_index` under `mode` (torch's
/// _get_validated_logical_cpus_to_bind_to minus its numactl check). Throws NumaError.
[[nodiscard]] CpuSet CpusForGpu(NumaMode mode, int gpu_index, const NumaTopology& topology);

}  // namespace tzrun::agent
