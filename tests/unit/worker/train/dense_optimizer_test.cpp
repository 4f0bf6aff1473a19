// DenseOptimizer (src/worker/train/dense_optimizer.cpp) against the REAL torch.optim: the golden
// values in optim_golden.inc come from tests/unit/worker/train/optim_golden.py (torch 2.11's SGD,
// Adagrad, Adam, AdamW on fixed tensors; the ctest train.optim_golden_current re-runs it and fails
// when the file no longer matches the installed torch). Plus hand-computed one/two-step cases:
//   SGD:     buf = g (first step), buf = m buf + (1-d) g; p -= lr * buf
//   Adagrad: s += g*g (s starts at initial_accumulator_value); p -= lr * g / (sqrt(s) + eps)
//   Adam:    m = b1 m + (1-b1) g; v = b2 v + (1-b2) g*g;
//            p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#include "tzrec/train/dense_optimizer.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "optim_golden.inc"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

// A parameter [1, 2] whose gradient is [0.5, -2].
struct Fixture {
  Parameter param{"w", at::tensor({1.0F, 2.0F}, at::kFloat).requires_grad_()};

  Fixture() { param.tensor.mutable_grad() = at::tensor({0.5F, -2.0F}, at::kFloat); }
  float At(int i) const { return param.tensor[i].item<float>(); }
};

DenseOptimizerOptions Options(DenseOptimizerKind kind, double lr) {
  DenseOptimizerOptions o;
  o.kind = kind;
  o.lr = lr;
  return o;
}

std::map<std::string, at::Tensor> StateByName(DenseOptimizer& opt) {
  std::map<std::string, at::Tensor> out;
  for (auto& [name, tensor] : opt.StateTensors()) out[name] = tensor;
  return out;
}

TEST(DenseOptimizer, MatchesTorchOptimGolden) {
  for (const auto& c : golden::kDenseCases) {
    SCOPED_TRACE(c.name);
    std::vector<Parameter> params;
    for (std::size_t i = 0; i < golden::kDenseShapes.size(); ++i) {
      params.push_back({"p" + std::to_string(i), at::tensor(golden::kDenseInitial[i], at::kFloat)
                                                     .view(golden::kDenseShapes[i])
                                                     .requires_grad_()});
    }
    DenseOptimizer opt(c.options, params);
    for (std::size_t step = 0; step < golden::kDenseGrads.size(); ++step) {
      opt.SetLearningRate(c.options.lr * golden::kDenseLrScale[step]);
      for (std::size_t i = 0; i < params.size(); ++i) {
        const bool none =
            std::count(golden::kDenseNoGrad.begin(), golden::kDenseNoGrad.end(),
                       std::pair<int, int>(static_cast<int>(step), static_cast<int>(i))) > 0;
        params[i].tensor.mutable_grad() = none
                                              ? at::Tensor()
                                              : at::tensor(golden::kDenseGrads[step][i], at::kFloat)
                                                    .view(golden::kDenseShapes[i]);
      }
      opt.Step();
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const at::Tensor want = at::tensor(c.final_params[i], at::kFloat);
      EXPECT_TRUE(at::allclose(params[i].tensor.detach().reshape({-1}), want, 1e-6, 1e-7))
          << "param " << i << ": " << params[i].tensor << " vs torch " << want;
    }
    const auto state = StateByName(opt);
    for (const auto& [name, values] : c.state) {
      ASSERT_TRUE(state.count(name)) << "missing state " << name;
      const at::Tensor want = at::tensor(values, at::kFloat);
      EXPECT_TRUE(at::allclose(state.at(name).reshape({-1}), want, 1e-6, 1e-7))
          << name << ": " << state.at(name) << " vs torch " << want;
    }
  }
}

TEST(DenseOptimizer, TorchEasyRecDefaults) {
  const DenseOptimizerOptions o;
  EXPECT_DOUBLE_EQ(o.lr, 0.002);  // optimizer.proto lr default
  EXPECT_DOUBLE_EQ(o.momentum, 0.9);
  EXPECT_DOUBLE_EQ(o.weight_decay, 0.0);  // AdamW too (the proto's, not torch's 1e-2)
  EXPECT_DOUBLE_EQ(EffectiveEps(Options(DenseOptimizerKind::kAdagrad, 0.1)), 1e-10);
  EXPECT_DOUBLE_EQ(EffectiveEps(Options(DenseOptimizerKind::kAdam, 0.1)), 1e-8);
  EXPECT_DOUBLE_EQ(EffectiveEps(Options(DenseOptimizerKind::kAdamW, 0.1)), 1e-8);
}

TEST(DenseOptimizer, SgdMomentumTwoSteps) {
  Fixture f;
  DenseOptimizer opt(Options(DenseOptimizerKind::kSgd, 0.1), {f.param});  // momentum 0.9
  opt.Step();                                                             // buf = g
  EXPECT_NEAR(f.At(0), 1.0 - 0.1 * 0.5, 1e-6);
  EXPECT_NEAR(f.At(1), 2.0 + 0.1 * 2.0, 1e-6);
  opt.Step();  // buf = 0.9 g + g = 1.9 g
  EXPECT_NEAR(f.At(0), 0.95 - 0.1 * 0.95, 1e-6);
  EXPECT_NEAR(f.At(1), 2.2 + 0.1 * 3.8, 1e-6);
  auto state = StateByName(opt);
  EXPECT_NEAR(state.at("w/momentum_buffer")[1].item<float>(), -3.8, 1e-6);
  EXPECT_FLOAT_EQ(state.at("w/step").item<float>(), 2.0F);
}

TEST(DenseOptimizer, SgdWithoutMomentumHasNoState) {
  Fixture f;
  DenseOptimizerOptions o = Options(DenseOptimizerKind::kSgd, 0.1);
  o.momentum = 0;
  o.weight_decay = 0.1;
  DenseOptimizer opt(o, {f.param});
  opt.Step();
  EXPECT_NEAR(f.At(0), 1.0 - 0.1 * (0.5 + 0.1 * 1.0), 1e-6);   // 0.94
  EXPECT_NEAR(f.At(1), 2.0 - 0.1 * (-2.0 + 0.1 * 2.0), 1e-6);  // 2.18
  EXPECT_TRUE(opt.StateTensors().empty());
}

TEST(DenseOptimizer, AdagradTwoSteps) {
  Fixture f;
  DenseOptimizerOptions o = Options(DenseOptimizerKind::kAdagrad, 0.1);
  o.initial_accumulator_value = 0.1;
  DenseOptimizer opt(o, {f.param});
  opt.Step();
  // s = 0.1 + 0.25 = 0.35 and 0.1 + 4 = 4.1 (eps 1e-10 is below float precision here).
  const double p0 = 1.0 - 0.1 * 0.5 / std::sqrt(0.35);
  const double p1 = 2.0 + 0.1 * 2.0 / std::sqrt(4.1);
  EXPECT_NEAR(f.At(0), p0, 1e-6);
  EXPECT_NEAR(f.At(1), p1, 1e-6);
  opt.Step();
  EXPECT_NEAR(f.At(0), p0 - 0.1 * 0.5 / std::sqrt(0.6), 1e-6);
  EXPECT_NEAR(f.At(1), p1 + 0.1 * 2.0 / std::sqrt(8.1), 1e-6);
  const auto state = opt.StateTensors();
  ASSERT_EQ(state.size(), 2U);
  EXPECT_EQ(state[0].first, "w/sum");
  EXPECT_NEAR(state[0].second[1].item<float>(), 8.1, 1e-5);
  EXPECT_EQ(state[1].first, "w/step");
  EXPECT_FLOAT_EQ(state[1].second.item<float>(), 2.0F);
}

TEST(DenseOptimizer, AdamTwoStepsAndLearningRateChange) {
  // With a constant gradient the bias-corrected m / sqrt(v) is sign(g): each step moves by lr.
  Fixture f;
  DenseOptimizer opt(Options(DenseOptimizerKind::kAdam, 0.1), {f.param});
  opt.Step();
  EXPECT_NEAR(f.At(0), 0.9, 1e-6);
  EXPECT_NEAR(f.At(1), 2.1, 1e-6);
  opt.SetLearningRate(0.05);
  EXPECT_DOUBLE_EQ(opt.LearningRate(), 0.05);
  opt.Step();
  EXPECT_NEAR(f.At(0), 0.85, 1e-6);
  EXPECT_NEAR(f.At(1), 2.15, 1e-6);
  const auto state = opt.StateTensors();
  ASSERT_EQ(state.size(), 3U);
  EXPECT_EQ(state[0].first, "w/exp_avg");
  EXPECT_NEAR(state[0].second[0].item<float>(), 0.5 * (1 - 0.81), 1e-6);
  EXPECT_EQ(state[1].first, "w/exp_avg_sq");
  EXPECT_EQ(state[2].first, "w/step");
}

TEST(DenseOptimizer, AmsgradAddsMaxExpAvgSq) {
  Fixture f;
  DenseOptimizerOptions o = Options(DenseOptimizerKind::kAdamW, 0.1);
  o.amsgrad = true;
  DenseOptimizer opt(o, {f.param});
  opt.Step();
  EXPECT_TRUE(StateByName(opt).count("w/max_exp_avg_sq"));
}

TEST(DenseOptimizer, SkipsParametersWithoutGradientAndZeroGradClears) {
  Parameter frozen{"b", at::tensor({3.0F}, at::kFloat).requires_grad_()};
  Fixture f;
  DenseOptimizerOptions o = Options(DenseOptimizerKind::kAdam, 0.1);
  DenseOptimizer opt(o, {f.param, frozen});
  opt.Step();
  EXPECT_FLOAT_EQ(frozen.tensor.item<float>(), 3.0F);
  EXPECT_FLOAT_EQ(StateByName(opt).at("b/step").item<float>(), 0.0F);  // torch: no state yet
  opt.ZeroGrad();
  EXPECT_FLOAT_EQ(f.param.tensor.grad().abs().sum().item<float>(), 0.0F);
}

void ExpectConfigError(const DenseOptimizerOptions& o, const std::string& fragment) {
  Fixture f;
  try {
    DenseOptimizer opt(o, {f.param});
    FAIL() << "accepted; wanted an error naming " << fragment;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DenseOptimizer, RejectsWhatTorchRejects) {
  DenseOptimizerOptions o = Options(DenseOptimizerKind::kSgd, 0.1);
  o.nesterov = true;
  o.dampening = 0.1;
  ExpectConfigError(o, "'nesterov'");
  o = Options(DenseOptimizerKind::kSgd, -1);
  ExpectConfigError(o, "'lr'");
  o = Options(DenseOptimizerKind::kAdam, 0.1);
  o.beta2 = 1.0;
  ExpectConfigError(o, "'beta2'");
  o = Options(DenseOptimizerKind::kAdagrad, 0.1);
  o.lr_decay = -0.5;
  ExpectConfigError(o, "'lr_decay'");
  o = Options(DenseOptimizerKind::kAdamW, 0.1);
  o.eps = -1e-8;
  ExpectConfigError(o, "'eps'");
}

}  // namespace
}  // namespace tzrec
