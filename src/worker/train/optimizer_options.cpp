// The config's optimizer and learning-rate messages as the kernels take them
// (src/worker/train/train_common.hpp), with TorchEasyRec's mapping
// (tzrec/optim/optimizer_builder.py: every proto field is passed; the rest are torch's / FBGEMM's
// defaults).
#include <iostream>

#include "train_common.hpp"
#include "tzrun/base/system.hpp"

namespace tzrec {
namespace {

WeightDecayMode ToMode(protos::WeightDecayMode mode) {
  switch (mode) {
    case protos::L2:
      return WeightDecayMode::kL2;
    case protos::DECOUPLE:
      return WeightDecayMode::kDecoupled;
    default:
      return WeightDecayMode::kNone;
  }
}

template <typename Message>
LrScheduleOptions Schedule(const Message& o) {
  LrScheduleOptions s;
  if (o.has_exponential_decay_learning_rate()) {
    const auto& e = o.exponential_decay_learning_rate();
    s.kind = LrScheduleKind::kExponentialDecay;
    s.decay_size = e.decay_size();
    s.decay_factor = e.decay_factor();
    s.staircase = e.staircase();
    s.warmup_learning_rate = e.warmup_learning_rate();
    s.warmup_size = e.warmup_size();
    s.min_learning_rate = e.min_learning_rate();
    s.by_epoch = e.by_epoch();
  } else if (o.has_manual_step_learning_rate()) {
    const auto& m = o.manual_step_learning_rate();
    s.kind = LrScheduleKind::kManualStep;
    s.schedule_sizes.assign(m.schedule_sizes().begin(), m.schedule_sizes().end());
    s.learning_rates.assign(m.learning_rates().begin(), m.learning_rates().end());
    s.warmup = m.warmup();
    s.by_epoch = m.by_epoch();
  }
  return s;
}

}  // namespace

EmbeddingOptimizerConfig SparseOptimizerFromConfig(const protos::SparseOptimizer& o) {
  EmbeddingOptimizerConfig e;  // eps 1e-8, FBGEMM's default
  if (o.has_sgd_optimizer()) {
    const auto& a = o.sgd_optimizer();
    e.kind = EmbeddingOptimizerKind::kSgd;
    e.lr = a.lr();
    e.gradient_clipping = a.gradient_clipping();
    e.max_gradient = a.max_gradient();
  } else if (o.has_adagrad_optimizer()) {
    const auto& a = o.adagrad_optimizer();
    e.kind = EmbeddingOptimizerKind::kAdagrad;
    e.lr = a.lr();
    e.gradient_clipping = a.gradient_clipping();
    e.max_gradient = a.max_gradient();
  } else if (o.has_adam_optimizer()) {
    const auto& a = o.adam_optimizer();
    e.kind = EmbeddingOptimizerKind::kAdam;
    e.lr = a.lr();
    e.beta1 = a.beta1();
    e.beta2 = a.beta2();
    e.weight_decay = a.weight_decay();
    e.gradient_clipping = a.gradient_clipping();
    e.max_gradient = a.max_gradient();
  } else {
    const auto& r = o.rowwise_adagrad_optimizer();
    e.kind = EmbeddingOptimizerKind::kRowWiseAdagrad;
    e.lr = r.lr();
    e.weight_decay = r.weight_decay();
    e.weight_decay_mode = ToMode(r.weight_decay_mode());
    e.gradient_clipping = r.gradient_clipping();
    e.max_gradient = r.max_gradient();
  }
  return e;
}

DenseOptimizerOptions DenseOptimizerFromConfig(const protos::DenseOptimizer& o) {
  DenseOptimizerOptions d;  // eps unset: torch's default of the kind
  if (o.has_sgd_optimizer()) {
    d.kind = DenseOptimizerKind::kSgd;
    d.lr = o.sgd_optimizer().lr();
    d.momentum = o.sgd_optimizer().momentum();
    d.weight_decay = o.sgd_optimizer().weight_decay();
  } else if (o.has_adagrad_optimizer()) {
    d.kind = DenseOptimizerKind::kAdagrad;
    d.lr = o.adagrad_optimizer().lr();
    d.weight_decay = o.adagrad_optimizer().weight_decay();
  } else if (o.has_adam_optimizer() || o.has_adamw_optimizer()) {
    const bool w = o.has_adamw_optimizer();
    d.kind = w ? DenseOptimizerKind::kAdamW : DenseOptimizerKind::kAdam;
    d.lr = w ? o.adamw_optimizer().lr() : o.adam_optimizer().lr();
    d.beta1 = w ? o.adamw_optimizer().beta1() : o.adam_optimizer().beta1();
    d.beta2 = w ? o.adamw_optimizer().beta2() : o.adam_optimizer().beta2();
    d.weight_decay = w ? o.adamw_optimizer().weight_decay() : o.adam_optimizer().weight_decay();
  } else {
    throw ConfigError("train_config.dense_optimizer: no optimizer set");
  }
  return d;
}

LrScheduleOptions SparseScheduleFromConfig(const protos::SparseOptimizer& o) {
  return Schedule(o);
}
LrScheduleOptions DenseScheduleFromConfig(const protos::DenseOptimizer& o) {
  return Schedule(o);
}

void PrintConfigWarnings(const std::vector<std::string>& warnings) {
  const auto env = tzrun::base::EnvironMap();
  const auto rank = env.find("RANK");
  if (rank != env.end() && rank->second != "0") return;
  for (const std::string& w : warnings) std::cerr << "tzrec_train: warning: " << w << "\n";
}

}  // namespace tzrec
