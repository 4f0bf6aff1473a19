// gloo_backend.cpp — the one translation unit that includes ProcessGroupGloo.hpp (it parses slowly
// and is compiled against Debian's gloo headers; docs/gloo-route.md lists what keeps that sound:
// only the exported constructor and Options::create_default are used, nothing of gloo itself).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "backends.hpp"

namespace tzrec::comm_detail {

c10::intrusive_ptr<c10d::Backend> MakeGlooBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create_default(timeout);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

}  // namespace tzrec::comm_detail
