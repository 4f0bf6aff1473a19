// probe_common.hpp — shared by gloo_probe.cpp and nccl_probe.cpp (tools/gloo_probe/README in
// docs/gloo-route.md): environment of a tzrun/torchrun worker, torch's store chain, and the
// collective checks run through the c10d::Backend base class.
//
// Environment (set by tzrun/torchrun): RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// optional PROCESS_GROUP_TIMEOUT_SECONDS (default 120 here, so that a
// broken CI run fails in minutes; the training worker defaults to 1800 s like torch).
//
// Store chain, following torch 2.11's Python path (torch/distributed/rendezvous.py
// _create_c10d_store, torch/distributed/distributed_c10d.py init_process_group and
// _new_process_group_helper), with no per-attempt prefix (2.11 dropped it: the launcher hands every
// attempt a clean store, docs/design.md "Restarts get a clean workers' store"):
//   PrefixStore("<device>/", PrefixStore("0/", PrefixStore("default_pg",
//                 TCPStore client to MASTER_ADDR:MASTER_PORT)))
//
// Checks: all_reduce (sum float, max int64), all_to_all with uneven splits (alltoall_base with
// split sizes, 2-D rows, some splits empty), all_gather (list and into-tensor), broadcast from the
// last rank, reduce_scatter_tensor, barrier. One line per check and rank on stdout:
// "PASS <name> rank=R world=W" or "FAIL <name> rank=R world=W: <what differs>".
// Exit status of a probe: 0 all passed; 1 a result differed; 2 set-up failed or a collective threw
// (message on stderr says which).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>

namespace tzrun_probe {

struct ProbeEnv {
  int rank = 0;
  int world = 0;
  int local_rank = 0;  // LOCAL_RANK, 0 when unset (only the NCCL probe uses it)
  std::string master_addr;
  std::uint16_t master_port = 0;
  std::chrono::milliseconds timeout{120'000};
};

inline std::string RequireEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("environment variable ") + name +
                             " is not set; launch the probe under tzrun or torchrun");
  }
  return v;
}

inline long ParseLong(const char* name, const std::string& text, long lo, long hi) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < lo || value > hi) {
    throw std::runtime_error(std::string("environment variable ") + name + "='" + text +
                             "' is not an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
  }
  return value;
}

inline ProbeEnv ReadEnv() {
  ProbeEnv env;
  env.world = static_cast<int>(ParseLong("WORLD_SIZE", RequireEnv("WORLD_SIZE"), 1, 1 << 20));
  env.rank = static_cast<int>(ParseLong("RANK", RequireEnv("RANK"), 0, env.world - 1));
  if (const char* lr = std::getenv("LOCAL_RANK"); lr != nullptr && *lr != '\0') {
    env.local_rank = static_cast<int>(ParseLong("LOCAL_RANK", lr, 0, 1 << 20));
  }
  env.master_addr = RequireEnv("MASTER_ADDR");
  env.master_port =
      static_cast<std::uint16_t>(ParseLong("MASTER_PORT", RequireEnv("MASTER_PORT"), 1, 65535));
  if (const char* t = std::getenv("PROCESS_GROUP_TIMEOUT_SECONDS"); t != nullptr && *t != '\0') {
    env.timeout = std::chrono::seconds(ParseLong("PROCESS_GROUP_TIMEOUT_SECONDS", t, 1, 86400));
  }
  return env;
}

// Builds the store chain torch's env:// init + init_process_group build for the default group;
// `device` is "cpu" for Gloo and "cuda" for NCCL (distributed_c10d.py: PrefixStore(f"{device}/")).
// No "/worker/attempt_<N>" level, as torch 2.11: TORCHELASTIC_RESTART_COUNT differs between nodes
// after a failure restart under c10d (each agent counts its own), so a prefix made of it would
// keep the ranks of one round apart; the launcher gives every round a clean store instead.
inline c10::intrusive_ptr<c10d::Store> MakeStore(const ProbeEnv& env, const std::string& device) {
  c10d::TCPStoreOptions opts;
  opts.port = env.master_port;
  opts.isServer = false;
  opts.numWorkers = static_cast<std::size_t>(env.world);
  opts.waitWorkers = false;
  opts.timeout = env.timeout;
  auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::PrefixStore>("default_pg", tcp);
  store = c10::make_intrusive<c10d::PrefixStore>("0/", store);
  return c10::make_intrusive<c10d::PrefixStore>(device + "/", store);
}

class Checker {
 public:
  Checker(const ProbeEnv& env, c10::intrusive_ptr<c10d::Backend> backend)
      : env_(env), backend_(std::move(backend)) {}

  // Runs one named check; `body` returns "" when the result is right, else what differs.
  void Run(const std::string& name, const std::function<std::string()>& body) {
    std::string problem;
    try {
      problem = body();
    } catch (const std::exception& e) {
      std::cerr << "probe: rank " << env_.rank << ": collective " << name << " threw: " << e.what()
                << '\n';
      threw_ = true;
      problem = "threw (see stderr)";
    }
    std::ostringstream line;
    line << (problem.empty() ? "PASS " : "FAIL ") << name << " rank=" << env_.rank
         << " world=" << env_.world;
    if (!problem.empty()) {
      line << ": " << problem;
      failed_ = true;
    }
    std::cout << line.str() << std::endl;
  }

  void Wait(const c10::intrusive_ptr<c10d::Work>& work) const {
    if (!work->wait(env_.timeout)) {
      throw std::runtime_error("work did not complete within the process group timeout");
    }
  }

  // Shuts the backend down as torch's destroy_process_group does (Backend::shutdown).
  void Shutdown() {
    try {
      backend_->shutdown();
    } catch (const std::exception& e) {
      std::cerr << "probe: rank " << env_.rank << ": backend shutdown threw: " << e.what() << '\n';
      threw_ = true;
    }
  }

  int ExitCode() const { return threw_ ? 2 : (failed_ ? 1 : 0); }
  c10d::Backend& Backend() { return *backend_; }

 private:
  const ProbeEnv& env_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  bool failed_ = false;
  bool threw_ = false;
};

inline std::string Diff(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.cpu();
  const at::Tensor x = want.cpu();
  if (g.sizes() == x.sizes() && g.scalar_type() == x.scalar_type() && at::equal(g, x)) {
    return "";
  }
  std::ostringstream os;
  os << "got " << g.flatten().to(at::kDouble) << " want " << x.flatten().to(at::kDouble);
  std::string s = os.str();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// Rows rank `src` sends to rank `dst` in the all_to_all check: 0, 1 or 2, so some are empty.
inline int64_t Rows(int src, int dst) {
  return (src + 2 * dst) % 3;
}
inline constexpr int64_t kCols = 3;

// Value of column c of row j that `src` sends to `dst`.
inline float Cell(int src, int dst, int64_t j, int64_t c) {
  return static_cast<float>(src * 1000 + dst * 100 + j * 10 + c);
}

// all_to_all_base with uneven splits (Rows): every cell tells sender, receiver, row and column.
inline std::string CheckAllToAllUneven(Checker& ck, const ProbeEnv& env, const at::Device& device) {
  const int r = env.rank;
  const int w = env.world;
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  auto& pg = ck.Backend();
  std::vector<int64_t> in_splits(w), out_splits(w);
  int64_t in_rows = 0, out_rows = 0;
  for (int p = 0; p < w; ++p) {
    in_splits[p] = Rows(r, p);
    out_splits[p] = Rows(p, r);
    in_rows += in_splits[p];
    out_rows += out_splits[p];
  }
  const auto cpu_f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor input = at::empty({in_rows, kCols}, cpu_f32);
  at::Tensor want = at::empty({out_rows, kCols}, cpu_f32);
  for (int p = 0, in_at = 0, out_at = 0; p < w; ++p) {
    for (int64_t j = 0; j < in_splits[p]; ++j, ++in_at) {
      for (int64_t c = 0; c < kCols; ++c) input[in_at][c] = Cell(r, p, j, c);
    }
    for (int64_t j = 0; j < out_splits[p]; ++j, ++out_at) {
      for (int64_t c = 0; c < kCols; ++c) want[out_at][c] = Cell(p, r, j, c);
    }
  }
  input = input.to(device);
  at::Tensor output = at::full({out_rows, kCols}, -1.0f, f32);
  ck.Wait(pg.alltoall_base(output, input, out_splits, in_splits));
  return Diff(output, want);
}

// Runs every check on tensors of `device` (expected values are built on the CPU).
inline void RunAll(Checker& ck, const ProbeEnv& env, const at::Device& device) {
  const int r = env.rank;
  const int w = env.world;
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  const auto i64 = at::TensorOptions().dtype(at::kLong).device(device);
  auto& pg = ck.Backend();

  ck.Run("all_reduce", [&]() -> std::string {
    std::vector<at::Tensor> t{at::arange(8, f32) + 100.0 * r};
    ck.Wait(pg.allreduce(t));
    const double rank_sum = w * (w - 1) / 2.0;
    if (auto d = Diff(t[0], at::arange(8, f32) * w + 100.0 * rank_sum); !d.empty()) {
      return "sum: " + d;
    }
    std::vector<at::Tensor> m{at::full({5}, r * 7, i64)};
    c10d::AllreduceOptions max_opts;
    max_opts.reduceOp = c10d::ReduceOp::MAX;
    ck.Wait(pg.allreduce(m, max_opts));
    if (auto d = Diff(m[0], at::full({5}, (w - 1) * 7, i64)); !d.empty()) return "max: " + d;
    return "";
  });

  ck.Run("all_to_all_uneven", [&]() { return CheckAllToAllUneven(ck, env, device); });

  ck.Run("all_gather", [&]() -> std::string {
    std::vector<at::Tensor> in{at::arange(4, f32) + 10.0 * r};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int p = 0; p < w; ++p) out[0].push_back(at::full({4}, -1.0f, f32));
    ck.Wait(pg.allgather(out, in));
    for (int p = 0; p < w; ++p) {
      if (auto d = Diff(out[0][p], at::arange(4, f32) + 10.0 * p); !d.empty()) {
        return "from rank " + std::to_string(p) + ": " + d;
      }
    }
    return "";
  });

  ck.Run("all_gather_into_tensor", [&]() -> std::string {
    at::Tensor in = at::arange(4, f32) + 10.0 * r;
    at::Tensor out = at::full({w * 4}, -1.0f, f32);
    ck.Wait(pg._allgather_base(out, in));
    return Diff(out,
                (at::arange(4, f32).repeat({w}) + 10.0 * at::arange(w, f32).repeat_interleave(4)));
  });

  ck.Run("broadcast", [&]() -> std::string {
    const int root = w - 1;
    std::vector<at::Tensor> t{r == root ? at::arange(6, i64) * 7 + root : at::zeros({6}, i64)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    ck.Wait(pg.broadcast(t, opts));
    return Diff(t[0], at::arange(6, i64) * 7 + root);
  });

  ck.Run("reduce_scatter_tensor", [&]() -> std::string {
    // Input chunk p of rank q holds q + 4p + i; rank r receives sum_q (q + 4r + i).
    at::Tensor in = at::arange(w * 4, f32) + static_cast<float>(r);
    at::Tensor out = at::full({4}, -1.0f, f32);
    ck.Wait(pg._reduce_scatter_base(out, in));
    const double rank_sum = w * (w - 1) / 2.0;
    return Diff(out, (at::arange(4, f32) + 4.0 * r) * w + rank_sum);
  });

  ck.Run("barrier", [&]() -> std::string {
    ck.Wait(pg.barrier());
    return "";
  });
}

}  // namespace tzrun_probe
