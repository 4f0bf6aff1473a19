// The config's optimizer messages as the kernels take them (src/worker/train/train_common.hpp).
#include <iostream>

#include "train_common.hpp"
#include "tzrun/base/system.hpp"

namespace tzrec {

EmbeddingOptimizerConfig SparseOptimizerOptions(const protos::SparseOptimizer& o) {
  EmbeddingOptimizerConfig e;  // eps 1e-8, FBGEMM's default
  if (o.has_sgd_optimizer()) {
    e.kind = EmbeddingOptimizerKind::kSgd;
    e.lr = o.sgd_optimizer().lr();
  } else if (o.has_adagrad_optimizer()) {
    e.kind = EmbeddingOptimizerKind::kAdagrad;
    e.lr = o.adagrad_optimizer().lr();
  } else if (o.has_adam_optimizer()) {
    const auto& a = o.adam_optimizer();
    e.kind = EmbeddingOptimizerKind::kAdam;
    e.lr = a.lr();
    e.beta1 = a.beta1();
    e.beta2 = a.beta2();
    e.weight_decay = a.weight_decay();
  } else {
    const auto& r = o.rowwise_adagrad_optimizer();
    e.kind = EmbeddingOptimizerKind::kRowWiseAdagrad;
    e.lr = r.lr();
    // FBGEMM applies weight_decay only in L2 mode (the validation refuses it with NONE).
    e.weight_decay = r.weight_decay_mode() == protos::L2 ? r.weight_decay() : 0.0;
  }
  return e;
}

OptimizerConfig DenseOptimizerOptions(const protos::DenseOptimizer& o) {
  OptimizerConfig c;
  if (o.has_adagrad_optimizer()) {
    c.type = "adagrad";
    c.lr = o.adagrad_optimizer().lr();
    c.weight_decay = o.adagrad_optimizer().weight_decay();
    c.eps = 1e-10;  // torch.optim.Adagrad's default (TorchEasyRec passes no eps)
  } else if (o.has_adam_optimizer()) {
    const auto& a = o.adam_optimizer();
    c.type = "adam";
    c.lr = a.lr();
    c.beta1 = a.beta1();
    c.beta2 = a.beta2();
    c.weight_decay = a.weight_decay();
    c.eps = 1e-8;  // torch.optim.Adam's default
  } else {
    throw ConfigError("train_config.dense_optimizer: no supported optimizer set");
  }
  return c;
}

void PrintConfigWarnings(const std::vector<std::string>& warnings) {
  const auto env = tzrun::base::environ_map();
  const auto rank = env.find("RANK");
  if (rank != env.end() && rank->second != "0") return;
  for (const std::string& w : warnings) std::cerr << "tzrec_train: warning: " << w << "\n";
}

}  // namespace tzrec
