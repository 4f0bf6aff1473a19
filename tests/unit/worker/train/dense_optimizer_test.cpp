// DenseOptimizer (src/worker/train/optim_metrics.cpp, torch.optim semantics) over one or two
// steps against values computed by hand from torch.optim's update rules:
//   SGD:     p -= lr * (g + wd p)
//   Adagrad: s += g*g (s starts at initial_accumulator_value); p -= lr * g / (sqrt(s) + eps)
//   Adam:    m = b1 m + (1-b1) g; v = b2 v + (1-b2) g*g;
//            p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tzrec/train/train.hpp"

namespace tzrec {
namespace {

// A parameter [1, 2] whose gradient is [0.5, -2].
struct Fixture {
  Parameter param{"w", at::tensor({1.0F, 2.0F}, at::kFloat).requires_grad_()};

  Fixture() { param.tensor.mutable_grad() = at::tensor({0.5F, -2.0F}, at::kFloat); }
  float At(int i) const { return param.tensor[i].item<float>(); }
};

OptimizerConfig Config(const std::string& type, double lr) {
  OptimizerConfig c;
  c.type = type;
  c.lr = lr;
  return c;
}

TEST(DenseOptimizer, SgdTwoSteps) {
  Fixture f;
  DenseOptimizer opt(Config("sgd", 0.1), {f.param});
  opt.Step();
  EXPECT_NEAR(f.At(0), 1.0 - 0.1 * 0.5, 1e-6);
  EXPECT_NEAR(f.At(1), 2.0 + 0.1 * 2.0, 1e-6);
  opt.Step();
  EXPECT_NEAR(f.At(0), 0.9, 1e-6);
  EXPECT_NEAR(f.At(1), 2.4, 1e-6);
}

TEST(DenseOptimizer, SgdWeightDecayAddsToTheGradient) {
  Fixture f;
  OptimizerConfig c = Config("sgd", 0.1);
  c.weight_decay = 0.1;
  DenseOptimizer opt(c, {f.param});
  opt.Step();
  EXPECT_NEAR(f.At(0), 1.0 - 0.1 * (0.5 + 0.1 * 1.0), 1e-6);   // 0.94
  EXPECT_NEAR(f.At(1), 2.0 - 0.1 * (-2.0 + 0.1 * 2.0), 1e-6);  // 2.18
}

TEST(DenseOptimizer, AdagradTwoSteps) {
  Fixture f;
  OptimizerConfig c = Config("adagrad", 0.1);
  c.initial_accumulator_value = 0.1;
  c.eps = 1e-10;
  DenseOptimizer opt(c, {f.param});
  opt.Step();
  // s = 0.1 + 0.25 = 0.35 and 0.1 + 4 = 4.1.
  const double p0 = 1.0 - 0.1 * 0.5 / std::sqrt(0.35);
  const double p1 = 2.0 + 0.1 * 2.0 / std::sqrt(4.1);
  EXPECT_NEAR(f.At(0), p0, 1e-6);
  EXPECT_NEAR(f.At(1), p1, 1e-6);
  opt.Step();
  // s = 0.6 and 8.1.
  EXPECT_NEAR(f.At(0), p0 - 0.1 * 0.5 / std::sqrt(0.6), 1e-6);
  EXPECT_NEAR(f.At(1), p1 + 0.1 * 2.0 / std::sqrt(8.1), 1e-6);
  const auto state = opt.StateTensors();
  ASSERT_EQ(state.size(), 2U);
  EXPECT_EQ(state[0].first, "w/sum");
  EXPECT_NEAR(state[0].second[1].item<float>(), 8.1, 1e-5);
  EXPECT_EQ(state[1].first, "step");
  EXPECT_EQ(state[1].second.item<std::int64_t>(), 2);
}

TEST(DenseOptimizer, AdamTwoSteps) {
  // With a constant gradient the bias-corrected m / sqrt(v) is sign(g): each step moves by lr.
  Fixture f;
  DenseOptimizer opt(Config("adam", 0.1), {f.param});
  opt.Step();
  EXPECT_NEAR(f.At(0), 0.9, 1e-6);
  EXPECT_NEAR(f.At(1), 2.1, 1e-6);
  // A different second gradient: m = 0.9 * 0.05 + 0.1 * 1.5 = 0.195; v = 0.999 * 0.00025 +
  // 0.001 * 2.25 = 0.00249975 (element 0).
  f.param.tensor.mutable_grad() = at::tensor({1.5F, -2.0F}, at::kFloat);
  opt.Step();
  const double c1 = 1.0 - 0.9 * 0.9;
  const double c2 = 1.0 - 0.999 * 0.999;
  const double m = 0.195;
  const double v = 0.999 * 0.00025 + 0.001 * 2.25;
  EXPECT_NEAR(f.At(0), 0.9 - 0.1 * (m / c1) / (std::sqrt(v / c2) + 1e-8), 1e-6);
  EXPECT_NEAR(f.At(1), 2.2, 1e-6);
  const auto state = opt.StateTensors();
  ASSERT_EQ(state.size(), 3U);
  EXPECT_EQ(state[0].first, "w/exp_avg");
  EXPECT_NEAR(state[0].second[0].item<float>(), m, 1e-6);
  EXPECT_EQ(state[1].first, "w/exp_avg_sq");
  EXPECT_NEAR(state[1].second[0].item<float>(), v, 1e-7);
}

TEST(DenseOptimizer, SkipsParametersWithoutGradientAndZeroGradClears) {
  Parameter frozen{"b", at::tensor({3.0F}, at::kFloat).requires_grad_()};
  Fixture f;
  DenseOptimizer opt(Config("sgd", 0.1), {f.param, frozen});
  opt.Step();
  EXPECT_FLOAT_EQ(frozen.tensor.item<float>(), 3.0F);
  opt.ZeroGrad();
  EXPECT_FLOAT_EQ(f.param.tensor.grad().abs().sum().item<float>(), 0.0F);
  opt.Step();  // zero gradient: unchanged
  EXPECT_NEAR(f.At(0), 0.95, 1e-6);
}

TEST(DenseOptimizer, RejectsSparseOnlyOptimizers) {
  Fixture f;
  try {
    DenseOptimizer opt(Config("rowwise_adagrad", 0.1), {f.param});
    FAIL() << "rowwise_adagrad accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'rowwise_adagrad' is not a dense optimizer here"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tzrec
