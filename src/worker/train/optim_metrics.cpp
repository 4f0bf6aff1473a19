// DenseOptimizer and the AUC metrics (include/tzrec/train/train.hpp).
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "tzrec/train/train.hpp"

namespace tzrec {

DenseOptimizer::DenseOptimizer(const OptimizerConfig& config, std::vector<Parameter> parameters)
    : config_(config), parameters_(std::move(parameters)) {
  if (config_.type != "sgd" && config_.type != "adam" && config_.type != "adagrad") {
    throw ConfigError(
        "train_config.dense_optimizer: '" + config_.type +
        "' is not a dense optimizer here; use sgd_optimizer, adagrad_optimizer or adam_optimizer");
  }
  for (const auto& p : parameters_) {
    if (config_.type == "adam") {
      m1_.push_back(at::zeros_like(p.tensor).detach());
      m2_.push_back(at::zeros_like(p.tensor).detach());
    } else if (config_.type == "adagrad") {
      m1_.push_back(at::full_like(p.tensor, config_.initial_accumulator_value).detach());
    }
  }
  step_ = at::zeros({}, at::kLong);
}

void DenseOptimizer::Step() {
  c10::NoGradGuard no_grad;
  step_ += 1;
  const double t = static_cast<double>(step_.item<std::int64_t>());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor p = parameters_[i].tensor;
    if (!p.grad().defined()) continue;
    at::Tensor g = p.grad();
    if (config_.weight_decay != 0.0) g = g + config_.weight_decay * p;
    if (config_.type == "sgd") {
      p.sub_(g * config_.lr);
    } else if (config_.type == "adagrad") {
      m1_[i].add_(g * g);
      p.sub_(config_.lr * g / (m1_[i].sqrt() + config_.eps));
    } else {
      m1_[i].mul_(config_.beta1).add_(g * (1.0 - config_.beta1));
      m2_[i].mul_(config_.beta2).add_(g * g * (1.0 - config_.beta2));
      const double c1 = 1.0 - std::pow(config_.beta1, t);
      const double c2 = 1.0 - std::pow(config_.beta2, t);
      p.sub_(config_.lr * (m1_[i] / c1) / ((m2_[i] / c2).sqrt() + config_.eps));
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
  for (std::size_t i = 0; i < m1_.size(); ++i) {
    const std::string& n = parameters_[i].name;
    if (config_.type == "adam") {
      out.emplace_back(n + "/exp_avg", m1_[i]);
      out.emplace_back(n + "/exp_avg_sq", m2_[i]);
    } else {
      out.emplace_back(n + "/sum", m1_[i]);
    }
  }
  out.emplace_back("step", step_);
  return out;
}

double Auc(const at::Tensor& scores_in, const at::Tensor& labels_in) {
  const at::Tensor scores = scores_in.detach().to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor labels = labels_in.detach().to(at::kCPU, at::kDouble).contiguous();
  const std::int64_t n = scores.numel();
  const auto order =
      std::get<1>(scores.sort(/*stable=*/std::optional<bool>(true), 0, /*descending=*/false));
  const auto* s = scores.data_ptr<double>();
  const auto* y = labels.data_ptr<double>();
  const auto* o = order.data_ptr<std::int64_t>();
  // Rank-sum (Mann-Whitney U) with average ranks for ties.
  double pos = 0;
  double rank_sum = 0;
  std::int64_t i = 0;
  while (i < n) {
    std::int64_t j = i;
    while (j + 1 < n && s[o[j + 1]] == s[o[i]]) ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::int64_t k = i; k <= j; ++k) {
      if (y[o[k]] > 0.5) {
        pos += 1;
        rank_sum += avg_rank;
      }
    }
    i = j + 1;
  }
  const double neg = static_cast<double>(n) - pos;
  if (pos == 0 || neg == 0) return 0.5;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

double GroupedAuc(const at::Tensor& scores, const at::Tensor& labels, const at::Tensor& groups) {
  const at::Tensor g = groups.detach().to(at::kCPU, at::kLong).contiguous();
  const auto order =
      std::get<1>(g.sort(/*stable=*/std::optional<bool>(true), 0, /*descending=*/false));
  const at::Tensor gs = g.index_select(0, order);
  const at::Tensor ss = scores.detach().to(at::kCPU).index_select(0, order);
  const at::Tensor ls = labels.detach().to(at::kCPU).index_select(0, order);
  const auto* gp = gs.data_ptr<std::int64_t>();
  const std::int64_t n = gs.numel();
  double weighted = 0;
  double weight = 0;
  std::int64_t i = 0;
  while (i < n) {
    std::int64_t j = i;
    while (j < n && gp[j] == gp[i]) ++j;
    const at::Tensor l = ls.narrow(0, i, j - i);
    const double p = l.sum().item<double>();
    if (p > 0 && p < static_cast<double>(j - i)) {
      weighted += Auc(ss.narrow(0, i, j - i), l) * static_cast<double>(j - i);
      weight += static_cast<double>(j - i);
    }
    i = j;
  }
  return weight > 0 ? weighted / weight : 0.5;
}

}  // namespace tzrec
