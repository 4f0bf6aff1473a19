// Mlp (src/worker/train/mlp.hpp, TorchEasyRec's tzrec/modules/mlp.py and activation.py) against a
// reference composed here from elementary libtorch ops and the module's own tensors (looked up by
// their TorchEasyRec state-dict names):
//   Linear      x·Wᵀ + b
//   BatchNorm   train: (x − mean_B)/sqrt(var_B + 1e-5)·γ + β with the biased batch variance;
//               running ← 0.9·running + 0.1·(mean_B, unbiased var_B); eval: the running stats
//   LayerNorm   (x − mean)/sqrt(var + 1e-5)·γ + β over the last dim (biased variance)
//   activations their textbook formulas (erf GELU, tanh GELU, SELU constants, ...)
//   Dice        p = sigmoid(BN(x)); α·(1 − p)·x + p·x
//   Dropout     zero with probability p, kept ×1/(1 − p); eval identity
#include "mlp.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_unique.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/log1p.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

constexpr double kEps = 1e-5;

struct Built {
  std::vector<Parameter> params;
  std::vector<Parameter> buffers;
  std::unique_ptr<ParamBuilder> builder;
  Mlp mlp;

  Built(const MlpOptions& o, std::int64_t in, std::uint64_t seed = 7) {
    builder = std::make_unique<ParamBuilder>(&params, &buffers, seed, at::Device(at::kCPU));
    mlp = Mlp(*builder, "m", in, o);
  }
  static at::Tensor Find(const std::vector<Parameter>& list, const std::string& name) {
    for (const auto& p : list) {
      if (p.name == name) return p.tensor;
    }
    return {};
  }
  at::Tensor P(const std::string& name) const { return Find(params, name); }
  at::Tensor B(const std::string& name) const { return Find(buffers, name); }
};

MlpOptions Options(std::vector<std::int64_t> units, const std::string& activation = "nn.ReLU") {
  MlpOptions o;
  o.hidden_units = std::move(units);
  o.activation = activation;
  return o;
}

at::Tensor Input(std::int64_t rows, std::int64_t cols, std::uint64_t seed = 3) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn({rows, cols}, gen) * 2;
}

at::Tensor RefBatchNorm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const at::Tensor mean = x.mean(0);
  const at::Tensor var = (x - mean).pow(2).mean(0);
  return (x - mean) / at::sqrt(var + kEps) * w + b;
}

at::Tensor RefLayerNorm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const at::Tensor mean = x.mean(-1, true);
  const at::Tensor var = (x - mean).pow(2).mean(-1, true);
  return (x - mean) / at::sqrt(var + kEps) * w + b;
}

at::Tensor Sigmoid(const at::Tensor& x) {
  return 1 / (1 + at::exp(-x));
}

void ExpectClose(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_TRUE(at::allclose(a, b, tol, tol)) << "max |diff| " << (a - b).abs().max().item<double>();
}

TEST(Mlp, DefaultOptionsAreReluLinearWithTodaysInit) {
  Built m(Options({4, 3}), 5, 11);
  // model.cpp's Builder: weight then bias per layer, U(±1/sqrt(fan_in)) from one CPU generator.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  std::vector<at::Tensor> expected;
  std::int64_t in = 5;
  for (std::int64_t out : {4, 3}) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    expected.push_back((at::rand({out, in}, gen) * 2 - 1) * bound);
    expected.push_back((at::rand({out}, gen) * 2 - 1) * bound);
    in = out;
  }
  ASSERT_EQ(m.params.size(), 4U);
  EXPECT_TRUE(m.buffers.empty());
  const std::vector<std::string> names = {
      "m.mlp.0.perceptron.0.weight", "m.mlp.0.perceptron.0.bias", "m.mlp.1.perceptron.0.weight",
      "m.mlp.1.perceptron.0.bias"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.params[i].name, names[i]);
    EXPECT_TRUE(at::equal(m.params[i].tensor, expected[i])) << names[i];
    EXPECT_TRUE(m.params[i].tensor.requires_grad());
  }
  const at::Tensor x = Input(6, 5);
  at::Tensor ref = x;
  for (int i = 0; i < 2; ++i) ref = at::relu(at::linear(ref, expected[2 * i], expected[2 * i + 1]));
  EXPECT_TRUE(at::equal(m.mlp.Forward(x, true), ref));
  EXPECT_TRUE(at::equal(m.mlp.Forward(x, false), ref));
  EXPECT_EQ(m.mlp.OutDim(), 3);
}

struct ActCase {
  std::string activation;
  std::function<at::Tensor(const at::Tensor&, const Built&)> ref;
};

TEST(Mlp, EachActivationMatchesItsFormula) {
  constexpr double kSeluAlpha = 1.6732632423543772;
  constexpr double kSeluScale = 1.0507009873554805;
  const std::vector<ActCase> cases = {
      {"nn.ReLU", [](const at::Tensor& z, const Built&) { return at::clamp_min(z, 0); }},
      {"nn.ReLU(inplace=True)",
       [](const at::Tensor& z, const Built&) { return at::clamp_min(z, 0); }},
      {"nn.ReLU6", [](const at::Tensor& z, const Built&) { return at::clamp(z, 0, 6); }},
      {"nn.LeakyReLU",
       [](const at::Tensor& z, const Built&) { return at::where(z > 0, z, 0.01 * z); }},
      {" nn.LeakyReLU(negative_slope=0.2) ",
       [](const at::Tensor& z, const Built&) { return at::where(z > 0, z, 0.2 * z); }},
      {"nn.ELU(alpha=0.5)",
       [](const at::Tensor& z, const Built&) {
         return at::where(z > 0, z, 0.5 * (at::exp(z) - 1));
       }},
      {"nn.SELU",
       [&](const at::Tensor& z, const Built&) {
         return kSeluScale * at::where(z > 0, z, kSeluAlpha * (at::exp(z) - 1));
       }},
      {"nn.GELU", [](const at::Tensor& z,
                     const Built&) { return 0.5 * z * (1 + at::erf(z / std::sqrt(2.0))); }},
      {"nn.GELU(approximate='tanh')",
       [](const at::Tensor& z, const Built&) {
         return 0.5 * z *
                (1 + at::tanh(std::sqrt(2.0 / std::numbers::pi) * (z + 0.044715 * z.pow(3))));
       }},
      {"nn.Sigmoid", [](const at::Tensor& z, const Built&) { return Sigmoid(z); }},
      {"torch.nn.Tanh", [](const at::Tensor& z,
                           const Built&) { return (at::exp(2 * z) - 1) / (at::exp(2 * z) + 1); }},
      {"nn.SiLU", [](const at::Tensor& z, const Built&) { return z * Sigmoid(z); }},
      {"nn.Mish",
       [](const at::Tensor& z, const Built&) { return z * at::tanh(at::log1p(at::exp(z))); }},
      {"nn.Softplus(beta=2, threshold=1)",
       [](const at::Tensor& z, const Built&) {
         return at::where(2 * z > 1, z, at::log1p(at::exp(2 * z)) / 2);
       }},
      {"nn.PReLU", [](const at::Tensor& z, const Built&) { return at::where(z > 0, z, 0.25 * z); }},
      {"nn.PReLU(num_parameters=4, init=0.1)",
       [](const at::Tensor& z, const Built& m) {
         const at::Tensor w = m.P("m.mlp.0.perceptron.1.weight");
         EXPECT_EQ(w.sizes(), at::IntArrayRef({4}));
         return at::where(z > 0, z, w * z);
       }},
      {"nn.Identity", [](const at::Tensor& z, const Built&) { return z; }},
      {"nn.Hardswish",
       [](const at::Tensor& z, const Built&) { return z * at::clamp(z + 3, 0, 6) / 6; }},
      {"nn.Hardsigmoid",
       [](const at::Tensor& z, const Built&) { return at::clamp(z / 6 + 0.5, 0, 1); }},
      {"nn.Hardtanh", [](const at::Tensor& z, const Built&) { return at::clamp(z, -1, 1); }},
      {"nn.Hardtanh(min_val=-0.5, max_val=2)",
       [](const at::Tensor& z, const Built&) { return at::clamp(z, -0.5, 2); }},
      {"nn.Softsign", [](const at::Tensor& z, const Built&) { return z / (1 + z.abs()); }},
      {"nn.Tanhshrink", [](const at::Tensor& z, const Built&) { return z - at::tanh(z); }},
      {"nn.CELU(alpha=0.7)",
       [](const at::Tensor& z, const Built&) {
         return at::clamp_min(z, 0) + at::clamp_max(0.7 * (at::exp(z / 0.7) - 1), 0);
       }},
      {"nn.LogSigmoid", [](const at::Tensor& z, const Built&) { return -at::log1p(at::exp(-z)); }},
      {"", [](const at::Tensor& z, const Built&) { return z; }},
  };
  const at::Tensor x = Input(8, 5) * 2;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.activation);
    Built m(Options({4}, c.activation), 5);
    const at::Tensor z =
        at::matmul(x, m.P("m.mlp.0.perceptron.0.weight").t()) + m.P("m.mlp.0.perceptron.0.bias");
    ExpectClose(m.mlp.Forward(x, true), c.ref(z, m));
    ExpectClose(m.mlp.Forward(x, false), c.ref(z, m));
  }
}

TEST(Mlp, BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats) {
  MlpOptions o = Options({4});
  o.use_bn = true;
  Built m(o, 5);
  const std::string bn = "m.mlp.0.perceptron.1.";
  EXPECT_FALSE(m.P("m.mlp.0.perceptron.0.bias").defined());  // no Linear bias with BN (upstream)
  m.P(bn + "weight").detach().copy_(at::tensor({1.5, 0.5, 2.0, -1.0}));
  m.P(bn + "bias").detach().copy_(at::tensor({0.1, -0.2, 0.3, 0.0}));
  const at::Tensor w = m.P("m.mlp.0.perceptron.0.weight");
  at::Tensor mean_ref = at::zeros({4});
  at::Tensor var_ref = at::ones({4});
  for (std::uint64_t step = 1; step <= 2; ++step) {
    const at::Tensor x = Input(7, 5, step);
    const at::Tensor z = at::matmul(x, w.t());
    ExpectClose(m.mlp.Forward(x, true),
                at::clamp_min(RefBatchNorm(z, m.P(bn + "weight"), m.P(bn + "bias")), 0));
    mean_ref = 0.9 * mean_ref + 0.1 * z.mean(0);
    var_ref = 0.9 * var_ref + 0.1 * (z - z.mean(0)).pow(2).sum(0) / 6;
    ExpectClose(m.B(bn + "running_mean"), mean_ref);
    ExpectClose(m.B(bn + "running_var"), var_ref);
    EXPECT_EQ(m.B(bn + "num_batches_tracked").item<std::int64_t>(),
              static_cast<std::int64_t>(step));
    EXPECT_FALSE(m.B(bn + "running_mean").requires_grad());
  }
  // Eval: the running stats, which stay as they are.
  const at::Tensor x = Input(3, 5, 9);
  const at::Tensor z = at::matmul(x, w.t());
  const at::Tensor ref =
      (z - mean_ref) / at::sqrt(var_ref + kEps) * m.P(bn + "weight") + m.P(bn + "bias");
  ExpectClose(m.mlp.Forward(x, false), at::clamp_min(ref, 0));
  ExpectClose(m.B(bn + "running_mean"), mean_ref);
  EXPECT_EQ(m.B(bn + "num_batches_tracked").item<std::int64_t>(), 2);
  EXPECT_THROW(m.mlp.Forward(Input(1, 5), true), InputError);
  EXPECT_NO_THROW(m.mlp.Forward(Input(1, 5), false));
}

TEST(Mlp, LayerNormWithoutBias) {
  MlpOptions o = Options({4, 3}, "nn.Tanh");
  o.use_ln = true;
  o.bias = false;
  Built m(o, 5);
  EXPECT_EQ(m.params.size(), 6U);  // per layer: Linear weight, LN weight and bias
  EXPECT_FALSE(m.P("m.mlp.1.perceptron.0.bias").defined());
  m.P("m.mlp.0.perceptron.1.weight").detach().copy_(at::tensor({1.5, 0.5, 2.0, -1.0}));
  m.P("m.mlp.1.perceptron.1.bias").detach().copy_(at::tensor({0.1, -0.2, 0.3}));
  const at::Tensor x = Input(6, 5);
  at::Tensor ref = x;
  for (int i = 0; i < 2; ++i) {
    const std::string p = "m.mlp." + std::to_string(i) + ".perceptron.";
    ref = at::tanh(RefLayerNorm(at::matmul(ref, m.P(p + "0.weight").t()), m.P(p + "1.weight"),
                                m.P(p + "1.bias")));
  }
  ExpectClose(m.mlp.Forward(x, true), ref);
  ExpectClose(m.mlp.Forward(x, false), ref);
  ExpectClose(m.mlp.Forward(Input(1, 5), true), m.mlp.Forward(Input(1, 5), false));
}

at::Tensor RefDice(const at::Tensor& z, const Built& m, const std::string& a, bool training) {
  const at::Tensor bn = training ? RefBatchNorm(z, m.P(a + "bn.weight"), m.P(a + "bn.bias"))
                                 : (z - m.B(a + "bn.running_mean")) /
                                           at::sqrt(m.B(a + "bn.running_var") + kEps) *
                                           m.P(a + "bn.weight") +
                                       m.P(a + "bn.bias");
  const at::Tensor p = Sigmoid(bn);
  return m.P(a + "alpha") * (1 - p) * z + p * z;
}

TEST(Mlp, DiceWithItsBatchNorm) {
  Built m(Options({4}, "Dice"), 5);
  const std::string a = "m.mlp.0.perceptron.1.";
  EXPECT_TRUE(at::equal(m.P(a + "alpha"), at::zeros({4})));  // Dice.reset_parameters
  m.P(a + "alpha").detach().copy_(at::tensor({0.3, -0.5, 0.0, 1.0}));
  m.P(a + "bn.weight").detach().copy_(at::tensor({1.5, 0.5, 2.0, -1.0}));
  const at::Tensor x = Input(8, 5);
  const at::Tensor z =
      at::matmul(x, m.P("m.mlp.0.perceptron.0.weight").t()) + m.P("m.mlp.0.perceptron.0.bias");
  ExpectClose(m.mlp.Forward(x, true), RefDice(z, m, a, true));
  ExpectClose(m.B(a + "bn.running_mean"), 0.1 * z.mean(0));
  EXPECT_EQ(m.B(a + "bn.num_batches_tracked").item<std::int64_t>(), 1);
  ExpectClose(m.mlp.Forward(x, false), RefDice(z, m, a, false));
}

// Identity Linear layers (width 6) without activation: the output shows the dropout of each layer.
Built DropoutChain(const std::vector<double>& ratios, std::uint64_t seed = 7) {
  MlpOptions o = Options({6, 6, 6}, "");
  o.dropout_ratio = ratios;
  Built m(o, 6, seed);
  for (int i = 0; i < 3; ++i) {
    const std::string p = "m.mlp." + std::to_string(i) + ".perceptron.0.";
    m.P(p + "weight").detach().copy_(at::eye(6));
    m.P(p + "bias").detach().zero_();
  }
  return m;
}

// The distinct values of the output for an all-ones input.
std::vector<float> Values(const at::Tensor& t) {
  const at::Tensor u = std::get<0>(at::_unique(t));
  return std::vector<float>(u.data_ptr<float>(), u.data_ptr<float>() + u.numel());
}

TEST(Mlp, DropoutRatioListSemantics) {
  const at::Tensor ones = at::ones({200, 6});
  EXPECT_EQ(Values(DropoutChain({}).mlp.Forward(ones, true)), std::vector<float>{1});
  // One value: every layer drops, the scales multiply (2^3 = 8).
  EXPECT_EQ(Values(DropoutChain({0.5}).mlp.Forward(ones, true)), (std::vector<float>{0, 8}));
  // One per layer.
  EXPECT_EQ(Values(DropoutChain({0.5, 0.0, 0.2}).mlp.Forward(ones, true)),
            (std::vector<float>{0, 2.5}));
  // Eval: identity.
  EXPECT_TRUE(at::equal(DropoutChain({0.5}).mlp.Forward(ones, false), ones));
}

TEST(Mlp, DropoutRateScaleAndSeed) {
  MlpOptions o = Options({50}, "");
  o.dropout_ratio = {0.3};
  Built m(o, 50);
  m.P("m.mlp.0.perceptron.0.weight").detach().copy_(at::eye(50));
  m.P("m.mlp.0.perceptron.0.bias").detach().zero_();
  const at::Tensor x = at::ones({2000, 50});
  const at::Tensor y = m.mlp.Forward(x, true);
  const double zero_fraction = (y == 0).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(zero_fraction, 0.3, 0.01);  // 100000 draws: sd 0.0015
  ExpectClose(y.masked_select(y != 0), at::full({(y != 0).sum().item<std::int64_t>()}, 1 / 0.7));
  // Same seed: same masks; the next call draws new ones.
  Built again(o, 50);
  again.P("m.mlp.0.perceptron.0.weight").detach().copy_(at::eye(50));
  again.P("m.mlp.0.perceptron.0.bias").detach().zero_();
  EXPECT_TRUE(at::equal(again.mlp.Forward(x, true), y));
  EXPECT_FALSE(at::equal(m.mlp.Forward(x, true), y));
  EXPECT_TRUE(at::equal(m.mlp.Forward(x, false), x));
}

TEST(Mlp, GradientsMatchTheReference) {
  for (const std::string act : {"Dice", "nn.PReLU"}) {
    for (bool bn : {true, false}) {
      SCOPED_TRACE(act + (bn ? " use_bn" : " use_ln"));
      MlpOptions o = Options({4}, act);
      o.use_bn = bn;
      o.use_ln = !bn;
      Built m(o, 5);
      const at::Tensor x = Input(8, 5);
      const at::Tensor g = Input(8, 4, 5);
      const std::string p = "m.mlp.0.perceptron.";
      (m.mlp.Forward(x, true) * g).sum().backward();
      std::vector<at::Tensor> grads;
      for (const auto& t : m.params) {
        ASSERT_TRUE(t.tensor.grad().defined()) << t.name;
        EXPECT_GT(t.tensor.grad().abs().sum().item<double>(), 0) << t.name;
        grads.push_back(t.tensor.grad().clone());
        t.tensor.mutable_grad() = at::Tensor();
      }
      at::Tensor z = at::matmul(x, m.P(p + "0.weight").t());
      if (!bn) z = z + m.P(p + "0.bias");
      z = bn ? RefBatchNorm(z, m.P(p + "1.weight"), m.P(p + "1.bias"))
             : RefLayerNorm(z, m.P(p + "1.weight"), m.P(p + "1.bias"));
      const at::Tensor y = act == "Dice" ? RefDice(z, m, p + "2.", true)
                                         : at::where(z > 0, z, m.P(p + "2.weight") * z);
      (y * g).sum().backward();
      for (std::size_t i = 0; i < m.params.size(); ++i)
        ExpectClose(m.params[i].tensor.grad(), grads[i]);
    }
  }
}

void ExpectConfigError(const MlpOptions& o, const std::vector<std::string>& parts) {
  try {
    ValidateMlpOptions(o, "model_config.final_mlp");
    ADD_FAILURE() << "no error for activation '" << o.activation << "'";
  } catch (const ConfigError& e) {
    for (const auto& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << e.what() << "\n  missing: " << part;
  }
}

TEST(Mlp, ValidateNamesTheFieldTheValueAndTheFix) {
  MlpOptions o = Options({8, 0});
  ExpectConfigError(o, {"model_config.final_mlp.hidden_units[1]: must be >= 1, got 0"});
  o = Options({8, 4, 2});
  o.dropout_ratio = {0.1, 0.2};
  ExpectConfigError(o,
                    {"model_config.final_mlp.dropout_ratio: has 2 values but hidden_units has 3"});
  o.dropout_ratio = {1.0};
  ExpectConfigError(o, {"model_config.final_mlp.dropout_ratio[0]: must be in [0, 1), got 1"});
  o.dropout_ratio = {0.1, -0.5, 0.2};
  ExpectConfigError(o, {"dropout_ratio[1]", "got -0.5"});
  o = Options({8});
  o.use_bn = o.use_ln = true;
  ExpectConfigError(o, {"model_config.final_mlp.use_bn and model_config.final_mlp.use_ln"});
  ExpectConfigError(
      Options({8}, "nn.Swish"),
      {"model_config.final_mlp.activation: unknown activation 'nn.Swish'", "'nn.SiLU'", "'Dice'"});
  ExpectConfigError(Options({8}, "nn.RReLU"), {"unknown activation 'nn.RReLU'"});
  ExpectConfigError(Options({8}, "lambda x: x"), {"unknown activation 'lambda x: x'"});
  ExpectConfigError(Options({8}, "nn.LeakyReLU(slope=0.1)"),
                    {"final_mlp.activation", "unknown argument 'slope'", "'negative_slope'"});
  ExpectConfigError(Options({8}, "nn.LeakyReLU(negative_slope=abc)"),
                    {"negative_slope=abc: not a number"});
  ExpectConfigError(Options({8}, "nn.LeakyReLU(0.1)"), {"'0.1' is not key=value"});
  ExpectConfigError(Options({8}, "nn.GELU(approximate='erf')"), {"write 'none' or 'tanh'"});
  ExpectConfigError(Options({8}, "nn.ReLU(inplace=yes)"), {"write True or False"});
  ExpectConfigError(Options({8}, "nn.Sigmoid(x=1)"),
                    {"unknown argument 'x' of nn.Sigmoid; accepted: none"});
  ExpectConfigError(Options({8}, "Dice()"), {"Dice takes no arguments"});
  ExpectConfigError(Options({8}, "nn.ReLU(inplace=True"), {"missing ')'"});
  ExpectConfigError(
      Options({8, 4}, "nn.PReLU(num_parameters=8)"),
      {"num_parameters 8 must be 1 or the width of every layer", "hidden_units[1] is 4"});
  ExpectConfigError(Options({8}, "nn.PReLU(num_parameters=2.5)"), {"must be an integer >= 1"});
  ExpectConfigError(Options({8}, "nn.Hardtanh(min_val=1, max_val=1)"),
                    {"max_val must be greater than min_val"});
  ExpectConfigError(Options({8}, "nn.CELU(alpha=0)"), {"alpha must not be 0"});
  EXPECT_NO_THROW(ValidateMlpOptions(Options({8, 8}, "nn.PReLU(num_parameters=8)"), "m"));
  EXPECT_NO_THROW(ValidateMlpOptions(Options({}), "m"));
  // The constructor validates with the module name as the path.
  std::vector<Parameter> params, buffers;
  ParamBuilder b(&params, &buffers, 1, at::Device(at::kCPU));
  EXPECT_THROW(Mlp(b, "deep_mlp", 4, Options({8}, "nn.Foo")), ConfigError);
  EXPECT_TRUE(params.empty());
}

}  // namespace
}  // namespace tzrec
