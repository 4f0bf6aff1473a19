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

constexpr Support kH = Support::kHonoured;
constexpr Support kN = Support::kNoEffect;

constexpr const char* kTrainJob = "test_train_job.py::test_dlrm_criteo_main_job";
constexpr const char* kOptions = "test_train_job_usage.py::test_training_options";
constexpr const char* kExamples = "config.Examples";
constexpr const char* kOptimizers = "train.DenseOptimizer";
constexpr const char* kSparseOpt = "core.Embedding";
constexpr const char* kRankMaskJob =
    "test_rank_models_mask.py::test_rank_model_trains_on_two_ranks";
constexpr const char* kModules = "train.RankModulesGolden.ForwardAndGradientsMatchTorch";

constexpr const char* kSeqConfig = "config.SequenceFeaturesAccepted";
constexpr const char* kSeqInput = "Transform.SequenceIdsSplitTruncateAndFill";
constexpr const char* kSeqLength =
    "FG_NONE: the longest sequence the data may hold (longer: an error; TorchEasyRec reads an "
    "encoded sequence whole); FG_NORMAL / FG_DAG: the first N items of each sequence are kept";
constexpr const char* kSeqGrouped = "config.GroupedSequenceFeatureExpands";
constexpr const char* kSeqPool = "config.SequencePoolingAgreesPerTable";
constexpr const char* kSeqFg = "Transform.SequenceFgSplitsDefaultsAndTruncates";
constexpr const char* kSeqFgData = "Dataset.SequenceFgReadsExpressionColumn";
constexpr const char* kSeqModel = "train.Model.PoolingEncoderAppendsPooledSequences";
constexpr const char* kDinModel = "train.Model.MultiTowerDinMatchesComposedTorch";

constexpr const char* kMtGolden = "train.MultiTaskGolden.MatchesTorch";
constexpr const char* kMtJob = "test_multi_task.py::test_mmoe_and_dbmtl_train_eval_predict";
constexpr const char* kMtLoss = "train.MultiTaskLoss.WeightsAndSampleWeights";
constexpr const char* kMtRefused = "config.MultiTaskRefusals";

#define P "tzrec.protos."
const std::vector<FieldSupport> kTable = {
    {P "EasyRecConfig.train_input_path", kH,
     "training input: files, globs or comma-separated lists (--train_input_path overrides)",
     "test_train_job_usage.py::test_missing_train_input_names_the_path"},
    {P "EasyRecConfig.eval_input_path", kH, "eval input (--eval_input_path overrides)", kTrainJob},
    {P "EasyRecConfig.model_dir", kH, "checkpoints, pipeline.config, logs (--model_dir overrides)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "EasyRecConfig.train_config", kH, "training settings", kExamples},
    {P "EasyRecConfig.eval_config", kH, "eval settings", kExamples},
    {P "EasyRecConfig.data_config", kH, "input settings", kExamples},
    {P "EasyRecConfig.feature_configs", kH, "the features", kExamples},
    {P "EasyRecConfig.model_config", kH, "the model", kExamples},

    {P "TrainConfig.sparse_optimizer", kH, "optimizer of the embedding tables", kSparseOpt},
    {P "TrainConfig.dense_optimizer", kH, "optimizer of the dense parameters", kOptimizers},
    {P "TrainConfig.num_steps", kH, "train this many steps (exclusive with num_epochs)",
     "test_train_job.py::test_exact_continuation_same_world_size"},
    {P "TrainConfig.num_epochs", kH, "train this many epochs (neither set: 1)",
     "test_train_job.py::test_exact_continuation_across_epochs"},
    {P "TrainConfig.save_checkpoints_steps", kH,
     "checkpoint every this many steps (and at the end)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "TrainConfig.fine_tune_checkpoint", kH,
     "initialise a fresh run (step 0, data from the start, fresh lr schedule) from this "
     "checkpoint's weights and optimizer state (weights only with --ignore_restore_optimizer; "
     "--fine_tune_checkpoint overrides)",
     "test_train_entry_points.py::test_fine_tune_restores_optimizer_state_unless_ignore_restore_"
     "optimizer"},
    {P "TrainConfig.fine_tune_ckpt_param_map", kH,
     "restore the listed tables / dense tensors from other saved names when fine-tuning "
     "(\"<current> <saved>\" per line)",
     "test_train_entry_points.py::test_fine_tune_param_map_renames_tables"},
    {P "TrainConfig.log_step_count_steps", kH, "progress line every this many steps", kTrainJob},
    {P "TrainConfig.is_profiling", kN, "profiling traces are not written", "config.NoEffectWarns"},
    {P "TrainConfig.use_tensorboard", kN, "no TensorBoard events are written (metrics.jsonl is)",
     "config.NoEffectWarns"},
    {P "TrainConfig.tensorboard_summaries", kN, "no TensorBoard events are written",
     "config.NoEffectWarns"},
    {P "TrainConfig.global_embedding_constraints", kH,
     "sharding constraints of every table without its own", "planner.Plan"},
    {P "TrainConfig.mixed_precision", kH, "BF16 / FP16 autocast of the dense forward", kOptions},
    {P "TrainConfig.grad_scaler", kH,
     "loss scaling of FP16 training; as TorchEasyRec, the fused embedding update sees the "
     "loss-scaled gradient and only dense gradients are unscaled",
     "test_grad_scaler.py::test_embedding_updates_see_the_loss_scale"},
    {P "TrainConfig.gradient_accumulation_steps", kH, "accumulate this many micro-batches",
     kOptions},
    {P "TrainConfig.grad_clipping", kH, "dense gradient clipping", kOptions},
    {P "TrainConfig.keep_checkpoint_max", kH, "keep the newest N checkpoints (0: all)",
     "test_train_job.py::test_checkpoint_layout_and_keep_max"},
    {P "TrainConfig.seed", kH, "tzrec_train extension: the init seed (default 42)",
     "test_train_entry_points.py::test_seed_sets_the_initial_weights"},

    {P "GradScaler.init_scale", kH, "torch.amp.GradScaler init_scale", kOptions},
    {P "GradScaler.growth_factor", kH, "torch.amp.GradScaler growth_factor", kOptions},
    {P "GradScaler.backoff_factor", kH, "torch.amp.GradScaler backoff_factor", kOptions},
    {P "GradScaler.growth_interval", kH, "torch.amp.GradScaler growth_interval", kOptions},
    {P "GradClipping.clipping_type", kH, "none | norm | value", kOptions},
    {P "GradClipping.max_gradient", kH, "the clip threshold", kOptions},
    {P "GradClipping.norm_type", kH,
     "p of the norm (inf allowed), as torch.nn.utils.clip_grad_norm_",
     "test_grad_clipping.py::test_norm_type_clips_as_torch"},
    {P "GradClipping.enable_global_grad_clip", kN,
     "as in TorchEasyRec, whose GradientClippingOptimizer gets no param_to_pgs: the dense "
     "gradients, all-reduced and equal on every rank, are clipped by their norm either way",
     "test_grad_clipping.py::test_enable_global_grad_clip_has_no_effect"},

    {P "SparseOptimizer.sgd_optimizer", kH, "FBGEMM EXACT_SGD", kSparseOpt},
    {P "SparseOptimizer.adagrad_optimizer", kH, "FBGEMM EXACT_ADAGRAD", kSparseOpt},
    {P "SparseOptimizer.adam_optimizer", kH, "FBGEMM ADAM", kSparseOpt},
    {P "SparseOptimizer.rowwise_adagrad_optimizer", kH, "FBGEMM EXACT_ROWWISE_ADAGRAD", kSparseOpt},
    {P "SparseOptimizer.constant_learning_rate", kH, "a constant learning rate", kSparseOpt},
    {P "SparseOptimizer.exponential_decay_learning_rate", kH,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "SparseOptimizer.manual_step_learning_rate", kH,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "DenseOptimizer.sgd_optimizer", kH, "torch.optim.SGD (momentum 0.9 by default)",
     kOptimizers},
    {P "DenseOptimizer.adagrad_optimizer", kH, "torch.optim.Adagrad (eps 1e-10)", kOptimizers},
    {P "DenseOptimizer.adam_optimizer", kH, "torch.optim.Adam (eps 1e-8)", kOptimizers},
    {P "DenseOptimizer.adamw_optimizer", kH, "torch.optim.AdamW", kOptimizers},
    {P "DenseOptimizer.constant_learning_rate", kH, "a constant learning rate", kOptimizers},
    {P "DenseOptimizer.exponential_decay_learning_rate", kH,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "DenseOptimizer.manual_step_learning_rate", kH,
     "the learning-rate schedule (TorchEasyRec lr_scheduler.py)", "train.LrSchedule"},
    {P "FusedSGDOptimizer.lr", kH, "learning rate", kSparseOpt},
    {P "FusedSGDOptimizer.gradient_clipping", kH, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedSGDOptimizer.max_gradient", kH, "the clamp with gradient_clipping", "core.Embedding"},
    {P "FusedAdagradOptimizer.lr", kH, "learning rate", kSparseOpt},
    {P "FusedAdagradOptimizer.gradient_clipping", kH, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedAdagradOptimizer.max_gradient", kH, "the clamp with gradient_clipping",
     "core.Embedding"},
    {P "FusedAdamOptimizer.lr", kH, "learning rate", kSparseOpt},
    {P "FusedAdamOptimizer.beta1", kH, "Adam beta1", kSparseOpt},
    {P "FusedAdamOptimizer.beta2", kH, "Adam beta2", kSparseOpt},
    {P "FusedAdamOptimizer.weight_decay", kH,
     "FBGEMM's adam: w -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * w), outside the "
     "moments",
     kSparseOpt},
    {P "FusedAdamOptimizer.gradient_clipping", kH, "clamp the pooled output gradient (FBGEMM)",
     "core.Embedding"},
    {P "FusedAdamOptimizer.max_gradient", kH, "the clamp with gradient_clipping", "core.Embedding"},
    {P "FusedRowWiseAdagradOptimizer.lr", kH, "learning rate", kSparseOpt},
    {P "FusedRowWiseAdagradOptimizer.weight_decay", kH,
     "applied as weight_decay_mode says (FBGEMM's rowwise_adagrad)", kSparseOpt},
    {P "FusedRowWiseAdagradOptimizer.weight_decay_mode", kH,
     "FBGEMM L2 (weight_decay * w added to the gradient and its squares) or DECOUPLE (the "
     "touched rows scaled by 1 - lr * weight_decay); weight_decay with NONE is refused: FBGEMM "
     "ignores it",
     "train.SparseOptimizerConfig.RowWiseAdagradDecoupleAsFbgemm"},
    {P "FusedRowWiseAdagradOptimizer.gradient_clipping", kH,
     "clamp the pooled output gradient (FBGEMM)", "core.Embedding"},
    {P "FusedRowWiseAdagradOptimizer.max_gradient", kH, "the clamp with gradient_clipping",
     "core.Embedding"},
    {P "SGDOptimizer.lr", kH, "learning rate", kOptimizers},
    {P "SGDOptimizer.momentum", kH, "torch.optim.SGD momentum", kOptimizers},
    {P "SGDOptimizer.weight_decay", kH, "L2 weight decay", kOptimizers},
    {P "AdagradOptimizer.lr", kH, "learning rate", kOptimizers},
    {P "AdagradOptimizer.weight_decay", kH, "L2 weight decay", kOptimizers},
    {P "AdamOptimizer.lr", kH, "learning rate", kOptimizers},
    {P "AdamOptimizer.beta1", kH, "beta1", kOptimizers},
    {P "AdamOptimizer.beta2", kH, "beta2", kOptimizers},
    {P "AdamOptimizer.weight_decay", kH, "L2 weight decay", kOptimizers},
    {P "AdamWOptimizer.lr", kH, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.beta1", kH, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.beta2", kH, "torch.optim.AdamW", kOptimizers},
    {P "AdamWOptimizer.weight_decay", kH, "torch.optim.AdamW", kOptimizers},
    {P "ExponentialDecayLR.decay_size", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.decay_factor", kH, "as TorchEasyRec lr_scheduler.py",
     "train.LrSchedule"},
    {P "ExponentialDecayLR.staircase", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.warmup_learning_rate", kH, "as TorchEasyRec lr_scheduler.py",
     "train.LrSchedule"},
    {P "ExponentialDecayLR.warmup_size", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ExponentialDecayLR.min_learning_rate", kH, "as TorchEasyRec lr_scheduler.py",
     "train.LrSchedule"},
    {P "ExponentialDecayLR.by_epoch", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.schedule_sizes", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.learning_rates", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.warmup", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},
    {P "ManualStepLR.by_epoch", kH, "as TorchEasyRec lr_scheduler.py", "train.LrSchedule"},

    {P "EvalConfig.num_steps", kH, "eval batches per rank (0: all)", kTrainJob},
    {P "EvalConfig.log_step_count_steps", kH,
     "eval progress line (TorchEasyRec's \"Evaluating ...: Nit [R it/s]\") after every this many "
     "eval batches",
     "test_train_entry_points.py::test_eval_progress_lines_follow_log_step_count_steps_and_eval_"
     "batch_size"},

    {P "DataConfig.batch_size", kH, "per-rank batch size", kTrainJob},
    {P "DataConfig.dataset_type", kH, "ParquetDataset | CsvDataset (others refused)",
     "config.ValuesRefused"},
    {P "DataConfig.fg_encoded_multival_sep", kH, "multi-value separator with fg_mode FG_NONE",
     "Transform.FgNoneSplitsByMultivalSep"},
    {P "DataConfig.label_fields", kH,
     "label columns, all read; single-task models train on the first (TorchEasyRec rank_model.py)",
     "Dataset.ReadsEveryLabelAndTheSampleWeight"},
    {P "DataConfig.sample_weight_fields", kH,
     "loss weight column (one): mean(loss * w / mean(w)) per batch as TorchEasyRec; AUC unweighted",
     "Loss.SampleWeightedBceMatchesHandComputed"},
    {P "DataConfig.shuffle", kH,
     "training batches through a seeded shuffle buffer (seed, epoch, rank); exact on resume",
     "Shuffle.ResumeReplaysTheUninterruptedOrder"},
    {P "DataConfig.shuffle_buffer_size", kH, "shuffle buffer size in batches (TorchEasyRec's unit)",
     "Shuffle.OrderIsASeededPermutation"},
    {P "DataConfig.num_workers", kN,
     "N >= 2: N reader threads per rank (1: one; 0: none); batches and order do not depend on N",
     "Dataset.ParallelReadersKeepTheBatchesAndTheirOrder"},
    {P "DataConfig.pin_memory", kN, "batches are copied to the device without pinning",
     "config.NoEffectWarns"},
    {P "DataConfig.input_fields", kH, "CsvDataset column names in file order", kTrainJob},
    {P "DataConfig.delimiter", kH, "CsvDataset delimiter", kTrainJob},
    {P "DataConfig.with_header", kH, "CsvDataset: the first line holds the column names",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "DataConfig.eval_batch_size", kH,
     "eval and predict batch size (unset: batch_size; predict's --batch_size overrides)",
     "test_train_entry_points.py::test_predict_batch_is_eval_batch_size_unless_batch_size_flag"},
    {P "DataConfig.drop_remainder", kH, "drop each rank's last partial batch",
     "Dataset.EpochsPrefetchDepthsAndDropRemainder"},
    {P "DataConfig.fg_threads", kN, "feature generation runs in the reader",
     "config.NoEffectWarns"},
    {P "DataConfig.is_orderby_partition", kN, "an ODPS reader option", "config.NoEffectWarns"},
    {P "DataConfig.odps_data_quota_name", kN, "an ODPS reader option", "config.NoEffectWarns"},
    {P "DataConfig.fg_mode", kH,
     "FG_NONE: encoded columns named by feature_name; FG_NORMAL / FG_DAG: tzrec_train's feature "
     "generation on the expression's column; FG_BUCKETIZE refused",
     "Transform.FgModeChoosesColumnAndTransform"},
    {P "DataConfig.odps_data_compression", kN, "an ODPS reader option", "config.NoEffectWarns"},
    {P "Field.input_name", kH, "the column name", kTrainJob},
    {P "Field.input_type", kN, "values are parsed as each feature needs", "config.NoEffectWarns"},

    {P "FeatureConfig.id_feature", kH, "an id feature", kExamples},
    {P "FeatureConfig.raw_feature", kH, "a raw (numeric) feature", kExamples},
    {P "IdFeature.feature_name", kH, "the name (and its column with FG_NONE)", kExamples},
    {P "IdFeature.expression", kH, "side:column read with FG_NORMAL / FG_DAG", kExamples},
    {P "IdFeature.embedding_name", kH, "features with one name share a table",
     "config.SharedTablesAgree"},
    {P "IdFeature.embedding_dim", kH, "the table width", kExamples},
    {P "IdFeature.hash_bucket_size", kH, "hash values into this many rows",
     "Transform.HashWithSeparatorMapsEveryToken"},
    {P "IdFeature.num_buckets", kH, "values are integer ids in [0, n)",
     "Transform.NumBucketsTakesTheIntegerAndRejectsOutOfRange"},
    {P "IdFeature.vocab_list", kH,
     "value -> index + 2 (0 empty, 1 unknown); with default_bucketize_value: index",
     "Transform.VocabListIndexPlusTwoOovOneEmptyZero"},
    {P "IdFeature.vocab_dict", kH,
     "value -> its id (0 empty, 1 unknown unless default_bucketize_value); rows max id + 1",
     "VocabTransform.DictMatchesTorchEasyRec"},
    {P "VocabDictEntry.key", kH, "a vocab_dict value", "Vocab.DictMatchesTorchEasyRec"},
    {P "VocabDictEntry.value", kH, "its id", "Vocab.DictMatchesTorchEasyRec"},
    {P "IdFeature.vocab_file", kH,
     "\"token\" (id: line number) or \"token id\" lines, read into vocab_dict at load; needs "
     "default_bucketize_value",
     "Vocab.FileLoadsIntoTheConfig"},
    {P "IdFeature.default_bucketize_value", kH,
     "the id of unknown vocabulary values; no ids reserved for empty / unknown",
     "VocabTransform.ListMatchesTorchEasyRec"},
    {P "IdFeature.value_dim", kH,
     "0: every value of a multi-value cell; 1: the first only (FG_NORMAL / FG_DAG)",
     "VocabTransform.ValueDimOneKeepsTheFirstValue"},
    {P "IdFeature.weighted", kH,
     "\"id:weight\" values: the KJT carries the weights, the EBC pools w * e (FG_NORMAL / FG_DAG)",
     "WeightedTransform.PairsGiveIdsAndWeights"},
    {P "IdFeature.pooling", kH, "sum | mean", "core.Embedding"},
    {P "IdFeature.separator", kH, "multi-value separator with FG_NORMAL / FG_DAG",
     "Transform.HashWithSeparatorMapsEveryToken"},
    {P "IdFeature.embedding_constraints", kH, "this table's sharding constraints", "planner.Plan"},
    {P "RawFeature.feature_name", kH, "the name (and its column with FG_NONE)", kExamples},
    {P "RawFeature.expression", kH, "side:column read with FG_NORMAL / FG_DAG", kExamples},
    {P "RawFeature.embedding_name", kH, "with boundaries: features with one name share a table",
     "config.SharedTablesAgree"},
    {P "RawFeature.embedding_dim", kH, "with boundaries: the bucket table width",
     "Transform.BoundariesBucketiseWithUpperBound"},
    {P "RawFeature.boundaries", kH, "bucketize into len + 1 ids",
     "Transform.BoundariesBucketiseWithUpperBound"},
    {P "RawFeature.value_dim", kH, "values per row", "Transform.DenseValueDimSplitsTheCell"},
    {P "RawFeature.normalizer", kH,
     "log1p / log10 / expression / minmax / zscore (FG_NORMAL, "
     "FG_DAG; with FG_NONE the data is already normalised: a warning says so)",
     "Transform.DenseNormalizers"},
    {P "RawFeature.pooling", kH, "with boundaries: sum | mean", "core.Embedding"},
    {P "RawFeature.default_value", kH, "the value of an empty cell",
     "Csv.CriteoTsvLineWithEmptyFields"},
    {P "RawFeature.separator", kH, "value_dim > 1: the separator of the values",
     "Transform.DenseValueDimSplitsTheCell"},
    {P "RawFeature.embedding_constraints", kH, "with boundaries: sharding constraints",
     "planner.Plan"},
    {P "ParameterConstraints.sharding_types", kH, "allowed TorchRec sharding types",
     "planner.Plan"},
    {P "FeatureConfig.sequence_id_feature", kH,
     "a sequence of ids, read by a sequence encoder or a SEQUENCE group", kSeqConfig},
    {P "FeatureConfig.sequence_raw_feature", kH,
     "a sequence of bucket ids (with boundaries), read by a sequence encoder", kSeqConfig},
    {P "FeatureConfig.sequence_feature", kH,
     "a grouped sequence: each sub-feature becomes <sequence_name>__<feature_name>", kSeqGrouped},
    {P "SequenceFeature.sequence_name", kH, "the prefix of the sub-features' names and columns",
     kSeqGrouped},
    {P "SequenceFeature.sequence_length", kH, kSeqLength, kSeqGrouped},
    {P "SequenceFeature.sequence_delim", kH, "the item separator of a text cell (default ;)",
     kSeqGrouped},
    {P "SequenceFeature.sequence_pk", kN, "TorchEasyRec's serving primary key", kSeqGrouped},
    {P "SequenceFeature.features", kH,
     "the sub-features (id_feature; raw_feature with boundaries); table: embedding_name or "
     "<feature_name>_emb",
     kSeqGrouped},
    {P "SeqFeatureConfig.id_feature", kH, "a sequence of ids", kSeqGrouped},
    {P "SeqFeatureConfig.raw_feature", kH, "a sequence of bucket ids (boundaries)", kSeqGrouped},
    {P "SequenceIdFeature.feature_name", kH, "the name and its column", kSeqConfig},
    {P "SequenceIdFeature.expression", kH,
     "FG_NORMAL / FG_DAG: side:column read (FG_NONE: the column named feature_name)", kSeqFgData},
    {P "SequenceIdFeature.sequence_length", kH, kSeqLength, kSeqInput},
    {P "SequenceIdFeature.sequence_delim", kH, "the item separator of a text cell (default ;)",
     kSeqInput},
    {P "SequenceIdFeature.embedding_name", kH, "features with one name share a table (one pooling)",
     kSeqPool},
    {P "SequenceIdFeature.embedding_dim", kH, "the table width", kSeqConfig},
    {P "SequenceIdFeature.hash_bucket_size", kH, "table rows (ids in [0, n))", kSeqConfig},
    {P "SequenceIdFeature.num_buckets", kH, "table rows (ids in [0, n))", kSeqInput},
    {P "SequenceIdFeature.vocab_list", kH, "table rows len + 2 (ids in [0, len + 2))", kSeqConfig},
    {P "SequenceIdFeature.vocab_dict", kH, "FG: the given ids, 1 out of vocabulary", kSeqFg},
    {P "SequenceIdFeature.default_value", kH, "FG: the value of an empty item (\"\": \"0\")",
     kSeqFg},
    {P "SequenceIdFeature.separator", kH, "FG: the multi-value separator in an item (one value)",
     kSeqFg},
    {P "SequenceIdFeature.fg_encoded_default_value", kH,
     "the sequence of an empty cell (unset: empty)", kSeqInput},
    {P "SequenceIdFeature.embedding_constraints", kH, "this table's sharding constraints",
     "train.Model.SequenceTableConstraints"},
    {P "SequenceRawFeature.feature_name", kH, "the name and its column", kSeqConfig},
    {P "SequenceRawFeature.expression", kH,
     "FG_NORMAL / FG_DAG: side:column read (FG_NONE: the column named feature_name)", kSeqFgData},
    {P "SequenceRawFeature.sequence_length", kH, kSeqLength, kSeqInput},
    {P "SequenceRawFeature.sequence_delim", kH, "the item separator of a text cell", kSeqInput},
    {P "SequenceRawFeature.embedding_name", kH, "features with one name share a table", kSeqPool},
    {P "SequenceRawFeature.embedding_dim", kH, "the bucket table width", kSeqConfig},
    {P "SequenceRawFeature.boundaries", kH,
     "the table has len + 1 rows; the column holds bucket ids (required)", kSeqConfig},
    {P "SequenceRawFeature.fg_encoded_default_value", kH, "the sequence of an empty cell",
     kSeqInput},
    {P "SequenceRawFeature.default_value", kH,
     "FG: the value of an empty item (\"\": an empty cell is no items)", kSeqFg},
    {P "SequenceRawFeature.embedding_constraints", kH, "this table's sharding constraints",
     "train.Model.SequenceTableConstraints"},

    {P "ModelConfig.feature_groups", kH, "the model's input groups", kExamples},
    {P "ModelConfig.dlrm", kH, "DLRM", kTrainJob},
    {P "ModelConfig.deepfm", kH, "DeepFM", "test_train_job.py::test_deepfm_criteo"},
    {P "ModelConfig.multi_tower", kH, "MultiTower",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "ModelConfig.multi_tower_din", kH, "MultiTowerDIN", kDinModel},
    {P "MultiTowerDIN.towers", kH, "one MLP tower per DEEP group", kDinModel},
    {P "MultiTowerDIN.din_towers", kH, "one DINEncoder per SEQUENCE group", kDinModel},
    {P "MultiTowerDIN.final", kH, "the final MLP over the towers' outputs", kDinModel},
    {P "DINTower.input", kH, "the SEQUENCE group (query: its non-sequence features)", kDinModel},
    {P "DINTower.attn_mlp", kH, "the attention MLP (required)", kDinModel},
    {P "ModelConfig.wide_and_deep", kH, "WideAndDeep",
     "test_rank_models_cross.py::test_wide_and_deep"},
    {P "ModelConfig.dcn_v1", kH, "DCN v1", "test_rank_models_cross.py::test_dcn_v1"},
    {P "ModelConfig.dcn_v2", kH, "DCN v2", "test_rank_models_cross.py::test_dcn_v2"},
    {P "ModelConfig.mask_net", kH, "MaskNet", kRankMaskJob},
    {P "ModelConfig.xdeepfm", kH, "xDeepFM", kRankMaskJob},
    {P "ModelConfig.wukong", kH, "WuKong", kRankMaskJob},
    {P "ModelConfig.num_class", kH, "1 (binary); other values refused", "config.ValuesRefused"},
    {P "ModelConfig.losses", kH,
     "binary_cross_entropy (single-task models; an empty list is refused: TorchEasyRec fails "
     "without a loss)",
     "config.SingleTaskLossesRequired"},
    {P "ModelConfig.metrics", kH,
     "auc, grouped_auc (single-task models; at most one of each: TorchEasyRec keeps one per name)",
     "config.DuplicateMetricsRefused"},
    {P "FeatureGroupConfig.group_name", kH, "the group name", kExamples},
    {P "FeatureGroupConfig.feature_names", kH, "the group's features in order", kExamples},
    {P "FeatureGroupConfig.group_type", kH,
     "DEEP | WIDE (the group \"wide\" of deepfm, wide_and_deep and xdeepfm, read through its "
     "own wide_embedding_dim tables; refused elsewhere) | SEQUENCE (multi_tower_din's din_towers "
     "only; JAGGED_SEQUENCE refused)",
     "config.WideGroupsOnlyWhereWideTablesAreBuilt"},
    {P "FeatureGroupConfig.sequence_groups", kH,
     "a DEEP group's sequence groups, each read by a pooling_encoder", kSeqConfig},
    {P "FeatureGroupConfig.sequence_encoders", kH,
     "appended to the group's features in order (pooling_encoder; din_encoder and "
     "simple_attention in multi_tower)",
     kSeqModel},
    {P "SeqGroupConfig.group_name", kH, "the name a pooling_encoder's input names", kSeqConfig},
    {P "SeqGroupConfig.feature_names", kH,
     "its sequence features (pooled in order) and query features (not read by pooling)", kSeqModel},
    {P "MLP.hidden_units", kH, "Linear layers of these widths", kTrainJob},
    {P "MLP.dropout_ratio", kH,
     "dropout after each layer in training: [] none, [p] every layer, else one per layer",
     "train.Mlp.DropoutRatioListSemantics"},
    {P "MLP.activation", kH, "torch.nn activations with keyword arguments, Dice, or '' for none",
     "train.Mlp.EachActivationMatchesItsFormula"},
    {P "MLP.use_bn", kH, "BatchNorm1d after each Linear (running stats saved and broadcast)",
     "train.Mlp.BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats"},
    {P "MLP.bias", kH, "the Linear layers' bias (none with use_bn, as upstream)",
     "train.Mlp.LayerNormWithoutBias"},
    {P "MLP.use_ln", kH, "LayerNorm after each Linear", "train.Mlp.LayerNormWithoutBias"},
    {P "Tower.input", kH, "the tower's feature group",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "Tower.mlp", kH, "the tower's MLP", "test_train_job.py::test_multi_tower_movielens"},
    {P "DeepFM.deep", kH, "the deep MLP", "test_train_job.py::test_deepfm_criteo"},
    {P "DeepFM.final", kH,
     "the final MLP over [wide, fm, deep]; unset: wide + sum(fm) + output(deep)",
     "train.Model.DeepFmWithoutFinalMatchesTheFormula"},
    {P "DeepFM.wide_embedding_dim", kH, "the wide tables' width",
     "test_train_job.py::test_deepfm_criteo"},
    {P "MultiTower.towers", kH, "one MLP per group",
     "test_train_job.py::test_multi_tower_movielens"},
    {P "MultiTower.final", kH, "the final MLP", "test_train_job.py::test_multi_tower_movielens"},
    {P "WideAndDeep.deep", kH, "the deep MLP over group deep",
     "train.RankCrossModel.WideAndDeepMatchesTheFormula"},
    {P "WideAndDeep.final", kH, "the final MLP over [wide, deep]; unset: wide + output(deep)",
     "train.RankCrossModel.WideAndDeepMatchesTheFormula"},
    {P "WideAndDeep.wide_embedding_dim", kH, "the wide tables' width",
     "test_rank_models_cross.py::test_wide_and_deep"},
    {P "DCNV1.cross", kH, "the cross network over the group",
     "train.RankCrossModel.DcnV1MatchesTheFormula"},
    {P "DCNV1.deep", kH, "the deep MLP over the group",
     "train.RankCrossModel.DcnV1MatchesTheFormula"},
    {P "DCNV1.final", kH, "the final MLP over [cross, deep]",
     "train.RankCrossModel.DcnV1MatchesTheFormula"},
    {P "DCNV2.backbone", kH, "an MLP before the cross network",
     "train.RankCrossModel.DcnV2MatchesTheFormula"},
    {P "DCNV2.cross", kH, "the low-rank cross network",
     "train.RankCrossModel.DcnV2MatchesTheFormula"},
    {P "DCNV2.deep", kH, "a deep MLP over the group, beside the cross network",
     "train.RankCrossModel.DcnV2MatchesTheFormula"},
    {P "DCNV2.final", kH, "the final MLP over [cross, deep]",
     "train.RankCrossModel.DcnV2MatchesTheFormula"},
    {P "Cross.cross_num", kH, "the number of cross layers", "train.CrossGolden.CrossMatchesTorch"},
    {P "CrossV2.cross_num", kH, "the number of cross layers",
     "train.CrossGolden.CrossV2MatchesTorch"},
    {P "CrossV2.low_rank", kH, "the rank of each layer's U·V factorisation",
     "train.CrossGolden.CrossV2MatchesTorch"},
    {P "DLRM.dense_mlp", kH, "the bottom MLP of the optional dense group", kTrainJob},
    {P "DLRM.arch_with_sparse", kH, "the embeddings also feed the final MLP", kTrainJob},
    {P "DLRM.final", kH, "the top MLP", kTrainJob},
    // Multi-task models (src/worker/train/multi_task.cpp, dbmtl.cpp, ple.cpp, tasks.cpp).
    {P "ModelConfig.simple_multi_task", kH, "SimpleMultiTask: one TaskTower per task", kMtGolden},
    {P "ModelConfig.mmoe", kH, "MMoE: experts, softmax gates, TaskTowers", kMtJob},
    {P "ModelConfig.dbmtl", kH, "DBMTL: bottom MLP, optional MMoE, Bayes task towers", kMtJob},
    {P "SimpleMultiTask.task_towers", kH, "the tasks", kMtGolden},
    {P "MMoE.expert_mlp", kH, "each expert's MLP", kMtGolden},
    {P "MMoE.gate_mlp", kH, "an MLP before each task's gate Linear", kMtGolden},
    {P "MMoE.num_expert", kH, "number of experts", kMtGolden},
    {P "MMoE.task_towers", kH, "the tasks", kMtJob},
    {P "DBMTL.bottom_mlp", kH, "shared bottom MLP", kMtGolden},
    {P "DBMTL.expert_mlp", kH, "MMoE after the bottom (unset: no MMoE)", kMtGolden},
    {P "DBMTL.gate_mlp", kH, "MMoE gate MLP (needs expert_mlp)", kMtGolden},
    {P "DBMTL.num_expert", kH, "MMoE experts (needs expert_mlp)", kMtGolden},
    {P "DBMTL.task_towers", kH, "the Bayes task towers", kMtJob},
    {P "ModelConfig.ple", kH, "PLE: extraction networks of task and shared experts, TaskTowers",
     kMtJob},
    {P "PLE.extraction_networks", kH, "the extraction layers, in order", kMtGolden},
    {P "PLE.task_towers", kH, "the tasks", kMtJob},
    {P "ExtractionNetwork.network_name", kN, "a label; TorchEasyRec does not use it either",
     kMtJob},
    {P "ExtractionNetwork.expert_num_per_task", kH, "experts per task", kMtGolden},
    {P "ExtractionNetwork.share_num", kH, "shared experts", kMtGolden},
    {P "ExtractionNetwork.task_expert_net", kH, "each task expert's MLP", kMtGolden},
    {P "ExtractionNetwork.share_expert_net", kH, "each shared expert's MLP", kMtGolden},
    {P "TaskTower.tower_name", kH, "task name: suffix of its loss, metric and output names",
     kMtJob},
    {P "TaskTower.label_name", kH, "the task's label_fields column", kMtJob},
    {P "TaskTower.metrics", kH, "auc (auc_<tower>)", kMtJob},
    {P "TaskTower.losses", kH, "one binary_cross_entropy (binary_cross_entropy_<tower>)", kMtJob},
    {P "TaskTower.num_class", kH, "1; other values refused", kMtRefused},
    {P "TaskTower.mlp", kH, "the tower MLP before its Linear", kMtGolden},
    {P "TaskTower.weight", kH, "loss weight (with the sample weights, as upstream has_weight)",
     kMtLoss},
    {P "TaskTower.sample_weight_name", kH, "the task's sample weights (normalised by batch mean)",
     kMtLoss},
    {P "BayesTaskTower.tower_name", kH, "task name: suffix of its loss, metric and output names",
     kMtJob},
    {P "BayesTaskTower.label_name", kH, "the task's label_fields column", kMtJob},
    {P "BayesTaskTower.metrics", kH, "auc (auc_<tower>)", kMtJob},
    {P "BayesTaskTower.losses", kH, "one binary_cross_entropy", kMtJob},
    {P "BayesTaskTower.num_class", kH, "1; other values refused", kMtRefused},
    {P "BayesTaskTower.mlp", kH, "the task MLP", kMtGolden},
    {P "BayesTaskTower.weight", kH, "loss weight", kMtLoss},
    {P "BayesTaskTower.relation_tower_names", kH, "earlier towers feeding relation_mlp", kMtGolden},
    {P "BayesTaskTower.relation_mlp", kH, "MLP over [task net, relation nets]", kMtGolden},
    {P "BayesTaskTower.sample_weight_name", kH, "the task's sample weights", kMtLoss},
    {P "MaskNet.mask_net_module", kH, "the MaskNetModule over the one feature group",
     "train.RankMaskModels.MaskNetMatchesTheFormula"},
    {P "MaskNetModule.n_mask_blocks", kH, "number of mask blocks", kModules},
    {P "MaskNetModule.mask_block", kH, "every block's options", kModules},
    {P "MaskNetModule.top_mlp", kH, "the MLP over the blocks (required by MaskNet)", kModules},
    {P "MaskNetModule.use_parallel", kH,
     "true: blocks side by side, outputs concatenated; false: each masks the previous output",
     kModules},
    {P "MaskBlock.reduction_ratio", kH, "aggregation dim = int(block input dim * ratio); 0: off",
     kModules},
    {P "MaskBlock.aggregation_dim", kH,
     "the aggregation dim when reduction_ratio is 0 (refused otherwise: the ratio wins)", kModules},
    {P "MaskBlock.hidden_dim", kH, "width of the block's Linear + LayerNorm + ReLU", kModules},
    {P "xDeepFM.cin", kH, "the CIN over the WIDE group \"wide\"",
     "train.RankMaskModels.XDeepFmReadsTheWideTablesThroughTheCin"},
    {P "xDeepFM.deep", kH, "the MLP over group \"deep\"",
     "train.RankMaskModels.XDeepFmReadsTheWideTablesThroughTheCin"},
    {P "xDeepFM.final", kH, "the MLP over [cin, deep]",
     "train.RankMaskModels.XDeepFmReadsTheWideTablesThroughTheCin"},
    {P "xDeepFM.wide_embedding_dim", kH, "the wide tables' width (default 16)",
     "train.RankMaskModels.XDeepFmReadsTheWideTablesThroughTheCin"},
    {P "CIN.cin_layer_size", kH, "feature maps of each CIN layer", kModules},
    {P "WuKong.dense_mlp", kH,
     "MLP of group \"dense\" (last unit = the sparse dim), one more feature, first",
     "train.RankMaskModels.WuKongPutsTheDenseFeatureFirst"},
    {P "WuKong.wukong_layers", kH, "the stacked WuKong layers",
     "train.RankMaskModels.WuKongLayersChainTheirFeatureNums"},
    {P "WuKong.final", kH, "the MLP over the flattened last layer",
     "train.RankMaskModels.WuKongPutsTheDenseFeatureFirst"},
    {P "WuKongLayer.lcb_feature_num", kH, "LinearCompressBlock output features", kModules},
    {P "WuKongLayer.fmb_feature_num", kH, "FactorizationMachineBlock output features", kModules},
    {P "WuKongLayer.compressed_feature_num", kH, "compressed features of the FM block", kModules},
    {P "WuKongLayer.feature_num_mlp", kH, "the FM block's MLP", kModules},
    {P "LossConfig.binary_cross_entropy", kH, "BCE with logits, mean over the batch", kTrainJob},
    {P "MetricConfig.auc", kH, "ROC AUC", "train.Auc"},
    {P "MetricConfig.grouped_auc", kH, "grouped AUC", "train.GroupedAuc"},
    {P "AUC.thresholds", kH, "torchmetrics binned AUC over this many thresholds; 0: exact",
     "train.Auc"},
    {P "GroupedAUC.grouping_key", kH, "the grouping column or feature", "train.GroupedAuc"},
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
  static const std::vector<FieldSupport> kAll = [] {
    std::vector<FieldSupport> all = kTable;
    all.insert(all.end(), KvSupportRows().begin(), KvSupportRows().end());
    all.insert(all.end(), SequenceSupportRows().begin(), SequenceSupportRows().end());
    return all;
  }();
  return kAll;
}

const FieldSupport* FindSupport(const std::string& full_name) {
  for (const FieldSupport& entry : SupportTable()) {
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
