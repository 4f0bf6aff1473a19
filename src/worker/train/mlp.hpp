// src/worker/train/mlp.hpp — TorchEasyRec's MLP (tzrec/modules/mlp.py: MLP, Perceptron; activations
// from tzrec/modules/activation.py: create_activation, Dice; options from tzrec/protos/module.proto
// message MLP) as a libtorch module that registers its tensors into a model's lists.
//
// Layer i (one per hidden unit h_i, input width h_{i-1}, h_{-1} = in_dim), in this order:
//   Linear(h_{i-1} → h_i)   bias only when `bias` and not `use_bn` (as upstream)
//   BatchNorm1d(h_i)        when use_bn: training uses the batch mean and biased variance and
//                           updates running_mean/running_var in place (momentum 0.1, the unbiased
//                           variance) and num_batches_tracked += 1; eval uses the running stats;
//                           eps 1e-5, affine (weight 1, bias 0)
//   LayerNorm(h_i)          when use_ln: over the last dim, eps 1e-5, elementwise affine (1, 0)
//   activation              see MlpActivationNames() (tzrec/config/mlp_activation.hpp); "" = none
//   Dropout(p_i)            when p_i > 0 and training: zero with probability p_i, scale the kept
//                           units by 1/(1-p_i); eval: identity
// dropout_ratio: [] → 0 for every layer, [p] → p for every layer, else one per layer.
// Input [B, in_dim] float32, output [B, out_dim()]; B > 1 when training with BatchNorm (use_bn or
// Dice), as torch requires.
//
// Tensor names follow the module's state dict in TorchEasyRec ("<name>" is the attribute, e.g.
// "final_mlp"): "<name>.mlp.<i>.perceptron.<j>.<tensor>" with j = 0 the Linear ("weight", "bias"),
// then the norm when use_bn/use_ln ("weight", "bias"; BN also the buffers "running_mean",
// "running_var", "num_batches_tracked"), then the activation (PReLU "weight"; Dice "alpha", and
// its BatchNorm "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
// "bn.num_batches_tracked").
//
// Initialisation (ParamBuilder): Linear weight then bias, each U(-1/sqrt(fan_in), 1/sqrt(fan_in))
// (torch.nn.Linear's default) from one seeded CPU generator, drawn layer by layer in order; so the
// default options give the same values as src/worker/train/model.cpp's Builder. Norm weight 1,
// bias 0; PReLU weight `init` (0.25); Dice alpha 0 (upstream Dice.reset_parameters).
//
// Errors: ValidateMlpOptions throws ConfigError; Mlp's constructor validates too (path = name).
// Forward throws InputError for a training batch of one row with BatchNorm. Thread-safety: Forward
// updates BN running stats and the dropout generator: one thread per Mlp at a time.
#pragma once

#include <ATen/Tensor.h>
#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tzrec/config/mlp_activation.hpp"
#include "tzrec/train/model.hpp"  // Parameter

namespace tzrec {

// tzrec.protos.MLP (tzrec/protos/module.proto), as the model uses it.
struct MlpOptions {
  std::vector<std::int64_t> hidden_units;
  std::vector<double> dropout_ratio;
  std::string activation = "nn.ReLU";
  bool use_bn = false;
  bool bias = true;
  bool use_ln = false;
};

// Throws ConfigError naming "<path>.<field>", the value and the fix: a hidden unit < 1, a
// dropout_ratio list whose length is neither 0, 1 nor len(hidden_units), a ratio outside [0, 1),
// use_bn with use_ln, an unknown activation or argument (lists the accepted ones), a PReLU
// num_parameters that is neither 1 nor every layer's width.
void ValidateMlpOptions(const MlpOptions& options, const std::string& path);

// Creates a model's parameters (requires_grad) and buffers (BatchNorm running stats; no grad) on
// `device`, appending {name, tensor} to the lists in creation order. Random values come from one
// CPU generator seeded with `seed`. Not thread-safe.
class ParamBuilder {
 public:
  struct Linear {
    at::Tensor weight;  // [out, in]
    at::Tensor bias;    // [out]; undefined without bias
  };
  ParamBuilder(std::vector<Parameter>* parameters, std::vector<Parameter>* buffers,
               std::uint64_t seed, const at::Device& device);
  // torch.nn.Linear's default init: weight then bias (when `bias`), U(±1/sqrt(in)).
  Linear AddLinear(const std::string& name, std::int64_t in, std::int64_t out, bool bias = true);
  // A float32 parameter of `shape`, U(-bound, bound) from the generator (e.g. xavier_uniform_).
  at::Tensor AddUniform(const std::string& name, const std::vector<std::int64_t>& shape,
                        double bound);
  // A float32 parameter [size] filled with `value`.
  at::Tensor AddFilled(const std::string& name, std::int64_t size, double value);
  // A buffer: `value` moved to the device.
  at::Tensor AddBuffer(const std::string& name, const at::Tensor& value);
  // A distinct seed for each module's dropout generator (derived from `seed`).
  std::uint64_t NextDropoutSeed();
  const at::Device& Device() const { return device_; }

 private:
  std::vector<Parameter>* parameters_;
  std::vector<Parameter>* buffers_;
  at::Generator gen_;
  at::Device device_;
  std::uint64_t dropout_seed_;
};

class Mlp {
 public:
  Mlp() = default;
  // Validates `options` (path `name`) and registers the tensors; empty hidden_units = identity.
  Mlp(ParamBuilder& builder, const std::string& name, std::int64_t in_dim,
      const MlpOptions& options);
  // x [B, in_dim] → [B, out_dim()]. training: batch statistics for BN (running stats updated) and
  // dropout; otherwise running stats and no dropout. Dropout masks come from this module's own
  // generator (seeded by the builder, one per device type it sees), so they are reproducible.
  at::Tensor Forward(const at::Tensor& x, bool training) const;
  std::int64_t OutDim() const { return out_dim_; }

  // The parsed activation and a BatchNorm's tensors (shared by mlp.cpp and mlp_options.cpp).
  using Activation = MlpActivation;
  struct BatchNorm {
    at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  };
  // Parses MlpOptions::activation; ConfigError naming `field` (e.g. "final_mlp.activation").
  static Activation ParseActivation(const std::string& text, const std::string& field) {
    return ParseMlpActivation(text, field);
  }

 private:
  struct Layer {
    at::Tensor weight, bias;
    bool use_bn = false, use_ln = false;
    BatchNorm norm;         // BatchNorm1d, or LayerNorm's weight/bias
    at::Tensor act_weight;  // PReLU weight or Dice alpha
    BatchNorm dice_bn;
    double dropout = 0;
  };
  at::Tensor Activate(const at::Tensor& x, const Layer& l, bool training) const;
  at::Tensor Dropout(const at::Tensor& x, double p) const;

  std::string name_;
  Activation act_;
  std::vector<Layer> layers_;
  std::int64_t out_dim_ = 0;
  std::uint64_t dropout_seed_ = 0;
  mutable at::Generator dropout_gen_;
};

}  // namespace tzrec
