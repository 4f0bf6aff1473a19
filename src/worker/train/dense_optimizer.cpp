// DenseOptimizer (include/tzrec/train/dense_optimizer.hpp): torch.optim's single-tensor SGD,
// Adagrad and Adam/AdamW updates (torch/optim/{sgd,adagrad,adam}.py of torch 2.11), op for op.
#include "tzrec/train/dense_optimizer.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

std::string Num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void Require(bool ok, const std::string& field, const std::string& why) {
  if (!ok) {
    throw ConfigError("dense optimizer option '" + field + "': " + why +
                      " (torch.optim rejects it); fix train_config.dense_optimizer");
  }
}

void Validate(const DenseOptimizerOptions& o, double eps) {
  Require(o.lr >= 0, "lr", "must be >= 0, got " + Num(o.lr));
  Require(o.weight_decay >= 0, "weight_decay", "must be >= 0, got " + Num(o.weight_decay));
  Require(eps >= 0, "eps", "must be >= 0, got " + Num(eps));
  switch (o.kind) {
    case DenseOptimizerKind::kSgd:
      Require(o.momentum >= 0, "momentum", "must be >= 0, got " + Num(o.momentum));
      Require(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "nesterov",
              "needs momentum > 0 and dampening 0, got momentum " + Num(o.momentum) +
                  ", dampening " + Num(o.dampening));
      break;
    case DenseOptimizerKind::kAdagrad:
      Require(o.lr_decay >= 0, "lr_decay", "must be >= 0, got " + Num(o.lr_decay));
      Require(o.initial_accumulator_value >= 0, "initial_accumulator_value",
              "must be >= 0, got " + Num(o.initial_accumulator_value));
      break;
    case DenseOptimizerKind::kAdam:
    case DenseOptimizerKind::kAdamW:
      Require(o.beta1 >= 0 && o.beta1 < 1, "beta1", "must be in [0, 1), got " + Num(o.beta1));
      Require(o.beta2 >= 0 && o.beta2 < 1, "beta2", "must be in [0, 1), got " + Num(o.beta2));
      break;
  }
}

}  // namespace

DenseOptimizerKind ParseDenseOptimizerKind(const std::string& name) {
  if (name == "sgd") return DenseOptimizerKind::kSgd;
  if (name == "adagrad") return DenseOptimizerKind::kAdagrad;
  if (name == "adam") return DenseOptimizerKind::kAdam;
  if (name == "adamw") return DenseOptimizerKind::kAdamW;
  throw ConfigError("train_config.dense_optimizer: '" + name +
                    "' is not a dense optimizer here; use sgd_optimizer, adagrad_optimizer, "
                    "adam_optimizer or adamw_optimizer");
}

const char* DenseOptimizerKindName(DenseOptimizerKind kind) {
  switch (kind) {
    case DenseOptimizerKind::kSgd:
      return "sgd";
    case DenseOptimizerKind::kAdagrad:
      return "adagrad";
    case DenseOptimizerKind::kAdam:
      return "adam";
    case DenseOptimizerKind::kAdamW:
      return "adamw";
  }
  return "?";
}

double EffectiveEps(const DenseOptimizerOptions& options) {
  if (options.eps) return *options.eps;
  switch (options.kind) {
    case DenseOptimizerKind::kAdagrad:
      return 1e-10;
    case DenseOptimizerKind::kAdam:
    case DenseOptimizerKind::kAdamW:
      return 1e-8;
    case DenseOptimizerKind::kSgd:
      return 0.0;
  }
  return 0.0;
}

DenseOptimizer::DenseOptimizer(const DenseOptimizerOptions& options,
                               std::vector<Parameter> parameters)
    : options_(options),
      eps_(EffectiveEps(options)),
      lr_(options.lr),
      parameters_(std::move(parameters)) {
  Validate(options_, eps_);
  const bool sgd = options_.kind == DenseOptimizerKind::kSgd;
  for (const auto& param : parameters_) {
    const at::Tensor& p = param.tensor;
    State s;
    if (sgd && options_.momentum == 0) {
      states_.push_back(s);
      continue;
    }
    s.step = at::zeros({}, at::kFloat);
    if (options_.kind == DenseOptimizerKind::kAdagrad) {
      s.m1 = at::full_like(p, options_.initial_accumulator_value).detach();
    } else {
      s.m1 = at::zeros_like(p).detach();
    }
    if (options_.kind == DenseOptimizerKind::kAdam || options_.kind == DenseOptimizerKind::kAdamW) {
      s.m2 = at::zeros_like(p).detach();
      if (options_.amsgrad) s.m3 = at::zeros_like(p).detach();
    }
    states_.push_back(s);
  }
}

void DenseOptimizer::SetLearningRate(double lr) {
  Require(lr >= 0 && std::isfinite(lr), "lr", "must be finite and >= 0, got " + Num(lr));
  lr_ = lr;
}

void DenseOptimizer::StepSgd(const at::Tensor& p, at::Tensor g, State& s) const {
  const auto& o = options_;
  if (o.weight_decay != 0) g = g.add(p, o.weight_decay);
  if (o.momentum != 0) {
    if (s.step.item<float>() == 0.0F) {
      s.m1.copy_(g);
    } else {
      s.m1.mul_(o.momentum).add_(g, 1.0 - o.dampening);
    }
    s.step += 1;
    g = o.nesterov ? g.add(s.m1, o.momentum) : s.m1;
  }
  p.add_(g, -lr_);
}

void DenseOptimizer::StepAdagrad(const at::Tensor& p, at::Tensor g, State& s) const {
  const auto& o = options_;
  s.step += 1;
  const double step = s.step.item<float>();
  if (o.weight_decay != 0) g = g.add(p, o.weight_decay);
  const double clr = lr_ / (1 + (step - 1) * o.lr_decay);
  s.m1.addcmul_(g, g, 1);
  const at::Tensor denom = s.m1.sqrt().add_(eps_);
  p.addcdiv_(g, denom, -clr);
}

void DenseOptimizer::StepAdam(const at::Tensor& p, at::Tensor g, State& s) const {
  const auto& o = options_;
  s.step += 1;
  if (o.weight_decay != 0) {
    if (o.kind == DenseOptimizerKind::kAdamW) {
      p.mul_(1 - lr_ * o.weight_decay);
    } else {
      g = g.add(p, o.weight_decay);
    }
  }
  s.m1.lerp_(g, 1 - o.beta1);
  s.m2.mul_(o.beta2).addcmul_(g, g, 1 - o.beta2);
  const double step = s.step.item<float>();
  const double bias_correction1 = 1 - std::pow(o.beta1, step);
  const double bias_correction2 = 1 - std::pow(o.beta2, step);
  const double step_size = lr_ / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  at::Tensor denom;
  if (o.amsgrad) {
    at::maximum_out(s.m3, s.m3, s.m2);
    denom = (s.m3.sqrt() / bias_correction2_sqrt).add_(eps_);
  } else {
    denom = (s.m2.sqrt() / bias_correction2_sqrt).add_(eps_);
  }
  p.addcdiv_(s.m1, denom, -step_size);
}

void DenseOptimizer::Step() {
  c10::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i].tensor;
    if (!p.grad().defined()) continue;
    const at::Tensor g = p.grad();
    switch (options_.kind) {
      case DenseOptimizerKind::kSgd:
        StepSgd(p, g, states_[i]);
        break;
      case DenseOptimizerKind::kAdagrad:
        StepAdagrad(p, g, states_[i]);
        break;
      case DenseOptimizerKind::kAdam:
      case DenseOptimizerKind::kAdamW:
        StepAdam(p, g, states_[i]);
        break;
    }
  }
}

void DenseOptimizer::ZeroGrad() {
  for (auto& p : parameters_) {
    if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
  }
}

std::vector<std::pair<std::string, at::Tensor>> DenseOptimizer::StateTensors() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  const char* m1_name = options_.kind == DenseOptimizerKind::kSgd       ? "/momentum_buffer"
                        : options_.kind == DenseOptimizerKind::kAdagrad ? "/sum"
                                                                        : "/exp_avg";
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::string& n = parameters_[i].name;
    const State& s = states_[i];
    if (!s.step.defined()) continue;
    out.emplace_back(n + m1_name, s.m1);
    if (s.m2.defined()) out.emplace_back(n + "/exp_avg_sq", s.m2);
    if (s.m3.defined()) out.emplace_back(n + "/max_exp_avg_sq", s.m3);
    out.emplace_back(n + "/step", s.step);
  }
  return out;
}

}  // namespace tzrec
