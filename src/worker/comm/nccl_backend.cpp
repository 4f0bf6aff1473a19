// nccl_backend.cpp — the one translation unit that includes ProcessGroupNCCL.hpp; compiled only
// when cmake/FindTzrunTorch.cmake found the CUDA toolkit's nccl.h (tzrun::torch_nccl). Without it,
// no_nccl_backend.cpp provides the same functions.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "backends.hpp"

namespace tzrec::comm_detail {

bool NcclCompiled() {
  return true;
}

int CudaDeviceCount() {
  try {
    return static_cast<int>(c10::cuda::device_count());
  } catch (const std::exception&) {
    return 0;  // no driver: behave as "no GPU"
  }
}

int CudaComputeCapabilityMajor(int device_index) {
  try {
    return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device_index))->major;
  } catch (const std::exception&) {
    return 0;
  }
}

void SetCudaDevice(int device_index) {
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_index));
}

c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout,
                                                  int device_index) {
  SetCudaDevice(device_index);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  options->is_high_priority_stream = false;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace tzrec::comm_detail
