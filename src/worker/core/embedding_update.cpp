// The fused embedding optimizers' update (EmbeddingOptimizerState::Apply and ApplyPooled, see
// tzrec/core/embedding.hpp): one per-row kernel for both (so sharded and unsharded tables round
// identically), vectorised with omp simd and an AVX2 clone on x86-64. The state's construction and
// checkpoint tensors are in embedding.cpp.
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "embedding_rows.hpp"
#include "shape.hpp"
#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

using core_detail::kPrefetchRows;
using core_detail::L2Decay;
using core_detail::RowUpdater;
using core_detail::RowWiseDecoupled;
using core_detail::Shape;

}  // namespace

namespace {

// Throws std::invalid_argument unless weight is [shard_rows, cols], rows an int64 1-D tensor and
// grads [rows.numel(), cols].
void CheckApplyArgs(const at::Tensor& weight, const at::Tensor& rows, const at::Tensor& grads,
                    std::int64_t shard_rows, std::int64_t cols) {
  if (!weight.defined() || weight.dim() != 2 || weight.size(0) != shard_rows ||
      weight.size(1) != cols) {
    throw std::invalid_argument("EmbeddingOptimizerState::Apply: weight has shape " +
                                Shape(weight) + " but the state was made for [" +
                                std::to_string(shard_rows) + ", " + std::to_string(cols) + "]");
  }
  if (!rows.defined() || rows.dim() != 1 || rows.scalar_type() != at::kLong) {
    throw std::invalid_argument(
        "EmbeddingOptimizerState::Apply: rows must be an int64 1-D tensor, got " + Shape(rows));
  }
  const auto u = rows.numel();
  if (!grads.defined() || grads.dim() != 2 || grads.size(0) != u || grads.size(1) != cols) {
    throw std::invalid_argument("EmbeddingOptimizerState::Apply: grads have shape " + Shape(grads) +
                                " but need [" + std::to_string(u) + ", " + std::to_string(cols) +
                                "] (one row per id in rows)");
  }
}

// The updated float32 rows `idx` of a weight by tensor ops (any device or dtype): w32 the rows'
// weights, g their gradients (L2Decay already added). Updates the optimizer state rows in place.
at::Tensor UpdatedRowsByTensors(const EmbeddingOptimizerConfig& config, std::int64_t step,
                                std::int64_t cols, const at::Tensor& idx, const at::Tensor& w32,
                                const at::Tensor& g, at::Tensor& momentum1, at::Tensor& momentum2) {
  const auto lr = config.lr;
  const auto eps = config.eps;
  switch (config.kind) {
    case EmbeddingOptimizerKind::kSgd:
      return w32 - lr * g;
    case EmbeddingOptimizerKind::kAdagrad: {
      auto s = momentum1.index_select(0, idx) + g * g;
      momentum1.index_copy_(0, idx, s);
      return w32 - lr * g / (s.sqrt() + eps);
    }
    case EmbeddingOptimizerKind::kRowWiseAdagrad: {
      if (momentum1.dim() == 2) {  // one accumulator per row and column block
        const std::int64_t blocks = momentum1.size(1);
        auto gb = g.view({g.size(0), blocks, cols / blocks});
        auto s = momentum1.index_select(0, idx) + (gb * gb).mean(2);
        momentum1.index_copy_(0, idx, s);
        const double keep = RowWiseDecoupled(config) ? 1.0 - lr * config.weight_decay : 1.0;
        return keep * w32 - (lr * gb / (s.sqrt() + eps).unsqueeze(2)).view({g.size(0), cols});
      }
      auto s = momentum1.index_select(0, idx) + (g * g).mean(1);
      momentum1.index_copy_(0, idx, s);
      if (RowWiseDecoupled(config)) {
        return (1.0 - lr * config.weight_decay) * w32 - lr * g / (s.sqrt() + eps).unsqueeze(1);
      }
      return w32 - lr * g / (s.sqrt() + eps).unsqueeze(1);
    }
    case EmbeddingOptimizerKind::kAdam: {
      const auto b1 = config.beta1;
      const auto b2 = config.beta2;
      auto m = momentum1.index_select(0, idx) * b1 + (1.0 - b1) * g;
      auto v = momentum2.index_select(0, idx) * b2 + (1.0 - b2) * g * g;
      momentum1.index_copy_(0, idx, m);
      momentum2.index_copy_(0, idx, v);
      const double t = static_cast<double>(step);
      const double c1 = 1.0 - std::pow(b1, t);
      const double c2 = 1.0 - std::pow(b2, t);
      return w32 - lr * ((m / c1) / ((v / c2).sqrt() + eps) + config.weight_decay * w32);
    }
  }
  return {};
}

}  // namespace

at::Tensor ClipPooledGradient(const EmbeddingOptimizerConfig& config, const at::Tensor& grad_out) {
  if (!config.gradient_clipping) return grad_out;
  if (!(config.max_gradient > 0.0)) {
    throw std::invalid_argument(
        "ClipPooledGradient: gradient_clipping needs max_gradient > 0, got " +
        std::to_string(config.max_gradient));
  }
  return grad_out.clamp(-config.max_gradient, config.max_gradient);
}

void EmbeddingOptimizerState::SetLearningRate(double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) {
    throw std::invalid_argument(
        "EmbeddingOptimizerState::SetLearningRate: lr must be finite and "
        ">= 0, got " +
        std::to_string(lr));
  }
  config_.lr = lr;
}

void EmbeddingOptimizerState::Apply(at::Tensor& weight, const at::Tensor& rows,
                                    const at::Tensor& grads) {
  at::NoGradGuard no_grad;
  CheckApplyArgs(weight, rows, grads, rows_, cols_);
  const auto u = rows.numel();
  ++step_;
  if (u == 0 || cols_ == 0) return;
  const auto device = weight.device();
  auto idx = rows.to(device);
  const auto [mn, mx] = at::aminmax(idx);
  const auto lo = mn.item<std::int64_t>();
  const auto hi = mx.item<std::int64_t>();
  if (lo < 0 || hi >= rows_) {
    throw std::out_of_range("EmbeddingOptimizerState::Apply: row id " +
                            std::to_string(lo < 0 ? lo : hi) + " is outside the shard's rows [0, " +
                            std::to_string(rows_) + ")");
  }
  if (weight.device().is_cpu() && weight.scalar_type() == at::kFloat && weight.is_contiguous()) {
    // The same per-row kernel as ApplyPooled, so both round identically.
    const RowUpdater update(config_, step_, weight, momentum1_, momentum2_);
    at::Tensor g = grads.to(at::kCPU, at::kFloat).contiguous().clone();
    const at::Tensor r = idx.contiguous();
    const auto* rp = r.data_ptr<std::int64_t>();
    float* gp = g.data_ptr<float>();
    at::parallel_for(0, u, 64, [&](std::int64_t begin, std::int64_t end) {
      update.UpdateRows(rp, begin, end, gp);
    });
    return;
  }
  auto w_rows = weight.index_select(0, idx);
  auto w32 = w_rows.to(at::kFloat);
  auto g = grads.to(device, at::kFloat);
  const float l2 = L2Decay(config_);
  if (l2 != 0.0F) g = g + static_cast<double>(l2) * w32;
  const at::Tensor updated =
      UpdatedRowsByTensors(config_, step_, cols_, idx, w32, g, momentum1_, momentum2_);
  weight.index_copy_(0, idx, updated.to(weight.scalar_type()));
}

namespace {

// Occurrence keys (row << 32 | occurrence index) sorted by row and, within a row, by occurrence:
// an LSD radix sort over the row bits only (the indices are already ascending and every pass is
// stable). `row_of(i)` must be in [0, rows).
template <typename RowOf>
std::vector<std::uint64_t> SortOccurrencesByRow(std::size_t count, std::int64_t rows,
                                                RowOf row_of) {
  if (count > 0xFFFFFFFFU || rows > (std::int64_t{1} << 31)) {
    throw std::length_error("EmbeddingOptimizerState::ApplyPooled: " + std::to_string(count) +
                            " ids for a shard of " + std::to_string(rows) +
                            " rows exceed the 2^32 ids / 2^31 rows one update handles; use a "
                            "smaller batch or shard the table further");
  }
  std::vector<std::uint64_t> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = (row_of(i) << 32U) | i;
  const auto bits = static_cast<int>(
      std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(rows - 1, 1))));
  constexpr int kDigit = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kDigit;
  std::vector<std::uint64_t> tmp(count);
  std::vector<std::size_t> hist(kBuckets);
  for (int shift = 0; shift < bits; shift += kDigit) {
    std::fill(hist.begin(), hist.end(), 0);
    const auto digit = [&](std::uint64_t k) {
      return static_cast<std::size_t>((k >> (32U + static_cast<unsigned>(shift))) & (kBuckets - 1));
    };
    for (const std::uint64_t k : keys) ++hist[digit(k)];
    std::size_t sum = 0;
    for (std::size_t& h : hist) sum += std::exchange(h, sum);
    for (const std::uint64_t k : keys) tmp[hist[digit(k)]++] = k;
    keys.swap(tmp);
  }
  return keys;
}

// The CPU float32 path of ApplyPooled applies: a contiguous [rows, cols] weight and float32
// gradients and weights.
bool PooledFastPath(const at::Tensor& weight,
                    const std::vector<EmbeddingOptimizerState::PooledGrad>& parts,
                    std::int64_t shard_rows, std::int64_t cols) {
  bool fast = weight.device().is_cpu() && weight.scalar_type() == at::kFloat &&
              weight.is_contiguous() && weight.dim() == 2 && weight.size(0) == shard_rows &&
              weight.size(1) == cols;
  for (const auto& p : parts) {
    fast = fast && p.grad_out.scalar_type() == at::kFloat &&
           (!p.weights.defined() || p.weights.scalar_type() == at::kFloat);
  }
  return fast;
}

// Any other device or dtype: the pooled gradients per id, summed per row, through Apply.
void ApplyPooledByRows(EmbeddingOptimizerState& state, at::Tensor& weight,
                       const std::vector<EmbeddingOptimizerState::PooledGrad>& parts,
                       std::int64_t cols) {
  std::vector<at::Tensor> ids;
  std::vector<at::Tensor> grads;
  for (const auto& p : parts) {
    if (p.ids.numel() == 0) continue;
    ids.push_back(p.ids);
    grads.push_back(
        PooledSumBackward(p.grad_out.contiguous(), p.offsets, p.ids.numel(), p.weights));
  }
  if (ids.empty()) {
    state.Apply(
        weight, at::empty({0}, at::TensorOptions().dtype(at::kLong).device(weight.device())),
        at::empty({0, cols}, at::TensorOptions().dtype(at::kFloat).device(weight.device())));
    return;
  }
  auto [rows, g] = AggregateRowGradients(at::cat(ids), at::cat(grads));
  state.Apply(weight, rows, g);
}

// One occurrence of a row in the pooled gradients of a step.
struct Occ {
  std::int64_t row;
  const float* grad;  // the bag's grad_out row
  float scale;
};

// Every id of `parts` as an occurrence of its row (checked against [0, shard_rows)), in part, bag
// and id order; `keep` holds the contiguous CPU copies the occurrences point into.
std::vector<Occ> CollectOccurrences(const std::vector<EmbeddingOptimizerState::PooledGrad>& parts,
                                    std::int64_t shard_rows, std::int64_t cols,
                                    std::vector<at::Tensor>& keep) {
  std::vector<Occ> occ;
  for (const auto& p : parts) {
    const std::int64_t n = p.ids.numel();
    if (n == 0) continue;
    const at::Tensor ids = keep.emplace_back(p.ids.to(at::kCPU, at::kLong).contiguous());
    const at::Tensor offs = keep.emplace_back(p.offsets.to(at::kCPU, at::kLong).contiguous());
    // grad_out may be a column slice of a wider gradient: rows need unit stride only.
    const at::Tensor g = keep.emplace_back(
        p.grad_out.dim() == 2 && p.grad_out.stride(1) == 1 ? p.grad_out : p.grad_out.contiguous());
    const std::int64_t g_stride = g.dim() == 2 ? g.stride(0) : cols;
    const at::Tensor w =
        p.weights.defined() ? keep.emplace_back(p.weights.contiguous()) : at::Tensor();
    const auto* ip = ids.data_ptr<std::int64_t>();
    const auto* op = offs.data_ptr<std::int64_t>();
    const auto* gp = g.data_ptr<float>();
    const float* wp = w.defined() ? w.data_ptr<float>() : nullptr;
    const std::int64_t bags = offs.numel() - 1;
    for (std::int64_t b = 0; b < bags; ++b) {
      for (std::int64_t i = op[b]; i < op[b + 1]; ++i) {
        if (ip[i] < 0 || ip[i] >= shard_rows) {
          throw std::out_of_range("EmbeddingOptimizerState::ApplyPooled: row id " +
                                  std::to_string(ip[i]) + " is outside the shard's rows [0, " +
                                  std::to_string(shard_rows) + ")");
        }
        occ.push_back(Occ{ip[i], gp + b * g_stride, wp != nullptr ? wp[i] : 1.0F});
      }
    }
  }
  return occ;
}

// The unique rows of sorted occurrence keys (ascending) and, for every occurrence, its row's slot
// in them and whether it is the row's first occurrence.
struct RowSlots {
  std::vector<std::int64_t> rows;
  std::vector<std::uint32_t> slot_of;  // by occurrence index
  std::vector<std::uint8_t> first;     // by occurrence index: 1 for a row's first occurrence
};

RowSlots SlotsOfSortedKeys(const std::vector<std::uint64_t>& keys) {
  RowSlots out;
  out.slot_of.resize(keys.size());
  out.first.assign(keys.size(), 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto row = static_cast<std::int64_t>(keys[i] >> 32U);
    const std::size_t occurrence = keys[i] & 0xFFFFFFFFU;
    if (out.rows.empty() || out.rows.back() != row) {
      out.rows.push_back(row);
      out.first[occurrence] = 1;  // keys are sorted by occurrence within a row
    }
    out.slot_of[occurrence] = static_cast<std::uint32_t>(out.rows.size() - 1);
  }
  return out;
}

// acc[slot, begin:end) += grad * scale for every occurrence, in occurrence order: each row sums
// its gradients in the order of the ids (as one row at a time would), while grad_out is read in
// bag order. A row's first occurrence writes 0 + grad * scale (bitwise what adding to a zeroed
// row gives, -0 included), so acc needs no zero fill. Gradient rows are prefetched kPrefetchRows
// occurrences ahead (their stride crosses a page per bag, where the hardware prefetcher stops).
void AccumulateOccurrences(const std::vector<Occ>& occ, const RowSlots& slots, std::int64_t cols,
                           std::int64_t begin, std::int64_t end, float* acc) {
  const std::size_t n = occ.size();
  const auto bytes = static_cast<std::size_t>(end - begin) * sizeof(float);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kPrefetchRows < n)
      core_detail::PrefetchBytes(occ[i + kPrefetchRows].grad + begin, bytes, false);
    const float* og = occ[i].grad;
    const float scale = occ[i].scale;
    float* g = acc + static_cast<std::int64_t>(slots.slot_of[i]) * cols;
    if (slots.first[i] != 0) {
#pragma omp simd
      for (std::int64_t c = begin; c < end; ++c) g[c] = 0.0F + og[c] * scale;
    } else {
#pragma omp simd
      for (std::int64_t c = begin; c < end; ++c) g[c] += og[c] * scale;
    }
  }
}

}  // namespace

void EmbeddingOptimizerState::ApplyPooled(at::Tensor& weight,
                                          const std::vector<PooledGrad>& parts_in) {
  at::NoGradGuard no_grad;
  std::vector<PooledGrad> clipped;
  if (config_.gradient_clipping) {
    clipped = parts_in;
    for (auto& p : clipped) p.grad_out = ClipPooledGradient(config_, p.grad_out);
  }
  const std::vector<PooledGrad>& parts = config_.gradient_clipping ? clipped : parts_in;
  if (!PooledFastPath(weight, parts, rows_, cols_)) {
    ApplyPooledByRows(*this, weight, parts, cols_);
    return;
  }
  ++step_;
  // Occurrences: (row, sequence number) sorted, so each row's gradient sums in occurrence order.
  std::vector<at::Tensor> keep;  // contiguous CPU copies alive during the update
  const std::vector<Occ> occ = CollectOccurrences(parts, rows_, cols_, keep);
  if (occ.empty() || cols_ == 0) return;
  const std::vector<std::uint64_t> keys = SortOccurrencesByRow(
      occ.size(), rows_, [&](std::size_t i) { return static_cast<std::uint64_t>(occ[i].row); });
  const RowSlots slots = SlotsOfSortedKeys(keys);
  const auto unique = static_cast<std::int64_t>(slots.rows.size());
  const std::int64_t cols = cols_;
  // Not zero-filled: every slot's first occurrence writes its columns.
  const std::unique_ptr<float[]> acc(new float[static_cast<std::size_t>(unique * cols)]);
  // Threads split the columns here (every thread reads every occurrence's own columns) and the
  // rows below: no two threads ever write the same row.
  at::parallel_for(0, cols, 16, [&](std::int64_t begin, std::int64_t end) {
    AccumulateOccurrences(occ, slots, cols, begin, end, acc.get());
  });
  const RowUpdater update_row(config_, step_, weight, momentum1_, momentum2_);
  at::parallel_for(0, unique, 64, [&](std::int64_t begin, std::int64_t end) {
    update_row.UpdateRows(slots.rows.data(), begin, end, acc.get());
  });
}

}  // namespace tzrec
