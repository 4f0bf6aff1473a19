// backends.hpp — internal to tzrec::comm: the two translation units that see the c10d process
// group headers (gloo_backend.cpp: ProcessGroupGloo.hpp; nccl_backend.cpp: ProcessGroupNCCL.hpp)
// hand out plain c10d::Backend pointers, so comm.cpp and every other file parse neither header.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace tzrec::comm_detail {

// c10d::ProcessGroupGloo(store, rank, size, Options::create_default(timeout)), the only way the
// group is built (docs/gloo-route.md). Blocks until every rank has joined or `timeout` passes;
// throws what c10d throws.
c10::intrusive_ptr<c10d::Backend> MakeGlooBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout);

// True when this build has the NCCL path (nccl_backend.cpp compiled in).
bool NcclCompiled();

// Number of CUDA devices visible to this process (0 without the NCCL path or without a GPU).
int CudaDeviceCount();

// Compute capability major of cuda:`device_index` (0 without the NCCL path or on error).
int CudaComputeCapabilityMajor(int device_index);

// Makes cuda:`device_index` the calling thread's current device (no-op without the NCCL path).
void SetCudaDevice(int device_index);

// Makes cuda:`device_index` current and builds c10d::ProcessGroupNCCL on it (Options with
// `timeout`, is_high_priority_stream false, as torch's init_process_group does). Throws
// std::runtime_error without the NCCL path.
c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout,
                                                  int device_index);

}  // namespace tzrec::comm_detail
