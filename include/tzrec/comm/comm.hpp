// tzrec/comm/comm.hpp — the worker's process group: built from the launcher's environment,
// c10d::ProcessGroupGloo on CPU or c10d::ProcessGroupNCCL on cuda:LOCAL_RANK, behind a small API
// that keeps c10d and gloo headers out of every other translation unit (pimpl).
//
// Upstream behaviour followed (torch 2.11, torch/distributed/rendezvous.py
// `_env_rendezvous_handler` and `_create_c10d_store`, distributed_c10d.py
// `init_process_group`/`_new_process_group_helper`):
//   store = PrefixStore("<device>/", PrefixStore("0/", PrefixStore("default_pg",
//             TCPStore(MASTER_ADDR, MASTER_PORT, client))))
// torch 2.11 adds no "/worker/attempt_N" level (it makes a new TCPStore per retry; tzrun gives
// every restart attempt a clean store), so a C++ rank and a Python rank of one job meet.
// Timeout: PROCESS_GROUP_TIMEOUT_SECONDS (default 1800 s, torch's default for non-NCCL groups).
// Backend: NCCL on cuda:LOCAL_RANK when CUDA is available and the binary was built with NCCL,
// Gloo otherwise; TZREC_BACKEND=gloo|nccl forces one.
//
// Tensor rules: Gloo takes CPU tensors, NCCL CUDA tensors on device() (callers move them there;
// Comm never copies between devices, except BroadcastString, which takes and returns host bytes).
// Any dtype c10d supports; non-contiguous inputs are made contiguous. All collectives are blocking
// unless named *Async (under NCCL "blocking" means ordered before later work on the current CUDA
// stream, as torch's work.wait()). Every rank must call the same collectives in the same order.
// At world size 1 (Init) every collective is the identity and returns a new tensor where the
// multi-rank version would (AllGather, AllToAll, ReduceScatterV, AllGatherV).
// Caller mistakes (wrong split count or sum, negative split, tensor on the wrong device, bad root)
// throw CommError before anything is sent, so the ranks stay in step.
// Errors: CommError (std::runtime_error) with what failed, which rank, and what to check; a failed
// collective (c10d timeout, peer gone) names the op, this rank, the backend and the hint (check the
// other ranks' logs; PROCESS_GROUP_TIMEOUT_SECONDS), without c10's C++ backtrace.
// Thread-safety: one thread issues collectives; Comm itself holds no mutable shared state.
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {

// The launcher contract (torchrun/tzrun worker environment).
struct DistEnv {
  static constexpr std::chrono::seconds kDefaultTimeout{1800};
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int group_rank = 0;  // node rank
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;
  std::chrono::milliseconds timeout = kDefaultTimeout;

  // Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
  // PROCESS_GROUP_TIMEOUT_SECONDS. With none of RANK/WORLD_SIZE set it returns a single-process
  // env (world 1, no store needed). Throws CommError naming a malformed or missing variable.
  static DistEnv FromEnvironment();
};

enum class BackendKind { kAuto, kGloo, kNccl };

// Handle of an asynchronous collective; Wait() returns its output (idempotent).
class PendingTensor {
 public:
  PendingTensor() = default;
  PendingTensor(at::Tensor output, std::function<void()> wait);
  at::Tensor Wait();
  bool Valid() const { return output_.defined(); }

 private:
  at::Tensor output_;
  std::function<void()> wait_;
};

class Comm {
 public:
  // Connects to the store and builds the process group. World size 1 builds no group (every
  // collective is the identity), so a single process needs no launcher.
  static std::shared_ptr<Comm> Init(const DistEnv& env, BackendKind backend = BackendKind::kAuto);
  // Like Init, but builds the store client and the process group at world size 1 too (needs
  // MASTER_ADDR/MASTER_PORT, e.g. tzrun --nproc-per-node=1): lets a one-GPU machine run every
  // collective through NCCL (tools/gpu-check.sh). Same errors as Init.
  static std::shared_ptr<Comm> InitGroup(const DistEnv& env,
                                         BackendKind backend = BackendKind::kAuto);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int Rank() const;
  int WorldSize() const;
  int LocalRank() const;
  int LocalWorldSize() const;
  at::Device Device() const;        // cpu, or cuda:LOCAL_RANK under NCCL
  std::string BackendName() const;  // "gloo", "nccl", "none" (world 1)
  // CUDA compute capability major of device() (0 on CPU). TorchEasyRec puts a barrier at the start
  // of every step below 7 (Pascal) to avoid an NCCL deadlock of the next-batch all-to-all.
  int CudaComputeCapabilityMajor() const;

  void AllReduceSum(at::Tensor& tensor);         // in place
  void AllReduceMax(at::Tensor& tensor);         // in place
  void Broadcast(at::Tensor& tensor, int root);  // in place
  void Barrier();
  // Equal-size gather: [n, ...] on every rank → [W*n, ...], rank r's rows at [r*n, (r+1)*n).
  at::Tensor AllGather(const at::Tensor& tensor);
  // all_to_all_single on dim 0: input rows [sum(input_splits), ...], input_splits[r] rows go to
  // rank r; output [sum(output_splits), ...] with output_splits[r] rows from rank r. Splits may be
  // uneven and zero; both lists have W entries.
  at::Tensor AllToAll(const at::Tensor& input, const std::vector<std::int64_t>& input_splits,
                      const std::vector<std::int64_t>& output_splits);
  PendingTensor AllToAllAsync(const at::Tensor& input,
                              const std::vector<std::int64_t>& input_splits,
                              const std::vector<std::int64_t>& output_splits);
  // reduce_scatter_v: input [sum(splits), ...] on every rank, output [splits[rank], ...] = sum over
  // ranks of their input rows [offset(rank), offset(rank)+splits[rank]). NCCL:
  // reduce_scatter_tensor when the splits are equal; Gloo (no reduce_scatter in its c10d path for
  // uneven splits): an all_to_all of the partial blocks followed by a local sum — same result, same
  // bytes on the wire.
  at::Tensor ReduceScatterV(const at::Tensor& input, const std::vector<std::int64_t>& splits);
  // all_gather_v, the backward of ReduceScatterV: input [splits[rank], ...] → [sum(splits), ...].
  // Equal splits: one all_gather; uneven: an all_to_all sending this rank's rows to every rank.
  at::Tensor AllGatherV(const at::Tensor& input, const std::vector<std::int64_t>& splits);

  // Bytes of rank `root` to everyone (non-root ranks' `text` is ignored); used for the plan
  // broadcast. Two broadcasts: the length (int64), then the bytes (uint8 tensor on device()).
  std::string BroadcastString(const std::string& text, int root);

 private:
  struct Impl;
  explicit Comm(std::unique_ptr<Impl> impl);
  static std::shared_ptr<Comm> Create(const DistEnv& env, BackendKind backend,
                                      bool group_at_world_one);
  std::unique_ptr<Impl> impl_;
};

// Dense (replicated) parameters kept identical across ranks, as DDP does
// (torch/nn/parallel/distributed.py: broadcast from rank 0 at construction, bucketed all-reduce of
// gradients, averaged with SUM then divide — Gloo's AVG is unreliable, pytorch issue #162338).
class DenseSync {
 public:
  static constexpr std::int64_t kDefaultBucketBytes = 25LL << 20;  // DDP bucket_cap_mb=25
  // `parameters`: defined floating-point tensors on comm->device() (the same list, in the same
  // order, on every rank). Buckets: consecutive parameters of one dtype and device, at most
  // `bucket_bytes` together (a larger parameter is a bucket of its own); one collective per bucket.
  // Throws CommError for a null comm, bucket_bytes < 1, an undefined or non-floating parameter.
  DenseSync(std::shared_ptr<Comm> comm, std::vector<at::Tensor> parameters,
            std::int64_t bucket_bytes = kDefaultBucketBytes);
  // Copies rank `root`'s parameter values into every rank's parameters (in place, autograd off).
  void BroadcastParameters(int root = 0);
  // Averages every parameter's .grad() over ranks (undefined grads count as zeros; afterwards
  // every parameter has a defined grad holding the average). Dense gradients only.
  void AllReduceGradients();

 private:
  std::shared_ptr<Comm> comm_;
  std::vector<at::Tensor> parameters_;
  std::int64_t bucket_bytes_;
};

}  // namespace tzrec
