// Validation of train_config, eval_config and data_config, and the entry point
// (include/tzrec/config/config.hpp). Features: validate_features.cpp; model: validate_model.cpp.
#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

std::string Num(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

float MaxGradient(const protos::SparseOptimizer& o) {
  if (o.has_sgd_optimizer()) return o.sgd_optimizer().max_gradient();
  if (o.has_adagrad_optimizer()) return o.adagrad_optimizer().max_gradient();
  if (o.has_adam_optimizer()) return o.adam_optimizer().max_gradient();
  return o.rowwise_adagrad_optimizer().max_gradient();
}

void ValidateSparseOptimizer(const protos::SparseOptimizer& o) {
  const std::string path = "train_config.sparse_optimizer";
  Require(o.optimizer_case() != protos::SparseOptimizer::OPTIMIZER_NOT_SET,
          path +
              ": no optimizer; set one of sgd_optimizer, adagrad_optimizer, adam_optimizer, "
              "rowwise_adagrad_optimizer");
  float lr = 0;
  bool clipping = false;
  if (o.has_sgd_optimizer()) {
    lr = o.sgd_optimizer().lr();
    clipping = o.sgd_optimizer().gradient_clipping();
  } else if (o.has_adagrad_optimizer()) {
    lr = o.adagrad_optimizer().lr();
    clipping = o.adagrad_optimizer().gradient_clipping();
  } else if (o.has_adam_optimizer()) {
    lr = o.adam_optimizer().lr();
    clipping = o.adam_optimizer().gradient_clipping();
    const auto& a = o.adam_optimizer();
    Require(a.beta1() >= 0 && a.beta1() < 1, path + ".adam_optimizer.beta1: must be in [0, 1)");
    Require(a.beta2() >= 0 && a.beta2() < 1, path + ".adam_optimizer.beta2: must be in [0, 1)");
    Require(a.weight_decay() >= 0, path + ".adam_optimizer.weight_decay: must be >= 0");
  } else {
    const auto& r = o.rowwise_adagrad_optimizer();
    lr = r.lr();
    clipping = r.gradient_clipping();
    Require(r.weight_decay() >= 0, path + ".rowwise_adagrad_optimizer.weight_decay: must be >= 0");
    // FBGEMM's rowwise_adagrad applies weight_decay in modes L2 and DECOUPLE only (both
    // implemented in src/worker/core/embedding_rows.cpp); in NONE it is ignored.
    Require(r.weight_decay() == 0 || r.weight_decay_mode() != protos::NONE,
            path + ".rowwise_adagrad_optimizer.weight_decay: " + Num(r.weight_decay()) +
                " with weight_decay_mode NONE, in which FBGEMM applies no weight decay; set "
                "weight_decay_mode: L2 (added to the gradient) or DECOUPLE (w *= 1 - lr * "
                "weight_decay), or remove weight_decay");
  }
  Require(lr > 0, path + ": lr must be > 0, got " + Num(lr));
  Require(!clipping || MaxGradient(o) > 0,
          path + ": max_gradient must be > 0 with gradient_clipping");
}

void ValidateDenseOptimizer(const protos::DenseOptimizer& o) {
  const std::string path = "train_config.dense_optimizer";
  Require(o.optimizer_case() != protos::DenseOptimizer::OPTIMIZER_NOT_SET,
          path + ": no optimizer; set one of adagrad_optimizer, adam_optimizer");
  if (o.has_sgd_optimizer()) {
    const auto& a = o.sgd_optimizer();
    Require(a.lr() > 0, path + ".sgd_optimizer.lr: must be > 0, got " + Num(a.lr()));
    Require(a.momentum() >= 0, path + ".sgd_optimizer.momentum: must be >= 0");
    Require(a.weight_decay() >= 0, path + ".sgd_optimizer.weight_decay: must be >= 0");
  } else if (o.has_adamw_optimizer()) {
    const auto& a = o.adamw_optimizer();
    Require(a.lr() > 0, path + ".adamw_optimizer.lr: must be > 0, got " + Num(a.lr()));
    Require(a.beta1() >= 0 && a.beta1() < 1, path + ".adamw_optimizer.beta1: must be in [0, 1)");
    Require(a.beta2() >= 0 && a.beta2() < 1, path + ".adamw_optimizer.beta2: must be in [0, 1)");
    Require(a.weight_decay() >= 0, path + ".adamw_optimizer.weight_decay: must be >= 0");
  } else if (o.has_adam_optimizer()) {
    const auto& a = o.adam_optimizer();
    Require(a.lr() > 0, path + ".adam_optimizer.lr: must be > 0, got " + Num(a.lr()));
    Require(a.beta1() >= 0 && a.beta1() < 1, path + ".adam_optimizer.beta1: must be in [0, 1)");
    Require(a.beta2() >= 0 && a.beta2() < 1, path + ".adam_optimizer.beta2: must be in [0, 1)");
    Require(a.weight_decay() >= 0, path + ".adam_optimizer.weight_decay: must be >= 0");
  } else {
    const auto& a = o.adagrad_optimizer();
    Require(a.lr() > 0, path + ".adagrad_optimizer.lr: must be > 0, got " + Num(a.lr()));
    Require(a.weight_decay() >= 0, path + ".adagrad_optimizer.weight_decay: must be >= 0");
  }
}

void ValidateTrain(const protos::TrainConfig& train) {
  Require(train.has_sparse_optimizer(),
          "train_config.sparse_optimizer: required (TorchEasyRec's TrainConfig); e.g. "
          "sparse_optimizer { adagrad_optimizer { lr: 0.001 } constant_learning_rate {} }");
  Require(train.has_dense_optimizer(),
          "train_config.dense_optimizer: required (TorchEasyRec's TrainConfig); e.g. "
          "dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }");
  ValidateSparseOptimizer(train.sparse_optimizer());
  ValidateDenseOptimizer(train.dense_optimizer());
  Require(!(train.num_steps() > 0 && train.num_epochs() > 0),
          "train_config: both num_steps (" + std::to_string(train.num_steps()) +
              ") and num_epochs (" + std::to_string(train.num_epochs()) +
              ") are set; keep exactly one");
  Require(train.log_step_count_steps() > 0, "train_config.log_step_count_steps: must be > 0");
  const std::string& mp = train.mixed_precision();
  Require(mp.empty() || mp == "BF16" || mp == "FP16",
          "train_config.mixed_precision: \"" + mp + "\"; use \"BF16\", \"FP16\" or leave it unset");
  const protos::GradClipping& clip = train.grad_clipping();
  const std::string& type = clip.clipping_type();
  Require(type == "none" || type == "norm" || type == "value",
          "train_config.grad_clipping.clipping_type: \"" + type +
              "\"; use \"none\", \"norm\" or \"value\"");
  if (type != "none") {
    Require(clip.max_gradient() > 0, "train_config.grad_clipping.max_gradient: must be > 0 with " +
                                         type + " clipping, got " + Num(clip.max_gradient()));
  }
  Require(clip.norm_type() > 0,
          "train_config.grad_clipping.norm_type: must be > 0 or inf, got " + Num(clip.norm_type()));
  if (train.has_grad_scaler()) {
    const protos::GradScaler& s = train.grad_scaler();
    const std::string p = "train_config.grad_scaler";
    Require(s.init_scale() > 0, p + ".init_scale: must be > 0, got " + Num(s.init_scale()));
    Require(s.growth_factor() > 1,
            p + ".growth_factor: must be > 1, got " + Num(s.growth_factor()));
    Require(s.backoff_factor() > 0 && s.backoff_factor() < 1,
            p + ".backoff_factor: must be in (0, 1), got " + Num(s.backoff_factor()));
    Require(s.growth_interval() > 0, p + ".growth_interval: must be > 0");
  }
}

void ValidateData(const protos::DataConfig& data) {
  Require(data.batch_size() > 0,
          "data_config.batch_size: must be > 0 (the per-rank batch size, e.g. 1024)");
  Require(!data.has_eval_batch_size() || data.eval_batch_size() > 0,
          "data_config.eval_batch_size: 0; it must be > 0 when set (TorchEasyRec would use "
          "0): remove it to evaluate with batch_size");
  const std::string type = protos::DatasetType_Name(data.dataset_type());
  Require(data.dataset_type() == protos::OdpsDataset ||  // resolved by ResolveInputs
              data.dataset_type() == protos::OdpsDatasetV1 ||
              data.dataset_type() == protos::ParquetDataset ||
              data.dataset_type() == protos::CsvDataset,
          "data_config.dataset_type: " + type +
              " is a TorchEasyRec reader that tzrec_train does not support; use ParquetDataset "
              "or CsvDataset");
  Require(data.label_fields_size() >= 1,
          "data_config.label_fields: empty; name the label column, e.g. label_fields: \"clk\" "
          "(with several, tzrec_train's single-task models train on the first, as TorchEasyRec)");
  Require(data.sample_weight_fields_size() <= 1,
          "data_config.sample_weight_fields: " + std::to_string(data.sample_weight_fields_size()) +
              " fields; tzrec_train's single-task models weight the loss by one column (the "
              "first, as TorchEasyRec's rank models); per-task weights of multi-task models are "
              "not supported: keep one field");
  Require(data.fg_mode() != protos::FG_BUCKETIZE,
          "data_config.fg_mode: FG_BUCKETIZE is not supported; use FG_NONE (encoded input) or "
          "FG_DAG (tzrec_train runs the feature generation)");
  if (data.dataset_type() == protos::CsvDataset) {
    Require(!data.delimiter().empty(),
            "data_config.delimiter: empty; CsvDataset needs a delimiter such as \",\" or \"\\t\"");
    Require(data.with_header() || data.input_fields_size() > 0,
            "data_config.input_fields: empty with with_header false (TorchEasyRec's default); "
            "CsvDataset needs the column names in file order, or with_header: true");
  }
  std::set<std::string> columns;
  std::vector<std::string> names;
  for (const protos::Field& field : data.input_fields()) {
    Require(columns.insert(field.input_name()).second,
            "data_config.input_fields: column '" + field.input_name() + "' appears twice");
    names.push_back(field.input_name());
  }
  if (!names.empty()) {
    for (const std::string& label : data.label_fields()) {
      Require(columns.count(label) == 1, "data_config.label_fields: '" + label +
                                             "' is not one of data_config.input_fields" +
                                             Suggest(label, names));
    }
    for (const std::string& weight : data.sample_weight_fields()) {
      Require(columns.count(weight) == 1, "data_config.sample_weight_fields: '" + weight +
                                              "' is not one of data_config.input_fields" +
                                              Suggest(weight, names));
    }
  }
}

}  // namespace

void Validate(const google::protobuf::Message& message) {
  const auto& config = static_cast<const PipelineConfig&>(message);
  ValidateTrain(config.train_config());
  const protos::EvalConfig& eval = config.eval_config();
  Require(eval.log_step_count_steps() > 0, "eval_config.log_step_count_steps: must be > 0");
  ValidateData(config.data_config());
  ValidateFeatures(config);
  ValidateModel(config);
}

}  // namespace tzrec::config_internal
