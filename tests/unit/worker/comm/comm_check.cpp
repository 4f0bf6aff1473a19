// tzrec_comm_check — multi-rank checks of tzrec::comm with exact numbers. Run under the launcher:
//   tzrun --standalone --nproc-per-node=N --no-python tzrec_comm_check
// (TZREC_BACKEND=nccl on a machine with N GPUs runs the same checks on cuda:LOCAL_RANK).
// One line per check and rank: "PASS <name> rank=R" or "FAIL <name> rank=R: <what differs>".
// Exit status: 0 all passed; 1 a check failed; 2 set-up failed. The agree_* checks cover
// AgreeOnFirstError (tzrec/comm/agree.hpp).
//
// `tzrec_comm_check --mixed-allreduce` is the C++ half of comm_mixed_python: it joins a group whose
// other rank is Python (mixed_rank.py, torch.distributed with env://) and checks an all_reduce, a
// broadcast from the Python rank and a barrier, proving both build the same store chain.
// `tzrec_comm_check --force-group` builds the process group even at world 1 (Comm::InitGroup), so
// `tzrun --nproc-per-node=1` on a one-GPU machine still runs every check through NCCL.
// `tzrec_comm_check --peer-gone` (comm_check_peer_gone): ranks > 0 exit after Init; rank 0 checks
// the CommError its next collective throws.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tzrec/comm/agree.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/error.hpp"

namespace {

using tzrec::Comm;
using tzrec::CommError;
using tzrec::DenseSync;

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}

  void Run(const std::string& name, const std::function<std::string()>& body) {
    std::string problem;
    try {
      problem = body();
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    std::ostringstream line;
    if (problem.empty()) {
      line << "PASS " << name << " rank=" << rank_;
    } else {
      line << "FAIL " << name << " rank=" << rank_ << ": " << problem;
      failed_ = true;
    }
    std::cout << line.str() << std::endl;
  }

  bool Failed() const { return failed_; }

 private:
  int rank_;
  bool failed_ = false;
};

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// "" when `got` (any device) equals `want` (CPU) exactly: shape, dtype and values.
std::string Diff(const std::string& what, const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.cpu();
  if (g.sizes() == want.sizes() && g.scalar_type() == want.scalar_type() && at::equal(g, want)) {
    return "";
  }
  std::ostringstream os;
  os << what << ": got " << g.scalar_type() << g.sizes() << " " << g.flatten().to(at::kDouble)
     << " want " << want.scalar_type() << want.sizes() << " " << want.flatten().to(at::kDouble);
  return OneLine(os.str());
}

const auto kF32 = at::TensorOptions().dtype(at::kFloat);
const auto kI64 = at::TensorOptions().dtype(at::kLong);

// Rows rank `src` sends to rank `dst`: 0, 1 or 2 (uneven, some empty).
std::int64_t Rows(int src, int dst) {
  return (src + 2 * dst) % 3;
}
// A second pattern where rank 0 sends nothing at all and receives from everyone.
std::int64_t RowsRankZeroSilent(int src, int dst) {
  return src == 0 ? 0 : dst + 1;
}
float Cell(int src, int dst, std::int64_t j, std::int64_t c) {
  return static_cast<float>(src * 1000 + dst * 100 + j * 10 + c);
}

// Builds input/expected output of an all_to_all on 2-D float rows of `cols` columns.
std::string CheckAllToAll2d(Comm& comm, const std::function<std::int64_t(int, int)>& rows,
                            std::int64_t cols, bool async) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  std::vector<std::int64_t> in_splits(w), out_splits(w);
  std::int64_t in_rows = 0, out_rows = 0;
  for (int p = 0; p < w; ++p) {
    in_splits[p] = rows(r, p);
    out_splits[p] = rows(p, r);
    in_rows += in_splits[p];
    out_rows += out_splits[p];
  }
  at::Tensor input = at::empty({in_rows, cols}, kF32);
  at::Tensor want = at::empty({out_rows, cols}, kF32);
  for (std::int64_t p = 0, in_at = 0, out_at = 0; p < w; ++p) {
    for (std::int64_t j = 0; j < in_splits[p]; ++j, ++in_at) {
      for (std::int64_t c = 0; c < cols; ++c) input[in_at][c] = Cell(r, static_cast<int>(p), j, c);
    }
    for (std::int64_t j = 0; j < out_splits[p]; ++j, ++out_at) {
      for (std::int64_t c = 0; c < cols; ++c) want[out_at][c] = Cell(static_cast<int>(p), r, j, c);
    }
  }
  at::Tensor in = input.to(comm.Device());
  if (!async) return Diff("output", comm.AllToAll(in, in_splits, out_splits), want);
  // Two in flight at once, waited for in reverse order; Wait() is idempotent.
  auto first = comm.AllToAllAsync(in, in_splits, out_splits);
  auto second = comm.AllToAllAsync(in * 2, in_splits, out_splits);
  if (!first.Valid() || !second.Valid()) return "PendingTensor not valid before Wait()";
  if (auto d = Diff("second", second.Wait(), want * 2); !d.empty()) return d;
  if (auto d = Diff("first", first.Wait(), want); !d.empty()) return d;
  return Diff("first waited again", first.Wait(), want);
}

std::vector<std::int64_t> UnevenSplits(int w) {
  // (2p+1) % 3: 1, 0, 2, 1, 0, 2, ... — uneven, with a zero from world 2 on.
  std::vector<std::int64_t> s(w);
  for (int p = 0; p < w; ++p) s[p] = (2 * p + 1) % 3;
  return s;
}

std::string CheckReduceScatterV(Comm& comm, const std::vector<std::int64_t>& splits, bool one_dim) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  std::int64_t total = 0, offset = 0;
  for (int p = 0; p < w; ++p) {
    if (p < r) offset += splits[p];
    total += splits[p];
  }
  const std::int64_t cols = 2;
  const double rank_sum = w * (w - 1) / 2.0;
  if (one_dim) {
    // Rank q's row i holds q * 1000 + i; rank r gets sum_q (q * 1000 + offset + j).
    at::Tensor in = (at::arange(total, kI64) + 1000 * r).to(comm.Device());
    at::Tensor want =
        (at::arange(splits[r], kI64) + offset) * w + static_cast<std::int64_t>(1000 * rank_sum);
    return Diff("int64", comm.ReduceScatterV(in, splits), want);
  }
  // Rank q's cell (i, c) holds q * 1000 + i * 10 + c.
  at::Tensor in = (at::arange(total * cols, kF32).view({total, cols}) % cols +
                   (at::arange(total, kF32) * 10).unsqueeze(1) + 1000.0 * r)
                      .to(comm.Device());
  at::Tensor want = ((at::arange(splits[r] * cols, kF32).view({splits[r], cols}) % cols +
                      ((at::arange(splits[r], kF32) + offset) * 10).unsqueeze(1)) *
                         w +
                     1000.0 * rank_sum);
  return Diff("float", comm.ReduceScatterV(in, splits), want);
}

std::string CheckAllGatherV(Comm& comm, const std::vector<std::int64_t>& splits) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  const std::int64_t cols = 3;
  auto rows_of = [&](int p) {
    return (at::arange(splits[p] * cols, kF32).view({splits[p], cols}) + 100.0 * p);
  };
  std::vector<at::Tensor> parts;
  for (int p = 0; p < w; ++p) parts.push_back(rows_of(p));
  at::Tensor want = at::cat(parts, 0);
  return Diff("output", comm.AllGatherV(rows_of(r).to(comm.Device()), splits), want);
}

// AgreeOnFirstError (tzrec/comm/agree.hpp) over the real group: every rank gets the result, or the
// lowest failing rank's error with its class, exit code and message.
void RunAgreeChecks(Comm& comm, Checker& ck) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  ck.Run("agree_ok", [&]() -> std::string {
    const int got = tzrec::AgreeOnFirstError(comm, [&] { return 10 * r; });
    return got == 10 * r ? "" : "got " + std::to_string(got);
  });
  ck.Run("agree_strings", [&]() -> std::string {
    const auto all = tzrec::AllGatherStrings(comm, std::string(static_cast<std::size_t>(r), 'x'));
    for (int q = 0; q < w; ++q) {
      if (all[static_cast<std::size_t>(q)] != std::string(static_cast<std::size_t>(q), 'x'))
        return "rank " + std::to_string(q) + "'s string is '" + all[static_cast<std::size_t>(q)] +
               "'";
    }
    return "";
  });
  // Ranks >= 1 fail (the last with a ConfigError, the others with a CommError): every rank sees
  // rank 1's error, rebuilt with its class.
  ck.Run("agree_first_error", [&]() -> std::string {
    if (w < 2) return "";
    try {
      tzrec::AgreeOnFirstError(comm, "the step", [&] {
        if (r == w - 1 && r != 1) throw tzrec::ConfigError("config of rank " + std::to_string(r));
        if (r >= 1) throw CommError("peer of rank " + std::to_string(r));
      });
    } catch (const CommError& e) {
      const std::string want = "the step failed on rank 1: peer of rank 1";
      return e.what() == want ? "" : "message '" + std::string(e.what()) + "'";
    } catch (const std::exception& e) {
      return std::string("wrong class: ") + e.what();
    }
    return "no rank threw";
  });
  // A non-tzrec exception on the last rank: an internal error naming it, on every rank.
  ck.Run("agree_foreign_error", [&]() -> std::string {
    if (w < 2) return "";
    try {
      tzrec::AgreeOnFirstError(comm, [&] {
        if (r == w - 1) throw std::out_of_range("index 7");
        return r;
      });
    } catch (const tzrec::InternalError& e) {
      const std::string want = "rank " + std::to_string(w - 1) + ": index 7";
      if (e.ExitCode() != 1) return "exit code " + std::to_string(e.ExitCode());
      return e.what() == want ? "" : "message '" + std::string(e.what()) + "'";
    } catch (const std::exception& e) {
      return std::string("wrong class: ") + e.what();
    }
    return "no rank threw";
  });
  // The group still works after agreed errors.
  ck.Run("agree_then_collective", [&]() -> std::string {
    at::Tensor t = at::ones({1}, kI64).to(comm.Device());
    comm.AllReduceSum(t);
    return t.item<std::int64_t>() == w ? "" : "sum " + std::to_string(t.item<std::int64_t>());
  });
}

// Collectives on fixed shapes: all_reduce (sum, max, in place on a view), broadcast, barrier,
// all_gather.
void RunFixedShapeChecks(Comm& comm, Checker& ck) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  const at::Device dev = comm.Device();
  const double rank_sum = w * (w - 1) / 2.0;

  ck.Run("all_reduce_sum", [&]() -> std::string {
    at::Tensor t = (at::arange(6, kF32).view({2, 3}) * (r + 1)).to(dev);
    comm.AllReduceSum(t);
    if (auto d = Diff("float", t, at::arange(6, kF32).view({2, 3}) * (w * (w + 1) / 2.0));
        !d.empty()) {
      return d;
    }
    // A non-contiguous view is reduced in place too.
    at::Tensor base = (at::arange(6, kI64).view({2, 3}) + 10 * r).to(dev);
    at::Tensor view = base.t();
    comm.AllReduceSum(view);
    return Diff("int64 transposed view", base,
                at::arange(6, kI64).view({2, 3}) * w + static_cast<std::int64_t>(10 * rank_sum));
  });

  ck.Run("all_reduce_max", [&]() -> std::string {
    at::Tensor t = at::tensor({static_cast<double>(r), -static_cast<double>(r), 10.0 * r,
                               static_cast<double>(w - 1 - r)},
                              kF32)
                       .to(dev);
    comm.AllReduceMax(t);
    const float top = static_cast<float>(w - 1);
    if (auto d = Diff("float", t, at::tensor({top, 0.0f, 10 * top, top}, kF32)); !d.empty()) {
      return d;
    }
    at::Tensor i = at::full({3}, static_cast<std::int64_t>(r * 7 - 50), kI64).to(dev);
    comm.AllReduceMax(i);
    return Diff("int64", i, at::full({3}, static_cast<std::int64_t>((w - 1) * 7 - 50), kI64));
  });

  ck.Run("broadcast_last_rank", [&]() -> std::string {
    const int root = w - 1;
    at::Tensor want = at::arange(10, kF32).view({2, 5}) * 3 + root;
    at::Tensor t = (r == root ? want.clone() : at::full({2, 5}, -1.0f, kF32)).to(dev);
    comm.Broadcast(t, root);
    if (auto d = Diff("float", t, want); !d.empty()) return d;
    at::Tensor i = (r == root ? at::arange(4, kI64) + 77 : at::zeros({4}, kI64)).to(dev);
    comm.Broadcast(i, root);
    return Diff("int64", i, at::arange(4, kI64) + 77);
  });

  ck.Run("barrier", [&]() -> std::string {
    comm.Barrier();
    comm.Barrier();
    return "";
  });

  ck.Run("all_gather", [&]() -> std::string {
    at::Tensor in = (at::arange(6, kF32).view({2, 3}) + 100.0 * r).to(dev);
    std::vector<at::Tensor> parts;
    for (int p = 0; p < w; ++p) parts.push_back(at::arange(6, kF32).view({2, 3}) + 100.0 * p);
    return Diff("output", comm.AllGather(in), at::cat(parts, 0));
  });
}

// Collectives whose per-rank sizes differ (some zero): all_to_all (2-D, 1-D, async),
// reduce_scatter_v, all_gather_v.
void RunVariableSizeChecks(Comm& comm, Checker& ck) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  const at::Device dev = comm.Device();

  ck.Run("all_to_all_2d_uneven", [&]() { return CheckAllToAll2d(comm, Rows, 4, false); });
  ck.Run("all_to_all_2d_rank0_sends_nothing",
         [&]() { return CheckAllToAll2d(comm, RowsRankZeroSilent, 3, false); });
  ck.Run("all_to_all_2d_all_empty", [&]() {
    return CheckAllToAll2d(
        comm, [](int, int) { return std::int64_t{0}; }, 5, false);
  });

  ck.Run("all_to_all_1d_int64", [&]() -> std::string {
    std::vector<std::int64_t> in_splits(w), out_splits(w);
    std::vector<std::int64_t> in_vals, want_vals;
    for (int p = 0; p < w; ++p) {
      in_splits[p] = Rows(r, p);
      out_splits[p] = Rows(p, r);
      for (std::int64_t j = 0; j < in_splits[p]; ++j)
        in_vals.push_back(r * 1'000'000LL + p * 1000 + j);
      for (std::int64_t j = 0; j < out_splits[p]; ++j) {
        want_vals.push_back(p * 1'000'000LL + r * 1000 + j);
      }
    }
    at::Tensor in = at::tensor(in_vals, kI64).to(dev);
    at::Tensor want = at::tensor(want_vals, kI64);
    return Diff("output", comm.AllToAll(in, in_splits, out_splits), want);
  });

  ck.Run("all_to_all_async", [&]() { return CheckAllToAll2d(comm, Rows, 2, true); });

  ck.Run("reduce_scatter_v_uneven", [&]() -> std::string {
    const auto splits = UnevenSplits(w);
    if (auto d = CheckReduceScatterV(comm, splits, false); !d.empty()) return d;
    return CheckReduceScatterV(comm, splits, true);
  });
  ck.Run("reduce_scatter_v_equal",
         [&]() { return CheckReduceScatterV(comm, std::vector<std::int64_t>(w, 2), false); });
  ck.Run("reduce_scatter_v_all_zero",
         [&]() { return CheckReduceScatterV(comm, std::vector<std::int64_t>(w, 0), false); });

  ck.Run("all_gather_v_uneven", [&]() { return CheckAllGatherV(comm, UnevenSplits(w)); });
  ck.Run("all_gather_v_equal",
         [&]() { return CheckAllGatherV(comm, std::vector<std::int64_t>(w, 3)); });
}

// BroadcastString (short, empty, 1 MiB) and caller mistakes, which throw before sending.
void RunStringAndUsageChecks(Comm& comm, Checker& ck) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  const at::Device dev = comm.Device();

  ck.Run("broadcast_string", [&]() -> std::string {
    const std::string plan = "{\"plan\": \"from rank 0\", \"tables\": [1, 2, 3]}";
    std::string got = comm.BroadcastString(r == 0 ? plan : "ignored on non-root ranks", 0);
    if (got != plan) return "short string from rank 0: got '" + got + "'";
    got = comm.BroadcastString(r == w - 1 ? "" : "not empty", w - 1);
    if (!got.empty())
      return "empty string from the last rank: got " + std::to_string(got.size()) + " bytes";
    std::string big(1 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) % 251);
    got = comm.BroadcastString(r == w - 1 ? big : std::string(), w - 1);
    if (got.size() != big.size()) {
      return "1 MiB string: got " + std::to_string(got.size()) + " bytes";
    }
    if (got != big) return "1 MiB string: bytes differ";
    return "";
  });

  ck.Run("usage_errors_are_local", [&]() -> std::string {
    // Caller mistakes throw before anything is sent, so the ranks stay in step.
    at::Tensor t = at::zeros({3, 2}, kF32).to(dev);
    try {
      comm.AllToAll(t, std::vector<std::int64_t>(w + 1, 0), std::vector<std::int64_t>(w, 0));
      return "AllToAll with W+1 splits did not throw";
    } catch (const CommError& e) {
      if (std::string(e.what()).find("input_splits") == std::string::npos) {
        return std::string("message does not name input_splits: ") + e.what();
      }
    }
    try {
      comm.Broadcast(t, w);
      return "Broadcast from rank W did not throw";
    } catch (const CommError&) {
    }
    comm.Barrier();  // still in step
    return "";
  });
}

// DenseSync: BroadcastParameters from a root and AllReduceGradients (mean; a missing gradient
// counts as zero), with one-parameter buckets and with the default bucket size.
std::string CheckDenseSync(Comm& comm) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  const at::Device dev = comm.Device();
  // Parameters differ per rank; three float32 ones and a float64 one (its own bucket), with a
  // 24-byte bucket so every float32 parameter is a bucket of its own (or shares one).
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  std::vector<std::vector<std::int64_t>> shapes{{3, 4}, {5}, {2, 2, 2}, {1}, {3}};
  std::vector<at::TensorOptions> opts{kF32, kF32, kF32, kF32, f64};
  std::vector<at::Tensor> params;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    at::Tensor p = (at::arange(c10::multiply_integers(shapes[i]), opts[i]).view(shapes[i]) +
                    1000.0 * r + 10.0 * static_cast<double>(i))
                       .to(dev);
    p.set_requires_grad(true);
    params.push_back(p);
  }
  for (std::int64_t bucket_bytes : {std::int64_t{24}, DenseSync::kDefaultBucketBytes}) {
    const int root = bucket_bytes == 24 ? 0 : w - 1;
    DenseSync sync(std::shared_ptr<Comm>(&comm, [](Comm*) {}), params, bucket_bytes);
    sync.BroadcastParameters(root);
    for (std::size_t i = 0; i < params.size(); ++i) {
      at::Tensor want = at::arange(c10::multiply_integers(shapes[i]), opts[i]).view(shapes[i]) +
                        1000.0 * root + 10.0 * static_cast<double>(i);
      if (auto d =
              Diff("bucket_bytes " + std::to_string(bucket_bytes) + " param " + std::to_string(i) +
                       " after BroadcastParameters(" + std::to_string(root) + ")",
                   params[i].detach(), want);
          !d.empty()) {
        return d;
      }
      if (!params[i].requires_grad()) return "param lost requires_grad";
      // Next round starts from per-rank values again.
      c10::NoGradGuard ng;
      params[i].add_(1000.0 * (r - root));
    }
    // Gradients: rank q holds (q + 1) * (i + 1); param 1 has no gradient on rank 0 (counts as
    // zero), param 3 has none anywhere.
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i].mutable_grad() = at::Tensor();
      if ((i == 1 && r == 0) || i == 3) continue;
      params[i].mutable_grad() =
          at::full(shapes[i], static_cast<double>((r + 1) * (i + 1)), opts[i]).to(dev);
    }
    sync.AllReduceGradients();
    for (std::size_t i = 0; i < params.size(); ++i) {
      double sum = 0;
      for (int q = 0; q < w; ++q) {
        if ((i == 1 && q == 0) || i == 3) continue;
        sum += static_cast<double>((q + 1) * (i + 1));
      }
      const at::Tensor& g = params[i].grad();
      if (!g.defined()) return "param " + std::to_string(i) + " has no grad after the all-reduce";
      if (auto d = Diff("grad " + std::to_string(i), g, at::full(shapes[i], sum, opts[i]) / w);
          !d.empty()) {
        return d;
      }
    }
  }
  return "";
}

int RunChecks(Comm& comm) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  Checker ck(r);
  std::cout << "tzrec_comm_check rank=" << r << " world=" << w << " backend=" << comm.BackendName()
            << " device=" << comm.Device() << std::endl;

  RunFixedShapeChecks(comm, ck);
  RunVariableSizeChecks(comm, ck);
  RunStringAndUsageChecks(comm, ck);
  ck.Run("dense_sync", [&]() { return CheckDenseSync(comm); });
  RunAgreeChecks(comm, ck);
  comm.Barrier();
  return ck.Failed() ? 1 : 0;
}

// The C++ rank of comm_mixed_python (its partner: mixed_rank.py).
int RunMixed(Comm& comm) {
  const int r = comm.Rank();
  const int w = comm.WorldSize();
  Checker ck(r);
  std::cout << "tzrec_comm_check --mixed-allreduce rank=" << r << " world=" << w
            << " backend=" << comm.BackendName() << std::endl;
  ck.Run("mixed_all_reduce", [&]() -> std::string {
    at::Tensor t = at::arange(4, kF32) + 10.0 * (r + 1);
    comm.AllReduceSum(t);
    return Diff("sum", t, at::arange(4, kF32) * w + 10.0 * (w * (w + 1) / 2.0));
  });
  ck.Run("mixed_broadcast_from_last", [&]() -> std::string {
    at::Tensor t = r == w - 1 ? at::arange(5, kI64) * 11 : at::zeros({5}, kI64);
    comm.Broadcast(t, w - 1);
    return Diff("broadcast", t, at::arange(5, kI64) * 11);
  });
  ck.Run("mixed_barrier", [&]() -> std::string {
    comm.Barrier();
    return "";
  });
  return ck.Failed() ? 1 : 0;
}

// comm_check_peer_gone: every rank but 0 leaves right after Init; rank 0's next collective must
// fail with a CommError naming the op, the rank and the hint (and no c10 backtrace).
int RunPeerGone(Comm& comm) {
  if (comm.Rank() != 0) return 0;
  Checker ck(0);
  ck.Run("peer_gone_error", [&]() -> std::string {
    at::Tensor t = at::ones({1024}, kF32);
    try {
      for (int i = 0; i < 100; ++i) comm.AllReduceSum(t);  // the first one may still be served
    } catch (const CommError& e) {
      const std::string msg = e.what();
      std::cout << "peer_gone_error message: " << msg << std::endl;
      for (const char* part : {"Comm::AllReduceSum failed on rank 0 of ", "other ranks' logs",
                               "PROCESS_GROUP_TIMEOUT_SECONDS"}) {
        if (msg.find(part) == std::string::npos) return std::string("message lacks '") + part + "'";
      }
      if (msg.find("frame #") != std::string::npos) return "message carries a C++ backtrace";
      return "";
    }
    return "AllReduceSum did not throw with the peers gone";
  });
  return ck.Failed() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool mixed = mode == "--mixed-allreduce";
  const bool force_group = mode == "--force-group";
  if (argc > 2 || !(mode.empty() || mixed || force_group || mode == "--peer-gone")) {
    std::cerr << "usage: tzrec_comm_check [--mixed-allreduce | --peer-gone | --force-group] (run "
                 "under tzrun --no-python)\n";
    return 2;
  }
  std::shared_ptr<Comm> comm;
  try {
    const auto env = tzrec::DistEnv::FromEnvironment();
    const auto kind = mixed ? tzrec::BackendKind::kGloo : tzrec::BackendKind::kAuto;
    comm = force_group ? Comm::InitGroup(env, kind) : Comm::Init(env, kind);
  } catch (const std::exception& e) {
    std::cerr << "tzrec_comm_check: set-up failed: " << e.what() << '\n';
    return 2;
  }
  if (mode == "--peer-gone") return RunPeerGone(*comm);
  return mixed ? RunMixed(*comm) : RunChecks(*comm);
}
