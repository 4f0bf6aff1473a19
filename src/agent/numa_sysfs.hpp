// tzrun agent internals: --numa-binding's reads — the GPUs and the CPU topology from sysfs,
// the agent's CPU affinity — and the per-local-rank plan the agent applies to its workers
// (sched_setaffinity in the forked worker before exec, which is what torchrun's
// `numactl --physcpubind=<cpus>` prefix does; tzrun does not need numactl).
//
// The sysfs root is /sys, or $TZRUN_SYSFS_ROOT from the agent's environment: a test hook that
// points the reader at a fake tree (tests/integration/test_numa_binding.py).
//
// Thread-safety: reentrant (reads files).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cuda_devices.hpp"
#include "numa_binding.hpp"

namespace tzrun::agent {

/// The NVIDIA GPUs under <root>/bus/pci/devices (see cuda_devices.hpp), in PCI bus-id order.
[[nodiscard]] std::vector<PciGpu> ReadPciGpus(const std::string& sysfs_root);

/// What torch's binding reads for `cuda_devices` (CUDA index order) and the CPUs of `allowed`.
[[nodiscard]] NumaTopology ReadNumaTopology(const std::string& sysfs_root,
                                            const std::vector<PciGpu>& cuda_devices,
                                            CpuSet allowed);

/// This thread's CPU affinity (sched_getaffinity(0)).
[[nodiscard]] CpuSet ThisThreadCpus();

/// The CPUs of local ranks 0..nproc-1 under `mode` (local rank N = CUDA device N, torchrun's
/// rule), read with `env` (the agent's: TZRUN_SYSFS_ROOT, CUDA_VISIBLE_DEVICES,
/// CUDA_DEVICE_ORDER). Throws AgentError (exit 2) naming --numa-binding, the local rank, what
/// is missing and the fix.
[[nodiscard]] std::vector<CpuSet> PlanNumaBinding(NumaMode mode, int nproc,
                                                  const std::map<std::string, std::string>& env);

}  // namespace tzrun::agent
