// Table initialisation, row-gradient aggregation, fused embedding optimizers and pooled lookups
// (see tzrec/core/embedding.hpp). The EmbeddingBagCollection is in embedding_collection.cpp.
#include "tzrec/core/embedding.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "shape.hpp"

namespace tzrec {
namespace {

using core_detail::Shape;

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Seed of chunk `chunk` of table `name`: independent of the shard layout and world size.
std::uint64_t ChunkSeed(std::uint64_t seed, const std::string& name, std::int64_t chunk) {
  std::uint64_t name_hash = 0xCBF29CE484222325ULL;  // FNV-1a
  for (const unsigned char c : name) {
    name_hash ^= c;
    name_hash *= 0x100000001B3ULL;
  }
  std::uint64_t h = SplitMix64(seed);
  h = SplitMix64(h ^ name_hash);
  h = SplitMix64(h ^ static_cast<std::uint64_t>(chunk));
  return h;
}

void CheckIds(const at::Tensor& ids, const char* fn) {
  if (!ids.defined() || ids.dim() != 1 || ids.scalar_type() != at::kLong) {
    throw std::invalid_argument(
        std::string(fn) + ": ids must be an int64 1-D tensor, got " +
        (ids.defined() ? std::string(c10::toString(ids.scalar_type())) : "undefined") + " " +
        Shape(ids));
  }
}

void CheckOffsets(const at::Tensor& offsets, const char* fn) {
  if (!offsets.defined() || offsets.dim() != 1 || offsets.scalar_type() != at::kLong ||
      offsets.numel() < 1) {
    throw std::invalid_argument(
        std::string(fn) + ": offsets must be an int64 1-D tensor [S+1] starting at 0, got " +
        (offsets.defined() ? std::string(c10::toString(offsets.scalar_type())) : "undefined") +
        " " + Shape(offsets));
  }
}

void CheckPerSampleWeights(const at::Tensor& w, std::int64_t num_ids, const char* fn) {
  if (!w.defined()) return;
  if (w.dim() != 1 || w.numel() != num_ids || !at::isFloatingType(w.scalar_type())) {
    throw std::invalid_argument(std::string(fn) +
                                ": per_sample_weights must be a floating 1-D tensor of " +
                                std::to_string(num_ids) + " entries (one per id), got " +
                                std::string(c10::toString(w.scalar_type())) + " " + Shape(w));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Initialisation

at::Tensor InitTableSlice(const EmbeddingBagConfig& config, std::uint64_t seed,
                          std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                          std::int64_t col_end, const at::Device& device) {
  if (config.num_embeddings <= 0 || config.embedding_dim <= 0) {
    throw std::invalid_argument("InitTableSlice: table '" + config.name + "' has num_embeddings " +
                                std::to_string(config.num_embeddings) + " and embedding_dim " +
                                std::to_string(config.embedding_dim) + "; both must be > 0");
  }
  if (row_begin < 0 || row_begin > row_end || row_end > config.num_embeddings) {
    throw std::out_of_range("InitTableSlice: rows [" + std::to_string(row_begin) + ", " +
                            std::to_string(row_end) + ") are not inside table '" + config.name +
                            "' with " + std::to_string(config.num_embeddings) + " rows");
  }
  if (col_begin < 0 || col_begin > col_end || col_end > config.embedding_dim) {
    throw std::out_of_range("InitTableSlice: columns [" + std::to_string(col_begin) + ", " +
                            std::to_string(col_end) + ") are not inside table '" + config.name +
                            "' of dim " + std::to_string(config.embedding_dim));
  }
  const auto rows = row_end - row_begin;
  const auto cols = col_end - col_begin;
  auto out = at::empty({rows, cols}, at::TensorOptions().dtype(at::kFloat));
  if (rows > 0 && cols > 0) {
    const double bound = std::sqrt(1.0 / static_cast<double>(config.num_embeddings));
    const std::int64_t first_chunk = row_begin / kInitChunkRows;
    const std::int64_t last_chunk = (row_end - 1) / kInitChunkRows;
    for (std::int64_t c = first_chunk; c <= last_chunk; ++c) {
      const std::int64_t chunk_begin = c * kInitChunkRows;
      const std::int64_t chunk_rows = std::min(kInitChunkRows, config.num_embeddings - chunk_begin);
      auto gen = at::make_generator<at::CPUGeneratorImpl>(ChunkSeed(seed, config.name, c));
      auto chunk =
          at::empty({chunk_rows, config.embedding_dim}, at::TensorOptions().dtype(at::kFloat));
      chunk.uniform_(-bound, bound, gen);
      const std::int64_t take_begin = std::max(row_begin, chunk_begin);
      const std::int64_t take_end = std::min(row_end, chunk_begin + chunk_rows);
      out.narrow(0, take_begin - row_begin, take_end - take_begin)
          .copy_(chunk.narrow(0, take_begin - chunk_begin, take_end - take_begin)
                     .narrow(1, col_begin, cols));
    }
  }
  return device.is_cpu() ? out : out.to(device);
}

// ---------------------------------------------------------------------------------------------
// Gradient aggregation

std::pair<at::Tensor, at::Tensor> AggregateRowGradients(const at::Tensor& ids,
                                                        const at::Tensor& grads) {
  CheckIds(ids, "AggregateRowGradients");
  if (!grads.defined() || grads.dim() != 2 || grads.size(0) != ids.numel()) {
    throw std::invalid_argument("AggregateRowGradients: grads have shape " + Shape(grads) +
                                " but ids has " + std::to_string(ids.numel()) +
                                " entries; pass one gradient row [N, C] per id");
  }
  auto [unique, inverse, counts] = at::_unique2(ids, /*sorted=*/true, /*return_inverse=*/true,
                                                /*return_counts=*/false);
  auto summed = at::zeros({unique.numel(), grads.size(1)}, grads.options());
  if (ids.numel() > 0) summed.index_add_(0, inverse.to(ids.device()).view({-1}), grads);
  return {unique, summed};
}

// ---------------------------------------------------------------------------------------------
// Optimizer state

EmbeddingOptimizerState::EmbeddingOptimizerState(const EmbeddingOptimizerConfig& config,
                                                 std::int64_t rows, std::int64_t cols,
                                                 const at::Device& device)
    : config_(config), rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0) {
    throw std::invalid_argument("EmbeddingOptimizerState: shard shape [" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "] has a negative size");
  }
  if (!(config.lr >= 0.0) || !(config.eps >= 0.0) || !(config.weight_decay >= 0.0)) {
    throw std::invalid_argument("EmbeddingOptimizerState: lr " + std::to_string(config.lr) +
                                ", eps " + std::to_string(config.eps) + ", weight_decay " +
                                std::to_string(config.weight_decay) + " must all be >= 0");
  }
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  switch (config.kind) {
    case EmbeddingOptimizerKind::kSgd:
      break;
    case EmbeddingOptimizerKind::kAdagrad:
      momentum1_ = at::full({rows, cols}, config.initial_accumulator_value, opts);
      break;
    case EmbeddingOptimizerKind::kRowWiseAdagrad: {
      const std::int64_t block = config.rowwise_block_cols;
      if (block < 0 || (block > 0 && cols % block != 0)) {
        throw std::invalid_argument("EmbeddingOptimizerState: rowwise_block_cols " +
                                    std::to_string(block) + " does not divide the shard's " +
                                    std::to_string(cols) +
                                    " columns: use 0 (whole row) or a divisor");
      }
      const std::int64_t blocks = (block == 0 || block == cols) ? 1 : cols / block;
      momentum1_ = blocks == 1 ? at::full({rows}, config.initial_accumulator_value, opts)
                               : at::full({rows, blocks}, config.initial_accumulator_value, opts);
      break;
    }
    case EmbeddingOptimizerKind::kAdam:
      if (!(config.beta1 >= 0.0 && config.beta1 < 1.0) ||
          !(config.beta2 >= 0.0 && config.beta2 < 1.0)) {
        throw std::invalid_argument("EmbeddingOptimizerState: Adam betas (" +
                                    std::to_string(config.beta1) + ", " +
                                    std::to_string(config.beta2) + ") must be in [0, 1)");
      }
      momentum1_ = at::zeros({rows, cols}, opts);
      momentum2_ = at::zeros({rows, cols}, opts);
      break;
  }
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TZREC_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TZREC_SIMD_CLONES
#endif

// What the per-row update reads: the shard's weight and optimizer state and the step's constants.
struct RowUpdateParams {
  EmbeddingOptimizerKind kind;
  std::int64_t cols;
  float* w;
  float* m1;
  float* m2;
  std::int64_t blocks;
  float lr, eps, wd, b1, b2, c1, c2;
};

// The per-element loops vectorise (omp simd); on x86-64 an AVX2 clone runs where the CPU has it
// (no FMA: results are identical to the baseline clone, element for element).
TZREC_SIMD_CLONES void UpdateRowKernel(const RowUpdateParams& u, std::int64_t row, float* g) {
  float* w = u.w + row * u.cols;
  if (u.wd != 0.0F) {
#pragma omp simd
    for (std::int64_t c = 0; c < u.cols; ++c) g[c] += u.wd * w[c];
  }
  switch (u.kind) {
    case EmbeddingOptimizerKind::kSgd:
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) w[c] -= u.lr * g[c];
      break;
    case EmbeddingOptimizerKind::kAdagrad: {
      float* s = u.m1 + row * u.cols;
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) {
        s[c] += g[c] * g[c];
        w[c] -= u.lr * g[c] / (std::sqrt(s[c]) + u.eps);
      }
      break;
    }
    case EmbeddingOptimizerKind::kRowWiseAdagrad: {
      const std::int64_t width = u.cols / u.blocks;
      for (std::int64_t k = 0; k < u.blocks; ++k) {
        float sq = 0.0F;
        for (std::int64_t c = k * width; c < (k + 1) * width; ++c) sq += g[c] * g[c];
        float& s = u.m1[row * u.blocks + k];
        s += sq / static_cast<float>(width);
        const float denom = std::sqrt(s) + u.eps;
#pragma omp simd
        for (std::int64_t c = k * width; c < (k + 1) * width; ++c) w[c] -= u.lr * g[c] / denom;
      }
      break;
    }
    case EmbeddingOptimizerKind::kAdam: {
      float* m = u.m1 + row * u.cols;
      float* v = u.m2 + row * u.cols;
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) {
        m[c] = u.b1 * m[c] + (1.0F - u.b1) * g[c];
        v[c] = u.b2 * v[c] + (1.0F - u.b2) * g[c] * g[c];
        w[c] -= u.lr * (m[c] / u.c1) / (std::sqrt(v[c] / u.c2) + u.eps);
      }
      break;
    }
  }
}

// The fused optimizers' per-row update on CPU float32 (one implementation for Apply and
// ApplyPooled, so sharded and unsharded tables round identically). `g` is the row's summed
// gradient (cols floats; weight decay is added here).
class RowUpdater {
 public:
  RowUpdater(const EmbeddingOptimizerConfig& config, std::int64_t step, at::Tensor& weight,
             at::Tensor& m1, at::Tensor& m2)
      : p_{config.kind,
           weight.size(1),
           weight.data_ptr<float>(),
           m1.defined() ? m1.data_ptr<float>() : nullptr,
           m2.defined() ? m2.data_ptr<float>() : nullptr,
           config.kind == EmbeddingOptimizerKind::kRowWiseAdagrad && m1.defined() && m1.dim() == 2
               ? m1.size(1)
               : 1,
           static_cast<float>(config.lr),
           static_cast<float>(config.eps),
           static_cast<float>(config.weight_decay),
           static_cast<float>(config.beta1),
           static_cast<float>(config.beta2),
           static_cast<float>(1.0 - std::pow(config.beta1, static_cast<double>(step))),
           static_cast<float>(1.0 - std::pow(config.beta2, static_cast<double>(step)))} {}

  void operator()(std::int64_t row, float* g) const { UpdateRowKernel(p_, row, g); }

 private:
  RowUpdateParams p_;
};

}  // namespace

void EmbeddingOptimizerState::Apply(at::Tensor& weight, const at::Tensor& rows,
                                    const at::Tensor& grads) {
  at::NoGradGuard no_grad;
  if (!weight.defined() || weight.dim() != 2 || weight.size(0) != rows_ ||
      weight.size(1) != cols_) {
    throw std::invalid_argument("EmbeddingOptimizerState::Apply: weight has shape " +
                                Shape(weight) + " but the state was made for [" +
                                std::to_string(rows_) + ", " + std::to_string(cols_) + "]");
  }
  if (!rows.defined() || rows.dim() != 1 || rows.scalar_type() != at::kLong) {
    throw std::invalid_argument(
        "EmbeddingOptimizerState::Apply: rows must be an int64 1-D tensor, got " + Shape(rows));
  }
  const auto u = rows.numel();
  if (!grads.defined() || grads.dim() != 2 || grads.size(0) != u || grads.size(1) != cols_) {
    throw std::invalid_argument("EmbeddingOptimizerState::Apply: grads have shape " + Shape(grads) +
                                " but need [" + std::to_string(u) + ", " + std::to_string(cols_) +
                                "] (one row per id in rows)");
  }
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
      for (std::int64_t i = begin; i < end; ++i) update(rp[i], gp + i * cols_);
    });
    return;
  }
  const auto lr = config_.lr;
  const auto eps = config_.eps;
  auto w_rows = weight.index_select(0, idx);
  auto w32 = w_rows.to(at::kFloat);
  auto g = grads.to(device, at::kFloat);
  if (config_.weight_decay != 0.0) g = g + config_.weight_decay * w32;
  at::Tensor updated;
  switch (config_.kind) {
    case EmbeddingOptimizerKind::kSgd:
      updated = w32 - lr * g;
      break;
    case EmbeddingOptimizerKind::kAdagrad: {
      auto s = momentum1_.index_select(0, idx) + g * g;
      momentum1_.index_copy_(0, idx, s);
      updated = w32 - lr * g / (s.sqrt() + eps);
      break;
    }
    case EmbeddingOptimizerKind::kRowWiseAdagrad: {
      if (momentum1_.dim() == 2) {  // one accumulator per row and column block
        const std::int64_t blocks = momentum1_.size(1);
        auto gb = g.view({g.size(0), blocks, cols_ / blocks});
        auto s = momentum1_.index_select(0, idx) + (gb * gb).mean(2);
        momentum1_.index_copy_(0, idx, s);
        updated = w32 - (lr * gb / (s.sqrt() + eps).unsqueeze(2)).view({g.size(0), cols_});
        break;
      }
      auto s = momentum1_.index_select(0, idx) + (g * g).mean(1);
      momentum1_.index_copy_(0, idx, s);
      updated = w32 - lr * g / (s.sqrt() + eps).unsqueeze(1);
      break;
    }
    case EmbeddingOptimizerKind::kAdam: {
      const auto b1 = config_.beta1;
      const auto b2 = config_.beta2;
      auto m = momentum1_.index_select(0, idx) * b1 + (1.0 - b1) * g;
      auto v = momentum2_.index_select(0, idx) * b2 + (1.0 - b2) * g * g;
      momentum1_.index_copy_(0, idx, m);
      momentum2_.index_copy_(0, idx, v);
      const double t = static_cast<double>(step_);
      const double c1 = 1.0 - std::pow(b1, t);
      const double c2 = 1.0 - std::pow(b2, t);
      updated = w32 - lr * (m / c1) / ((v / c2).sqrt() + eps);
      break;
    }
  }
  weight.index_copy_(0, idx, updated.to(weight.scalar_type()));
}

std::vector<std::pair<std::string, at::Tensor>> EmbeddingOptimizerState::StateTensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  if (momentum1_.defined()) out.emplace_back("momentum1", momentum1_);
  if (momentum2_.defined()) out.emplace_back("momentum2", momentum2_);
  if (config_.kind == EmbeddingOptimizerKind::kAdam) {
    out.emplace_back("step", at::scalar_tensor(step_, at::TensorOptions().dtype(at::kLong)));
  }
  return out;
}

void EmbeddingOptimizerState::LoadStateTensors(
    const std::vector<std::pair<std::string, at::Tensor>>& state) {
  at::NoGradGuard no_grad;
  for (const auto& [name, t] : state) {
    at::Tensor* dst = nullptr;
    if (name == "momentum1") dst = &momentum1_;
    if (name == "momentum2") dst = &momentum2_;
    if (name == "step") {
      if (!t.defined() || t.numel() != 1) {
        throw std::invalid_argument(
            "EmbeddingOptimizerState::LoadStateTensors: 'step' must hold one value, got " +
            Shape(t));
      }
      step_ = t.to(at::kCPU, at::kLong).item<std::int64_t>();
      continue;
    }
    if (dst == nullptr || !dst->defined()) {
      throw std::invalid_argument("EmbeddingOptimizerState::LoadStateTensors: state '" + name +
                                  "' does not exist for "
                                  "optimizer '" +
                                  std::string(ToString(config_.kind)) +
                                  "'; load a checkpoint written with the same optimizer");
    }
    if (!t.defined() || t.sizes() != dst->sizes()) {
      throw std::invalid_argument("EmbeddingOptimizerState::LoadStateTensors: state '" + name +
                                  "' has shape " + Shape(t) + " but this shard needs " +
                                  Shape(*dst));
    }
    dst->copy_(t);
  }
}

// ---------------------------------------------------------------------------------------------
// Pooled lookups

at::Tensor PooledSum(const at::Tensor& weight, const at::Tensor& ids, const at::Tensor& offsets,
                     const at::Tensor& per_sample_weights) {
  if (!weight.defined() || weight.dim() != 2) {
    throw std::invalid_argument("PooledSum: weight must be a 2-D tensor [R, C], got " +
                                Shape(weight));
  }
  CheckIds(ids, "PooledSum");
  CheckOffsets(offsets, "PooledSum");
  CheckPerSampleWeights(per_sample_weights, ids.numel(), "PooledSum");
  const auto num_bags = offsets.numel() - 1;
  const auto cols = weight.size(1);
  const auto device = weight.device();
  if (ids.numel() > 0) {
    const auto [mn, mx] = at::aminmax(ids);
    const auto lo = mn.item<std::int64_t>();
    const auto hi = mx.item<std::int64_t>();
    if (lo < 0 || hi >= weight.size(0)) {
      throw std::out_of_range("PooledSum: id " + std::to_string(lo < 0 ? lo : hi) +
                              " is outside the table rows [0, " + std::to_string(weight.size(0)) +
                              ")");
    }
  }
  if (num_bags == 0 || cols == 0 || ids.numel() == 0) {
    return at::zeros({num_bags, cols}, weight.options());
  }
  std::optional<at::Tensor> psw;
  if (per_sample_weights.defined()) psw = per_sample_weights.to(device, weight.scalar_type());
  auto result =
      at::embedding_bag(weight, ids.to(device), offsets.to(device), /*scale_grad_by_freq=*/false,
                        /*mode=*/0, /*sparse=*/false, psw, /*include_last_offset=*/true);
  return std::get<0>(result);
}

at::Tensor PooledSumBackward(const at::Tensor& grad_out, const at::Tensor& offsets,
                             std::int64_t num_ids, const at::Tensor& per_sample_weights) {
  CheckOffsets(offsets, "PooledSumBackward");
  CheckPerSampleWeights(per_sample_weights, num_ids, "PooledSumBackward");
  const auto num_bags = offsets.numel() - 1;
  if (!grad_out.defined() || grad_out.dim() != 2 || grad_out.size(0) != num_bags) {
    throw std::invalid_argument("PooledSumBackward: grad_out has shape " + Shape(grad_out) +
                                " but offsets describe " + std::to_string(num_bags) +
                                " bags; pass [S, C] with S = offsets.numel() - 1");
  }
  if (offsets.is_cpu()) {
    const auto last = offsets[num_bags].item<std::int64_t>();
    if (last != num_ids) {
      throw std::invalid_argument("PooledSumBackward: offsets end at " + std::to_string(last) +
                                  " but num_ids is " + std::to_string(num_ids) +
                                  "; they must agree");
    }
  }
  const auto device = grad_out.device();
  if (num_ids == 0) return at::zeros({0, grad_out.size(1)}, grad_out.options());
  auto off = offsets.to(device);
  auto lengths = off.narrow(0, 1, num_bags) - off.narrow(0, 0, num_bags);
  auto bag = at::repeat_interleave(lengths,
                                   std::optional<std::int64_t>(num_ids));  // bag index of every id
  auto rows = grad_out.index_select(0, bag);
  if (per_sample_weights.defined()) {
    rows = rows * per_sample_weights.to(device, grad_out.scalar_type()).unsqueeze(1);
  }
  return rows;
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

}  // namespace

void EmbeddingOptimizerState::ApplyPooled(at::Tensor& weight,
                                          const std::vector<PooledGrad>& parts) {
  at::NoGradGuard no_grad;
  bool fast = weight.device().is_cpu() && weight.scalar_type() == at::kFloat &&
              weight.is_contiguous() && weight.dim() == 2 && weight.size(0) == rows_ &&
              weight.size(1) == cols_;
  for (const auto& p : parts) {
    fast = fast && p.grad_out.scalar_type() == at::kFloat &&
           (!p.weights.defined() || p.weights.scalar_type() == at::kFloat);
  }
  if (!fast) {
    std::vector<at::Tensor> ids;
    std::vector<at::Tensor> grads;
    for (const auto& p : parts) {
      if (p.ids.numel() == 0) continue;
      ids.push_back(p.ids);
      grads.push_back(
          PooledSumBackward(p.grad_out.contiguous(), p.offsets, p.ids.numel(), p.weights));
    }
    if (ids.empty()) {
      Apply(weight, at::empty({0}, at::TensorOptions().dtype(at::kLong).device(weight.device())),
            at::empty({0, cols_}, at::TensorOptions().dtype(at::kFloat).device(weight.device())));
      return;
    }
    auto [rows, g] = AggregateRowGradients(at::cat(ids), at::cat(grads));
    Apply(weight, rows, g);
    return;
  }
  ++step_;
  // Occurrences: (row, sequence number) sorted, so each row's gradient sums in occurrence order.
  struct Occ {
    std::int64_t row;
    const float* grad;  // the bag's grad_out row
    float scale;
  };
  std::vector<at::Tensor> keep;  // contiguous CPU copies alive during the update
  std::vector<Occ> occ;
  for (const auto& p : parts) {
    const std::int64_t n = p.ids.numel();
    if (n == 0) continue;
    const at::Tensor ids = keep.emplace_back(p.ids.to(at::kCPU, at::kLong).contiguous());
    const at::Tensor offs = keep.emplace_back(p.offsets.to(at::kCPU, at::kLong).contiguous());
    // grad_out may be a column slice of a wider gradient: rows need unit stride only.
    const at::Tensor g = keep.emplace_back(
        p.grad_out.dim() == 2 && p.grad_out.stride(1) == 1 ? p.grad_out : p.grad_out.contiguous());
    const std::int64_t g_stride = g.dim() == 2 ? g.stride(0) : cols_;
    const at::Tensor w =
        p.weights.defined() ? keep.emplace_back(p.weights.contiguous()) : at::Tensor();
    const auto* ip = ids.data_ptr<std::int64_t>();
    const auto* op = offs.data_ptr<std::int64_t>();
    const auto* gp = g.data_ptr<float>();
    const float* wp = w.defined() ? w.data_ptr<float>() : nullptr;
    const std::int64_t bags = offs.numel() - 1;
    for (std::int64_t b = 0; b < bags; ++b) {
      for (std::int64_t i = op[b]; i < op[b + 1]; ++i) {
        if (ip[i] < 0 || ip[i] >= rows_) {
          throw std::out_of_range("EmbeddingOptimizerState::ApplyPooled: row id " +
                                  std::to_string(ip[i]) + " is outside the shard's rows [0, " +
                                  std::to_string(rows_) + ")");
        }
        occ.push_back(Occ{ip[i], gp + b * g_stride, wp != nullptr ? wp[i] : 1.0F});
      }
    }
  }
  if (occ.empty() || cols_ == 0) return;
  const std::vector<std::uint64_t> keys = SortOccurrencesByRow(
      occ.size(), rows_, [&](std::size_t i) { return static_cast<std::uint64_t>(occ[i].row); });
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0 || (keys[i] >> 32U) != (keys[i - 1] >> 32U)) starts.push_back(i);
  }
  starts.push_back(keys.size());
  const auto unique = static_cast<std::int64_t>(starts.size()) - 1;
  const RowUpdater UpdateRow(config_, step_, weight, momentum1_, momentum2_);
  const std::int64_t cols = cols_;
  at::parallel_for(0, unique, 64, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> buffer(static_cast<std::size_t>(cols));
    float* g = buffer.data();
    for (std::int64_t u = begin; u < end; ++u) {
      const std::size_t first = starts[static_cast<std::size_t>(u)];
      const std::size_t last = starts[static_cast<std::size_t>(u) + 1];
      const auto row = static_cast<std::int64_t>(keys[first] >> 32U);
      std::fill(g, g + cols, 0.0F);
      for (std::size_t k = first; k < last; ++k) {
        const Occ& o = occ[keys[k] & 0xFFFFFFFFU];
        const float* og = o.grad;
        const float scale = o.scale;
#pragma omp simd
        for (std::int64_t c = 0; c < cols; ++c) g[c] += og[c] * scale;
      }
      UpdateRow(row, g);
    }
  });
}

}  // namespace tzrec
