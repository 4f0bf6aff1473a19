// Table initialisation, row-gradient aggregation, the fused embedding optimizers' state and pooled
// lookups (see tzrec/core/embedding.hpp). The optimizers' update (Apply, ApplyPooled) is in
// embedding_update.cpp, the EmbeddingBagCollection in embedding_collection.cpp.
#include "tzrec/core/embedding.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "huge_pages.hpp"
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
  core_detail::AdviseHugePages(out);
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
  if (config.gradient_clipping && !(config.max_gradient > 0.0)) {
    throw std::invalid_argument(
        "EmbeddingOptimizerState: gradient_clipping needs max_gradient > 0, "
        "got " +
        std::to_string(config.max_gradient));
  }
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  // The state is as large as the shard (Adagrad, Adam) or one float per row: huge pages too.
  const auto full = [&](at::IntArrayRef sizes, double value) {
    at::Tensor t = at::empty(sizes, opts);
    core_detail::AdviseHugePages(t);
    return t.fill_(value);
  };
  switch (config.kind) {
    case EmbeddingOptimizerKind::kSgd:
      break;
    case EmbeddingOptimizerKind::kAdagrad:
      momentum1_ = full({rows, cols}, config.initial_accumulator_value);
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
      momentum1_ = blocks == 1 ? full({rows}, config.initial_accumulator_value)
                               : full({rows, blocks}, config.initial_accumulator_value);
      break;
    }
    case EmbeddingOptimizerKind::kAdam:
      if (!(config.beta1 >= 0.0 && config.beta1 < 1.0) ||
          !(config.beta2 >= 0.0 && config.beta2 < 1.0)) {
        throw std::invalid_argument("EmbeddingOptimizerState: Adam betas (" +
                                    std::to_string(config.beta1) + ", " +
                                    std::to_string(config.beta2) + ") must be in [0, 1)");
      }
      momentum1_ = full({rows, cols}, 0.0);
      momentum2_ = full({rows, cols}, 0.0);
      break;
  }
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
  if (device.is_cpu()) {  // the prefetching CPU float32 kernel (embedding_pool.cpp)
    at::Tensor out = at::empty({num_bags, cols}, weight.options());
    if (PooledSumInto(weight, ids, offsets, per_sample_weights, out)) return out;
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
}  // namespace tzrec
