// tzrec/config/config.hpp — the pipeline config of tzrec_train: TorchEasyRec's EasyRecConfig
// (alibaba/TorchEasyRec tzrec/protos/pipeline.proto and the messages it uses) as protobuf
// messages generated from our own .proto files (src/worker/config/proto/tzrec/protos/*.proto:
// TorchEasyRec's package, message, field and enum names, numbers, types and defaults, for what
// tzrec_train implements). The generated messages are the config: there is no second struct.
//
// Formats: protobuf text (TorchEasyRec's `.config`) and protobuf JSON (`.json`, or any file whose
// first non-blank character is '{'), both read with libprotobuf.
//
// What is accepted (docs/config-reference.md, generated from the descriptors by
// ConfigReferenceMarkdown):
//   * every field of our .proto files is honoured, or — when it cannot change the trained model
//     (use_tensorboard, pin_memory, ODPS reader options, ...) — accepted with a one-line warning;
//   * a TorchEasyRec field that our .proto files leave out (another model, feature type,
//     optimizer, ...) is a ConfigError naming it and saying that tzrec_train does not support it,
//     with the nearest supported alternative;
//   * an unknown (non-TorchEasyRec) name is a ConfigError with the closest valid name;
//   * values are validated (cross references: groups name existing features, towers existing
//     groups, shared tables agree on dim, exactly one model, ...).
//
// Errors: ConfigError (tzrec::Error, exit 2) with the file position or field path of the
// problem, the value and the fix. Thread-safety: the functions are reentrant; messages are values.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tzrec/error.hpp"
// The generated messages; libprotobuf's headers trip -Wshadow (arena_impl.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "tzrec/protos/pipeline.pb.h"
#pragma GCC diagnostic pop
#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

using PipelineConfig = protos::EasyRecConfig;

// A parsed, validated config and the warnings of the fields it accepted without effect.
struct LoadedConfig {
  PipelineConfig config;
  std::vector<std::string> warnings;  // one line each, e.g. "train_config.use_tensorboard: ..."
};

// Parses `text` (protobuf text, or protobuf JSON when it starts with '{'), applies
// `edit_config_json` (TorchEasyRec's --edit_config_json: a JSON object whose keys are dotted paths
// such as "train_config.num_steps", "feature_configs[0].id_feature.embedding_dim" or
// "feature_configs[feature_name=c1].id_feature.num_buckets", whose values replace the file's), then
// validates. `origin` names the text in messages (a path). The three top-level paths
// (train_input_path, eval_input_path, model_dir) may be empty here: the commands fill them from
// flags and check them (CheckInputPaths).
LoadedConfig ParsePipelineConfig(const std::string& text, const std::string& edit_config_json = "",
                                 const std::string& origin = "pipeline config");
LoadedConfig LoadPipelineConfig(const std::string& path, const std::string& edit_config_json = "");
// Validation alone (what ParsePipelineConfig runs after the edits); returns the warnings.
std::vector<std::string> ValidatePipelineConfig(const PipelineConfig& config);

// After the commands set the input paths from their flags: an odps:// path is a ConfigError (export
// the table to Parquet); dataset_type OdpsDataset / OdpsDatasetV1 with local paths reads them as
// ParquetDataset, with a warning.
void ResolveInputs(PipelineConfig* config, std::vector<std::string>* warnings);

// The config as protobuf text (what rank 0 writes to model_dir/pipeline.config; TorchEasyRec's
// tools read it as long as no tzrec_train extension field, e.g. train_config.seed, is set).
std::string ToText(const PipelineConfig& config);
// Markdown reference of every field (type, default, what tzrec_train does with it, the test that
// shows it), generated from the descriptors and the support table.
std::string ConfigReferenceMarkdown();

// ---- Effective values (TorchEasyRec's rules applied to the messages) -------------------------

// The seed of parameter init / dropout / shuffling: train_config.seed, else 42.
std::uint64_t Seed(const PipelineConfig& config);
// Epochs to train: 0 with num_steps set, else num_epochs (neither set: 1 epoch).
std::int64_t NumEpochs(const PipelineConfig& config);
// data_config.eval_batch_size, else batch_size.
std::int64_t EvalBatchSize(const PipelineConfig& config);
// fg_mode FG_NORMAL or FG_DAG: features read their expression's column and tzrec_train runs the
// feature generation; FG_NONE: they read the column named feature_name, already encoded.
bool RunsFeatureGeneration(const PipelineConfig& config);
// The id_feature that maps one item of a sequence_id_feature: its table options (hash_bucket_size,
// num_buckets, vocab_list, vocab_dict) and separator, for VocabRows / IdVocabulary (ids reserved:
// TorchEasyRec's SequenceIdFeature always reserves 0 and 1).
protos::IdFeature SequenceItemFeature(const protos::SequenceIdFeature& feature);
// The grouped_auc metric's grouping_key, or "" when there is none.
std::string GroupedAucKey(const PipelineConfig& config);
// The auc metric's thresholds (TorchEasyRec: torchmetrics' binned AUC, 200 by default; 0: exact);
// 0 when the config has no auc metric.
std::int64_t AucThresholds(const PipelineConfig& config);
// The model oneof's name: "dlrm" | "deepfm" | "multi_tower".
std::string ModelType(const PipelineConfig& config);

// ---- One feature (a FeatureConfig holds an id_feature, raw_feature, sequence_id_feature or
// sequence_raw_feature) ------------------------------------------------------------------------
const std::string& FeatureName(const protos::FeatureConfig& feature);
bool IsIdFeature(const protos::FeatureConfig& feature);  // id_feature only
// sequence_id_feature or sequence_raw_feature (TorchEasyRec's is_sequence).
bool IsSequence(const protos::FeatureConfig& feature);
// An id feature, a sequence id feature or a (sequence) raw feature with boundaries: it has an
// embedding table.
bool IsSparse(const protos::FeatureConfig& feature);
std::int64_t EmbeddingDim(const protos::FeatureConfig& feature);  // 0 for a dense raw feature
// Table rows: hash_bucket_size | num_buckets | VocabRows() | len(boundaries) + 1; 0 dense.
std::int64_t NumEmbeddings(const protos::FeatureConfig& feature);
std::string TableName(const protos::FeatureConfig& feature);  // embedding_name or "<name>_emb"
// The pooling field ("sum" for sequence features, which have none).
const std::string& Pooling(const protos::FeatureConfig& feature);
// How the feature's embedding is pooled: Pooling() for non-sequence features; for a sequence
// feature the pooling_type of the pooling_encoder whose sequence group lists it; when none does
// (the feature is unread, or read per item by an attention encoder (AttentionInput), where
// pooling one id is the same either way) the pooling of the first other feature of its table
// that has one, else "sum". Validation makes it unique per feature and per table.
std::string EffectivePooling(const PipelineConfig& config, const protos::FeatureConfig& feature);
std::int64_t ValueDim(const protos::FeatureConfig& feature);  // raw: value_dim; others: 1
// Sequence features: sequence_length (items kept) and sequence_delim; 0 / "" for the others.
std::int64_t SequenceLength(const protos::FeatureConfig& feature);
const std::string& SequenceDelim(const protos::FeatureConfig& feature);
const protos::ParameterConstraints& EmbeddingConstraints(const protos::FeatureConfig& feature);
// The input column: with feature generation the expression after its last ':', else the name.
// (A combo_feature / lookup_feature / match_feature / expr_feature: its first input's column.)
std::string InputColumn(const PipelineConfig& config, const protos::FeatureConfig& feature);
// Every input column: one, or a combo_feature's inputs, a lookup_feature's map and key, a
// match_feature's nested_map, pkey and skey (ALL: none), an expr_feature's variables (FG_NONE: the
// column named feature_name).
std::vector<std::string> InputColumns(const PipelineConfig& config,
                                      const protos::FeatureConfig& feature);
std::vector<ShardingType> ShardingTypes(const protos::ParameterConstraints& constraints);
// The feature named `name`; throws ConfigError naming it and the closest defined feature.
const protos::FeatureConfig& Feature(const PipelineConfig& config, const std::string& name);

// ---- One sequence encoder (a SeqEncoderConfig holds one of its seq_module) -------------------
// The set field's name ("din_encoder", "simple_attention", "pooling_encoder",
// "multi_window_din_encoder"), or "" when none is set.
std::string SeqEncoderKind(const protos::SeqEncoderConfig& encoder);
// An attention encoder (din_encoder, simple_attention, multi_window_din_encoder: it reads the
// unpooled sequence per item): the sequence group it names; nullptr for a pooling_encoder or none.
const std::string* AttentionInput(const protos::SeqEncoderConfig& encoder);

// ---- Vocabularies of id features (TorchEasyRec tzrec/features/feature.py vocab_list /
// vocab_dict / vocab_file / default_bucketize_value, docs/source/feature/feature.md) -------------
// Without default_bucketize_value: vocab_list[i] -> i + 2, vocab_dict values as given; the empty
// value (default_value "") -> 0 (overridden by a vocabulary entry ""), any other value not in the
// vocabulary -> 1 (<OOV>); rows len(vocab_list) + 2, or max(vocab_dict values, 0) + 1.
// With default_bucketize_value d: vocab_list[i] -> i, vocab_dict as given, nothing reserved;
// unknown values (the empty one included, unless listed) -> d; rows len(vocab_list), or
// max(vocab_dict values) + 1. vocab_file is read into vocab_dict by ParsePipelineConfig.
struct Vocabulary {
  std::unordered_map<std::string, std::int64_t> ids;
  std::int64_t unknown_id = 1;  // default_bucketize_value, 1 when unset
  std::int64_t rows = 0;
};
// The table rows of an id feature's vocabulary (0 without vocab_list / vocab_dict).
std::int64_t VocabRows(const protos::IdFeature& feature);
// The vocabulary of an id feature with vocab_list or vocab_dict; throws ConfigError naming the
// feature for a duplicate vocab_list entry or an unloaded vocab_file.
Vocabulary IdVocabulary(const protos::IdFeature& feature);
// Reads a vocab_file's text (`origin` names it in errors): one token per line, the line number
// its id (a blank line is the token ""), or "token id" per line (blank lines skipped). Throws
// ConfigError for a mix of the two forms, a bad id or a duplicate token.
std::unordered_map<std::string, std::int64_t> ParseVocabFile(const std::string& text,
                                                             const std::string& origin);

// A raw feature's parsed `normalizer` (TorchEasyRec's fg forms; see ParseNormalizer).
struct Normalizer {
  std::string method;  // "" (identity) | "log1p" | "log10" | "expression" | "minmax" | "zscore"
  // method=expression: expr is exactly "x" (identity) or "log(x+C)" (C a number; "log(x)": C = 0);
  bool expression_is_log = false;
  double offset = 0.0;           // C of log(x+C)
  double min = 0.0, max = 1.0;   // minmax: (x - min) / (max - min)
  double mean = 0.0, std = 1.0;  // zscore: (x - mean) / standard_deviation
  double threshold = 1e-10;      // log10: log10(max(x, threshold)) ...
  double fallback = -10.0;       // ... or `default` when x <= threshold
  // The normalised value. log1p(x) for x <= -1 and log(x+C) for x+C <= 0 return 0 (no NaN/-inf
  // reaches the model). Pure; thread-safe.
  double Apply(double x) const;
};
// Parses "method=log1p", "method=log10,threshold=t,default=d", "method=expression,expr=log(x+3)",
// "method=minmax,min=a,max=b", "method=zscore,mean=a,standard_deviation=b" ("" → identity).
// Throws ConfigError naming the text and the accepted forms.
Normalizer ParseNormalizer(const std::string& text);

}  // namespace tzrec
