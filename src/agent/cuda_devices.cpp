// CUDA device numbering from sysfs (see cuda_devices.hpp).
#include "cuda_devices.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <tuple>

#include "numa_binding.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrun::agent {
namespace {

using BusId = std::array<std::uint64_t, 4>;

// "dddd:bb:dd.f" as numbers; a name that is not one sorts last, by name.
std::optional<BusId> ParseBusId(std::string_view a) {
  BusId out{};
  std::size_t field = 0;
  bool digits = false;
  for (const char c : a) {
    const bool sep = field < 2 ? c == ':' : c == '.';
    if (sep && digits && field < 3) {
      ++field;
      digits = false;
      continue;
    }
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0 || out[field] >= (1ULL << 32)) {
      return std::nullopt;
    }
    out[field] =
        out[field] * 16 +
        static_cast<std::uint64_t>(std::isdigit(static_cast<unsigned char>(c)) != 0
                                       ? c - '0'
                                       : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    digits = true;
  }
  if (field != 3 || !digits) return std::nullopt;
  return out;
}

// torch.cuda._parse_visible_devices' _strtoul: the integer prefix of `s` (an optional sign, then
// digits); -1 when there is none.
long long StrToUl(const std::string& s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t first_digit = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
  if (i == first_digit || i - first_digit > 9) return i == first_digit ? -1 : 1LL << 40;
  const long long v = std::stoll(s.substr(first_digit, i - first_digit));
  return s[0] == '-' ? -v : v;
}

bool OneModel(const std::vector<PciGpu>& gpus) {
  return std::all_of(gpus.begin(), gpus.end(),
                     [&](const PciGpu& g) { return g.device_id == gpus.front().device_id; });
}

}  // namespace

std::vector<PciGpu> SortByBusId(std::vector<PciGpu> gpus) {
  std::stable_sort(gpus.begin(), gpus.end(), [](const PciGpu& a, const PciGpu& b) {
    const auto x = ParseBusId(a.address);
    const auto y = ParseBusId(b.address);
    if (x && y) return *x < *y;
    if (x || y) return x.has_value();
    return a.address < b.address;
  });
  return gpus;
}

std::vector<int> VisibleOrdinals(const std::optional<std::string>& visible, int physical) {
  std::vector<int> out;
  if (!visible) {
    for (int k = 0; k < std::min(physical, 64); ++k) out.push_back(k);
    return out;
  }
  if (visible->starts_with("GPU-") || visible->starts_with("MIG-")) {
    throw NumaError("CUDA_VISIBLE_DEVICES=" + *visible +
                    " names GPUs by UUID, which tzrun cannot map to PCI devices without NVML; "
                    "name them by index instead (nvidia-smi -L lists the indices)");
  }
  for (const auto& item : base::Split(*visible, ',')) {
    const long long v = StrToUl(base::Strip(item));
    if (v < 0) break;
    if (std::find(out.begin(), out.end(), v) != out.end()) return {};  // a repeat: no GPU
    out.push_back(static_cast<int>(std::min<long long>(v, 1 << 30)));
  }
  // torch's _device_count_nvml: the list ends at the first index past the last GPU.
  const auto past = std::find_if(out.begin(), out.end(), [&](int v) { return v >= physical; });
  out.erase(past, out.end());
  return out;
}

std::vector<PciGpu> CudaDevices(const std::vector<PciGpu>& pci_ordered,
                                const std::optional<std::string>& visible,
                                const std::optional<std::string>& order) {
  if (order.value_or("") != "PCI_BUS_ID" && !OneModel(pci_ordered)) {
    throw NumaError("this machine has GPUs of several models and CUDA_DEVICE_ORDER is " +
                    (order ? "'" + *order + "'" : std::string("unset")) +
                    ": CUDA then numbers the faster models first, which tzrun cannot tell "
                    "from sysfs; set CUDA_DEVICE_ORDER=PCI_BUS_ID (for tzrun and the workers)");
  }
  std::vector<PciGpu> out;
  for (const int k : VisibleOrdinals(visible, static_cast<int>(pci_ordered.size()))) {
    out.push_back(pci_ordered[static_cast<std::size_t>(k)]);
  }
  return out;
}

}  // namespace tzrun::agent
