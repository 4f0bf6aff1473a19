// comm.cpp — DistEnv, the Comm facade over c10d::Backend and PendingTensor
// (include/tzrec/comm/comm.hpp; DenseSync is in dense_sync.cpp). The process group itself is built
// in gloo_backend.cpp / nccl_backend.cpp; this file only sees the c10d::Backend base class.
#include "tzrec/comm/comm.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <sstream>
#include <string_view>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>

#include "backends.hpp"

namespace tzrec {
namespace {

constexpr long kMaxWorld = 1L << 20;
constexpr long kMaxTimeoutSeconds = 7L * 24 * 3600;

const char* GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return (v == nullptr || *v == '\0') ? nullptr : v;
}

std::string LauncherHint() {
  return "the launcher (tzrun/torchrun) sets it for every worker; launch with tzrun, or unset "
         "both RANK and WORLD_SIZE to run a single process";
}

long ParseEnvLong(const char* name, std::string_view text, long lo, long hi) {
  long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last || value < lo || value > hi) {
    throw CommError("environment variable " + std::string(name) + "='" + std::string(text) +
                    "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                    "]; " + LauncherHint());
  }
  return value;
}

long RequireEnvLong(const char* name, long lo, long hi) {
  const char* v = GetEnv(name);
  if (v == nullptr) {
    throw CommError("environment variable " + std::string(name) + " is not set; " + LauncherHint());
  }
  return ParseEnvLong(name, v, lo, hi);
}

long OptionalEnvLong(const char* name, long fallback, long lo, long hi) {
  const char* v = GetEnv(name);
  return v == nullptr ? fallback : ParseEnvLong(name, v, lo, hi);
}

// The message of an exception from c10d without c10's multi-line C++ backtrace.
std::string ErrorText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e); c10_error != nullptr) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// A collective failed (c10d threw: timeout, peer gone, ...): say which, where, and what to check.
[[noreturn]] void FailCollective(const std::string& op, int rank, int world,
                                 const std::string& backend, std::chrono::milliseconds timeout,
                                 const std::string& what) {
  throw CommError(
      "Comm::" + op + " failed on rank " + std::to_string(rank) + " of " + std::to_string(world) +
      " (backend " + backend + "): " + what +
      ". Check the other ranks' logs (a peer may have failed or exited first) and "
      "PROCESS_GROUP_TIMEOUT_SECONDS (now " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
      " s) if a rank is slow rather than gone");
}

std::string JoinSplits(const std::vector<std::int64_t>& splits) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < splits.size(); ++i) os << (i ? ", " : "") << splits[i];
  os << ']';
  return os.str();
}

}  // namespace

// ---- DistEnv ----------------------------------------------------------------------------------

DistEnv DistEnv::FromEnvironment() {
  DistEnv env;
  if (const char* t = GetEnv("PROCESS_GROUP_TIMEOUT_SECONDS"); t != nullptr) {
    env.timeout = std::chrono::seconds(
        ParseEnvLong("PROCESS_GROUP_TIMEOUT_SECONDS", t, 1, kMaxTimeoutSeconds));
  }
  const bool has_rank = GetEnv("RANK") != nullptr;
  const bool has_world = GetEnv("WORLD_SIZE") != nullptr;
  if (!has_rank && !has_world) return env;  // single process, no launcher
  if (!has_world || !has_rank) {
    throw CommError(std::string("environment variable ") + (has_rank ? "WORLD_SIZE" : "RANK") +
                    " is not set but " + (has_rank ? "RANK" : "WORLD_SIZE") + " is; " +
                    LauncherHint());
  }
  env.world_size = static_cast<int>(RequireEnvLong("WORLD_SIZE", 1, kMaxWorld));
  env.rank = static_cast<int>(RequireEnvLong("RANK", 0, env.world_size - 1));
  const bool multi = env.world_size > 1;
  if (multi) {
    env.local_world_size = static_cast<int>(RequireEnvLong("LOCAL_WORLD_SIZE", 1, env.world_size));
    env.local_rank = static_cast<int>(RequireEnvLong("LOCAL_RANK", 0, env.local_world_size - 1));
  } else {
    env.local_world_size = static_cast<int>(OptionalEnvLong("LOCAL_WORLD_SIZE", 1, 1, 1));
    env.local_rank = static_cast<int>(OptionalEnvLong("LOCAL_RANK", 0, 0, 0));
  }
  env.group_rank = static_cast<int>(OptionalEnvLong("GROUP_RANK", 0, 0, kMaxWorld - 1));
  if (multi) {
    const char* addr = GetEnv("MASTER_ADDR");
    if (addr == nullptr) {
      throw CommError("environment variable MASTER_ADDR is not set (WORLD_SIZE=" +
                      std::to_string(env.world_size) + "); " + LauncherHint());
    }
    env.master_addr = addr;
    env.master_port = static_cast<std::uint16_t>(RequireEnvLong("MASTER_PORT", 1, 65535));
  } else {
    if (const char* addr = GetEnv("MASTER_ADDR"); addr != nullptr) env.master_addr = addr;
    env.master_port = static_cast<std::uint16_t>(OptionalEnvLong("MASTER_PORT", 0, 0, 65535));
  }
  return env;
}

// ---- PendingTensor ----------------------------------------------------------------------------

PendingTensor::PendingTensor(at::Tensor output, std::function<void()> wait)
    : output_(std::move(output)), wait_(std::move(wait)) {}

at::Tensor PendingTensor::Wait() {
  if (wait_) {
    wait_();  // on failure wait_ stays set: a second Wait() reports the same error again
    wait_ = nullptr;
  }
  return output_;
}

// ---- Comm -------------------------------------------------------------------------------------

struct Comm::Impl {
  DistEnv env;
  std::string backend_name = "none";
  at::Device device{at::kCPU};
  c10::intrusive_ptr<c10d::Backend> backend;  // null at world 1

  bool Nccl() const { return backend_name == "nccl"; }

  [[noreturn]] void Fail(const std::string& op, const std::string& what) const {
    FailCollective(op, env.rank, env.world_size, backend_name, env.timeout, what);
  }

  // Caller errors (wrong shapes, splits, devices): no peer is involved, so no peer hint.
  [[noreturn]] void Usage(const std::string& op, const std::string& what) const {
    throw CommError("Comm::" + op + " on rank " + std::to_string(env.rank) + ": " + what);
  }

  void CheckTensor(const std::string& op, const at::Tensor& t) const {
    if (!t.defined()) Usage(op, "the tensor is undefined; pass a defined tensor");
    if (backend && t.device().type() != device.type()) {
      std::ostringstream os;
      os << "the tensor is on " << t.device() << " but the " << backend_name
         << " process group works on " << device.type()
         << " tensors; move it there first (comm->device())";
      Usage(op, os.str());
    }
  }

  void CheckSplits(const std::string& op, const char* what, const std::vector<std::int64_t>& splits,
                   std::int64_t rows) const {
    if (static_cast<int>(splits.size()) != env.world_size) {
      Usage(op, std::string(what) + " " + JoinSplits(splits) + " has " +
                    std::to_string(splits.size()) + " entries; it needs one per rank (" +
                    std::to_string(env.world_size) + ")");
    }
    std::int64_t sum = 0;
    for (std::int64_t s : splits) {
      if (s < 0) Usage(op, std::string(what) + " " + JoinSplits(splits) + " has a negative entry");
      sum += s;
    }
    if (rows >= 0 && sum != rows) {
      Usage(op, std::string(what) + " " + JoinSplits(splits) + " sums to " + std::to_string(sum) +
                    " rows but the tensor has " + std::to_string(rows) + " rows in dim 0");
    }
  }

  // Runs `issue` (which returns the c10d work) and waits for it; any c10d error becomes CommError.
  void Run(const std::string& op, const std::function<c10::intrusive_ptr<c10d::Work>()>& issue) {
    try {
      auto work = issue();
      work->wait();
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      Fail(op, ErrorText(e));
    }
  }

  // A callable that waits for `work`; it copies what its error message needs, so it may outlive
  // the Comm (a PendingTensor waited for after the Comm is gone still reports properly).
  std::function<void()> Waiter(const std::string& op, c10::intrusive_ptr<c10d::Work> work) const {
    return [op, work = std::move(work), rank = env.rank, world = env.world_size,
            name = backend_name, timeout = env.timeout]() {
      try {
        work->wait();
      } catch (const std::exception& e) {
        FailCollective(op, rank, world, name, timeout, ErrorText(e));
      }
    };
  }

  static std::vector<std::int64_t> Shape(std::int64_t rows, const at::Tensor& like) {
    std::vector<std::int64_t> shape{rows};
    for (std::int64_t d = 1; d < like.dim(); ++d) shape.push_back(like.size(d));
    return shape;
  }

  // Issues all_to_all_single; returns the output and the work (not yet waited for).
  std::pair<at::Tensor, c10::intrusive_ptr<c10d::Work>> IssueAllToAll(
      const std::string& op, const at::Tensor& input, const std::vector<std::int64_t>& in_splits,
      const std::vector<std::int64_t>& out_splits) {
    CheckTensor(op, input);
    if (input.dim() < 1) Usage(op, "the input is a scalar; it needs at least one dimension");
    CheckSplits(op, "input_splits", in_splits, input.size(0));
    CheckSplits(op, "output_splits", out_splits, -1);
    const std::int64_t out_rows =
        std::accumulate(out_splits.begin(), out_splits.end(), std::int64_t{0});
    at::Tensor output = at::empty(Shape(out_rows, input), input.options());
    if (!backend) {
      if (out_rows != input.size(0)) {
        Usage(op, "at world size 1 output_splits " + JoinSplits(out_splits) +
                      " must equal input_splits " + JoinSplits(in_splits));
      }
      output.copy_(input);
      return {output, {}};
    }
    at::Tensor in = input.contiguous();
    std::vector<std::int64_t> out_s = out_splits;
    std::vector<std::int64_t> in_s = in_splits;
    try {
      auto work = backend->alltoall_base(output, in, out_s, in_s);
      return {output, work};
    } catch (const std::exception& e) {
      Fail(op, ErrorText(e));
    }
  }
};

Comm::Comm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Comm::~Comm() {
  if (impl_ && impl_->backend) {
    try {
      impl_->backend->shutdown();  // what torch's destroy_process_group does
    } catch (const std::exception&) {
      // A peer may already be gone; nothing useful left to do in a destructor.
    }
  }
}

std::shared_ptr<Comm> Comm::Init(const DistEnv& env, BackendKind backend) {
  return Create(env, backend, /*group_at_world_one=*/false);
}

std::shared_ptr<Comm> Comm::InitGroup(const DistEnv& env, BackendKind backend) {
  return Create(env, backend, /*group_at_world_one=*/true);
}

namespace {

// kAuto as TZREC_BACKEND forces it (gloo, nccl or auto); other kinds unchanged.
BackendKind ForcedBackend(BackendKind backend) {
  if (backend == BackendKind::kAuto) {
    if (const char* forced = GetEnv("TZREC_BACKEND"); forced != nullptr) {
      const std::string_view f = forced;
      if (f == "gloo") {
        return BackendKind::kGloo;
      } else if (f == "nccl") {
        return BackendKind::kNccl;
      } else if (f != "auto") {
        throw CommError("environment variable TZREC_BACKEND='" + std::string(f) +
                        "' is not one of gloo, nccl, auto; unset it to pick NCCL when a GPU is "
                        "visible and Gloo otherwise");
      }
    }
  }
  return backend;
}

// The c10d process group of `env` on the launcher's store (torch 2.11's init_process_group chain
// for the default group, comm.hpp); any failure becomes a CommError naming the store.
c10::intrusive_ptr<c10d::Backend> MakeBackend(const DistEnv& env, bool nccl) {
  const std::string device = nccl ? "cuda" : "cpu";
  try {
    c10d::TCPStoreOptions opts;
    opts.port = env.master_port;
    opts.isServer = false;
    opts.numWorkers = static_cast<std::size_t>(env.world_size);
    opts.waitWorkers = false;
    opts.timeout = env.timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
    // torch 2.11's init_process_group chain for the default group (comm.hpp).
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::PrefixStore>("default_pg", tcp);
    store = c10::make_intrusive<c10d::PrefixStore>("0/", store);
    store = c10::make_intrusive<c10d::PrefixStore>(device + "/", store);
    return nccl ? comm_detail::MakeNcclBackend(store, env.rank, env.world_size, env.timeout,
                                               env.local_rank)
                : comm_detail::MakeGlooBackend(store, env.rank, env.world_size, env.timeout);
  } catch (const std::exception& e) {
    throw CommError(
        "Comm::Init: building the " + std::string(nccl ? "nccl" : "gloo") +
        " process group failed on rank " + std::to_string(env.rank) + " of " +
        std::to_string(env.world_size) + " (store " + env.master_addr + ":" +
        std::to_string(env.master_port) + "): " + ErrorText(e) +
        ". Check that every rank started (the other ranks' logs) and that MASTER_ADDR/MASTER_PORT "
        "reach the launcher's store; PROCESS_GROUP_TIMEOUT_SECONDS bounds the wait");
  }
}

}  // namespace

std::shared_ptr<Comm> Comm::Create(const DistEnv& env, BackendKind backend,
                                   bool group_at_world_one) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    throw CommError(
        "Comm::Init: rank " + std::to_string(env.rank) + " / world size " +
        std::to_string(env.world_size) +
        " is not a valid pair (need 0 <= rank < world_size); check RANK and WORLD_SIZE");
  }
  backend = ForcedBackend(backend);
  // Asked only when needed: a forced Gloo run never touches the CUDA driver.
  const int gpus = backend == BackendKind::kGloo ? 0 : comm_detail::CudaDeviceCount();
  if (backend == BackendKind::kAuto) {
    backend = (comm_detail::NcclCompiled() && gpus > 0) ? BackendKind::kNccl : BackendKind::kGloo;
  }
  if (backend == BackendKind::kNccl) {
    if (!comm_detail::NcclCompiled()) {
      throw CommError(
          "Comm::Init: the NCCL backend was requested but this build has no NCCL support (no "
          "CUDA toolkit with nccl.h at configure time); use TZREC_BACKEND=gloo or rebuild with "
          "TZRUN_CUDA_ROOT set");
    }
    if (env.local_rank >= gpus) {
      throw CommError("Comm::Init: the NCCL backend needs cuda:" + std::to_string(env.local_rank) +
                      " (LOCAL_RANK) but " + std::to_string(gpus) +
                      " CUDA device(s) are visible; launch at most one process per GPU "
                      "(--nproc-per-node) or use TZREC_BACKEND=gloo");
    }
    impl->device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
    comm_detail::SetCudaDevice(env.local_rank);  // as torch.cuda.set_device(LOCAL_RANK)
  }
  const bool nccl = backend == BackendKind::kNccl;
  if (env.world_size == 1 && !group_at_world_one) {
    return std::shared_ptr<Comm>(new Comm(std::move(impl)));
  }
  if (env.master_port == 0) {
    throw CommError("Comm::Init: building a process group of " + std::to_string(env.world_size) +
                    " rank(s) needs the launcher's store, but MASTER_PORT is unset or 0; launch "
                    "with tzrun (or torchrun), or use Comm::Init for a single process");
  }

  impl->backend = MakeBackend(env, nccl);
  impl->backend_name = nccl ? "nccl" : "gloo";
  return std::shared_ptr<Comm>(new Comm(std::move(impl)));
}

int Comm::Rank() const {
  return impl_->env.rank;
}
int Comm::WorldSize() const {
  return impl_->env.world_size;
}
int Comm::LocalRank() const {
  return impl_->env.local_rank;
}
int Comm::LocalWorldSize() const {
  return impl_->env.local_world_size;
}
at::Device Comm::Device() const {
  return impl_->device;
}
int Comm::CudaComputeCapabilityMajor() const {
  const at::Device d = Device();
  return d.is_cuda() ? comm_detail::CudaComputeCapabilityMajor(d.index() < 0 ? 0 : d.index()) : 0;
}

std::string Comm::BackendName() const {
  return impl_->backend_name;
}

namespace {

// c10d collectives want contiguous tensors; in-place ops on a non-contiguous tensor run on a
// contiguous copy that is copied back.
template <typename Issue>
void InPlace(at::Tensor& tensor, Issue&& issue) {
  if (tensor.is_contiguous()) {
    issue(tensor);
    return;
  }
  at::Tensor tmp = tensor.contiguous();
  issue(tmp);
  tensor.copy_(tmp);
}

}  // namespace

void Comm::AllReduceSum(at::Tensor& tensor) {
  impl_->CheckTensor("AllReduceSum", tensor);
  if (!impl_->backend) return;
  InPlace(tensor, [&](at::Tensor& t) {
    impl_->Run("AllReduceSum", [&]() {
      std::vector<at::Tensor> v{t};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      return impl_->backend->allreduce(v, opts);
    });
  });
}

void Comm::AllReduceMax(at::Tensor& tensor) {
  impl_->CheckTensor("AllReduceMax", tensor);
  if (!impl_->backend) return;
  InPlace(tensor, [&](at::Tensor& t) {
    impl_->Run("AllReduceMax", [&]() {
      std::vector<at::Tensor> v{t};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::MAX;
      return impl_->backend->allreduce(v, opts);
    });
  });
}

void Comm::Broadcast(at::Tensor& tensor, int root) {
  impl_->CheckTensor("Broadcast", tensor);
  if (root < 0 || root >= WorldSize()) {
    impl_->Usage("Broadcast", "root " + std::to_string(root) + " is not a rank in [0, " +
                                  std::to_string(WorldSize()) + ")");
  }
  if (!impl_->backend) return;
  InPlace(tensor, [&](at::Tensor& t) {
    impl_->Run("Broadcast", [&]() {
      std::vector<at::Tensor> v{t};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      return impl_->backend->broadcast(v, opts);
    });
  });
}

void Comm::Barrier() {
  if (!impl_->backend) return;
  impl_->Run("Barrier", [&]() { return impl_->backend->barrier(); });
}

at::Tensor Comm::AllGather(const at::Tensor& tensor) {
  impl_->CheckTensor("AllGather", tensor);
  if (tensor.dim() < 1) impl_->Usage("AllGather", "the input is a scalar; it needs a dim 0");
  const std::int64_t w = WorldSize();
  at::Tensor output = at::empty(Impl::Shape(w * tensor.size(0), tensor), tensor.options());
  if (!impl_->backend) {
    output.copy_(tensor);
    return output;
  }
  at::Tensor in = tensor.contiguous();
  impl_->Run("AllGather", [&]() { return impl_->backend->_allgather_base(output, in); });
  return output;
}

at::Tensor Comm::AllToAll(const at::Tensor& input, const std::vector<std::int64_t>& input_splits,
                          const std::vector<std::int64_t>& output_splits) {
  auto [output, work] = impl_->IssueAllToAll("AllToAll", input, input_splits, output_splits);
  if (work) impl_->Waiter("AllToAll", work)();
  return output;
}

PendingTensor Comm::AllToAllAsync(const at::Tensor& input,
                                  const std::vector<std::int64_t>& input_splits,
                                  const std::vector<std::int64_t>& output_splits) {
  auto [output, work] = impl_->IssueAllToAll("AllToAllAsync", input, input_splits, output_splits);
  if (!work) return PendingTensor(output, nullptr);
  // The c10d work object holds the input and output tensors until it completes.
  return PendingTensor(output, impl_->Waiter("AllToAllAsync", work));
}

at::Tensor Comm::ReduceScatterV(const at::Tensor& input, const std::vector<std::int64_t>& splits) {
  const std::string op = "ReduceScatterV";
  impl_->CheckTensor(op, input);
  if (input.dim() < 1) impl_->Usage(op, "the input is a scalar; it needs a dim 0");
  impl_->CheckSplits(op, "splits", splits, input.size(0));
  const int w = WorldSize();
  const std::int64_t mine = splits[static_cast<std::size_t>(Rank())];
  if (!impl_->backend) return input.clone();
  const bool equal =
      std::all_of(splits.begin(), splits.end(), [&](std::int64_t s) { return s == splits[0]; });
  if (impl_->Nccl() && equal) {
    at::Tensor output = at::empty(Impl::Shape(mine, input), input.options());
    at::Tensor in = input.contiguous();
    impl_->Run(op, [&]() { return impl_->backend->_reduce_scatter_base(output, in); });
    return output;
  }
  // Block r of every rank's input goes to rank r; rank r sums the W blocks it receives.
  const std::vector<std::int64_t> out_splits(static_cast<std::size_t>(w), mine);
  auto [blocks, work] = impl_->IssueAllToAll(op, input, splits, out_splits);
  impl_->Waiter(op, work)();
  std::vector<std::int64_t> shape = Impl::Shape(mine, input);
  shape.insert(shape.begin(), w);
  return blocks.view(shape).sum(0, /*keepdim=*/false, input.scalar_type());
}

at::Tensor Comm::AllGatherV(const at::Tensor& input, const std::vector<std::int64_t>& splits) {
  const std::string op = "AllGatherV";
  impl_->CheckTensor(op, input);
  if (input.dim() < 1) impl_->Usage(op, "the input is a scalar; it needs a dim 0");
  impl_->CheckSplits(op, "splits", splits, -1);
  const std::int64_t mine = splits[static_cast<std::size_t>(Rank())];
  if (input.size(0) != mine) {
    impl_->Usage(op, "the input has " + std::to_string(input.size(0)) + " rows but splits " +
                         JoinSplits(splits) + " gives this rank " + std::to_string(mine));
  }
  const int w = WorldSize();
  if (!impl_->backend) return input.clone();
  const bool equal =
      std::all_of(splits.begin(), splits.end(), [&](std::int64_t s) { return s == splits[0]; });
  if (equal) return AllGather(input);
  // Every rank sends its own rows to every rank.
  std::vector<at::Tensor> copies(static_cast<std::size_t>(w), input);
  const std::vector<std::int64_t> in_splits(static_cast<std::size_t>(w), mine);
  return AllToAll(at::cat(copies, 0), in_splits, splits);
}

std::string Comm::BroadcastString(const std::string& text, int root) {
  if (root < 0 || root >= WorldSize()) {
    impl_->Usage("BroadcastString", "root " + std::to_string(root) + " is not a rank in [0, " +
                                        std::to_string(WorldSize()) + ")");
  }
  if (!impl_->backend) return text;
  const at::Device dev = impl_->device;
  at::Tensor length = at::full({1}, Rank() == root ? static_cast<std::int64_t>(text.size()) : 0,
                               at::TensorOptions().dtype(at::kLong).device(dev));
  Broadcast(length, root);
  const std::int64_t n = length.cpu().item<std::int64_t>();
  if (n == 0) return "";
  at::Tensor bytes;
  if (Rank() == root) {
    bytes = at::empty({n}, at::TensorOptions().dtype(at::kByte));
    std::memcpy(bytes.data_ptr<std::uint8_t>(), text.data(), static_cast<std::size_t>(n));
    bytes = bytes.to(dev);
  } else {
    bytes = at::empty({n}, at::TensorOptions().dtype(at::kByte).device(dev));
  }
  Broadcast(bytes, root);
  bytes = bytes.cpu();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<std::uint8_t>()),
                     static_cast<std::size_t>(n));
}

}  // namespace tzrec
