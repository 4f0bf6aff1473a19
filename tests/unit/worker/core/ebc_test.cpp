// EmbeddingBagCollection: output layout, pooling, shared tables, weighted ids, and the fused
// optimizer applied in backward, checked against a manual computation.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/equal.h>
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

#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

using I64 = std::vector<std::int64_t>;

at::Tensor Long(const I64& v) {
  return at::tensor(v, at::kLong);
}

EmbeddingBagConfig Table(const std::string& name, std::int64_t rows, std::int64_t dim,
                         std::vector<std::string> features,
                         PoolingType pooling = PoolingType::kSum) {
  EmbeddingBagConfig c;
  c.name = name;
  c.num_embeddings = rows;
  c.embedding_dim = dim;
  c.feature_names = std::move(features);
  c.pooling = pooling;
  return c;
}

EmbeddingOptimizerConfig Opt(EmbeddingOptimizerKind kind, double lr) {
  EmbeddingOptimizerConfig c;
  c.kind = kind;
  c.lr = lr;
  return c;
}

void ExpectClose(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const double max =
      a.numel() ? (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() : 0.0;
  EXPECT_LE(max, tol) << "a=" << a << "\nb=" << b;
}

// Per-feature ids of a KJT as nested vectors [sample][id].
struct Bags {
  std::vector<std::vector<std::int64_t>> ids;
  std::vector<std::vector<float>> weights;
};

Bags BagsOf(const KeyedJaggedTensor& kjt, const std::string& key) {
  const auto jt = kjt[key];
  Bags out;
  std::int64_t pos = 0;
  for (std::int64_t b = 0; b < jt.lengths.numel(); ++b) {
    const auto n = jt.lengths[b].item<std::int64_t>();
    out.ids.emplace_back();
    out.weights.emplace_back();
    for (std::int64_t i = 0; i < n; ++i, ++pos) {
      out.ids.back().push_back(jt.values[pos].item<std::int64_t>());
      out.weights.back().push_back(jt.weights.defined() ? jt.weights[pos].item<float>() : 1.0f);
    }
  }
  return out;
}

// Manual pooled lookup [B, D].
at::Tensor ManualPool(const at::Tensor& weight, const Bags& bags, bool mean) {
  const auto batch = static_cast<std::int64_t>(bags.ids.size());
  auto out = at::zeros({batch, weight.size(1)}, at::kDouble);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < bags.ids[b].size(); ++i)
      out[b] += weight[bags.ids[b][i]].to(at::kDouble) * bags.weights[b][i];
    if (mean && !bags.ids[b].empty()) out[b] /= static_cast<double>(bags.ids[b].size());
  }
  return out;
}

// keys deliberately not in the EBC's order, plus an unused key.
KeyedJaggedTensor Batch() {
  // B = 3. j: [1, 1], [], [7]; u: [2], [9, 2, 2], []; i: [0, 3], [3], [5]; extra: [1], [1], [1]
  return KeyedJaggedTensor({"j", "u", "i", "extra"},
                           Long({1, 1, 7, 2, 9, 2, 2, 0, 3, 3, 5, 1, 1, 1}),
                           Long({2, 0, 1, 1, 3, 0, 2, 1, 1, 1, 1, 1}));
}

TEST(EmbeddingBagCollection, OutputOrderShapesAndPooling) {
  EmbeddingBagCollection ebc(
      {Table("T0", 10, 3, {"u"}), Table("T1", 8, 2, {"i", "j"}, PoolingType::kMean)},
      Opt(EmbeddingOptimizerKind::kSgd, 0.1), 5, at::kCPU);
  const auto kjt = Batch();
  const auto out = ebc.Forward(kjt);
  EXPECT_EQ(out.Keys(), (std::vector<std::string>{"u", "i", "j"}));
  EXPECT_EQ(out.LengthPerKey(), (I64{3, 2, 2}));
  EXPECT_EQ(out.Values().sizes(), (std::vector<std::int64_t>{3, 7}));
  EXPECT_TRUE(out.Values().requires_grad());
  ExpectClose(out["u"], ManualPool(ebc.Weight("T0"), BagsOf(kjt, "u"), false));
  ExpectClose(out["i"], ManualPool(ebc.Weight("T1"), BagsOf(kjt, "i"), true));
  ExpectClose(out["j"], ManualPool(ebc.Weight("T1"), BagsOf(kjt, "j"), true));
  // Empty bags pool to zeros for sum and mean.
  EXPECT_EQ(out["u"][2].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(out["j"][1].abs().sum().item<float>(), 0.0f);
  // Initial weights are InitTableSlice of the seed.
  EXPECT_TRUE(
      at::equal(ebc.Weight("T1"), InitTableSlice(ebc.Tables()[1], 5, 0, 8, 0, 2, at::kCPU)));
  EXPECT_FALSE(ebc.Weight("T0").requires_grad());
}

TEST(EmbeddingBagCollection, SumVersusMean) {
  EmbeddingBagCollection sum({Table("T", 8, 4, {"i"})}, Opt(EmbeddingOptimizerKind::kSgd, 0.1), 3,
                             at::kCPU);
  EmbeddingBagCollection mean({Table("T", 8, 4, {"i"}, PoolingType::kMean)},
                              Opt(EmbeddingOptimizerKind::kSgd, 0.1), 3, at::kCPU);
  KeyedJaggedTensor kjt({"i"}, Long({0, 3, 3, 5, 1, 2}), Long({2, 1, 0, 3}));
  const auto s = sum.Forward(kjt).Values();
  const auto m = mean.Forward(kjt).Values();
  ExpectClose(m, s / at::tensor(std::vector<float>{2, 1, 1, 3}).unsqueeze(1));
}

// Forward + a linear layer + MSE loss + backward: the tables must equal a manual Adagrad update
// of the summed per-row gradients; rows outside the batch stay as they were.
TEST(EmbeddingBagCollection, BackwardAppliesFusedAdagradLikeManualComputation) {
  auto opt = Opt(EmbeddingOptimizerKind::kAdagrad, 0.2);
  opt.initial_accumulator_value = 0.1;
  EmbeddingBagCollection ebc(
      {Table("T0", 10, 3, {"u"}), Table("T1", 8, 2, {"i", "j"}, PoolingType::kMean)}, opt, 11,
      at::kCPU);
  const auto w0 = ebc.Weight("T0").clone();
  const auto w1 = ebc.Weight("T1").clone();
  const auto kjt = Batch();
  at::manual_seed(3);
  auto lin = at::randn({7, 1}).set_requires_grad(true);
  const auto y = at::randn({3, 1});

  const auto out = ebc.Forward(kjt);
  const auto pred = out.Values().matmul(lin);
  const auto loss = (pred - y).pow(2).mean();
  loss.backward();

  // Manual gradients of the pooled output.
  const auto dpred = (2.0 * (pred.detach() - y) / 3.0).to(at::kDouble);  // [3, 1]
  const auto dout = dpred.matmul(lin.detach().to(at::kDouble).t());      // [3, 7]
  ExpectClose(lin.grad(),
              out.Values().detach().to(at::kDouble).t().matmul(dpred));  // dense grad flows too

  std::map<std::int64_t, std::vector<double>> g0;
  std::map<std::int64_t, std::vector<double>> g1;
  auto accumulate = [&](std::map<std::int64_t, std::vector<double>>& g, const Bags& bags,
                        std::int64_t col, std::int64_t dim, bool mean) {
    for (std::size_t b = 0; b < bags.ids.size(); ++b) {
      const double scale = mean ? 1.0 / static_cast<double>(bags.ids[b].size()) : 1.0;
      for (const auto id : bags.ids[b]) {
        auto& row = g[id];
        row.resize(dim, 0.0);
        for (std::int64_t k = 0; k < dim; ++k) row[k] += dout[b][col + k].item<double>() * scale;
      }
    }
  };
  accumulate(g0, BagsOf(kjt, "u"), 0, 3, false);
  accumulate(g1, BagsOf(kjt, "i"), 3, 2, true);
  accumulate(g1, BagsOf(kjt, "j"), 5, 2, true);
  auto expect_table = [&](const at::Tensor& before, const at::Tensor& after,
                          const std::map<std::int64_t, std::vector<double>>& g) {
    for (std::int64_t r = 0; r < before.size(0); ++r) {
      const auto it = g.find(r);
      for (std::int64_t k = 0; k < before.size(1); ++k) {
        const double w = before[r][k].item<double>();
        if (it == g.end()) {
          EXPECT_EQ(after[r][k].item<float>(), before[r][k].item<float>())
              << "row " << r << " not in batch";
          continue;
        }
        const double gk = it->second[k];
        const double expected = w - 0.2 * gk / (std::sqrt(0.1 + gk * gk) + 1e-8);
        EXPECT_NEAR(after[r][k].item<double>(), expected, 1e-5) << "row " << r << " col " << k;
      }
    }
  };
  expect_table(w0, ebc.Weight("T0"), g0);
  expect_table(w1, ebc.Weight("T1"), g1);
  EXPECT_EQ(g0.size(), 2u);  // ids 2 and 9 (2 occurs three times)
  EXPECT_FALSE(ebc.Weight("T0").grad().defined());
  // The next forward reads the updated rows.
  ExpectClose(ebc.Forward(kjt)["u"], ManualPool(ebc.Weight("T0"), BagsOf(kjt, "u"), false));
}

TEST(EmbeddingBagCollection, SharedTableGetsGradientsOfBothFeatures) {
  EmbeddingBagCollection ebc({Table("T", 6, 2, {"a", "b"})}, Opt(EmbeddingOptimizerKind::kSgd, 1.0),
                             1, at::kCPU);
  const auto before = ebc.Weight("T").clone();
  // a: [1, 2], [1]; b: [1], [4, 4, 4]
  KeyedJaggedTensor kjt({"a", "b"}, Long({1, 2, 1, 1, 4, 4, 4}), Long({2, 1, 1, 3}));
  const auto out = ebc.Forward(kjt);
  ExpectClose(out["a"].select(0, 1), before[1]);
  ExpectClose(out["b"].select(0, 0), before[1]);
  out.Values().sum().backward();
  // d(sum)/d row = number of occurrences over both features: row 1 x3, row 2 x1, row 4 x3.
  auto expected = before.clone();
  expected[1] -= 3;
  expected[2] -= 1;
  expected[4] -= 3;
  ExpectClose(ebc.Weight("T"), expected);
}

TEST(EmbeddingBagCollection, WeightedIdsScaleRowsAndGradients) {
  EmbeddingBagCollection ebc({Table("T", 5, 3, {"w"})}, Opt(EmbeddingOptimizerKind::kSgd, 0.5), 2,
                             at::kCPU);
  const auto before = ebc.Weight("T").clone();
  KeyedJaggedTensor kjt({"w"}, Long({0, 3, 3}), Long({2, 1}),
                        at::tensor(std::vector<float>{2.0f, -1.0f, 0.5f}));
  const auto out = ebc.Forward(kjt);
  ExpectClose(out.Values()[0], before[0] * 2 - before[3]);
  ExpectClose(out.Values()[1], before[3] * 0.5);
  out.Values().sum().backward();
  auto expected = before.clone();
  expected[0] -= 0.5 * 2.0;
  expected[3] -= 0.5 * (-1.0 + 0.5);
  ExpectClose(ebc.Weight("T"), expected);
}

TEST(EmbeddingBagCollection, AdamStepsEveryTableOncePerBackward) {
  EmbeddingBagCollection ebc({Table("A", 4, 2, {"x"}), Table("Unused", 4, 2, {})},
                             Opt(EmbeddingOptimizerKind::kAdam, 0.1), 1, at::kCPU);
  KeyedJaggedTensor kjt({"x"}, Long({1}), Long({1}));
  for (int i = 0; i < 2; ++i) {
    auto out = ebc.Forward(kjt);
    out.Values().sum().backward();
  }
  EXPECT_EQ(ebc.OptimizerState("A").Step(), 2);
  EXPECT_EQ(ebc.OptimizerState("Unused").Step(), 2);
  // First Adam step moves by ~lr * sign(g) = -0.1 per element; second again (g constant).
  auto before = InitTableSlice(ebc.Tables()[0], 1, 0, 4, 0, 2, at::kCPU);
  ExpectClose(ebc.Weight("A")[1], before[1] - 0.2, 1e-5);
  ExpectClose(ebc.Weight("A")[0], before[0], 0);
}

TEST(EmbeddingBagCollection, NoGradForwardDoesNotTrain) {
  EmbeddingBagCollection ebc({Table("T", 4, 2, {"x"})}, Opt(EmbeddingOptimizerKind::kSgd, 1), 1,
                             at::kCPU);
  at::NoGradGuard no_grad;
  const auto out = ebc.Forward(KeyedJaggedTensor({"x"}, Long({1}), Long({1})));
  EXPECT_FALSE(out.Values().requires_grad());
}

TEST(EmbeddingBagCollection, BackwardAfterMoveStillUpdatesTheTables) {
  EmbeddingBagCollection a({Table("T", 4, 2, {"x"})}, Opt(EmbeddingOptimizerKind::kSgd, 1), 1,
                           at::kCPU);
  const auto before = a.Weight("T").clone();
  auto out = a.Forward(KeyedJaggedTensor({"x"}, Long({2}), Long({1})));
  EmbeddingBagCollection b = std::move(a);
  out.Values().sum().backward();
  ExpectClose(b.Weight("T")[2], before[2] - 1);
}

TEST(EmbeddingBagCollection, Errors) {
  EmbeddingBagCollection ebc({Table("T", 10, 2, {"u"})}, Opt(EmbeddingOptimizerKind::kSgd, 1), 1,
                             at::kCPU);
  try {
    ebc.Forward(KeyedJaggedTensor({"u"}, Long({3, 10}), Long({2})));
    FAIL() << "no throw";
  } catch (const std::out_of_range& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'u'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("id 10"), std::string::npos) << msg;
    EXPECT_NE(msg.find("num_embeddings 10"), std::string::npos) << msg;
  }
  EXPECT_THROW(ebc.Forward(KeyedJaggedTensor({"u"}, Long({-1}), Long({1}))), std::out_of_range);
  EXPECT_THROW(ebc.Forward(KeyedJaggedTensor({"v"}, Long({1}), Long({1}))), std::out_of_range);
  EXPECT_THROW(ebc.Weight("nope"), std::out_of_range);
  EXPECT_THROW(EmbeddingBagCollection({Table("T", 10, 2, {"u"}), Table("T", 10, 2, {"v"})},
                                      Opt(EmbeddingOptimizerKind::kSgd, 1), 1, at::kCPU),
               std::invalid_argument);
  EXPECT_THROW(EmbeddingBagCollection({Table("T", 10, 2, {"u"}), Table("S", 10, 2, {"u"})},
                                      Opt(EmbeddingOptimizerKind::kSgd, 1), 1, at::kCPU),
               std::invalid_argument);
  EXPECT_THROW(EmbeddingBagCollection({Table("T", 0, 2, {"u"})},
                                      Opt(EmbeddingOptimizerKind::kSgd, 1), 1, at::kCPU),
               std::invalid_argument);
}

}  // namespace
}  // namespace tzrec
