// The TorchEasyRec fields that our .proto files leave out (alibaba/TorchEasyRec
// tzrec/protos/*.proto at the commit the shared reference configs come from), each with what it is
// and the nearest supported alternative. A config that sets one is refused with that text
// (internal.hpp).
#include <string>
#include <vector>

#include "internal.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec::config_internal {
namespace {

// The models tzrec_train trains (keep in step with src/worker/train/model.cpp's kFactories).
#define TZREC_RANK_MODELS                                                                          \
  "dlrm, deepfm, multi_tower, multi_tower_din, wide_and_deep, dcn_v1, dcn_v2, mask_net, xdeepfm, " \
  "wukong"
constexpr const char* kRank =
    "a rank model tzrec_train does not implement; it trains " TZREC_RANK_MODELS
    " and the multi-task simple_multi_task, mmoe, dbmtl, ple";
constexpr const char* kMultiTask =
    "a multi-task model tzrec_train does not implement; its multi-task models are "
    "simple_multi_task, mmoe, dbmtl and ple";
constexpr const char* kTaskSpace =
    "task-space loss weights are not implemented; weight the task with weight or "
    "sample_weight_name";
constexpr const char* kMatch =
    "a match (retrieval) model; tzrec_train trains rank models only: " TZREC_RANK_MODELS;
constexpr const char* kGenerative =
    "a generative model; tzrec_train trains the rank models " TZREC_RANK_MODELS;
constexpr const char* kFeatureType =
    "a feature type tzrec_train does not implement; supported: id_feature, raw_feature, "
    "combo_feature, lookup_feature, match_feature, expr_feature (generate "
    "the feature offline and read it as an id_feature or raw_feature with fg_mode: FG_NONE)";
constexpr const char* kSequence =
    "this sequence feature type is not implemented by tzrec_train; supported: "
    "sequence_id_feature, sequence_raw_feature with boundaries, sequence_feature of id_feature / "
    "raw_feature with boundaries";
constexpr const char* kGroupedSequence =
    "a sequence inside an id_feature / raw_feature is a newer TorchEasyRec form that tzrec_train "
    "does not implement; write a sequence_feature { sequence_name ... features { ... } } or a "
    "sequence_id_feature";
constexpr const char* kSeqFg =
    "not implemented for sequence items (each item of a sequence_raw_feature is one value, "
    "bucketized by boundaries); transform the values offline";
constexpr const char* kSeqPooling =
    "a sequence feature is pooled by its group's pooling_encoder (pooling_type); remove it";
constexpr const char* kAttention =
    "this sequence encoder is not implemented by tzrec_train; use din_encoder, simple_attention, "
    "multi_window_din_encoder or pooling_encoder";
constexpr const char* kSampler =
    "negative samplers serve match models, which tzrec_train does "
    "not train";
constexpr const char* kOdps =
    "a feature of TorchEasyRec's ODPS/streaming readers; tzrec_train "
    "reads local CsvDataset / ParquetDataset files";
constexpr const char* kSparseOpt =
    "a sparse optimizer tzrec_train does not implement; supported: sgd_optimizer, "
    "adagrad_optimizer, adam_optimizer, rowwise_adagrad_optimizer";
constexpr const char* kComboHash =
    "a combo_feature is sized by hash_bucket_size in tzrec_train; use hash_bucket_size";
constexpr const char* kEmbeddingInit =
    "custom embedding init is not implemented; tzrec_train initialises tables as TorchRec does";

const std::vector<TorchEasyRecField> kFields = {
    {"tzrec.protos.EasyRecConfig", "export_config",
     "export settings (exporter_type, best_exporter_metric); tzrec_train export exports the newest "
     "checkpoint, or the one --checkpoint_path names"},
    {"tzrec.protos.EasyRecConfig", "item_input_path", kMatch},

    {"tzrec.protos.TrainConfig", "save_checkpoints_epochs", "use save_checkpoints_steps"},
    {"tzrec.protos.TrainConfig", "save_checkpoints_timestamp_interval",
     "event-time checkpoints are for streaming input; use save_checkpoints_steps"},
    {"tzrec.protos.TrainConfig", "save_checkpoints_timestamps",
     "event-time checkpoints are for streaming input; use save_checkpoints_steps"},
    {"tzrec.protos.TrainConfig", "save_checkpoints_timestamp_quorum",
     "event-time checkpoints are for streaming input; use save_checkpoints_steps"},
    {"tzrec.protos.TrainConfig", "cudnn_allow_tf32",
     "the TF32 switches are not implemented; tzrec_train keeps libtorch's defaults (cuDNN TF32 "
     "on, matmul TF32 off, as TorchEasyRec's defaults): remove the field"},
    {"tzrec.protos.TrainConfig", "cuda_matmul_allow_tf32",
     "the TF32 switches are not implemented; tzrec_train keeps libtorch's defaults (cuDNN TF32 "
     "on, matmul TF32 off, as TorchEasyRec's defaults): remove the field"},
    {"tzrec.protos.TrainConfig", "delta_embedding_dump_config",
     "delta embedding dumps to FeatureStore are not implemented"},

    {"tzrec.protos.EvalConfig", "evaluator_type",
     "tzrec_train evaluates the latest checkpoint (evaluator_type \"latest\"); remove the field"},

    {"tzrec.protos.DataConfig", "fg_encoded", "deprecated in TorchEasyRec; use fg_mode"},
    {"tzrec.protos.DataConfig", "sample_mask_prob", "sample masking is not implemented"},
    {"tzrec.protos.DataConfig", "negative_sample_mask_prob", kSampler},
    {"tzrec.protos.DataConfig", "force_base_data_group", kSampler},
    {"tzrec.protos.DataConfig", "sample_cost_field",
     "cost-based batching is not implemented; use batch_size"},
    {"tzrec.protos.DataConfig", "batch_cost_size",
     "cost-based batching is not implemented; use batch_size"},
    {"tzrec.protos.DataConfig", "input_fields_str", "write the columns as input_fields"},
    {"tzrec.protos.DataConfig", "in_order", kOdps},
    {"tzrec.protos.DataConfig", "min_batch_size", "use drop_remainder"},
    {"tzrec.protos.DataConfig", "negative_sampler", kSampler},
    {"tzrec.protos.DataConfig", "negative_sampler_v2", kSampler},
    {"tzrec.protos.DataConfig", "hard_negative_sampler", kSampler},
    {"tzrec.protos.DataConfig", "hard_negative_sampler_v2", kSampler},
    {"tzrec.protos.DataConfig", "tdm_sampler", kSampler},

    {"tzrec.protos.FeatureConfig", "overlap_feature", kFeatureType},
    {"tzrec.protos.FeatureConfig", "tokenize_feature", kFeatureType},
    {"tzrec.protos.FeatureConfig", "custom_feature", kFeatureType},
    {"tzrec.protos.FeatureConfig", "kv_dot_product", kFeatureType},
    {"tzrec.protos.FeatureConfig", "bool_mask_feature", kFeatureType},
    {"tzrec.protos.FeatureConfig", "combine_feature", kFeatureType},
    {"tzrec.protos.FeatureConfig", "sequence_combo_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_lookup_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_match_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_expr_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_overlap_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_tokenize_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_custom_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_kv_dot_product", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_bool_mask_feature", kSequence},
    {"tzrec.protos.FeatureConfig", "sequence_combine_feature", kSequence},

    {"tzrec.protos.IdFeature", "default_value",
     "fg default values are not implemented; an empty cell has no id"},
    {"tzrec.protos.IdFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.IdFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.IdFeature", "zch",
     "zero-collision hashing is not implemented; use hash_bucket_size"},
    {"tzrec.protos.IdFeature", "asset_dir",
     "give vocab_file as a path relative to the working directory (or absolute)"},
    {"tzrec.protos.IdFeature", "dynamicemb", "dynamic embeddings are not implemented"},
    {"tzrec.protos.IdFeature", "fg_encoded_default_value",
     "fill empty cells in the data; an empty fg-encoded cell has no id"},
    {"tzrec.protos.IdFeature", "fg_value_type", "remove it (values are read as text or integers)"},
    {"tzrec.protos.IdFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.IdFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.IdFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.IdFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.IdFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.IdFeature", "sequence_fields", kGroupedSequence},

    {"tzrec.protos.ComboFeature", "vocab_list", kComboHash},
    {"tzrec.protos.ComboFeature", "vocab_dict", kComboHash},
    {"tzrec.protos.ComboFeature", "vocab_file", kComboHash},
    {"tzrec.protos.ComboFeature", "asset_dir", kComboHash},
    {"tzrec.protos.ComboFeature", "default_bucketize_value", kComboHash},
    {"tzrec.protos.ComboFeature", "zch", kComboHash},
    {"tzrec.protos.ComboFeature", "dynamicemb", "dynamic embeddings are not implemented"},
    {"tzrec.protos.ComboFeature", "value_dim",
     "every combination of the inputs' values is kept (value_dim 0); remove it"},
    {"tzrec.protos.ComboFeature", "default_value",
     "fg default values are not implemented; a combination with a missing input has no id"},
    {"tzrec.protos.ComboFeature", "fg_encoded_default_value",
     "fill empty cells in the data; an empty fg-encoded cell has no id"},
    {"tzrec.protos.ComboFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.ComboFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.ComboFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.ComboFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.ComboFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.ComboFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.ComboFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.ComboFeature", "sequence_fields", kGroupedSequence},

    {"tzrec.protos.LookupFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.LookupFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.LookupFeature", "zch",
     "zero-collision hashing is not implemented; use hash_bucket_size"},
    {"tzrec.protos.LookupFeature", "vocab_file",
     "a vocabulary file is not implemented for a lookup_feature; use vocab_list or vocab_dict"},
    {"tzrec.protos.LookupFeature", "asset_dir",
     "a vocabulary file is not implemented for a lookup_feature; use vocab_list or vocab_dict"},
    {"tzrec.protos.LookupFeature", "default_bucketize_value",
     "TorchEasyRec's lookup_feature always maps unknown values to id 1 (default_bucketize_value is "
     "not read); remove it"},
    {"tzrec.protos.LookupFeature", "dynamicemb", "dynamic embeddings are not implemented"},
    {"tzrec.protos.LookupFeature", "fg_encoded_default_value",
     "fill empty cells in the data; an empty fg-encoded cell has no id (dense: 0)"},
    {"tzrec.protos.LookupFeature", "fg_value_type",
     "the found values are read as text (ids) or numbers as the table asks; remove it"},
    {"tzrec.protos.LookupFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.LookupFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.LookupFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.LookupFeature", "autodis",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.LookupFeature", "mlp",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.LookupFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.LookupFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.LookupFeature", "sequence_fields", kGroupedSequence},
    {"tzrec.protos.MatchFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.MatchFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.MatchFeature", "zch",
     "zero-collision hashing is not implemented; use hash_bucket_size"},
    {"tzrec.protos.MatchFeature", "vocab_file",
     "a vocabulary file is not implemented for a match_feature; use vocab_list or vocab_dict"},
    {"tzrec.protos.MatchFeature", "asset_dir",
     "a vocabulary file is not implemented for a match_feature; use vocab_list or vocab_dict"},
    {"tzrec.protos.MatchFeature", "default_bucketize_value",
     "TorchEasyRec's match_feature always maps unknown values to id 1 (default_bucketize_value is "
     "not read); remove it"},
    {"tzrec.protos.MatchFeature", "dynamicemb", "dynamic embeddings are not implemented"},
    {"tzrec.protos.MatchFeature", "fg_encoded_default_value",
     "fill empty cells in the data; an empty fg-encoded cell has no id (dense: 0)"},
    {"tzrec.protos.MatchFeature", "fg_value_type",
     "the found values are read as text (ids) or numbers as the table asks; remove it"},
    {"tzrec.protos.MatchFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.MatchFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.MatchFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.MatchFeature", "autodis",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.MatchFeature", "mlp",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.MatchFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.MatchFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.MatchFeature", "sequence_fields", kGroupedSequence},

    {"tzrec.protos.ExprFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.ExprFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.ExprFeature", "fg_encoded_default_value",
     "fill empty cells in the data; an empty fg-encoded cell has no id (dense: 0)"},
    {"tzrec.protos.ExprFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.ExprFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.ExprFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.ExprFeature", "autodis",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.ExprFeature", "mlp",
     "dense embeddings (autodis / mlp) are not implemented; use boundaries for a table"},
    {"tzrec.protos.ExprFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.ExprFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.ExprFeature", "sequence_fields", kGroupedSequence},

    {"tzrec.protos.RawFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.RawFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.RawFeature", "fg_encoded_default_value",
     "fill empty cells in the data, or use fg_mode FG_DAG with default_value"},
    {"tzrec.protos.RawFeature", "trainable", "frozen embeddings are not implemented"},
    {"tzrec.protos.RawFeature", "stub_type", "fg DAG intermediate features are not implemented"},
    {"tzrec.protos.RawFeature", "data_type", "tables are FP32"},
    {"tzrec.protos.RawFeature", "autodis",
     "dense embeddings are not implemented; use boundaries for a bucket embedding"},
    {"tzrec.protos.RawFeature", "mlp",
     "dense embeddings are not implemented; use boundaries for a bucket embedding"},
    {"tzrec.protos.RawFeature", "sequence_length", kGroupedSequence},
    {"tzrec.protos.RawFeature", "sequence_delim", kGroupedSequence},
    {"tzrec.protos.RawFeature", "sequence_fields", kGroupedSequence},

    {"tzrec.protos.SequenceIdFeature", "pooling", kSeqPooling},
    {"tzrec.protos.SequenceIdFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.SequenceIdFeature", "value_dim",
     "each sequence item is one id (TorchEasyRec's value_dim 1); remove it"},
    {"tzrec.protos.SequenceIdFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.SequenceIdFeature", "zch",
     "zero-collision hashing is not implemented; use hash_bucket_size"},
    {"tzrec.protos.SequenceRawFeature", "value_dim",
     "each sequence item is one bucket id; remove it"},
    {"tzrec.protos.SequenceRawFeature", "normalizer", kSeqFg},
    {"tzrec.protos.SequenceRawFeature", "pooling", kSeqPooling},
    {"tzrec.protos.SequenceRawFeature", "separator", kSeqFg},
    {"tzrec.protos.SequenceRawFeature", "init_fn", kEmbeddingInit},
    {"tzrec.protos.SequenceRawFeature", "use_mask", "feature masking is not implemented"},
    {"tzrec.protos.SequenceRawFeature", "autodis",
     "dense embeddings are not implemented; use boundaries"},
    {"tzrec.protos.SequenceRawFeature", "mlp",
     "dense embeddings are not implemented; use boundaries"},
    {"tzrec.protos.SeqGroupConfig", "embedding_name_suffix",
     "give the features distinct embedding_name values instead"},
    {"tzrec.protos.SeqEncoderConfig", "hstu_encoder", kAttention},

    {"tzrec.protos.ParameterConstraints", "compute_kernels",
     "tzrec_train uses the fused kernel (dense for data_parallel); constrain sharding_types"},

    {"tzrec.protos.ModelConfig", "dc2vr", kMultiTask},
    {"tzrec.protos.ModelConfig", "dlrm_hstu", kGenerative},
    {"tzrec.protos.ModelConfig", "pepnet", kMultiTask},
    {"tzrec.protos.ModelConfig", "ultra_hstu", kGenerative},
    {"tzrec.protos.ModelConfig", "dssm", kMatch},
    {"tzrec.protos.ModelConfig", "dssm_v2", kMatch},
    {"tzrec.protos.ModelConfig", "dat", kMatch},
    {"tzrec.protos.ModelConfig", "hstu_match", kMatch},
    {"tzrec.protos.ModelConfig", "mind", kMatch},
    {"tzrec.protos.ModelConfig", "tdm", kMatch},
    {"tzrec.protos.ModelConfig", "rocket_launching", kRank},
    {"tzrec.protos.ModelConfig", "sid_rqvae", kGenerative},
    {"tzrec.protos.ModelConfig", "sid_rqkmeans", kGenerative},
    {"tzrec.protos.ModelConfig", "generative_qwen", kGenerative},
    {"tzrec.protos.ModelConfig", "prompt_generative_qwen", kGenerative},
    {"tzrec.protos.ModelConfig", "train_metrics",
     "training metrics are not implemented; the progress line shows the loss"},
    {"tzrec.protos.ModelConfig", "variational_dropout", "variational dropout is not implemented"},
    {"tzrec.protos.ModelConfig", "kernel", "tzrec_train runs its own kernels; remove it"},
    {"tzrec.protos.ModelConfig", "use_pareto_loss_weight",
     "Pareto loss weighting is not implemented; the total loss is the sum of the task losses"},

    {"tzrec.protos.FeatureGroupConfig", "embedding_name_suffix",
     "give the features distinct embedding_name values instead"},

    {"tzrec.protos.DeepFM", "wide_init_fn", kEmbeddingInit},
    {"tzrec.protos.WideAndDeep", "wide_init_fn", kEmbeddingInit},
    {"tzrec.protos.DCNV1", "cross_tower",
     "earlier TorchEasyRec versions' name of DCNV1.cross; rename it to cross"},
    {"tzrec.protos.DCNV1", "deep_tower",
     "earlier TorchEasyRec versions' name of DCNV1.deep; rename it to deep"},
    {"tzrec.protos.DCNV1", "final_dnn",
     "earlier TorchEasyRec versions' name of DCNV1.final; rename it to final"},

    {"tzrec.protos.DBMTL", "mask_net", "DBMTL's MaskNet bottom is not implemented; use bottom_mlp"},
    {"tzrec.protos.TaskTower", "task_space_indicator_label", kTaskSpace},
    {"tzrec.protos.TaskTower", "in_task_space_weight", kTaskSpace},
    {"tzrec.protos.TaskTower", "out_task_space_weight", kTaskSpace},
    {"tzrec.protos.BayesTaskTower", "task_space_indicator_label", kTaskSpace},
    {"tzrec.protos.BayesTaskTower", "in_task_space_weight", kTaskSpace},
    {"tzrec.protos.BayesTaskTower", "out_task_space_weight", kTaskSpace},
    {"tzrec.protos.xDeepFM", "wide_init_fn", kEmbeddingInit},

    {"tzrec.protos.LossConfig", "softmax_cross_entropy",
     "multi-class losses are not implemented; supported: binary_cross_entropy"},
    {"tzrec.protos.LossConfig", "l2_loss", "supported: binary_cross_entropy"},
    {"tzrec.protos.LossConfig", "jrc_loss", "supported: binary_cross_entropy"},
    {"tzrec.protos.LossConfig", "binary_focal_loss", "supported: binary_cross_entropy"},

    {"tzrec.protos.MetricConfig", "multiclass_auc", "supported metrics: auc, grouped_auc"},
    {"tzrec.protos.MetricConfig", "recall_at_k", "supported metrics: auc, grouped_auc"},
    {"tzrec.protos.MetricConfig", "mean_absolute_error", "supported metrics: auc, grouped_auc"},
    {"tzrec.protos.MetricConfig", "mean_squared_error", "supported metrics: auc, grouped_auc"},
    {"tzrec.protos.MetricConfig", "accuracy", "supported metrics: auc, grouped_auc"},

    {"tzrec.protos.SparseOptimizer", "lars_sgd_optimizer", kSparseOpt},
    {"tzrec.protos.SparseOptimizer", "lamb_optimizer", kSparseOpt},
    {"tzrec.protos.SparseOptimizer", "partial_rowwise_lamb_optimizer", kSparseOpt},
    {"tzrec.protos.SparseOptimizer", "partial_rowwise_adam_optimizer", kSparseOpt},
    {"tzrec.protos.DenseOptimizer", "param_optimizers",
     "per-parameter dense optimizers are not implemented; one dense optimizer trains all"},
    {"tzrec.protos.DenseOptimizer", "part_optimizers",
     "per-parameter dense optimizers are not implemented; one dense optimizer trains all"},
};

}  // namespace

const std::vector<TorchEasyRecField>& TorchEasyRecFields() {
  return kFields;
}

const TorchEasyRecField* FindTorchEasyRecField(const std::string& message,
                                               const std::string& field) {
  for (const TorchEasyRecField& entry : kFields) {
    if (message == entry.message && field == entry.field) return &entry;
  }
  return nullptr;
}

std::string UnknownFieldMessage(const google::protobuf::Descriptor& message,
                                const std::string& field, const std::string& where) {
  if (const TorchEasyRecField* known = FindTorchEasyRecField(message.full_name(), field)) {
    return where + ": '" + field + "' (" + message.name() +
           ") is a TorchEasyRec option that tzrec_train does not support: " + known->hint;
  }
  std::vector<std::string> names;
  for (int i = 0; i < message.field_count(); ++i) names.push_back(message.field(i)->name());
  for (const TorchEasyRecField& entry : kFields) {
    if (message.full_name() == entry.message) names.push_back(entry.field);
  }
  std::string text = where + ": unknown field '" + field + "' in " + message.name();
  if (!names.empty()) text += " (did you mean '" + tzrun::base::ClosestName(field, names) + "'?)";
  return text + "; neither TorchEasyRec nor tzrec_train has it";
}

}  // namespace tzrec::config_internal
