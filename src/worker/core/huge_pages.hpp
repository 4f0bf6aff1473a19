// Internal to tzrec::core: asks the kernel for transparent huge pages under a large tensor (a
// table's weight or optimizer state), before its pages are first touched. Random row accesses to a
// table of hundreds of MiB otherwise miss the TLB on nearly every id (and, in a VM, pay a nested
// page walk); 2 MiB pages cover the table with a few hundred TLB entries. Only advice: where THP
// is off ("never") or the kernel refuses, nothing changes. Results never depend on it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tzrec::core_detail {

inline void AdviseHugePages(const at::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20U;
  if (!t.defined() || !t.device().is_cpu() || t.nbytes() < 2 * kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + t.nbytes()) & ~(kHuge - 1);
  if (last > first) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the address of the tensor's own pages
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#else
  (void)t;
#endif
}

}  // namespace tzrec::core_detail
