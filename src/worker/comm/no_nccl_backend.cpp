// no_nccl_backend.cpp — the NCCL entry points of backends.hpp for builds without
// tzrun::torch_nccl (no CUDA toolkit / nccl.h at configure time).
#include <stdexcept>

#include "backends.hpp"

namespace tzrec::comm_detail {

bool NcclCompiled() {
  return false;
}

int CudaDeviceCount() {
  return 0;
}

int CudaComputeCapabilityMajor(int /*device_index*/) {
  return 0;
}

void SetCudaDevice(int /*device_index*/) {}

c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(const c10::intrusive_ptr<c10d::Store>& /*store*/,
                                                  int /*rank*/, int /*size*/,
                                                  std::chrono::milliseconds /*timeout*/,
                                                  int /*device_index*/) {
  throw std::runtime_error(
      "this tzrec build has no NCCL support (CMake found no CUDA toolkit with nccl.h); "
      "rebuild with TZRUN_CUDA_ROOT pointing at one, or set TZREC_BACKEND=gloo");
}

}  // namespace tzrec::comm_detail
