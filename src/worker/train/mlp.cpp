// ParamBuilder and Mlp (see src/worker/train/mlp.hpp): TorchEasyRec's MLP/Perceptron
// (tzrec/modules/mlp.py) and Dice (tzrec/modules/activation.py) on libtorch ops, with
// torch.nn.BatchNorm1d / LayerNorm / Dropout semantics.
#include "mlp.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/celu.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/hardsigmoid.h>
#include <ATen/ops/hardswish.h>
#include <ATen/ops/hardtanh.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/log_sigmoid.h>
#include <ATen/ops/mish.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/prelu.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/selu.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softplus.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <string>
#include <utility>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

using Kind = Mlp::Activation::Kind;
constexpr double kNormEps = 1e-5;    // torch.nn.BatchNorm1d / LayerNorm default eps
constexpr double kBnMomentum = 0.1;  // torch.nn.BatchNorm1d default momentum
constexpr std::uint64_t kDropoutSeedMix = 0x9E3779B97F4A7C15ULL;

// torch.nn.BatchNorm1d(h): weight 1, bias 0 (parameters), running_mean 0, running_var 1,
// num_batches_tracked 0 (int64 scalar) as buffers.
Mlp::BatchNorm AddBatchNorm(ParamBuilder& b, const std::string& prefix, std::int64_t h) {
  Mlp::BatchNorm bn;
  bn.weight = b.AddFilled(prefix + ".weight", h, 1.0);
  bn.bias = b.AddFilled(prefix + ".bias", h, 0.0);
  bn.running_mean = b.AddBuffer(prefix + ".running_mean", at::zeros({h}, at::kFloat));
  bn.running_var = b.AddBuffer(prefix + ".running_var", at::ones({h}, at::kFloat));
  bn.num_batches_tracked = b.AddBuffer(prefix + ".num_batches_tracked", at::zeros({}, at::kLong));
  return bn;
}

at::Tensor ApplyBatchNorm(const at::Tensor& x, const Mlp::BatchNorm& bn, bool training,
                          const std::string& name) {
  if (training) {
    // torch.nn.functional.batch_norm refuses one value per channel when training.
    if (x.size(0) == 1)
      throw InputError(name + ": BatchNorm in training needs more than one row per batch, got " +
                       "a batch of 1; use a larger batch_size or drop the last partial batch");
    bn.num_batches_tracked.add_(1);
  }
  return at::batch_norm(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, training,
                        kBnMomentum, kNormEps, at::globalContext().userEnabledCuDNN());
}

}  // namespace

ParamBuilder::ParamBuilder(std::vector<Parameter>* parameters, std::vector<Parameter>* buffers,
                           std::uint64_t seed, const at::Device& device)
    : parameters_(parameters),
      buffers_(buffers),
      gen_(at::make_generator<at::CPUGeneratorImpl>(seed)),
      device_(device),
      dropout_seed_(seed ^ kDropoutSeedMix) {}

ParamBuilder::Linear ParamBuilder::AddLinear(const std::string& name, std::int64_t in,
                                             std::int64_t out, bool bias) {
  const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
  Linear l;
  l.weight = ((at::rand({out, in}, gen_) * 2 - 1) * bound).to(device_).set_requires_grad(true);
  parameters_->push_back({name + ".weight", l.weight});
  if (bias) {
    l.bias = ((at::rand({out}, gen_) * 2 - 1) * bound).to(device_).set_requires_grad(true);
    parameters_->push_back({name + ".bias", l.bias});
  }
  return l;
}

at::Tensor ParamBuilder::AddUniform(const std::string& name, const std::vector<std::int64_t>& shape,
                                    double bound) {
  at::Tensor t = ((at::rand(shape, gen_) * 2 - 1) * bound).to(device_).set_requires_grad(true);
  parameters_->push_back({name, t});
  return t;
}

at::Tensor ParamBuilder::AddFilled(const std::string& name, std::int64_t size, double value) {
  at::Tensor t = at::full({size}, value, at::kFloat).to(device_).set_requires_grad(true);
  parameters_->push_back({name, t});
  return t;
}

at::Tensor ParamBuilder::AddBuffer(const std::string& name, const at::Tensor& value) {
  at::Tensor t = value.to(device_);
  buffers_->push_back({name, t});
  return t;
}

std::uint64_t ParamBuilder::NextDropoutSeed() {
  return dropout_seed_++;
}

Mlp::Mlp(ParamBuilder& builder, const std::string& name, std::int64_t in_dim,
         const MlpOptions& options)
    : name_(name) {
  ValidateMlpOptions(options, name);
  act_ = ParseActivation(options.activation, name + ".activation");
  const auto& ratios = options.dropout_ratio;
  for (std::size_t i = 0; i < options.hidden_units.size(); ++i) {
    const std::int64_t h = options.hidden_units[i];
    const std::string p = name + ".mlp." + std::to_string(i) + ".perceptron.";
    Layer l;
    const auto linear = builder.AddLinear(p + "0", in_dim, h, options.bias && !options.use_bn);
    l.weight = linear.weight;
    l.bias = linear.bias;
    l.use_bn = options.use_bn;
    l.use_ln = options.use_ln;
    if (l.use_bn) l.norm = AddBatchNorm(builder, p + "1", h);
    if (l.use_ln) {
      l.norm.weight = builder.AddFilled(p + "1.weight", h, 1.0);
      l.norm.bias = builder.AddFilled(p + "1.bias", h, 0.0);
    }
    const std::string a = p + std::to_string(l.use_bn || l.use_ln ? 2 : 1);
    if (act_.kind == Kind::kPReLU)
      l.act_weight = builder.AddFilled(a + ".weight", act_.num_parameters, act_.a);
    if (act_.kind == Kind::kDice) {
      l.act_weight = builder.AddFilled(a + ".alpha", h, 0.0);
      l.dice_bn = AddBatchNorm(builder, a + ".bn", h);
    }
    l.dropout = ratios.empty() ? 0.0 : ratios.size() == 1 ? ratios[0] : ratios[i];
    layers_.push_back(std::move(l));
    in_dim = h;
  }
  out_dim_ = in_dim;
  dropout_seed_ = builder.NextDropoutSeed();
}

at::Tensor Mlp::Activate(const at::Tensor& x, const Layer& l, bool training) const {
  switch (act_.kind) {
    case Kind::kNone:
    case Kind::kIdentity:
      return x;
    case Kind::kReLU:
      return at::relu(x);
    case Kind::kReLU6:
      return at::hardtanh(x, 0.0, 6.0);
    case Kind::kLeakyReLU:
      return at::leaky_relu(x, act_.a);
    case Kind::kELU:
      return at::elu(x, act_.a);
    case Kind::kSELU:
      return at::selu(x);
    case Kind::kGELU:
      return at::gelu(x, act_.tanh_approximate ? "tanh" : "none");
    case Kind::kSigmoid:
      return at::sigmoid(x);
    case Kind::kTanh:
      return at::tanh(x);
    case Kind::kSiLU:
      return at::silu(x);
    case Kind::kMish:
      return at::mish(x);
    case Kind::kSoftplus:
      return at::softplus(x, act_.a, act_.b);
    case Kind::kHardswish:
      return at::hardswish(x);
    case Kind::kHardsigmoid:
      return at::hardsigmoid(x);
    case Kind::kHardtanh:
      return at::hardtanh(x, act_.a, act_.b);
    case Kind::kSoftsign:
      return x / (1 + at::abs(x));  // torch.nn.Softsign's formula
    case Kind::kTanhshrink:
      return x - at::tanh(x);  // torch.nn.Tanhshrink's formula
    case Kind::kCELU:
      return at::celu(x, act_.a);
    case Kind::kLogSigmoid:
      return at::log_sigmoid(x);
    case Kind::kPReLU:
      return at::prelu(x, l.act_weight);
    case Kind::kDice: {
      const at::Tensor p = at::sigmoid(ApplyBatchNorm(x, l.dice_bn, training, name_));
      return l.act_weight * (1 - p) * x + p * x;
    }
  }
  return x;
}

at::Tensor Mlp::Dropout(const at::Tensor& x, double p) const {
  const at::Device d = x.device();
  if (!dropout_gen_.defined() || dropout_gen_.device().type() != d.type()) {
    dropout_gen_ =
        d.is_cpu()
            ? at::make_generator<at::CPUGeneratorImpl>(dropout_seed_)
            : at::globalContext().getAcceleratorHooksInterface(d.type()).getNewGenerator(d.index());
    dropout_gen_.set_current_seed(dropout_seed_);
  }
  at::Tensor keep = at::empty_like(x, at::MemoryFormat::Contiguous).bernoulli_(1 - p, dropout_gen_);
  return x * keep * (1.0 / (1.0 - p));
}

at::Tensor Mlp::Forward(const at::Tensor& x_in, bool training) const {
  at::Tensor x = x_in;
  for (const auto& l : layers_) {
    x = at::linear(x, l.weight, l.bias);
    if (l.use_bn) x = ApplyBatchNorm(x, l.norm, training, name_);
    if (l.use_ln) x = at::layer_norm(x, {x.size(-1)}, l.norm.weight, l.norm.bias, kNormEps);
    x = Activate(x, l, training);
    if (training && l.dropout > 0) x = Dropout(x, l.dropout);
  }
  return x;
}

}  // namespace tzrec
