// tzrec/config/config.hpp — the pipeline config of tzrec_train: TorchEasyRec's pipeline_config
// (tzrec/protos/pipeline.proto EasyRecConfig and the messages it uses; notes
// ../shared/reference/torchrec-sharding.md §1.7) in JSON, with protobuf's JSON field names.
//
// Shape of a config file (every key optional unless marked):
// {
//   "train_input_path": "data/train/*.parquet", "eval_input_path": "...", "model_dir": "exp/dlrm",
//   "train_config": {
//     "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.001}, "constant_learning_rate": {}},
//     "dense_optimizer":  {"adam_optimizer": {"lr": 0.001}, "constant_learning_rate": {}},
//     "num_steps": 0, "num_epochs": 1, "log_step_count_steps": 100, "save_checkpoints_steps": 1000,
//     "keep_checkpoint_max": 0, "gradient_accumulation_steps": 0,
//     "grad_clipping": {"clipping_type": "norm", "max_gradient": 1.0, "norm_type": 2.0,
//                       "enable_global_grad_clip": false},
//     "mixed_precision": "BF16", "grad_scaler": {"init_scale": 65536, ...}, "seed": 42,
//     "global_embedding_constraints": {"sharding_types": ["row_wise"]} },
//   "eval_config": {"num_steps": 0, "log_step_count_steps": 10},
//   "data_config": {"batch_size": 1024, "eval_batch_size": 0, "dataset_type": "ParquetDataset",
//                   "label_fields": ["clk"], "num_workers": 1, "delimiter": ",", "with_header":
//                   true, "input_fields": [...], "drop_remainder": false},
//   "feature_configs": [
//     {"id_feature": {"feature_name": "user_id", "expression": "user:user_id", "num_buckets": 1000,
//                     "embedding_dim": 16, "embedding_name": "", "pooling": "sum", "separator": "",
//                     "embedding_constraints": {"sharding_types": ["row_wise"]}}},
//     {"raw_feature": {"feature_name": "price", "expression": "item:price", "boundaries": [1, 2],
//                      "embedding_dim": 16, "normalizer": "method=expression,expr=log(x+3)"}} ],
//   "model_config": {
//     "feature_groups": [{"group_name": "dense", "feature_names": ["int_0"], "group_type":
//     "DEEP"}], "dlrm": {"dense_mlp": {"hidden_units": [64, 16]}, "final": {"hidden_units": [64,
//     32]},
//              "arch_with_sparse": true},
//     | "deep_fm": {"deep": {"hidden_units": [...]}, "final": {"hidden_units": [...]},
//     "wide_embedding_dim": 4} | "multi_tower": {"towers": [{"input": "user", "mlp":
//     {"hidden_units": [...]}}],
//                       "final": {"hidden_units": [64]}},
//     "metrics": [{"auc": {}}, {"grouped_auc": {"grouping_key": "user_id"}}],
//     "losses": [{"binary_cross_entropy": {}}] } }
//
// Errors: ConfigError (tzrec::Error, exit 2) with the JSON path of the problem, the value, and
// for an unknown or misspelt key the closest valid key ("train_config.num_step: unknown key; did
// you mean 'num_steps'?"). Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/error.hpp"
#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

// One optimizer (oneof *_optimizer) with a constant learning rate (TorchEasyRec offers schedules;
// only constant_learning_rate is accepted here, others are rejected with a clear error).
struct OptimizerConfig {
  std::string type =
      "adam";  // "sgd" | "adagrad" | "rowwise_adagrad" | "adam"  (from sgd_optimizer, ...)
  double lr = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
};

struct GradClippingConfig {
  std::string clipping_type = "none";  // none | norm | value
  double max_gradient = 1.0;
  double norm_type = 2.0;  // inf allowed ("inf")
  bool enable_global_grad_clip = false;
};

struct GradScalerConfig {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

struct TrainConfig {
  OptimizerConfig sparse_optimizer{"adagrad", 0.001};
  OptimizerConfig dense_optimizer{"adam", 0.001};
  std::int64_t num_steps = 0;  // exactly one of num_steps / num_epochs is > 0 (default: 1 epoch)
  std::int64_t num_epochs = 0;
  std::int64_t log_step_count_steps = 100;
  std::int64_t save_checkpoints_steps = 1000;
  std::int64_t keep_checkpoint_max = 0;          // 0: keep all
  std::int64_t gradient_accumulation_steps = 0;  // 0 or 1: off
  GradClippingConfig grad_clipping;
  std::string mixed_precision;  // "" | "BF16" | "FP16"
  std::optional<GradScalerConfig> grad_scaler;
  std::uint64_t seed = 42;
  std::vector<ShardingType> global_sharding_types;  // global_embedding_constraints.sharding_types
};

struct EvalConfig {
  std::int64_t num_steps = 0;  // 0: the whole eval input
  std::int64_t log_step_count_steps = 10;
};

struct DataConfig {
  std::int64_t batch_size = 1024;               // per rank
  std::int64_t eval_batch_size = 0;             // 0: batch_size
  std::string dataset_type = "ParquetDataset";  // ParquetDataset | CsvDataset
  std::vector<std::string> label_fields;
  std::int64_t num_workers = 1;           // reader threads per rank
  std::string delimiter = ",";            // CsvDataset; "\t" for Criteo TSV
  bool with_header = true;                // CsvDataset: first line holds column names
  std::vector<std::string> input_fields;  // CsvDataset without header: column names in order
  bool drop_remainder = false;
};

enum class FeatureKind { kId, kRaw };

struct FeatureConfig {
  FeatureKind kind = FeatureKind::kId;
  std::string feature_name;
  std::string expression;  // "user:col" / "item:col" / "col": the input column is after the ':'
  std::int64_t embedding_dim = 0;  // id features: > 0; raw features: > 0 only with boundaries
  // id_feature: exactly one of these gives the table size.
  std::int64_t hash_bucket_size = 0;    // values hashed (strings or ints) into [0, n)
  std::int64_t num_buckets = 0;         // values are integer ids in [0, n)
  std::vector<std::string> vocab_list;  // value → index + 2 (0: default/empty, 1: out of vocab)
  std::string embedding_name;           // shared table name ("" → "<feature_name>_emb")
  std::string pooling = "sum";          // sum | mean
  std::string separator;  // multi-value separator inside one cell ("" → single value)
  std::vector<ShardingType> sharding_types;  // embedding_constraints.sharding_types
  // raw_feature
  std::vector<double> boundaries;  // bucketize into len+1 ids (an embedding of embedding_dim)
  std::string normalizer;          // "" | "method=log1p" | "method=expression,expr=log(x+3)" |
                                   // "method=minmax,min=a,max=b" | "method=zscore,mean=a,std=b"
  std::int64_t value_dim = 1;
  double default_value = 0.0;  // missing raw value

  // Table rows of an id or bucketized raw feature (hash_bucket_size | num_buckets | vocab+2 |
  // boundaries+1); 0 for a dense raw feature.
  std::int64_t num_embeddings() const;
  bool is_sparse() const { return kind == FeatureKind::kId || !boundaries.empty(); }
  std::string input_column() const;  // expression after the last ':'
  std::string table_name() const;    // embedding_name or "<feature_name>_emb"
};

struct FeatureGroupConfig {
  std::string group_name;
  std::vector<std::string> feature_names;
  std::string group_type = "DEEP";  // DEEP | WIDE
};

struct MlpConfig {
  std::vector<std::int64_t> hidden_units;
  std::string activation = "nn.ReLU";
  bool use_bn = false;
  double dropout_ratio = 0.0;
};

struct TowerConfig {
  std::string input;  // feature group name
  MlpConfig mlp;
};

struct ModelConfig {
  std::vector<FeatureGroupConfig> feature_groups;
  std::string model_type;  // "dlrm" | "deep_fm" | "multi_tower"
  // dlrm
  MlpConfig dense_mlp;
  MlpConfig final_mlp;  // dlrm.final, deep_fm.final, multi_tower.final
  bool arch_with_sparse = true;
  // deep_fm
  MlpConfig deep_mlp;
  std::int64_t wide_embedding_dim = 4;
  // multi_tower
  std::vector<TowerConfig> towers;
  // metrics / losses
  bool metric_auc = true;
  std::string grouped_auc_key;  // non-empty: grouped_auc (GAUC) grouped by this input column
  std::string loss = "binary_cross_entropy";
};

struct PipelineConfig {
  std::string train_input_path;
  std::string eval_input_path;
  std::string model_dir;
  TrainConfig train_config;
  EvalConfig eval_config;
  DataConfig data_config;
  std::vector<FeatureConfig> feature_configs;
  ModelConfig model_config;

  const FeatureConfig& Feature(const std::string& name) const;  // throws ConfigError
};

// A raw feature's parsed `normalizer` (the forms FeatureConfig::normalizer lists). The parser
// validates every normalizer with ParseNormalizer, so a config that parsed never throws here.
struct Normalizer {
  std::string method;  // "" (identity) | "log1p" | "expression" | "minmax" | "zscore"
  // method=expression: expr is exactly "x" (identity) or "log(x+C)" (C a number; "log(x)": C = 0);
  bool expression_is_log = false;
  double offset = 0.0;           // C of log(x+C)
  double min = 0.0, max = 1.0;   // minmax: (x - min) / (max - min)
  double mean = 0.0, std = 1.0;  // zscore: (x - mean) / std
  // The normalised value. log1p(x) for x <= -1 and log(x+C) for x+C <= 0 return 0 (no NaN/-inf
  // reaches the model). Pure; thread-safe.
  double Apply(double x) const;
};
// Parses "method=log1p", "method=expression,expr=log(x+3)", "method=minmax,min=a,max=b",
// "method=zscore,mean=a,std=b" ("" → identity). Throws ConfigError naming the text and the
// accepted forms (unknown method, missing or non-numeric parameter, max <= min, std <= 0).
Normalizer ParseNormalizer(const std::string& text);

// Parses and validates (cross references: groups name existing features, towers existing groups,
// shared tables agree on dim, exactly one model). `edit_config_json` is TorchEasyRec's override:
// a JSON object whose keys are dotted paths ("train_config.num_steps", "data_config.batch_size",
// "feature_configs[0].id_feature.embedding_dim",
// "feature_configs[feature_name=c1].id_feature.num_buckets") and whose values replace what the file
// says; applied before validation.
PipelineConfig ParsePipelineConfig(const std::string& json_text,
                                   const std::string& edit_config_json = "");
PipelineConfig LoadPipelineConfig(const std::string& path,
                                  const std::string& edit_config_json = "");
// The effective config as JSON text (what rank 0 writes to model_dir/pipeline.config).
std::string ToJson(const PipelineConfig& config);
// Markdown reference of every key (type, default, meaning), generated from the same schema the
// parser uses; docs/training.md embeds it (`tzrec_train config-reference`).
std::string ConfigReferenceMarkdown();

}  // namespace tzrec
