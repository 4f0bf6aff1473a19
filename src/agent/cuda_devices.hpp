// tzrun agent internals: which PCI device is CUDA device N, without CUDA (tzrun never loads
// libcuda), for --numa-binding.
//
// The GPUs are the NVIDIA (vendor 0x10de) VGA or 3D controllers (PCI class 0x0300xx or
// 0x0302xx) bound to the nvidia driver, in PCI bus-id order: CUDA's own order under
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and NVML's / nvidia-smi's. CUDA's default order
// (FASTEST_FIRST) puts faster models first; among GPUs of one model it is PCI bus-id order as
// well, so with one model the two agree, and with several models tzrun refuses unless
// CUDA_DEVICE_ORDER=PCI_BUS_ID. CUDA_VISIBLE_DEVICES then selects and renumbers them as
// torch.cuda._parse_visible_devices reads it (the strtoul-like integer prefix of each item;
// a negative or unparsable item ends the list; a repeated index, or an index past the last GPU,
// ends it too: a repeat hides every GPU). UUID forms (GPU-..., MIG-...) are refused: mapping
// them needs NVML.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tzrun::agent {

/// One NVIDIA GPU as sysfs shows it.
struct PciGpu {
  std::string address;           ///< "0000:3b:00.0" (the sysfs directory name)
  std::string device_id;         ///< "0x2330": the model
  std::optional<int> numa_node;  ///< numa_node as written (-1: none); nullopt: unreadable
  bool operator==(const PciGpu&) const = default;
};

/// `gpus` sorted by PCI bus id (domain, bus, device, function as hex numbers).
[[nodiscard]] std::vector<PciGpu> SortByBusId(std::vector<PciGpu> gpus);

/// The physical indices (into the PCI-ordered list of `physical` GPUs) that CUDA devices
/// 0, 1, ... are, from CUDA_VISIBLE_DEVICES (nullopt: unset, every GPU). Throws NumaError
/// (numa_binding.hpp) for the UUID forms.
[[nodiscard]] std::vector<int> VisibleOrdinals(const std::optional<std::string>& visible,
                                               int physical);

/// The CUDA devices in CUDA index order: `pci_ordered` GPUs (SortByBusId) picked by
/// CUDA_VISIBLE_DEVICES, after checking that CUDA_DEVICE_ORDER (`order`, nullopt: unset) gives
/// PCI order. Throws NumaError naming the variable and its fix.
[[nodiscard]] std::vector<PciGpu> CudaDevices(const std::vector<PciGpu>& pci_ordered,
                                              const std::optional<std::string>& visible,
                                              const std::optional<std::string>& order);

}  // namespace tzrun::agent
