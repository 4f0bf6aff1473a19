// What tzrec_train does with every field of our .proto files, and the test that shows it
// (internal.hpp). The test config.SupportTableCoversEveryField keeps this table and the .proto
// files in step; docs/config-reference.md is generated from it.
#include <string>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec::config_internal {
namespace {

namespace pb = google::protobuf;

constexpr Support H = Support::kHonoured;
constexpr Support N = Support::kNoEffect;

constexpr const char* kTrainJob = "test_train_job.py::test_dlrm_criteo_main_job";
constexpr const char* kOptions = "test_train_job_usage.py::test_training_options";
constexpr const char* kExamples = "config.Examples";
constexpr const char* kOptimizers = "train.DenseOptimizer";
constexpr const char* kSparseOpt = "core.Embedding";

#define P "tzrec.protos."
const std::vector<FieldSupport> kTable = {
    {P "EasyRecConfig.train_input_path", H,
     "training input: files, globs or comma-separated lists (--train_input_path overrides)",
     "test_train_job_usage.py::test_missing_train_input_names_the_path"},
    {P "EasyRecConfig.eval_input_path", H, "eval input (--eval_input_path overrides)", kTrainJob},
    {P "EasyRecConfig.model_dir", H, "checkpoints, pipeline.config, logs (--model_dir overrides)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "EasyRecConfig.train_config", H, "training settings", kExamples},
    {P "EasyRecConfig.eval_config", H, "eval settings", kExamples},
    {P "EasyRecConfig.data_config", H, "input settings", kExamples},
    {P "EasyRecConfig.feature_configs", H, "the features", kExamples},
    {P "EasyRecConfig.model_config", H, "the model", kExamples},

    {P "TrainConfig.sparse_optimizer", H, "optimizer of the embedding tables", kSparseOpt},
    {P "TrainConfig.dense_optimizer", H, "optimizer of the dense parameters", kOptimizers},
    {P "TrainConfig.num_steps", H, "train this many steps (exclusive with num_epochs)",
     "test_train_job.py::test_exact_continuation_same_world_size"},
    {P "TrainConfig.num_epochs", H, "train this many epochs (neither set: 1)",
     "test_train_job.py::test_exact_continuation_across_epochs"},
    {P "TrainConfig.save_checkpoints_steps", H, "checkpoint every this many steps (and at the end)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "TrainConfig.log_step_count_steps", H, "progress line every this many steps", kTrainJob},
    {P "TrainConfig.is_profiling", N, "profiling traces are not written", "config.NoEffectWarns"},
    {P "TrainConfig.use_tensorboard", N, "no TensorBoard events are written (metrics.jsonl is)",
     "config.NoEffectWarns"},
    {P "TrainConfig.tensorboard_summaries", N, "no TensorBoard events are written",
     "config.NoEffectWarns"},
    {P "TrainConfig.global_embedding_constraints", H,
     "sharding constraints of every table without its own", "planner.Plan"},
    {P "TrainConfig.mixed_precision", H, "BF16 / FP16 autocast of the dense forward", kOptions},
    {P "TrainConfig.grad_scaler", H, "loss scaling of FP16 training", kOptions},
    {P "TrainConfig.gradient_accumulation_steps", H, "accumulate this many micro-batches",
     kOptions},
    {P "TrainConfig.grad_clipping", H, "dense gradient clipping", kOptions},
    {P "TrainConfig.keep_checkpoint_max", H, "keep the newest N checkpoints (0: all)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "TrainConfig.seed", H, "tzrec_train extension: the init seed (default 42)",
     "test_train_job.py::test_exact_continuation_same_world_size"},

    {P "GradScaler.init_scale", H, "torch.amp.GradScaler init_scale", kOptions},
    {P "GradScaler.growth_factor", H, "torch.amp.GradScaler growth_factor", kOptions},
    {P "GradScaler.backoff_factor", H, "torch.amp.GradScaler backoff_factor", kOptions},
    {P "GradScaler.growth_interval", H, "torch.amp.GradScaler growth_interval", kOptions},
    {P "GradClipping.clipping_type", H, "none | norm | value", kOptions},
    {P "GradClipping.max_gradient", H, "the clip threshold", kOptions},
    {P "GradClipping.norm_type", H, "p of the norm (inf allowed)", kOptions},
    {P "GradClipping.enable_global_grad_clip", H,
     "clip by the norm over all ranks' dense gradients", kOptions},

    {P "SparseOptimizer.sgd_optimizer", H, "FBGEMM EXACT_SGD", kSparseOpt},
    {P "SparseOptimizer.adagrad_optimizer", H, "FBGEMM EXACT_ADAGRAD", kSparseOpt},
    {P "SparseOptimizer.adam_optimizer", H, "FBGEMM ADAM", kSparseOpt},
    {P "SparseOptimizer.rowwise_adagrad_optimizer", H, "FBGEMM EXACT_ROWWISE_ADAGRAD", kSparseOpt},
    {P "SparseOptimizer.constant_learning_rate", H, "a constant learning rate", kSparseOpt},
    {P "SparseOptimizer.exponential_decay_learning_rate", H,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "SparseOptimizer.manual_step_learning_rate", H,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "DenseOptimizer.sgd_optimizer", H, "torch.optim.SGD (momentum 0.9 by default)", kOptimizers},
    {P "DenseOptimizer.adagrad_optimizer", H, "torch.optim.Adagrad (eps 1e-10)", kOptimizers},
    {P "DenseOptimizer.adam_optimizer", H, "torch.optim.Adam (eps 1e-8)", kOptimizers},
    {P "DenseOptimizer.adamw_optimizer", H, "torch.optim.AdamW", kOptimizers},
    {P "DenseOptimizer.constant_learning_rate", H, "a constant learning rate", kOptimizers},
    {P "DenseOptimizer.exponential_decay_learning_rate", H,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "DenseOptimizer.manual_step_learning_rate", H,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "FusedSGDOptimizer.lr", H, "learning rate", kSparseOpt},
    {P "FusedSGDOptimizer.gradient_clipping", H, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedSGDOptimizer.max_gradient", H, "the clamp with gradient_clipping", "core.Embedding"},
    {P "FusedAdagradOptimizer.lr", H, "learning rate", kSparseOpt},
    {P "FusedAdagradOptimizer.gradient_clipping", H, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedAdagradOptimizer.max_gradient", H, "the clamp with gradient_clipping",
     "core.Embedding"},
    {P "FusedAdamOptimizer.lr", H, "learning rate", kSparseOpt},
    {P "FusedAdamOptimizer.beta1", H, "Adam beta1", kSparseOpt},
    {P "FusedAdamOptimizer.beta2", H, "Adam beta2", kSparseOpt},
    {P "FusedAdamOptimizer.weight_decay", H, "L2 weight decay added to the gradient", kSparseOpt},
    {P "FusedAdamOptimizer.gradient_clipping", H, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedAdamOptimizer.max_gradient", H, "the clamp with gradient_clipping", "core.Embedding"},
    {P "FusedRowWiseAdagradOptimizer.lr", H, "learning rate", kSparseOpt},
    {P "FusedRowWiseAdagradOptimizer.weight_decay", H, "L2 weight decay added to the gradient",
     kSparseOpt},
    {P "FusedRowWiseAdagradOptimizer.weight_decay_mode", H,
     "FBGEMM NONE / L2 / DECOUPLE (weight_decay with NONE is refused: FBGEMM ignores it)",
     "core.Embedding"},
    {P "FusedRowWiseAdagradOptimizer.gradient_clipping", H,
     "clamp the pooled output gradient (FBGEMM)", "core.Embedding"},
    {P "FusedRowWiseAdagradOptimizer.max_gradient", H, "the clamp with gradient_clipping",
     "core.Embedding"},
    {P "SGDOptimizer.lr", H, "learning rate", kOptimizers},
    {P "SGDOptimizer.momentum", H, "torch.optim.SGD momentum", kOptimizers},
    {P "SGDOptimizer.weight_decay", H, "L2 weight decay", kOptimizers},
    {P "AdagradOptimizer.lr", H, "learning rate", kOptimizers},
    {P "AdagradOptimizer.weight_decay", H, "L2 weight decay", kOptimizers},
    {P "AdamOptimizer.lr", H, "learning rate", kOptimizers},
    {P "AdamOptimizer.beta1", H, "beta1", kOptimizers},
    {P "AdamOptimizer.beta2", H, "beta2", kOptimizers},
    {P "AdamOptimizer.weight_decay", H, "L2 weight decay", kOptimizers},
    {P "AdamWOptimizer.lr", H, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.beta1", H, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.beta2", H, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.weight_decay", H, "torch.optim.AdamW", kOptimizers},
    {P "ExponentialDecayLR.decay_size", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.decay_factor", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.staircase", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.warmup_learning_rate", H, "as TorchEasyRec lr_scheduler.py",
     "train.LrSchedule"},
    {P "ExponentialDecayLR.warmup_size", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.min_learning_rate", H, "as TorchEasyRec lr_scheduler.py",
     "train.LrSchedule"},
    {P "ExponentialDecayLR.by_epoch", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.schedule_sizes", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.learning_rates", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.warmup", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.by_epoch", H, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},

    {P "EvalConfig.num_steps", H, "eval batches per rank (0: all)", kTrainJob},
    {P "EvalConfig.log_step_count_steps", H, "eval progress line interval", kTrainJob},

    {P "DataConfig.batch_size", H, "per-rank batch size", kTrainJob},
    {P "DataConfig.dataset_type", H, "ParquetDataset | CsvDataset (others refused)",
     "config.ValuesRefused"},
    {P "DataConfig.fg_encoded_multival_sep", H, "multi-value separator with fg_mode FG_NONE",
     "Transform.FgNoneSplitsByMultivalSep"},
    {P "DataConfig.label_fields", H,
     "label columns, all read; single-task models train on the first (TorchEasyRec rank_model.py)",
     "Dataset.ReadsEveryLabelAndTheSampleWeight"},
    {P "DataConfig.sample_weight_fields", H,
     "loss weight column (one): mean(loss * w / mean(w)) per batch as TorchEasyRec; AUC unweighted",
     "Loss.SampleWeightedBceMatchesHandComputed"},
    {P "DataConfig.shuffle", H,
     "training batches through a seeded shuffle buffer (seed, epoch, rank); exact on resume",
     "Shuffle.ResumeReplaysTheUninterruptedOrder"},
    {P "DataConfig.shuffle_buffer_size", H, "shuffle buffer size in batches (TorchEasyRec's unit)",
     "Shuffle.OrderIsASeededPermutation"},
    {P "DataConfig.num_workers", N,
     "N >= 2: N reader threads per rank (1: one; 0: none); batches and order do not depend on N",
     "Dataset.ParallelReadersKeepTheBatchesAndTheirOrder"},
    {P "DataConfig.pin_memory", N, "batches are copied to the device without pinning",
     "config.NoEffectWarns"},
    {P "DataConfig.input_fields", H, "CsvDataset column names in file order", kTrainJob},
    {P "DataConfig.delimiter", H, "CsvDataset delimiter", kTrainJob},
    {P "DataConfig.with_header", H, "CsvDataset: the first line holds the column names",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "DataConfig.eval_batch_size", H, "eval batch size (unset: batch_size)", kTrainJob},
    {P "DataConfig.drop_remainder", H, "drop each rank's last partial batch",
     "Dataset.EpochsPrefetchDepthsAndDropRemainder"},
    {P "DataConfig.fg_threads", N, "feature generation runs in the reader", "config.NoEffectWarns"},
    {P "DataConfig.is_orderby_partition", N, "an ODPS reader option", "config.NoEffectWarns"},
    {P "DataConfig.odps_data_quota_name", N, "an ODPS reader option", "config.NoEffectWarns"},
    {P "DataConfig.fg_mode", H,
     "FG_NONE: encoded columns named by feature_name; FG_NORMAL / FG_DAG: tzrec_train's feature "
     "generation on the expression's column; FG_BUCKETIZE refused",
     "Transform.FgModeChoosesColumnAndTransform"},
    {P "DataConfig.odps_data_compression", N, "an ODPS reader option", "config.NoEffectWarns"},
    {P "Field.input_name", H, "the column name", kTrainJob},
    {P "Field.input_type", N, "values are parsed as each feature needs", "config.NoEffectWarns"},

    {P "FeatureConfig.id_feature", H, "an id feature", kExamples},
    {P "FeatureConfig.raw_feature", H, "a raw (numeric) feature", kExamples},
    {P "IdFeature.feature_name", H, "the name (and its column with FG_NONE)", kExamples},
    {P "IdFeature.expression", H, "side:column read with FG_NORMAL / FG_DAG", kExamples},
    {P "IdFeature.embedding_name", H, "features with one name share a table",
     "config.SharedTablesAgree"},
    {P "IdFeature.embedding_dim", H, "the table width", kExamples},
    {P "IdFeature.hash_bucket_size", H, "hash values into this many rows",
     "Transform.HashWithSeparatorMapsEveryToken"},
    {P "IdFeature.num_buckets", H, "values are integer ids in [0, n)",
     "Transform.NumBucketsTakesTheIntegerAndRejectsOutOfRange"},
    {P "IdFeature.vocab_list", H, "value -> index + 2 (0 empty, 1 unknown)",
     "Transform.VocabListIndexPlusTwoOovOneEmptyZero"},
    {P "IdFeature.pooling", H, "sum | mean", "core.Embedding"},
    {P "IdFeature.separator", H, "multi-value separator with FG_NORMAL / FG_DAG",
     "Transform.HashWithSeparatorMapsEveryToken"},
    {P "IdFeature.embedding_constraints", H, "this table's sharding constraints", "planner.Plan"},
    {P "RawFeature.feature_name", H, "the name (and its column with FG_NONE)", kExamples},
    {P "RawFeature.expression", H, "side:column read with FG_NORMAL / FG_DAG", kExamples},
    {P "RawFeature.embedding_name", H, "with boundaries: features with one name share a table",
     "config.SharedTablesAgree"},
    {P "RawFeature.embedding_dim", H, "with boundaries: the bucket table width",
     "Transform.BoundariesBucketiseWithUpperBound"},
    {P "RawFeature.boundaries", H, "bucketize into len + 1 ids",
     "Transform.BoundariesBucketiseWithUpperBound"},
    {P "RawFeature.value_dim", H, "values per row", "Transform.DenseValueDimSplitsTheCell"},
    {P "RawFeature.normalizer", H,
     "log1p / log10 / expression / minmax / zscore (FG_NORMAL, "
     "FG_DAG; with FG_NONE the data is already normalised: a warning says so)",
     "Transform.DenseNormalizers"},
    {P "RawFeature.pooling", H, "with boundaries: sum | mean", "core.Embedding"},
    {P "RawFeature.default_value", H, "the value of an empty cell",
     "Csv.CriteoTsvLineWithEmptyFields"},
    {P "RawFeature.separator", H, "value_dim > 1: the separator of the values",
     "Transform.DenseValueDimSplitsTheCell"},
    {P "RawFeature.embedding_constraints", H, "with boundaries: sharding constraints",
     "planner.Plan"},
    {P "ParameterConstraints.sharding_types", H, "allowed TorchRec sharding types", "planner.Plan"},

    {P "ModelConfig.feature_groups", H, "the model's input groups", kExamples},
    {P "ModelConfig.dlrm", H, "DLRM", kTrainJob},
    {P "ModelConfig.deepfm", H, "DeepFM", "test_train_job.py::test_deepfm_criteo"},
    {P "ModelConfig.multi_tower", H, "MultiTower", "test_train_job.py::test_multi_tower_movielens"},
    {P "ModelConfig.num_class", H, "1 (binary); other values refused", "config.ValuesRefused"},
    {P "ModelConfig.losses", H, "binary_cross_entropy", kTrainJob},
    {P "ModelConfig.metrics", H, "auc, grouped_auc", kTrainJob},
    {P "FeatureGroupConfig.group_name", H, "the group name", kExamples},
    {P "FeatureGroupConfig.feature_names", H, "the group's features in order", kExamples},
    {P "FeatureGroupConfig.group_type", H, "DEEP | WIDE (SEQUENCE refused)",
     "config.ValuesRefused"},
    {P "MLP.hidden_units", H, "Linear layers of these widths", kTrainJob},
    {P "MLP.dropout_ratio", H,
     "dropout after each layer in training: [] none, [p] every layer, else one per layer",
     "train.Mlp.DropoutRatioListSemantics"},
    {P "MLP.activation", H, "torch.nn activations with keyword arguments, Dice, or '' for none",
     "train.Mlp.EachActivationMatchesItsFormula"},
    {P "MLP.use_bn", H, "BatchNorm1d after each Linear (running stats saved and broadcast)",
     "train.Mlp.BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats"},
    {P "MLP.bias", H, "the Linear layers' bias (none with use_bn, as upstream)",
     "train.Mlp.LayerNormWithoutBias"},
    {P "MLP.use_ln", H, "LayerNorm after each Linear", "train.Mlp.LayerNormWithoutBias"},
    {P "Tower.input", H, "the tower's feature group",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "Tower.mlp", H, "the tower's MLP", "test_train_job.py::test_multi_tower_movielens"},
    {P "DeepFM.deep", H, "the deep MLP", "test_train_job.py::test_deepfm_criteo"},
    {P "DeepFM.final", H,
     "the final MLP over [wide, fm, deep]; unset: wide + sum(fm) + output(deep)",
     "train.Model.DeepFmWithoutFinalMatchesTheFormula"},
    {P "DeepFM.wide_embedding_dim", H, "the wide tables' width",
     "test_train_job.py::test_deepfm_criteo"},
    {P "MultiTower.towers", H, "one MLP per group",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "MultiTower.final", H, "the final MLP", "test_train_job.py::test_multi_tower_movielens"},
    {P "DLRM.dense_mlp", H, "the bottom MLP of the optional dense group", kTrainJob},
    {P "DLRM.arch_with_sparse", H, "the embeddings also feed the final MLP", kTrainJob},
    {P "DLRM.final", H, "the top MLP", kTrainJob},
    {P "LossConfig.binary_cross_entropy", H, "BCE with logits, mean over the batch", kTrainJob},
    {P "MetricConfig.auc", H, "ROC AUC", "train.Auc"},
    {P "MetricConfig.grouped_auc", H, "grouped AUC", "train.GroupedAuc"},
    {P "AUC.thresholds", H, "torchmetrics binned AUC over this many thresholds; 0: exact",
     "train.Auc"},
    {P "GroupedAUC.grouping_key", H, "the grouping column or feature", "train.GroupedAuc"},
};
#undef P

// The value of a singular scalar field differs from its default.
bool DiffersFromDefault(const pb::Message& message, const pb::FieldDescriptor& field) {
  const pb::Reflection& r = *message.GetReflection();
  using T = pb::FieldDescriptor;
  switch (field.cpp_type()) {
    case T::CPPTYPE_BOOL:
      return r.GetBool(message, &field) != field.default_value_bool();
    case T::CPPTYPE_INT32:
      return r.GetInt32(message, &field) != field.default_value_int32();
    case T::CPPTYPE_UINT32:
      return r.GetUInt32(message, &field) != field.default_value_uint32();
    case T::CPPTYPE_INT64:
      return r.GetInt64(message, &field) != field.default_value_int64();
    case T::CPPTYPE_UINT64:
      return r.GetUInt64(message, &field) != field.default_value_uint64();
    case T::CPPTYPE_FLOAT:
      return r.GetFloat(message, &field) != field.default_value_float();
    case T::CPPTYPE_DOUBLE:
      return r.GetDouble(message, &field) != field.default_value_double();
    case T::CPPTYPE_STRING:
      return r.GetString(message, &field) != field.default_value_string();
    case T::CPPTYPE_ENUM:
      return r.GetEnumValue(message, &field) != field.default_value_enum()->number();
    case T::CPPTYPE_MESSAGE:
      return true;
  }
  return true;
}

}  // namespace

const std::vector<FieldSupport>& SupportTable() {
  return kTable;
}

const FieldSupport* FindSupport(const std::string& full_name) {
  for (const FieldSupport& entry : kTable) {
    if (full_name == entry.field) return &entry;
  }
  return nullptr;
}

void CollectWarnings(const pb::Message& message, const std::string& path,
                     std::vector<std::string>* warnings) {
  const pb::Reflection& r = *message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r.ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string here = JoinPath(path, field->name());
    const FieldSupport* support = FindSupport(field->full_name());
    if (support == nullptr) {
      throw InternalError("config field " + field->full_name() +
                          " has no entry in src/worker/config/support.cpp");
    }
    if (support->support == Support::kNoEffect &&
        (field->is_repeated() || DiffersFromDefault(message, *field))) {
      warnings->push_back(here + ": accepted, no effect on the trained model (" + support->doc +
                          ")");
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < r.FieldSize(message, field); ++i) {
        CollectWarnings(r.GetRepeatedMessage(message, field, i),
                        here + "[" + std::to_string(i) + "]", warnings);
      }
    } else {
      CollectWarnings(r.GetMessage(message, field), here, warnings);
    }
  }
}

}  // namespace tzrec::config_internal
