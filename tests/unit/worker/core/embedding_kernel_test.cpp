// The fused optimizers' CPU kernels (ApplyPooled: sorted occurrences, gradients summed in
// occurrence order, rows updated in blocks with prefetches; Apply: the same row kernel) against a
// plain one-row-at-a-time float reference of the same arithmetic: results must be bitwise equal,
// for every optimizer, with duplicate ids, weighted bags, a strided gradient, odd widths and 1 or
// 2 threads. The pooled lookup's kernel against at::embedding_bag (FBGEMM), bitwise as well.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

// One step's gradient of one row, summed in occurrence order (float), then the update as the
// header documents it, one element at a time.
struct Reference {
  EmbeddingOptimizerConfig cfg;
  std::int64_t cols;
  std::vector<float> w, m1, m2;
  std::int64_t blocks = 1;
  std::int64_t step = 0;

  void Update(std::int64_t row, std::vector<float> g) {
    const auto lr = static_cast<float>(cfg.lr);
    const auto eps = static_cast<float>(cfg.eps);
    const bool rowwise = cfg.kind == EmbeddingOptimizerKind::kRowWiseAdagrad;
    const bool l2 = cfg.kind == EmbeddingOptimizerKind::kSgd ||
                    cfg.kind == EmbeddingOptimizerKind::kAdagrad ||
                    (rowwise && cfg.weight_decay_mode == WeightDecayMode::kL2);
    const auto wd = static_cast<float>(cfg.weight_decay);
    float* wr = w.data() + row * cols;
    if (l2 && wd != 0.0F) {
      for (std::int64_t c = 0; c < cols; ++c) g[c] += wd * wr[c];
    }
    switch (cfg.kind) {
      case EmbeddingOptimizerKind::kSgd:
        for (std::int64_t c = 0; c < cols; ++c) wr[c] -= lr * g[c];
        break;
      case EmbeddingOptimizerKind::kAdagrad:
        for (std::int64_t c = 0; c < cols; ++c) {
          float& s = m1[row * cols + c];
          s += g[c] * g[c];
          wr[c] -= lr * g[c] / (std::sqrt(s) + eps);
        }
        break;
      case EmbeddingOptimizerKind::kRowWiseAdagrad: {
        const bool decoupled =
            cfg.weight_decay_mode == WeightDecayMode::kDecoupled && cfg.weight_decay != 0.0;
        const auto keep = static_cast<float>(1.0 - cfg.lr * cfg.weight_decay);
        const std::int64_t width = cols / blocks;
        for (std::int64_t k = 0; k < blocks; ++k) {
          float sq = 0.0F;
          for (std::int64_t c = k * width; c < (k + 1) * width; ++c) sq += g[c] * g[c];
          float& s = m1[row * blocks + k];
          s += sq / static_cast<float>(width);
          const float denom = std::sqrt(s) + eps;
          for (std::int64_t c = k * width; c < (k + 1) * width; ++c) {
            wr[c] = decoupled ? keep * wr[c] - lr * g[c] / denom : wr[c] - lr * g[c] / denom;
          }
        }
        break;
      }
      case EmbeddingOptimizerKind::kAdam: {
        const auto b1 = static_cast<float>(cfg.beta1);
        const auto b2 = static_cast<float>(cfg.beta2);
        const auto c1 = static_cast<float>(1.0 - std::pow(cfg.beta1, static_cast<double>(step)));
        const auto c2 = static_cast<float>(1.0 - std::pow(cfg.beta2, static_cast<double>(step)));
        for (std::int64_t c = 0; c < cols; ++c) {
          float& m = m1[row * cols + c];
          float& v = m2[row * cols + c];
          m = b1 * m + (1.0F - b1) * g[c];
          v = b2 * v + (1.0F - b2) * g[c] * g[c];
          wr[c] -= lr * ((m / c1) / (std::sqrt(v / c2) + eps) + wd * wr[c]);
        }
        break;
      }
    }
  }

  // ApplyPooled's meaning: every id's gradient (its bag's grad_out row times its weight), summed
  // per row in part, bag and id order, then each row updated once.
  void ApplyPooled(const std::vector<EmbeddingOptimizerState::PooledGrad>& parts) {
    ++step;
    std::map<std::int64_t, std::vector<float>> sums;
    for (const auto& p : parts) {
      const at::Tensor ids = p.ids.contiguous();
      const at::Tensor offs = p.offsets.contiguous();
      for (std::int64_t b = 0; b + 1 < offs.numel(); ++b) {
        for (auto i = offs[b].item<std::int64_t>(); i < offs[b + 1].item<std::int64_t>(); ++i) {
          auto& g = sums[ids[i].item<std::int64_t>()];
          g.resize(static_cast<std::size_t>(cols), 0.0F);
          const float scale = p.weights.defined() ? p.weights[i].item<float>() : 1.0F;
          for (std::int64_t c = 0; c < cols; ++c) g[c] += p.grad_out[b][c].item<float>() * scale;
        }
      }
    }
    for (auto& [row, g] : sums) Update(row, g);
  }
};

std::vector<float> Flat(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

// A step's parts: two lookups of the same table, bags of 0-3 ids from `rows` rows (duplicates
// across and within bags), per-sample weights on the second, grad_out a column slice of a wider
// gradient (row stride > cols).
std::vector<EmbeddingOptimizerState::PooledGrad> RandomParts(std::int64_t rows, std::int64_t cols,
                                                             int seed) {
  at::manual_seed(seed);
  std::vector<EmbeddingOptimizerState::PooledGrad> parts;
  for (int k = 0; k < 2; ++k) {
    const std::int64_t bags = 40;
    const at::Tensor lengths = at::randint(0, 4, {bags}, at::kLong);
    const at::Tensor offsets = at::cat({at::zeros({1}, at::kLong), lengths.cumsum(0)});
    const std::int64_t n = offsets[bags].item<std::int64_t>();
    const at::Tensor ids = at::randint(0, rows, {n}, at::kLong);
    const at::Tensor wide = at::randn({bags, cols + 3});
    parts.push_back(
        {ids, offsets, wide.narrow(1, 2, cols), k == 1 ? at::randn({n}) : at::Tensor()});
  }
  return parts;
}

void ExpectBitwise(const std::vector<float>& want, const at::Tensor& got, const std::string& what) {
  const std::vector<float> g = Flat(got);
  ASSERT_EQ(want.size(), g.size()) << what;
  std::size_t diffs = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(want[i]) != std::bit_cast<std::uint32_t>(g[i])) ++diffs;
  }
  EXPECT_EQ(diffs, 0U) << what << ": " << diffs << " of " << want.size() << " values differ";
}

// Three steps of ApplyPooled (pooled) or of Apply with per-row sums (!pooled) against Reference.
void RunAgainstReference(const EmbeddingOptimizerConfig& cfg, std::int64_t cols, int threads,
                         bool pooled) {
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(threads);
  const std::int64_t rows = 300;
  at::manual_seed(3);
  at::Tensor weight = at::randn({rows, cols});
  EmbeddingOptimizerState state(cfg, rows, cols, at::kCPU);
  const auto st = state.StateTensors();
  Reference ref{
      cfg, cols, Flat(weight), st.empty() ? std::vector<float>() : Flat(st[0].second),
      st.size() > 1 && st[1].first == "momentum2" ? Flat(st[1].second) : std::vector<float>()};
  if (!st.empty() && st[0].second.dim() == 2 &&
      cfg.kind == EmbeddingOptimizerKind::kRowWiseAdagrad) {
    ref.blocks = st[0].second.size(1);
  }
  for (int s = 0; s < 3; ++s) {
    const auto parts = RandomParts(rows, cols, 10 + s);
    if (pooled) {
      state.ApplyPooled(weight, parts);
    } else {  // the per-row sums by tensor ops, then Apply's row kernel
      std::vector<at::Tensor> ids;
      std::vector<at::Tensor> grads;
      for (const auto& p : parts) {
        ids.push_back(p.ids);
        grads.push_back(
            PooledSumBackward(p.grad_out.contiguous(), p.offsets, p.ids.numel(), p.weights));
      }
      auto [unique, summed] = AggregateRowGradients(at::cat(ids), at::cat(grads));
      state.Apply(weight, unique, summed);
    }
    ref.ApplyPooled(parts);
  }
  at::set_num_threads(saved_threads);
  const std::string what = std::string(ToString(cfg.kind)) + " cols=" + std::to_string(cols) +
                           " threads=" + std::to_string(threads) + (pooled ? " pooled" : " apply");
  ExpectBitwise(ref.w, weight, what + " weight");
  const auto after = state.StateTensors();
  if (!after.empty()) ExpectBitwise(ref.m1, after[0].second, what + " momentum1");
  if (after.size() > 1 && after[1].first == "momentum2") {
    ExpectBitwise(ref.m2, after[1].second, what + " momentum2");
  }
}

void RunAll(const EmbeddingOptimizerConfig& cfg, bool pooled = true) {
  for (const std::int64_t cols : {64, 5}) {
    for (const int threads : {1, 2}) RunAgainstReference(cfg, cols, threads, pooled);
  }
}

EmbeddingOptimizerConfig Cfg(EmbeddingOptimizerKind kind, double lr, double wd = 0.0) {
  EmbeddingOptimizerConfig c;
  c.kind = kind;
  c.lr = lr;
  c.weight_decay = wd;
  return c;
}

TEST(EmbeddingKernel, SgdBitwiseEqualsReference) {
  RunAll(Cfg(EmbeddingOptimizerKind::kSgd, 0.1, 0.01));
}

TEST(EmbeddingKernel, AdagradBitwiseEqualsReference) {
  auto c = Cfg(EmbeddingOptimizerKind::kAdagrad, 0.2, 0.01);
  c.initial_accumulator_value = 0.1;
  RunAll(c);
}

TEST(EmbeddingKernel, RowWiseAdagradBitwiseEqualsReference) {
  for (const auto mode :
       {WeightDecayMode::kNone, WeightDecayMode::kL2, WeightDecayMode::kDecoupled}) {
    auto c = Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.3, 0.05);
    c.weight_decay_mode = mode;
    RunAll(c);
  }
}

TEST(EmbeddingKernel, RowWiseAdagradColumnBlocksBitwiseEqualsReference) {
  auto c = Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.3);
  c.rowwise_block_cols = 16;
  for (const int threads : {1, 2}) RunAgainstReference(c, 64, threads, true);
}

TEST(EmbeddingKernel, AdamBitwiseEqualsReference) {
  RunAll(Cfg(EmbeddingOptimizerKind::kAdam, 0.05, 0.01));
}

TEST(EmbeddingKernel, ApplyBitwiseEqualsReference) {
  auto rowwise = Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.3, 0.05);
  rowwise.weight_decay_mode = WeightDecayMode::kL2;
  for (const auto& c :
       {Cfg(EmbeddingOptimizerKind::kSgd, 0.1, 0.01), Cfg(EmbeddingOptimizerKind::kAdagrad, 0.2),
        rowwise, Cfg(EmbeddingOptimizerKind::kAdam, 0.05, 0.01)}) {
    RunAll(c, /*pooled=*/false);
  }
}

TEST(EmbeddingKernel, PooledSumBitwiseEqualsEmbeddingBag) {
  const int saved_threads = at::get_num_threads();
  for (const int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const std::int64_t cols : {64, 5, 1}) {
      for (const bool weighted : {false, true}) {
        at::manual_seed(static_cast<std::uint64_t>(cols) * 2 + weighted);
        const at::Tensor weight = at::randn({500, cols});
        const std::int64_t bags = 700;
        const at::Tensor lengths = at::randint(0, 5, {bags}, at::kLong);
        const at::Tensor offsets = at::cat({at::zeros({1}, at::kLong), lengths.cumsum(0)});
        const std::int64_t n = offsets[bags].item<std::int64_t>();
        const at::Tensor ids = at::randint(0, 500, {n}, at::kLong);
        const at::Tensor psw = weighted ? at::randn({n}) : at::Tensor();
        const auto want = std::get<0>(
            at::embedding_bag(weight, ids, offsets, false, 0, false,
                              weighted ? std::optional<at::Tensor>(psw) : std::nullopt, true));
        const std::string what = "cols=" + std::to_string(cols) +
                                 " weighted=" + std::to_string(weighted) +
                                 " threads=" + std::to_string(threads);
        ExpectBitwise(Flat(want), PooledSum(weight, ids, offsets, psw), what);
        at::Tensor wide = at::full({bags, cols + 7}, 9.0F);
        at::Tensor slice = wide.narrow(1, 3, cols);
        ASSERT_TRUE(PooledSumInto(weight, ids, offsets, psw, slice)) << what;
        ExpectBitwise(Flat(want), slice, what + " into a column slice");
        EXPECT_EQ(wide.narrow(1, 0, 3).ne(9.0F).sum().item<std::int64_t>(), 0) << what;
      }
    }
  }
  at::set_num_threads(saved_threads);
  at::Tensor out = at::empty({1, 2});
  EXPECT_THROW(PooledSumInto(at::zeros({3, 2}), at::tensor(std::vector<std::int64_t>{3}),
                             at::tensor(std::vector<std::int64_t>{0, 1}), at::Tensor(), out),
               std::out_of_range);
  at::Tensor w = at::zeros({3, 2}, at::kDouble);
  EXPECT_FALSE(PooledSumInto(w, at::tensor(std::vector<std::int64_t>{1}),
                             at::tensor(std::vector<std::int64_t>{0, 1}), at::Tensor(), out));
}

}  // namespace
}  // namespace tzrec
