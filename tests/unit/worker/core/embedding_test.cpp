// Pooled lookups, row-gradient aggregation, the fused optimizers against hand-written references,
// and chunked deterministic table initialisation.
#include "tzrec/core/embedding.hpp"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tzrec {
namespace {

using I64 = std::vector<std::int64_t>;

at::Tensor Long(const I64& v) {
  return at::tensor(v, at::kLong);
}

I64 Vec(const at::Tensor& t) {
  auto c = t.to(at::kLong).contiguous();
  return I64(c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel());
}

void ExpectClose(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const auto diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs();
  const double max = diff.numel() ? diff.max().item<double>() : 0.0;
  EXPECT_LE(max, tol) << "a=" << a << "\nb=" << b;
}

// Naive reference of PooledSum: out[s] = sum_{i in bag s} w_i * weight[ids[i]].
at::Tensor NaivePooled(const at::Tensor& weight, const I64& ids, const I64& offsets,
                       const std::vector<float>& w) {
  const auto bags = static_cast<std::int64_t>(offsets.size()) - 1;
  auto out = at::zeros({bags, weight.size(1)}, at::kFloat);
  for (std::int64_t s = 0; s < bags; ++s) {
    for (std::int64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      for (std::int64_t c = 0; c < weight.size(1); ++c) {
        const float scale = w.empty() ? 1.0f : w[i];
        out[s][c] = out[s][c].item<float>() + scale * weight[ids[i]][c].item<float>();
      }
    }
  }
  return out;
}

TEST(PooledSum, MatchesNaiveLoopWithEmptyBagsAndWeights) {
  at::manual_seed(1);
  const auto weight = at::randn({7, 4});
  const I64 ids = {3, 1, 3, 6, 0, 2};
  const I64 offsets = {0, 0, 2, 2, 5, 6, 6};  // bags 0, 2, 5 empty
  const std::vector<float> w = {0.5f, -1.0f, 2.0f, 3.0f, 0.25f, 1.5f};
  ExpectClose(PooledSum(weight, Long(ids), Long(offsets), at::Tensor()),
              NaivePooled(weight, ids, offsets, {}));
  ExpectClose(PooledSum(weight, Long(ids), Long(offsets), at::tensor(w)),
              NaivePooled(weight, ids, offsets, w));
  // Empty bags pool to zeros.
  const auto out = PooledSum(weight, Long(ids), Long(offsets), at::Tensor());
  EXPECT_EQ(out[0].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(out[5].abs().sum().item<float>(), 0.0f);
}

TEST(PooledSum, NoIdsAndNoBags) {
  const auto weight = at::randn({3, 2});
  const auto none = PooledSum(weight, Long({}), Long({0, 0, 0}), at::Tensor());
  EXPECT_EQ(none.sizes(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(none.abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(PooledSum(weight, Long({}), Long({0}), at::Tensor()).sizes(),
            (std::vector<std::int64_t>{0, 2}));
  EXPECT_THROW(PooledSum(weight, Long({3}), Long({0, 1}), at::Tensor()), std::out_of_range);
  EXPECT_THROW(PooledSum(weight, Long({1}), Long({0, 1}), at::ones({2})), std::invalid_argument);
}

TEST(PooledSum, BackwardRowsAreBagGradTimesWeight) {
  const auto grad = at::arange(8, at::kFloat).view({4, 2});  // 4 bags
  const I64 offsets = {0, 2, 2, 3, 4};
  const auto rows = PooledSumBackward(grad, Long(offsets), 4, at::Tensor());
  ExpectClose(rows, at::tensor(std::vector<float>{0, 1, 0, 1, 4, 5, 6, 7}).view({4, 2}));
  const auto weighted =
      PooledSumBackward(grad, Long(offsets), 4, at::tensor(std::vector<float>{1, 2, 3, -1}));
  ExpectClose(weighted, at::tensor(std::vector<float>{0, 1, 0, 2, 12, 15, -6, -7}).view({4, 2}));
  EXPECT_EQ(PooledSumBackward(grad, Long({0, 0, 0, 0, 0}), 0, at::Tensor()).sizes(),
            (std::vector<std::int64_t>{0, 2}));
  EXPECT_THROW(PooledSumBackward(grad, Long(offsets), 5, at::Tensor()), std::invalid_argument);
}

TEST(AggregateRowGradients, SumsDuplicatesInAscendingIdOrder) {
  const auto ids = Long({3, 1, 3, 0, 1});
  const auto grads = at::tensor(std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}).view({5, 2});
  const auto [unique, summed] = AggregateRowGradients(ids, grads);
  EXPECT_EQ(Vec(unique), (I64{0, 1, 3}));
  ExpectClose(summed, at::tensor(std::vector<float>{4, 4, 7, 7, 4, 4}).view({3, 2}));
  const auto [u0, s0] = AggregateRowGradients(Long({}), at::zeros({0, 2}));
  EXPECT_EQ(u0.numel(), 0);
  EXPECT_EQ(s0.sizes(), (std::vector<std::int64_t>{0, 2}));
  EXPECT_THROW(AggregateRowGradients(ids, at::zeros({4, 2})), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Optimizers: two steps, each with duplicate ids, against a double-precision reference that
// first sums the gradients of a row over the batch.

struct Step {
  I64 ids;
  std::vector<std::vector<double>> grads;  // one row per id
};

using Table = std::vector<std::vector<double>>;

Table ToTable(const at::Tensor& t) {
  Table out(t.size(0), std::vector<double>(t.size(1)));
  auto c = t.to(at::kDouble).contiguous();
  for (std::int64_t r = 0; r < t.size(0); ++r)
    for (std::int64_t k = 0; k < t.size(1); ++k) out[r][k] = c[r][k].item<double>();
  return out;
}

Table Reference(const EmbeddingOptimizerConfig& cfg, Table w, const std::vector<Step>& steps) {
  const auto rows = w.size();
  const auto cols = w[0].size();
  Table m1(rows, std::vector<double>(cols, cfg.initial_accumulator_value));
  Table m2(rows, std::vector<double>(cols, 0.0));
  std::vector<double> s_row(rows, cfg.initial_accumulator_value);
  if (cfg.kind == EmbeddingOptimizerKind::kAdam) m1 = Table(rows, std::vector<double>(cols, 0.0));
  int t = 0;
  for (const auto& step : steps) {
    ++t;
    std::map<std::int64_t, std::vector<double>> agg;
    for (std::size_t i = 0; i < step.ids.size(); ++i) {
      auto& g = agg[step.ids[i]];
      g.resize(cols, 0.0);
      for (std::size_t k = 0; k < cols; ++k) g[k] += step.grads[i][k];
    }
    const bool rowwise = cfg.kind == EmbeddingOptimizerKind::kRowWiseAdagrad;
    const bool l2 = cfg.kind == EmbeddingOptimizerKind::kSgd ||
                    cfg.kind == EmbeddingOptimizerKind::kAdagrad ||
                    (rowwise && cfg.weight_decay_mode == WeightDecayMode::kL2);
    const double keep = rowwise && cfg.weight_decay_mode == WeightDecayMode::kDecoupled
                            ? 1 - cfg.lr * cfg.weight_decay
                            : 1.0;
    for (auto& [r, g] : agg) {
      if (l2)
        for (std::size_t k = 0; k < cols; ++k) g[k] += cfg.weight_decay * w[r][k];
      switch (cfg.kind) {
        case EmbeddingOptimizerKind::kSgd:
          for (std::size_t k = 0; k < cols; ++k) w[r][k] -= cfg.lr * g[k];
          break;
        case EmbeddingOptimizerKind::kAdagrad:
          for (std::size_t k = 0; k < cols; ++k) {
            m1[r][k] += g[k] * g[k];
            w[r][k] -= cfg.lr * g[k] / (std::sqrt(m1[r][k]) + cfg.eps);
          }
          break;
        case EmbeddingOptimizerKind::kRowWiseAdagrad: {
          double mean = 0;
          for (std::size_t k = 0; k < cols; ++k) mean += g[k] * g[k];
          s_row[r] += mean / static_cast<double>(cols);
          for (std::size_t k = 0; k < cols; ++k)
            w[r][k] = keep * w[r][k] - cfg.lr * g[k] / (std::sqrt(s_row[r]) + cfg.eps);
          break;
        }
        case EmbeddingOptimizerKind::kAdam:
          for (std::size_t k = 0; k < cols; ++k) {
            m1[r][k] = cfg.beta1 * m1[r][k] + (1 - cfg.beta1) * g[k];
            m2[r][k] = cfg.beta2 * m2[r][k] + (1 - cfg.beta2) * g[k] * g[k];
            const double mh = m1[r][k] / (1 - std::pow(cfg.beta1, t));
            const double vh = m2[r][k] / (1 - std::pow(cfg.beta2, t));
            // FBGEMM adam: decoupled weight decay inside the lr term.
            w[r][k] -= cfg.lr * (mh / (std::sqrt(vh) + cfg.eps) + cfg.weight_decay * w[r][k]);
          }
          break;
      }
    }
  }
  return w;
}

// strided: a non-contiguous weight, so Apply takes the tensor-op path instead of the row kernel.
void RunOptimizer(const EmbeddingOptimizerConfig& cfg, bool strided = false) {
  at::manual_seed(7);
  auto weight = strided ? at::randn({3, 6}).t() : at::randn({6, 3});
  const Table initial = ToTable(weight);
  const std::vector<Step> steps = {
      {{4, 1, 4, 4, 0}, {{0.5, -1, 2}, {1, 1, 1}, {-0.25, 0.5, 0.5}, {1, 0, -3}, {0.1, 0.2, 0.3}}},
      {{1, 4, 1}, {{2, -2, 0.5}, {0.3, 0.3, 0.3}, {-1, 0, 1}}},
  };
  EmbeddingOptimizerState state(cfg, 6, 3, at::kCPU);
  for (const auto& s : steps) {
    std::vector<float> flat;
    for (const auto& g : s.grads)
      for (const auto v : g) flat.push_back(static_cast<float>(v));
    auto grads = at::tensor(flat).view({static_cast<std::int64_t>(s.ids.size()), 3});
    auto [rows, summed] = AggregateRowGradients(Long(s.ids), grads);
    state.Apply(weight, rows, summed);
  }
  EXPECT_EQ(state.Step(), 2);
  const Table expected = Reference(cfg, initial, steps);
  const Table got = ToTable(weight);
  for (std::size_t r = 0; r < expected.size(); ++r)
    for (std::size_t k = 0; k < expected[r].size(); ++k)
      EXPECT_NEAR(got[r][k], expected[r][k], 2e-5) << "row " << r << " col " << k;
  // Rows 2, 3, 5 never occurred: untouched.
  for (const int r : {2, 3, 5})
    for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(got[r][k], initial[r][k]);
}

EmbeddingOptimizerConfig Cfg(EmbeddingOptimizerKind kind, double lr) {
  EmbeddingOptimizerConfig c;
  c.kind = kind;
  c.lr = lr;
  return c;
}

TEST(EmbeddingOptimizer, SgdTwoSteps) {
  RunOptimizer(Cfg(EmbeddingOptimizerKind::kSgd, 0.1));
}

TEST(EmbeddingOptimizer, SgdWithWeightDecay) {
  auto c = Cfg(EmbeddingOptimizerKind::kSgd, 0.1);
  c.weight_decay = 0.05;
  RunOptimizer(c);
}

TEST(EmbeddingOptimizer, AdagradTwoSteps) {
  auto c = Cfg(EmbeddingOptimizerKind::kAdagrad, 0.3);
  c.initial_accumulator_value = 0.1;
  RunOptimizer(c);
}

TEST(EmbeddingOptimizer, RowWiseAdagradTwoSteps) {
  RunOptimizer(Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.3));
}

TEST(EmbeddingOptimizer, AdamTwoSteps) {
  auto c = Cfg(EmbeddingOptimizerKind::kAdam, 0.05);
  c.weight_decay = 0.01;
  RunOptimizer(c);
}

TEST(EmbeddingOptimizer, AdamDecoupledWeightDecayBothPaths) {
  auto c = Cfg(EmbeddingOptimizerKind::kAdam, 0.05);
  c.weight_decay = 0.2;
  RunOptimizer(c);
  RunOptimizer(c, /*strided=*/true);
}

TEST(EmbeddingOptimizer, AdamWeightDecayByHand) {
  // w = 1, g = 0.5, lr = 0.1, wd = 0.1, t = 1: m̂ = 0.5, v̂ = 0.25, m̂/(√v̂+eps) ≈ 1;
  // FBGEMM: w -= 0.1 · (1 + 0.1 · 1) = 0.89 (L2 on g would give 0.9).
  auto c = Cfg(EmbeddingOptimizerKind::kAdam, 0.1);
  c.weight_decay = 0.1;
  EmbeddingOptimizerState state(c, 1, 1, at::kCPU);
  auto w = at::ones({1, 1});
  state.Apply(w, Long({0}), at::full({1, 1}, 0.5));
  EXPECT_NEAR(w.item<float>(), 0.89, 1e-6);
  EXPECT_NEAR(state.StateTensors()[0].second.item<float>(), 0.05, 1e-7);  // m from the raw g
}

TEST(EmbeddingOptimizer, RowWiseAdagradWeightDecayModes) {
  for (const auto mode :
       {WeightDecayMode::kNone, WeightDecayMode::kL2, WeightDecayMode::kDecoupled}) {
    auto c = Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.3);
    c.weight_decay = 0.1;
    c.weight_decay_mode = mode;
    RunOptimizer(c);
    RunOptimizer(c, /*strided=*/true);
  }
  // By hand, decoupled: w = 2, g = 1 (one column), lr = 0.5, wd = 0.1: s = 1,
  // w = (1 - 0.05)·2 - 0.5·1/1 = 1.4; kNone: 2 - 0.5 = 1.5.
  auto c = Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 0.5);
  c.weight_decay = 0.1;
  c.eps = 0;
  c.weight_decay_mode = WeightDecayMode::kDecoupled;
  EmbeddingOptimizerState dec(c, 1, 1, at::kCPU);
  auto w = at::full({1, 1}, 2.0);
  dec.Apply(w, Long({0}), at::ones({1, 1}));
  EXPECT_NEAR(w.item<float>(), 1.4, 1e-6);
  c.weight_decay_mode = WeightDecayMode::kNone;
  EmbeddingOptimizerState none(c, 1, 1, at::kCPU);
  w.fill_(2.0);
  none.Apply(w, Long({0}), at::ones({1, 1}));
  EXPECT_NEAR(w.item<float>(), 1.5, 1e-6);
}

TEST(EmbeddingOptimizer, GradientClippingClampsThePooledGradientBeforeTheRowSum) {
  // Row 1 in two bags with pooled gradients [3, -0.5] and [2, 0.2]; max_gradient 1:
  // FBGEMM clamps each pooled element first → [1, -0.5] + [1, 0.2] = [2, -0.3]; SGD lr 1.
  // (No clipping: [5, -0.3]; clamping the row sum instead: [1, -0.3].)
  auto c = Cfg(EmbeddingOptimizerKind::kSgd, 1.0);
  c.gradient_clipping = true;
  c.max_gradient = 1.0;
  const at::Tensor grad_out = at::tensor({3.0F, -0.5F, 2.0F, 0.2F}).view({2, 2});
  for (const bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "tensor path" : "row kernel");
    EmbeddingOptimizerState state(c, 4, 2, at::kCPU);
    at::Tensor w = strided ? at::zeros({2, 4}).t() : at::zeros({4, 2});
    state.ApplyPooled(w, {{Long({1, 1}), Long({0, 1, 2}), grad_out, at::Tensor()}});
    ExpectClose(w[1], at::tensor({-2.0F, 0.3F}), 1e-6);
    ExpectClose(grad_out, at::tensor({3.0F, -0.5F, 2.0F, 0.2F}).view({2, 2}), 0);  // untouched
  }
  c.gradient_clipping = false;
  EmbeddingOptimizerState off(c, 4, 2, at::kCPU);
  auto w = at::zeros({4, 2});
  off.ApplyPooled(w, {{Long({1, 1}), Long({0, 1, 2}), grad_out, at::Tensor()}});
  ExpectClose(w[1], at::tensor({-5.0F, 0.3F}), 1e-6);
}

TEST(EmbeddingOptimizer, ClipPooledGradientAndItsValidation) {
  auto c = Cfg(EmbeddingOptimizerKind::kAdagrad, 0.1);
  const at::Tensor g = at::tensor({-4.0F, 0.5F, 9.0F});
  EXPECT_TRUE(ClipPooledGradient(c, g).is_same(g));  // off: the tensor itself
  c.gradient_clipping = true;
  c.max_gradient = 2.0;
  ExpectClose(ClipPooledGradient(c, g), at::tensor({-2.0F, 0.5F, 2.0F}), 0);
  c.max_gradient = 0.0;
  EXPECT_THROW(ClipPooledGradient(c, g), std::invalid_argument);
  EXPECT_THROW(EmbeddingOptimizerState(c, 2, 2, at::kCPU), std::invalid_argument);
}

TEST(EmbeddingOptimizer, SetLearningRate) {
  EmbeddingOptimizerState s(Cfg(EmbeddingOptimizerKind::kSgd, 1.0), 2, 1, at::kCPU);
  s.SetLearningRate(0.25);
  auto w = at::zeros({2, 1});
  s.Apply(w, Long({0}), at::ones({1, 1}));
  EXPECT_NEAR(w[0].item<float>(), -0.25, 1e-7);
  EXPECT_THROW(s.SetLearningRate(-1), std::invalid_argument);
}

TEST(EmbeddingOptimizer, AggregationBeforeUpdateMattersForAdagrad) {
  // One row, gradient 1 twice in a batch: aggregated g = 2, s = 4, w -= lr * 2 / 2 = lr.
  // Two separate updates would give lr * (1/1 + 1/sqrt(2)).
  auto cfg = Cfg(EmbeddingOptimizerKind::kAdagrad, 0.5);
  EmbeddingOptimizerState state(cfg, 1, 1, at::kCPU);
  auto w = at::zeros({1, 1});
  auto [rows, grads] = AggregateRowGradients(Long({0, 0}), at::ones({2, 1}));
  state.Apply(w, rows, grads);
  EXPECT_NEAR(w.item<float>(), -0.5, 1e-6);
  EXPECT_NEAR(state.StateTensors()[0].second.item<float>(), 4.0, 1e-6);
}

TEST(EmbeddingOptimizer, StateTensorsShapesAndRestore) {
  EmbeddingOptimizerState sgd(Cfg(EmbeddingOptimizerKind::kSgd, 1), 4, 2, at::kCPU);
  EXPECT_TRUE(sgd.StateTensors().empty());
  EmbeddingOptimizerState rw(Cfg(EmbeddingOptimizerKind::kRowWiseAdagrad, 1), 4, 2, at::kCPU);
  ASSERT_EQ(rw.StateTensors().size(), 1u);
  EXPECT_EQ(rw.StateTensors()[0].second.sizes(), (std::vector<std::int64_t>{4}));

  auto cfg = Cfg(EmbeddingOptimizerKind::kAdam, 0.1);
  EmbeddingOptimizerState a(cfg, 4, 2, at::kCPU);
  auto w = at::ones({4, 2});
  a.Apply(w, Long({1, 3}), at::ones({2, 2}));
  a.Apply(w, Long({}), at::zeros({0, 2}));  // an empty step still counts (FBGEMM iteration)
  const auto st = a.StateTensors();
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].first, "momentum1");
  EXPECT_EQ(st[1].first, "momentum2");
  EXPECT_EQ(st[2].first, "step");
  EXPECT_EQ(st[2].second.item<std::int64_t>(), 2);
  EXPECT_NEAR(st[0].second[1][0].item<float>(), 0.1, 1e-6);

  EmbeddingOptimizerState b(cfg, 4, 2, at::kCPU);
  b.LoadStateTensors(st);
  EXPECT_EQ(b.Step(), 2);
  ExpectClose(b.StateTensors()[0].second, st[0].second, 0);
  ExpectClose(b.StateTensors()[1].second, st[1].second, 0);
  EXPECT_THROW(b.LoadStateTensors({{"momentum1", at::zeros({3, 2})}}), std::invalid_argument);
  EXPECT_THROW(sgd.LoadStateTensors({{"momentum1", at::zeros({4, 2})}}), std::invalid_argument);
}

TEST(EmbeddingOptimizer, ApplyRejectsBadRowsAndShapes) {
  EmbeddingOptimizerState s(Cfg(EmbeddingOptimizerKind::kSgd, 1), 4, 2, at::kCPU);
  auto w = at::zeros({4, 2});
  EXPECT_THROW(s.Apply(w, Long({4}), at::ones({1, 2})), std::out_of_range);
  EXPECT_THROW(s.Apply(w, Long({1}), at::ones({1, 3})), std::invalid_argument);
  auto wrong = at::zeros({5, 2});
  EXPECT_THROW(s.Apply(wrong, Long({1}), at::ones({1, 2})), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Initialisation

EmbeddingBagConfig Table1(std::int64_t rows, std::int64_t dim, const std::string& name = "t") {
  EmbeddingBagConfig c;
  c.name = name;
  c.num_embeddings = rows;
  c.embedding_dim = dim;
  c.feature_names = {"f"};
  return c;
}

TEST(InitTableSlice, SliceEqualsSliceOfWholeTableAcrossChunks) {
  const auto cfg = Table1(2 * kInitChunkRows + 700, 6);
  const auto whole = InitTableSlice(cfg, 42, 0, cfg.num_embeddings, 0, 6, at::kCPU);
  EXPECT_EQ(whole.sizes(), (std::vector<std::int64_t>{cfg.num_embeddings, 6}));
  EXPECT_EQ(whole.scalar_type(), at::kFloat);
  const struct {
    std::int64_t r0, r1, c0, c1;
  } cases[] = {
      {kInitChunkRows - 5, kInitChunkRows + 5, 0, 6},        // crosses one border
      {100, 2 * kInitChunkRows + 3, 2, 5},                   // crosses two borders, column slice
      {2 * kInitChunkRows, 2 * kInitChunkRows + 700, 3, 4},  // last (short) chunk, one column
      {0, 1, 0, 6},                                          // first row
      {7, 7, 0, 6},                                          // empty
  };
  for (const auto& c : cases) {
    const auto part = InitTableSlice(cfg, 42, c.r0, c.r1, c.c0, c.c1, at::kCPU);
    const auto ref = whole.narrow(0, c.r0, c.r1 - c.r0).narrow(1, c.c0, c.c1 - c.c0);
    ASSERT_EQ(part.sizes(), ref.sizes());
    EXPECT_TRUE(at::equal(part, ref))
        << "rows [" << c.r0 << ", " << c.r1 << ") cols [" << c.c0 << ", " << c.c1 << ")";
  }
  // Row-wise shards over 3 ranks re-assemble the whole table bit for bit.
  const std::int64_t block = (cfg.num_embeddings + 2) / 3;
  std::vector<at::Tensor> shards;
  for (int r = 0; r < 3; ++r) {
    const auto b = std::min(cfg.num_embeddings, r * block);
    const auto e = std::min(cfg.num_embeddings, (r + 1) * block);
    shards.push_back(InitTableSlice(cfg, 42, b, e, 0, 6, at::kCPU));
  }
  EXPECT_TRUE(at::equal(at::cat(shards), whole));
}

TEST(InitTableSlice, UniformInTorchRecBoundAndSeeded) {
  const auto cfg = Table1(10000, 8);
  const auto w = InitTableSlice(cfg, 1, 0, 10000, 0, 8, at::kCPU);
  const double bound = std::sqrt(1.0 / 10000);
  EXPECT_LE(w.abs().max().item<double>(), bound);
  EXPECT_GT(w.abs().max().item<double>(), 0.95 * bound);
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.02 * bound);
  // Uniform(-b, b) has std b / sqrt(3).
  EXPECT_NEAR(w.std().item<double>(), bound / std::sqrt(3.0), 0.02 * bound);
  EXPECT_TRUE(at::equal(w, InitTableSlice(cfg, 1, 0, 10000, 0, 8, at::kCPU)));
  EXPECT_FALSE(at::equal(w, InitTableSlice(cfg, 2, 0, 10000, 0, 8, at::kCPU)));
  EXPECT_FALSE(at::equal(w, InitTableSlice(Table1(10000, 8, "u"), 1, 0, 10000, 0, 8, at::kCPU)));
  // Different chunks are not copies of each other.
  EXPECT_FALSE(at::equal(w.narrow(0, 0, 10), w.narrow(0, kInitChunkRows, 10)));
}

TEST(InitTableSlice, RejectsRangesOutsideTheTable) {
  const auto cfg = Table1(10, 4);
  EXPECT_THROW(InitTableSlice(cfg, 0, 0, 11, 0, 4, at::kCPU), std::out_of_range);
  EXPECT_THROW(InitTableSlice(cfg, 0, 5, 4, 0, 4, at::kCPU), std::out_of_range);
  EXPECT_THROW(InitTableSlice(cfg, 0, 0, 10, 0, 5, at::kCPU), std::out_of_range);
  EXPECT_THROW(InitTableSlice(Table1(0, 4), 0, 0, 0, 0, 4, at::kCPU), std::invalid_argument);
}

}  // namespace
}  // namespace tzrec
