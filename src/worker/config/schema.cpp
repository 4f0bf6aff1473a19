// The pipeline-config schema: one table per message, one row per key. Defaults here are the
// effective defaults (the parser fills them before reading values into the structs), and they
// agree with the member initialisers in include/tzrec/config/config.hpp (a unit test checks).
#include "schema.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tzrun/base/strings.hpp"

namespace tzrec::config_schema {
namespace {

FieldSpec Field(std::string key, FieldType type, Json default_value, std::string doc) {
  FieldSpec field;
  field.key = std::move(key);
  field.type = type;
  field.default_value = std::move(default_value);
  field.doc = std::move(doc);
  return field;
}

FieldSpec Int(std::string key, std::int64_t def, std::string doc) {
  return Field(std::move(key), FieldType::kInt, def, std::move(doc));
}
FieldSpec Dbl(std::string key, double def, std::string doc) {
  return Field(std::move(key), FieldType::kDouble, def, std::move(doc));
}
FieldSpec Bool(std::string key, bool def, std::string doc) {
  return Field(std::move(key), FieldType::kBool, def, std::move(doc));
}
FieldSpec Str(std::string key, std::string def, std::string doc,
              std::vector<std::string> choices = {}) {
  FieldSpec field = Field(std::move(key), FieldType::kString, std::move(def), std::move(doc));
  field.choices = std::move(choices);
  return field;
}
FieldSpec Required(FieldSpec field) {
  field.required = true;
  field.default_value = nullptr;
  return field;
}
FieldSpec List(std::string key, FieldType type, std::string doc,
               std::vector<std::string> choices = {}) {
  FieldSpec field = Field(std::move(key), type, Json::array(), std::move(doc));
  field.choices = std::move(choices);
  return field;
}
FieldSpec Msg(std::string key, const MessageSpec& message, Json def, std::string doc) {
  FieldSpec field = Field(std::move(key), FieldType::kMessage, std::move(def), std::move(doc));
  field.message = &message;
  return field;
}
FieldSpec MsgList(std::string key, const MessageSpec& message, Json def, std::string doc) {
  FieldSpec field = Field(std::move(key), FieldType::kMessageList, std::move(def), std::move(doc));
  field.message = &message;
  return field;
}
FieldSpec Oneof(FieldSpec field, std::string group) {
  field.oneof = std::move(group);
  return field;
}
// A TorchEasyRec key that tzrec_train recognises and refuses.
FieldSpec Unsupported(std::string key, std::string group, std::string what) {
  FieldSpec field = Field(std::move(key), FieldType::kMessage, nullptr,
                          "not supported by tzrec_train (" + std::move(what) + "); rejected");
  field.oneof = std::move(group);
  field.unsupported = true;
  return field;
}

const std::vector<std::string> kShardingTypeNames = {"data_parallel", "table_wise", "column_wise",
                                                     "row_wise", "table_row_wise"};

struct Registry {
  std::deque<MessageSpec> messages;  // stable addresses
  const MessageSpec* root = nullptr;

  const MessageSpec& Add(std::string name, std::string doc, std::vector<FieldSpec> fields,
                         std::vector<OneofSpec> oneofs = {}) {
    messages.push_back(
        MessageSpec{std::move(name), std::move(doc), std::move(fields), std::move(oneofs)});
    return messages.back();
  }

  Registry() {
    const MessageSpec& constant_lr =
        Add("ConstantLearningRate", "The learning rate stays at the optimizer's `lr`.", {});
    const std::string lr_doc = "learning rate";
    const std::string wd_doc = "L2 weight decay added to the gradient";
    const std::string eps_doc = "term added to the denominator for numerical stability";
    const std::string acc_doc = "initial value of the squared-gradient accumulator";
    const MessageSpec& sgd = Add("SGDOptimizer", "Plain SGD: w -= lr * g.",
                                 {Dbl("lr", 0.001, lr_doc), Dbl("weight_decay", 0.0, wd_doc)});
    const MessageSpec& adagrad =
        Add("AdagradOptimizer", "Adagrad (per element accumulator).",
            {Dbl("lr", 0.001, lr_doc), Dbl("weight_decay", 0.0, wd_doc),
             Dbl("initial_accumulator_value", 0.0, acc_doc), Dbl("eps", 1e-8, eps_doc)});
    const MessageSpec& adam =
        Add("AdamOptimizer", "Adam.",
            {Dbl("lr", 0.001, lr_doc), Dbl("beta1", 0.9, "first-moment decay"),
             Dbl("beta2", 0.999, "second-moment decay"), Dbl("eps", 1e-8, eps_doc),
             Dbl("weight_decay", 0.0, wd_doc)});
    const MessageSpec& rowwise =
        Add("RowWiseAdagradOptimizer",
            "Row-wise Adagrad: one accumulator per embedding row (mean of the row's squared "
            "gradient), TorchRec's default for large tables.",
            {Dbl("lr", 0.001, lr_doc), Dbl("weight_decay", 0.0, wd_doc),
             Dbl("initial_accumulator_value", 0.0, acc_doc), Dbl("eps", 1e-8, eps_doc)});
    const MessageSpec& optimizer = Add(
        "Optimizer",
        "`sparse_optimizer` (embedding tables, fused into the sharded lookup) and "
        "`dense_optimizer` (everything else). Exactly one `*_optimizer`; the learning rate is "
        "constant.",
        {Oneof(Msg("sgd_optimizer", sgd, nullptr, "SGD"), "optimizer"),
         Oneof(Msg("adagrad_optimizer", adagrad, nullptr, "Adagrad"), "optimizer"),
         Oneof(Msg("adam_optimizer", adam, nullptr, "Adam"), "optimizer"),
         Oneof(Msg("rowwise_adagrad_optimizer", rowwise, nullptr, "row-wise Adagrad"), "optimizer"),
         Unsupported("lars_sgd_optimizer", "optimizer", "optimizer"),
         Unsupported("lamb_optimizer", "optimizer", "optimizer"),
         Unsupported("partial_rowwise_lamb_optimizer", "optimizer", "optimizer"),
         Unsupported("partial_rowwise_adam_optimizer", "optimizer", "optimizer"),
         Unsupported("adamw_optimizer", "optimizer", "optimizer"),
         Unsupported("adadelta_optimizer", "optimizer", "optimizer"),
         Unsupported("rmsprop_optimizer", "optimizer", "optimizer"),
         Oneof(Msg("constant_learning_rate", constant_lr, nullptr,
                   "constant learning rate (the only schedule supported; may be omitted)"),
               "learning_rate"),
         Unsupported("exponential_decay_learning_rate", "learning_rate", "learning-rate schedule"),
         Unsupported("manual_step_learning_rate", "learning_rate", "learning-rate schedule"),
         Unsupported("cosine_annealing_learning_rate", "learning_rate", "learning-rate schedule")},
        {{"optimizer", true}, {"learning_rate", false}});

    const MessageSpec& grad_clipping = Add(
        "GradClipping", "Gradient clipping of the dense parameters before the optimizer step.",
        {Str("clipping_type", "none",
             "`none`; `norm`: scale gradients so their total norm is at most max_gradient; "
             "`value`: clamp each gradient element to [-max_gradient, max_gradient]",
             {"none", "norm", "value"}),
         Dbl("max_gradient", 1.0, "the clipping threshold (> 0)"),
         Field("norm_type", FieldType::kDoubleOrInf, 2.0,
               "p of the p-norm for `norm` clipping (> 0, or \"inf\" for the max norm)"),
         Bool("enable_global_grad_clip", false,
              "norm clipping over the gradients of all ranks (the norm is all-reduced), not each "
              "rank's own")});
    const MessageSpec& grad_scaler = Add(
        "GradScaler", "Loss scaling for FP16 mixed precision (torch.amp.GradScaler's parameters).",
        {Dbl("init_scale", 65536.0, "initial scale (> 0)"),
         Dbl("growth_factor", 2.0, "scale multiplier after growth_interval good steps (> 1)"),
         Dbl("backoff_factor", 0.5, "scale multiplier after a step with inf/NaN grads (0..1)"),
         Int("growth_interval", 2000, "good steps between growths (> 0)")});
    const MessageSpec& constraints =
        Add("ParameterConstraints", "Planner constraints of embedding tables.",
            {List("sharding_types", FieldType::kStringList,
                  "the sharding types the planner may choose (empty: all)", kShardingTypeNames)});

    const MessageSpec& train_config = Add(
        "TrainConfig", "How to train.",
        {Msg("sparse_optimizer", optimizer,
             Json{{"adagrad_optimizer", {{"lr", 0.001}}},
                  {"constant_learning_rate", Json::object()}},
             "optimizer of the embedding tables"),
         Msg("dense_optimizer", optimizer,
             Json{{"adam_optimizer", {{"lr", 0.001}}}, {"constant_learning_rate", Json::object()}},
             "optimizer of the dense parameters"),
         Int("num_steps", 0,
             "train this many steps (> 0); exactly one of num_steps / num_epochs may be set; "
             "neither: num_epochs = 1"),
         Int("num_epochs", 0, "train this many passes over train_input_path (> 0)"),
         Int("log_step_count_steps", 100, "a progress line on rank 0 every this many steps (> 0)"),
         Int("save_checkpoints_steps", 1000,
             "a checkpoint every this many steps (0: only at the end); one is always written at "
             "the end"),
         Int("keep_checkpoint_max", 0, "keep the newest this many checkpoints (0: keep all)"),
         Int("gradient_accumulation_steps", 0,
             "accumulate gradients over this many batches before an optimizer step (0 or 1: off)"),
         Msg("grad_clipping", grad_clipping, Json::object(), "gradient clipping"),
         Str("mixed_precision", "",
             "autocast dtype of the dense part: \"\" (fp32), `BF16`, `FP16` (with grad_scaler)",
             {"", "BF16", "FP16"}),
         Msg("grad_scaler", grad_scaler, nullptr,
             "loss scaling for FP16 (absent: torch's defaults when mixed_precision is FP16)"),
         Field("seed", FieldType::kUInt, 42, "random seed of the initialisation and the sampler"),
         Msg("global_embedding_constraints", constraints, Json::object(),
             "constraints applied to every table without its own embedding_constraints"),
         Unsupported("fine_tune_checkpoint", "", "fine-tuning; use --continue_train"),
         Unsupported("save_checkpoints_epochs", "", "use save_checkpoints_steps")});

    const MessageSpec& eval_config =
        Add("EvalConfig", "How to evaluate.",
            {Int("num_steps", 0, "evaluate this many batches per rank (0: the whole eval input)"),
             Int("log_step_count_steps", 10, "an eval progress line every this many steps (> 0)")});

    const MessageSpec& data_config = Add(
        "DataConfig", "The input.",
        {Int("batch_size", 1024, "training batch size per rank (> 0)"),
         Int("eval_batch_size", 0, "eval batch size per rank (0: batch_size)"),
         Str("dataset_type", "ParquetDataset",
             "`ParquetDataset` (.parquet files) or `CsvDataset` (delimited text)",
             {"ParquetDataset", "CsvDataset"}),
         List("label_fields", FieldType::kStringList,
              "label columns (non-empty; the first is the binary label)"),
         Int("num_workers", 1, "reader threads per rank (>= 1)"),
         Str("delimiter", ",", "CsvDataset: the field delimiter (\"\\t\" for Criteo TSV)"),
         Bool("with_header", true, "CsvDataset: the first line of each file holds column names"),
         List("input_fields", FieldType::kStringList,
              "CsvDataset without header: the column names, in file order"),
         Bool("drop_remainder", false, "drop the last partial batch")});

    const std::string name_doc = "unique feature name (referenced by feature groups)";
    const std::string expr_doc =
        "input column: \"user:col\" / \"item:col\" / \"col\" (the column is after the last ':'; "
        "\"\": feature_name)";
    const std::string emb_name_doc =
        "shared table name: features with the same embedding_name share one table (they must "
        "agree on embedding_dim, size and pooling); \"\": \"<feature_name>_emb\"";
    const std::string pooling_doc = "how a multi-valued cell's embeddings are pooled";
    const std::string sep_doc = "multi-value separator inside one cell (\"\": single value)";
    const MessageSpec& id_feature =
        Add("IdFeature", "A categorical feature looked up in an embedding table.",
            {Required(Str("feature_name", "", name_doc)), Str("expression", "", expr_doc),
             Int("embedding_dim", 0, "embedding width (> 0)"),
             Int("hash_bucket_size", 0,
                 "table rows; values (strings or integers, as text) are hashed into [0, n)"),
             Int("num_buckets", 0, "table rows; values are integer ids in [0, n)"),
             List("vocab_list", FieldType::kStringList,
                  "table rows = len + 2; value → index + 2 (0: empty, 1: out of vocabulary)"),
             Str("embedding_name", "", emb_name_doc),
             Str("pooling", "sum", pooling_doc, {"sum", "mean"}), Str("separator", "", sep_doc),
             Msg("embedding_constraints", constraints, Json::object(),
                 "sharding constraints of this feature's table")});
    const MessageSpec& raw_feature =
        Add("RawFeature",
            "A numeric feature: dense (normalised, into the dense input) or, with boundaries, "
            "bucketized into an embedding table of len(boundaries) + 1 rows.",
            {Required(Str("feature_name", "", name_doc)), Str("expression", "", expr_doc),
             Int("embedding_dim", 0,
                 "embedding width of the bucketized table (> 0 with boundaries, "
                 "0 without)"),
             List("boundaries", FieldType::kDoubleList,
                  "strictly increasing bucket boundaries (value v → bucket upper_bound(v))"),
             Str("normalizer", "",
                 "dense only: \"\", \"method=log1p\", \"method=expression,expr=log(x+C)\" (or "
                 "expr=x), \"method=minmax,min=a,max=b\", \"method=zscore,mean=a,std=b\""),
             Int("value_dim", 1,
                 "values per row (dense width; a cell holds value_dim numbers split "
                 "by separator)"),
             Dbl("default_value", 0.0, "the value of a missing cell (before normalisation)"),
             Str("embedding_name", "", emb_name_doc),
             Str("pooling", "sum", pooling_doc, {"sum", "mean"}), Str("separator", "", sep_doc),
             Msg("embedding_constraints", constraints, Json::object(),
                 "sharding constraints of this feature's table (with boundaries)")});
    const MessageSpec& feature_config =
        Add("FeatureConfig", "One feature: exactly one of id_feature / raw_feature.",
            {Oneof(Msg("id_feature", id_feature, nullptr, "categorical feature"), "feature"),
             Oneof(Msg("raw_feature", raw_feature, nullptr, "numeric feature"), "feature"),
             Unsupported("combo_feature", "feature", "feature type"),
             Unsupported("lookup_feature", "feature", "feature type"),
             Unsupported("match_feature", "feature", "feature type"),
             Unsupported("expr_feature", "feature", "feature type"),
             Unsupported("sequence_feature", "feature", "feature type")},
            {{"feature", true}});

    const MessageSpec& feature_group =
        Add("FeatureGroupConfig", "A named list of features, the input of a model part.",
            {Required(Str("group_name", "", "unique group name (models look groups up by name)")),
             List("feature_names", FieldType::kStringList, "features of the group (defined ones)"),
             Str("group_type", "DEEP", "`DEEP` or `WIDE`", {"DEEP", "WIDE"})});
    const MessageSpec& mlp =
        Add("MLP", "A stack of Linear layers.",
            {List("hidden_units", FieldType::kIntList, "output width of each layer (each > 0)"),
             Str("activation", "nn.ReLU", "activation after each layer",
                 {"nn.ReLU", "nn.Sigmoid", "nn.Tanh", "nn.GELU", "nn.SiLU"}),
             Bool("use_bn", false, "BatchNorm1d before each activation"),
             Dbl("dropout_ratio", 0.0, "dropout after each activation ([0, 1))")});
    const MessageSpec& dlrm =
        Add("DLRM",
            "DLRM: group `dense` (dense raw features) → dense_mlp; group `sparse` (embeddings, one "
            "shared dim) → pairwise dot interaction; final MLP → logit.",
            {Msg("dense_mlp", mlp, Json::object(),
                 "bottom MLP of the dense features; with arch_with_sparse its last unit must equal "
                 "the sparse embedding_dim"),
             Msg("final", mlp, Json::object(), "top MLP (a Linear to 1 logit follows)"),
             Bool("arch_with_sparse", true,
                  "include the dense output in the dot interaction (TorchRec's DLRM)")});
    const MessageSpec& deep_fm =
        Add("DeepFM",
            "DeepFM: group `wide` (sparse features, wide_embedding_dim tables) + FM over group "
            "`deep`'s embeddings (one shared dim) + deep MLP over group `deep`; final MLP → logit.",
            {Msg("deep", mlp, Json::object(), "the deep MLP"),
             Msg("final", mlp, Json::object(), "top MLP (a Linear to 1 logit follows)"),
             Int("wide_embedding_dim", 4, "width of the wide part's embeddings (> 0)")});
    const MessageSpec& tower =
        Add("Tower", "One tower of MultiTower.",
            {Required(Str("input", "", "the feature group this tower reads")),
             Msg("mlp", mlp, Json::object(), "the tower's MLP")});
    const MessageSpec& multi_tower =
        Add("MultiTower", "MultiTower: one MLP tower per feature group, concatenated → final.",
            {MsgList("towers", tower, Json::array(), "the towers (non-empty)"),
             Msg("final", mlp, Json::object(), "top MLP (a Linear to 1 logit follows)")});
    const MessageSpec& auc = Add("AUC", "Area under the ROC curve over the whole eval set.", {});
    const MessageSpec& grouped_auc =
        Add("GroupedAUC", "GAUC: AUC per group, averaged weighted by group size.",
            {Required(Str("grouping_key", "", "the input column that defines groups (user id)"))});
    const MessageSpec& metric =
        Add("MetricConfig", "One eval metric.",
            {Oneof(Msg("auc", auc, nullptr, "AUC"), "metric"),
             Oneof(Msg("grouped_auc", grouped_auc, nullptr, "grouped AUC"), "metric"),
             Unsupported("accuracy", "metric", "metric"),
             Unsupported("mean_absolute_error", "metric", "metric"),
             Unsupported("mean_squared_error", "metric", "metric")},
            {{"metric", true}});
    const MessageSpec& bce =
        Add("BinaryCrossEntropy", "Sigmoid binary cross entropy on the first label field.", {});
    const MessageSpec& loss =
        Add("LossConfig", "The loss.",
            {Oneof(Msg("binary_cross_entropy", bce, nullptr, "binary cross entropy"), "loss"),
             Unsupported("softmax_cross_entropy", "loss", "loss"),
             Unsupported("l2_loss", "loss", "loss"), Unsupported("focal_loss", "loss", "loss"),
             Unsupported("jrc_loss", "loss", "loss")},
            {{"loss", true}});
    const MessageSpec& model_config = Add(
        "ModelConfig", "The model: feature groups, exactly one model, metrics and losses.",
        {MsgList("feature_groups", feature_group, Json::array(), "feature groups (non-empty)"),
         Oneof(Msg("dlrm", dlrm, nullptr, "DLRM"), "model"),
         Oneof(Msg("deep_fm", deep_fm, nullptr, "DeepFM"), "model"),
         Oneof(Msg("multi_tower", multi_tower, nullptr, "MultiTower"), "model"),
         Unsupported("wide_and_deep", "model", "model"), Unsupported("dcn", "model", "model"),
         Unsupported("dcn_v2", "model", "model"), Unsupported("masknet", "model", "model"),
         Unsupported("multi_tower_din", "model", "model"), Unsupported("mmoe", "model", "model"),
         Unsupported("dbmtl", "model", "model"), Unsupported("dssm", "model", "model"),
         MsgList("metrics", metric, Json::array({Json{{"auc", Json::object()}}}),
                 "eval metrics (at most one auc and one grouped_auc)"),
         MsgList("losses", loss, Json::array({Json{{"binary_cross_entropy", Json::object()}}}),
                 "losses (exactly one binary_cross_entropy)")},
        {{"model", true}});

    root =
        &Add("EasyRecConfig", "The whole pipeline config (the top level of the file).",
             {Str("train_input_path", "",
                  "training input: comma-separated paths or globs (the command line overrides it)"),
              Str("eval_input_path", "", "eval input, like train_input_path"),
              Str("model_dir", "", "checkpoints, metrics.json and pipeline.config go here"),
              Msg("train_config", train_config, Json::object(), "training"),
              Msg("eval_config", eval_config, Json::object(), "evaluation"),
              Msg("data_config", data_config, Json::object(), "input"),
              MsgList("feature_configs", feature_config, Json::array(), "the features"),
              Required(Msg("model_config", model_config, nullptr, "the model"))});
  }
};

const Registry& GetRegistry() {
  static const Registry registry;
  return registry;
}

}  // namespace

const FieldSpec* MessageSpec::Find(const std::string& key) const {
  for (const FieldSpec& field : fields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

std::vector<std::string> MessageSpec::Keys() const {
  std::vector<std::string> keys;
  for (const FieldSpec& field : fields) keys.push_back(field.key);
  return keys;
}

const MessageSpec& Root() {
  return *GetRegistry().root;
}

std::vector<const MessageSpec*> AllMessages() {
  std::vector<const MessageSpec*> out;
  std::set<const MessageSpec*> seen;
  std::function<void(const MessageSpec&)> visit = [&](const MessageSpec& message) {
    if (!seen.insert(&message).second) return;
    out.push_back(&message);
    for (const FieldSpec& field : message.fields) {
      if (field.message != nullptr) visit(*field.message);
    }
  };
  visit(Root());
  return out;
}

std::string TypeName(const FieldSpec& field) {
  switch (field.type) {
    case FieldType::kInt:
      return "int64";
    case FieldType::kUInt:
      return "uint64";
    case FieldType::kDouble:
      return "double";
    case FieldType::kDoubleOrInf:
      return "double or \"inf\"";
    case FieldType::kBool:
      return "bool";
    case FieldType::kString:
      return "string";
    case FieldType::kStringList:
      return "list of string";
    case FieldType::kIntList:
      return "list of int64";
    case FieldType::kDoubleList:
      return "list of double";
    case FieldType::kMessage:
      return field.message != nullptr ? field.message->name : "message";
    case FieldType::kMessageList:
      return "list of " + (field.message != nullptr ? field.message->name : "message");
  }
  return "?";
}

std::string Closest(const std::string& key, const std::vector<std::string>& keys) {
  return tzrun::base::ClosestName(key, keys);
}

}  // namespace tzrec::config_schema
