// Unit tests of tzrec::config: the example configs, defaults, every error class with its message,
// edit_config_json overrides, ToJson round trips, the generated reference and the normalizers.
#include "tzrec/config/config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tzrec {
namespace {

using Json = nlohmann::ordered_json;

// A small valid DLRM config: one dense raw feature, two id features of dim 8.
Json Minimal() {
  return Json::parse(R"({
    "data_config": {"label_fields": ["clk"]},
    "feature_configs": [
      {"raw_feature": {"feature_name": "price", "expression": "item:price"}},
      {"id_feature": {"feature_name": "cat_a", "hash_bucket_size": 100, "embedding_dim": 8}},
      {"id_feature": {"feature_name": "cat_b", "expression": "user:cb", "num_buckets": 50,
                      "embedding_dim": 8}}
    ],
    "model_config": {
      "feature_groups": [
        {"group_name": "dense", "feature_names": ["price"]},
        {"group_name": "sparse", "feature_names": ["cat_a", "cat_b"]}
      ],
      "dlrm": {"dense_mlp": {"hidden_units": [16, 8]}, "final": {"hidden_units": [8]}}
    }
  })");
}

// Parses and expects a ConfigError whose message contains every one of `parts`.
void ExpectError(const std::string& text, const std::string& edit,
                 std::initializer_list<std::string> parts) {
  try {
    ParsePipelineConfig(text, edit);
    ADD_FAILURE() << "no ConfigError; expected one containing '" << *parts.begin() << "'";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message: " << message << "\n  lacks: " << part;
    }
  }
}
void ExpectError(const Json& config, std::initializer_list<std::string> parts) {
  ExpectError(config.dump(), "", parts);
}

std::string Example(const std::string& name) {
  return std::string(TZREC_EXAMPLE_CONFIGS_DIR) + "/" + name;
}

// ----------------------------------------------------------------------------------- examples

TEST(Examples, DlrmCriteo) {
  const PipelineConfig c = LoadPipelineConfig(Example("dlrm_criteo.json"));
  EXPECT_EQ(c.model_config.model_type, "dlrm");
  ASSERT_EQ(c.feature_configs.size(), 39u);
  int dense = 0, sparse = 0;
  for (const FeatureConfig& f : c.feature_configs) (f.is_sparse() ? sparse : dense)++;
  EXPECT_EQ(dense, 13);
  EXPECT_EQ(sparse, 26);
  EXPECT_EQ(c.Feature("cat_0").num_embeddings(), 100000);
  EXPECT_EQ(c.Feature("cat_25").embedding_dim, 16);
  EXPECT_EQ(c.Feature("int_0").num_embeddings(), 0);
  EXPECT_NEAR(ParseNormalizer(c.Feature("int_3").normalizer).Apply(0.0), std::log(3.0), 1e-12);
  EXPECT_EQ(c.data_config.dataset_type, "CsvDataset");
  EXPECT_EQ(c.data_config.delimiter, "\t");
  EXPECT_FALSE(c.data_config.with_header);
  ASSERT_EQ(c.data_config.input_fields.size(), 40u);
  EXPECT_EQ(c.data_config.input_fields[0], "label");
  EXPECT_EQ(c.data_config.input_fields[14], "cat_0");
  EXPECT_GT(c.data_config.batch_size, 0);  // tuning values (batch, lr) are the example's to change
  EXPECT_EQ(c.data_config.label_fields, std::vector<std::string>{"label"});
  EXPECT_EQ(c.train_config.sparse_optimizer.type, "adagrad");
  EXPECT_GT(c.train_config.sparse_optimizer.lr, 0.0);
  EXPECT_EQ(c.train_config.dense_optimizer.type, "adam");
  EXPECT_GT(c.train_config.dense_optimizer.lr, 0.0);
  EXPECT_EQ(c.model_config.dense_mlp.hidden_units, (std::vector<std::int64_t>{64, 16}));
  EXPECT_EQ(c.model_config.final_mlp.hidden_units, (std::vector<std::int64_t>{64, 32}));
  EXPECT_TRUE(c.model_config.metric_auc);
}

TEST(Examples, DeepFmCriteo) {
  const PipelineConfig c = LoadPipelineConfig(Example("deepfm_criteo.json"));
  EXPECT_EQ(c.model_config.model_type, "deep_fm");
  EXPECT_EQ(c.model_config.deep_mlp.hidden_units, (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(c.model_config.final_mlp.hidden_units, (std::vector<std::int64_t>{32}));
  EXPECT_GT(c.model_config.wide_embedding_dim, 0);
  ASSERT_EQ(c.model_config.feature_groups.size(), 2u);
  EXPECT_EQ(c.model_config.feature_groups[0].group_name, "wide");
  EXPECT_EQ(c.model_config.feature_groups[0].group_type, "WIDE");
  EXPECT_EQ(c.model_config.feature_groups[0].feature_names.size(), 26u);
  EXPECT_EQ(c.model_config.feature_groups[1].feature_names.size(), 39u);
}

TEST(Examples, MultiTowerMovielens) {
  const PipelineConfig c = LoadPipelineConfig(Example("multi_tower_movielens.json"));
  EXPECT_EQ(c.model_config.model_type, "multi_tower");
  ASSERT_EQ(c.model_config.towers.size(), 2u);
  EXPECT_EQ(c.model_config.towers[0].input, "user");
  EXPECT_EQ(c.model_config.towers[1].mlp.hidden_units, (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(c.model_config.grouped_auc_key, "user_id");
  EXPECT_TRUE(c.model_config.metric_auc);
  EXPECT_EQ(c.Feature("user_id").num_embeddings(), 944);
  EXPECT_EQ(c.Feature("user_id").input_column(), "user_id");
  EXPECT_EQ(c.Feature("item_id").num_embeddings(), 1683);
  EXPECT_TRUE(c.Feature("age").is_sparse());
  EXPECT_EQ(c.Feature("age").num_embeddings(), 7);     // 6 boundaries → 7 buckets
  EXPECT_EQ(c.Feature("class").num_embeddings(), 21);  // 19 genres + empty + OOV
  EXPECT_EQ(c.Feature("class").separator, " ");
  EXPECT_EQ(c.Feature("class").pooling, "mean");
  EXPECT_EQ(c.Feature("movie_title").num_embeddings(), 20000);
  EXPECT_TRUE(c.data_config.with_header);
}

TEST(Examples, SyntheticCriteo) {
  const PipelineConfig c = LoadPipelineConfig(Example("synthetic_criteo.json"));
  EXPECT_EQ(c.data_config.dataset_type, "ParquetDataset");
  EXPECT_EQ(c.model_config.model_type, "dlrm");
  int sparse = 0;
  for (const FeatureConfig& f : c.feature_configs) {
    if (!f.is_sparse()) continue;
    ++sparse;
    EXPECT_GE(f.num_buckets, 1000) << f.feature_name;
    EXPECT_LE(f.num_buckets, 50000) << f.feature_name;
    EXPECT_EQ(f.embedding_dim, 16);
  }
  EXPECT_EQ(sparse, 26);
}

TEST(Examples, ToJsonRoundTrip) {
  for (const char* name : {"dlrm_criteo.json", "deepfm_criteo.json", "multi_tower_movielens.json",
                           "synthetic_criteo.json"}) {
    const std::string once = ToJson(LoadPipelineConfig(Example(name)));
    EXPECT_EQ(ToJson(ParsePipelineConfig(once)), once) << name;
  }
}

TEST(Examples, CommandLinePathsOverride) {
  const PipelineConfig c =
      LoadPipelineConfig(Example("dlrm_criteo.json"),
                         R"({"train_input_path": "/d/train.txt", "eval_input_path": "/d/eval.txt",
          "model_dir": "/tmp/m", "train_config.num_steps": 40, "train_config.num_epochs": 0})");
  EXPECT_EQ(c.train_input_path, "/d/train.txt");
  EXPECT_EQ(c.eval_input_path, "/d/eval.txt");
  EXPECT_EQ(c.model_dir, "/tmp/m");
  EXPECT_EQ(c.train_config.num_steps, 40);
  EXPECT_EQ(c.train_config.num_epochs, 0);
}

// ----------------------------------------------------------------------------------- defaults

TEST(Defaults, MatchTheHeader) {
  const PipelineConfig c = ParsePipelineConfig(Minimal().dump());
  const TrainConfig t;
  EXPECT_EQ(c.train_config.sparse_optimizer.type, "adagrad");
  EXPECT_DOUBLE_EQ(c.train_config.sparse_optimizer.lr, t.sparse_optimizer.lr);
  EXPECT_EQ(c.train_config.dense_optimizer.type, "adam");
  EXPECT_DOUBLE_EQ(c.train_config.dense_optimizer.lr, t.dense_optimizer.lr);
  EXPECT_DOUBLE_EQ(c.train_config.dense_optimizer.beta1, t.dense_optimizer.beta1);
  EXPECT_DOUBLE_EQ(c.train_config.dense_optimizer.beta2, t.dense_optimizer.beta2);
  EXPECT_DOUBLE_EQ(c.train_config.dense_optimizer.eps, t.dense_optimizer.eps);
  EXPECT_EQ(c.train_config.num_steps, 0);
  EXPECT_EQ(c.train_config.num_epochs, 1);  // neither set → one epoch
  EXPECT_EQ(c.train_config.log_step_count_steps, t.log_step_count_steps);
  EXPECT_EQ(c.train_config.save_checkpoints_steps, t.save_checkpoints_steps);
  EXPECT_EQ(c.train_config.keep_checkpoint_max, t.keep_checkpoint_max);
  EXPECT_EQ(c.train_config.gradient_accumulation_steps, t.gradient_accumulation_steps);
  EXPECT_EQ(c.train_config.grad_clipping.clipping_type, t.grad_clipping.clipping_type);
  EXPECT_DOUBLE_EQ(c.train_config.grad_clipping.max_gradient, t.grad_clipping.max_gradient);
  EXPECT_DOUBLE_EQ(c.train_config.grad_clipping.norm_type, t.grad_clipping.norm_type);
  EXPECT_EQ(c.train_config.mixed_precision, "");
  EXPECT_FALSE(c.train_config.grad_scaler.has_value());
  EXPECT_EQ(c.train_config.seed, t.seed);
  EXPECT_TRUE(c.train_config.global_sharding_types.empty());
  const EvalConfig e;
  EXPECT_EQ(c.eval_config.num_steps, e.num_steps);
  EXPECT_EQ(c.eval_config.log_step_count_steps, e.log_step_count_steps);
  const DataConfig d;
  EXPECT_EQ(c.data_config.batch_size, d.batch_size);
  EXPECT_EQ(c.data_config.eval_batch_size, d.eval_batch_size);
  EXPECT_EQ(c.data_config.dataset_type, d.dataset_type);
  EXPECT_EQ(c.data_config.num_workers, d.num_workers);
  EXPECT_EQ(c.data_config.delimiter, d.delimiter);
  EXPECT_EQ(c.data_config.with_header, d.with_header);
  EXPECT_EQ(c.data_config.drop_remainder, d.drop_remainder);
  const FeatureConfig f;
  EXPECT_EQ(c.Feature("cat_a").pooling, f.pooling);
  EXPECT_EQ(c.Feature("cat_a").table_name(), "cat_a_emb");
  EXPECT_EQ(c.Feature("cat_a").input_column(), "cat_a");  // empty expression → feature_name
  EXPECT_EQ(c.Feature("cat_b").input_column(), "cb");
  EXPECT_EQ(c.Feature("price").value_dim, f.value_dim);
  EXPECT_EQ(c.model_config.feature_groups[0].group_type, "DEEP");
  EXPECT_TRUE(c.model_config.arch_with_sparse);
  EXPECT_EQ(c.model_config.dense_mlp.activation, "nn.ReLU");
  EXPECT_TRUE(c.model_config.metric_auc);
  EXPECT_EQ(c.model_config.grouped_auc_key, "");
  EXPECT_EQ(c.model_config.loss, "binary_cross_entropy");
}

TEST(Defaults, ProtobufJsonSpellingsAccepted) {
  Json j = Minimal();
  j["train_config"]["num_steps"] = "250";   // int64 as a decimal string
  j["data_config"]["batch_size"] = 2048.0;  // integral number
  j["data_config"]["with_header"] = "false";
  j["train_config"]["grad_clipping"] = {{"clipping_type", "norm"}, {"norm_type", "inf"}};
  j["train_config"]["sparse_optimizer"] = {{"rowwise_adagrad_optimizer", {{"lr", "0.5"}}}};
  const PipelineConfig c = ParsePipelineConfig(j.dump());
  EXPECT_EQ(c.train_config.num_steps, 250);
  EXPECT_EQ(c.train_config.num_epochs, 0);
  EXPECT_EQ(c.data_config.batch_size, 2048);
  EXPECT_FALSE(c.data_config.with_header);
  EXPECT_TRUE(std::isinf(c.train_config.grad_clipping.norm_type));
  EXPECT_EQ(c.train_config.sparse_optimizer.type, "rowwise_adagrad");
  EXPECT_DOUBLE_EQ(c.train_config.sparse_optimizer.lr, 0.5);
}

TEST(Defaults, CommentsAreIgnored) {
  const std::string text = "// a comment\n" + Minimal().dump(2);
  EXPECT_EQ(ParsePipelineConfig(text).train_config.num_epochs, 1);
}

// ------------------------------------------------------------------------------------- errors

TEST(Errors, UnknownKeySuggestsClosest) {
  Json j = Minimal();
  j["train_config"]["num_step"] = 10;
  ExpectError(j, {"train_config.num_step: ", "unknown key 'num_step' in train_config",
                  "did you mean 'num_steps'?"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"]["embeding_dim"] = 4;
  ExpectError(j, {"feature_configs[1].id_feature.embeding_dim", "did you mean 'embedding_dim'?"});
  j = Minimal();
  j["model_dirr"] = "x";
  ExpectError(j, {"unknown key 'model_dirr' in the top level", "did you mean 'model_dir'?"});
  j = Minimal();
  j["model_config"]["dlrm"]["dense_mpl"] = Json::object();
  ExpectError(j, {"model_config.dlrm.dense_mpl", "did you mean 'dense_mlp'?"});
  j = Minimal();
  j["model_config"]["feature_groups"][0]["group_nam"] = "x";
  ExpectError(j, {"model_config.feature_groups[0].group_nam", "did you mean 'group_name'?"});
}

TEST(Errors, TypeErrorsNamePathAndType) {
  Json j = Minimal();
  j["train_config"]["num_steps"] = "ten";
  ExpectError(j, {"train_config.num_steps: expected an integer (int64)", "\"ten\""});
  j = Minimal();
  j["data_config"]["batch_size"] = 1.5;
  ExpectError(j, {"data_config.batch_size: expected an integer", "not a whole number"});
  j = Minimal();
  j["data_config"]["label_fields"] = "clk";
  ExpectError(j, {"data_config.label_fields: expected a list", "wrap a single value in [ ]"});
  j = Minimal();
  j["data_config"]["with_header"] = "yes";
  ExpectError(j, {"data_config.with_header: expected true or false"});
  j = Minimal();
  j["eval_config"] = Json::array();
  ExpectError(j, {"eval_config: expected a JSON object (EvalConfig)"});
  j = Minimal();
  j["feature_configs"][0]["raw_feature"]["boundaries"] = {1, "x"};
  ExpectError(j, {"feature_configs[0].raw_feature.boundaries[1]: expected a number"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"]["feature_name"] = 7;
  ExpectError(j, {"feature_configs[1].id_feature.feature_name: expected a string"});
  j = Minimal();
  j["train_config"]["seed"] = -1;
  ExpectError(j, {"train_config.seed: expected a non-negative integer"});
  ExpectError("{\"model_config\": ", "", {"not valid JSON"});
}

TEST(Errors, UnsupportedOptimizerListsSupported) {
  Json j = Minimal();
  j["train_config"]["sparse_optimizer"] = {{"lamb_optimizer", {{"lr", 0.1}}}};
  ExpectError(j, {"train_config.sparse_optimizer.lamb_optimizer", "not supported by tzrec_train",
                  "sgd_optimizer, adagrad_optimizer, adam_optimizer, rowwise_adagrad_optimizer"});
  j = Minimal();
  j["train_config"]["dense_optimizer"] = {{"adam_optimizer", Json::object()},
                                          {"exponential_decay_learning_rate", Json::object()}};
  ExpectError(j, {"exponential_decay_learning_rate", "use one of constant_learning_rate"});
  j = Minimal();
  j["train_config"]["dense_optimizer"] = {{"adam_optimizer", Json::object()},
                                          {"sgd_optimizer", Json::object()}};
  ExpectError(j, {"train_config.dense_optimizer: 'sgd_optimizer', 'adam_optimizer' are all set",
                  "keep exactly one"});
  j = Minimal();
  j["train_config"]["dense_optimizer"] = {{"constant_learning_rate", Json::object()}};
  ExpectError(j, {"train_config.dense_optimizer: no optimizer set", "adam_optimizer"});
  j = Minimal();
  j["train_config"]["dense_optimizer"] = {{"adam_optimizer", {{"lr", 0}}}};
  ExpectError(j, {"train_config.dense_optimizer.adam_optimizer.lr: must be > 0"});
}

TEST(Errors, MissingOrDoubleModel) {
  Json j = Minimal();
  j["model_config"].erase("dlrm");
  ExpectError(j, {"model_config: no model set", "exactly one of dlrm, deep_fm, multi_tower"});
  j = Minimal();
  j.erase("model_config");
  ExpectError(j, {"model_config: missing"});
  j = Minimal();
  j["model_config"]["deep_fm"] = Json::object();
  ExpectError(j,
              {"'dlrm', 'deep_fm' are all set", "keep exactly one of dlrm, deep_fm, multi_tower"});
  j = Minimal();
  j["model_config"].erase("dlrm");
  j["model_config"]["dcn_v2"] = Json::object();
  ExpectError(j, {"model_config.dcn_v2", "not supported", "dlrm, deep_fm, multi_tower"});
}

TEST(Errors, BadReferences) {
  Json j = Minimal();
  j["model_config"]["feature_groups"][1]["feature_names"][1] = "cat_c";
  ExpectError(j, {"model_config.feature_groups[1].feature_names[1]: unknown feature 'cat_c'",
                  "did you mean 'cat_a'?"});
  j = Minimal();
  j["model_config"]["feature_groups"][1]["group_name"] = "sparce";
  ExpectError(j, {"feature group 'sparse' is not defined", "defined groups: dense, sparce"});
  j = Minimal();
  j["model_config"].erase("dlrm");
  j["model_config"]["multi_tower"] = Json::parse(
      R"({"towers": [{"input": "dense", "mlp": {"hidden_units": [4]}},
                     {"input": "sparce", "mlp": {"hidden_units": [4]}}]})");
  ExpectError(j, {"model_config.multi_tower.towers[1].input: feature group 'sparce' is not "
                  "defined",
                  "did you mean 'sparse'?"});
  j = Minimal();
  j["feature_configs"][2]["id_feature"]["feature_name"] = "cat_a";
  ExpectError(j, {"feature_configs[2].id_feature.feature_name: 'cat_a' is already used"});
  j = Minimal();
  j["model_config"]["feature_groups"][0]["feature_names"] = {"cat_a"};
  ExpectError(j, {"group \"dense\" holds 'cat_a', a sparse feature"});
  j = Minimal();
  j["data_config"]["dataset_type"] = "CsvDataset";
  j["data_config"]["with_header"] = false;
  j["data_config"]["input_fields"] = {"clk", "price", "cat_a", "cbb"};
  ExpectError(j, {"feature_configs[2].id_feature.expression: input column 'cb' is not one of "
                  "data_config.input_fields",
                  "did you mean 'cbb'?"});
  j["data_config"]["input_fields"] = Json::array();
  ExpectError(j, {"data_config.input_fields: empty with with_header = false"});
}

TEST(Errors, DimMismatches) {
  Json j = Minimal();  // shared table, different dims
  j["feature_configs"][2]["id_feature"]["embedding_name"] = "shared";
  j["feature_configs"][1]["id_feature"]["embedding_name"] = "shared";
  j["feature_configs"][2]["id_feature"]["embedding_dim"] = 4;
  ExpectError(j, {"feature_configs[2].id_feature: feature 'cat_b' shares table 'shared' with "
                  "feature 'cat_a'",
                  "embedding_dim 4 != 8"});
  j["feature_configs"][2]["id_feature"]["embedding_dim"] = 8;  // same dim, different size
  ExpectError(j, {"table size 50 != 100"});
  j["feature_configs"][2]["id_feature"].erase("num_buckets");
  j["feature_configs"][2]["id_feature"]["hash_bucket_size"] = 100;
  const PipelineConfig shared = ParsePipelineConfig(j.dump());
  EXPECT_EQ(shared.Feature("cat_b").table_name(), "shared");

  j = Minimal();  // DLRM sparse dims differ
  j["feature_configs"][2]["id_feature"]["embedding_dim"] = 4;
  ExpectError(j, {"model_config.dlrm: sparse features of group 'sparse' must share one "
                  "embedding_dim",
                  "'cat_a' has 8 and 'cat_b' has 4"});
  j = Minimal();  // dense_mlp's last unit != the sparse dim
  j["model_config"]["dlrm"]["dense_mlp"]["hidden_units"] = {32, 16};
  ExpectError(j, {"model_config.dlrm.dense_mlp.hidden_units: the last unit 16 must equal the "
                  "sparse embedding_dim 8",
                  "set the last unit to 8"});
  j["model_config"]["dlrm"]["arch_with_sparse"] = false;
  EXPECT_NO_THROW(ParsePipelineConfig(j.dump()));
}

TEST(Errors, IdFeatureSizeAndDim) {
  Json j = Minimal();
  j["feature_configs"][1]["id_feature"].erase("hash_bucket_size");
  ExpectError(j, {"feature_configs[1].id_feature: no table size (feature 'cat_a')",
                  "exactly one of hash_bucket_size, num_buckets, vocab_list"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"]["num_buckets"] = 10;
  ExpectError(j, {"both hash_bucket_size and num_buckets are set"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"]["embedding_dim"] = 0;
  ExpectError(j, {"feature_configs[1].id_feature.embedding_dim: must be > 0, got 0"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"].erase("hash_bucket_size");
  j["feature_configs"][1]["id_feature"]["vocab_list"] = {"a", "b", "a"};
  ExpectError(j, {"vocab_list: \"a\" appears twice"});
  j = Minimal();
  j["feature_configs"][0]["raw_feature"]["boundaries"] = {1.0, 3.0, 2.0};
  j["feature_configs"][0]["raw_feature"]["embedding_dim"] = 8;
  ExpectError(j, {"feature_configs[0].raw_feature.boundaries: must be strictly increasing"});
  j = Minimal();
  j["feature_configs"][0]["raw_feature"]["embedding_dim"] = 8;
  ExpectError(j, {"feature_configs[0].raw_feature.embedding_dim: 8 without boundaries"});
  j = Minimal();
  j["feature_configs"][0]["raw_feature"]["normalizer"] = "method=expression,expr=sqrt(x)";
  ExpectError(j, {"feature_configs[0].raw_feature.normalizer:", "sqrt(x)", "accepted forms"});
  j = Minimal();
  j["feature_configs"][0] = {{"combo_feature", Json::object()}};
  ExpectError(j, {"feature_configs[0].combo_feature", "use one of id_feature, raw_feature"});
  j = Minimal();
  j["feature_configs"][0] = Json::object();
  ExpectError(j, {"feature_configs[0]: no feature set"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"].erase("feature_name");
  ExpectError(j, {"feature_configs[1].id_feature.feature_name: missing"});
}

TEST(Errors, TrainAndDataValues) {
  Json j = Minimal();
  j["train_config"]["num_steps"] = 10;
  j["train_config"]["num_epochs"] = 2;
  ExpectError(j,
              {"train_config: both num_steps (10) and num_epochs (2) are set; keep exactly one"});
  j = Minimal();
  j["train_config"]["num_epochs"] = -1;
  ExpectError(j, {"train_config.num_epochs: must be >= 0, got -1"});
  j = Minimal();
  j["train_config"]["mixed_precision"] = "bf16";
  ExpectError(j, {"train_config.mixed_precision: \"bf16\" is not a valid mixed_precision",
                  "\"\", \"BF16\", \"FP16\"", "did you mean \"BF16\"?"});
  j = Minimal();
  j["train_config"]["grad_clipping"]["clipping_type"] = "l2";
  ExpectError(j, {"train_config.grad_clipping.clipping_type", "\"none\", \"norm\", \"value\""});
  j = Minimal();
  j["train_config"]["grad_clipping"] = {{"clipping_type", "norm"}, {"max_gradient", 0}};
  ExpectError(j, {"train_config.grad_clipping.max_gradient: must be > 0 with norm clipping"});
  j = Minimal();
  j["train_config"]["grad_scaler"] = {{"backoff_factor", 1.5}};
  ExpectError(j, {"train_config.grad_scaler.backoff_factor: must be in (0, 1)"});
  j = Minimal();
  j["data_config"]["label_fields"] = Json::array();
  ExpectError(j, {"data_config.label_fields: empty"});
  j = Minimal();
  j["data_config"]["batch_size"] = 0;
  ExpectError(j, {"data_config.batch_size: must be > 0, got 0"});
  j = Minimal();
  j["feature_configs"][1]["id_feature"]["embedding_constraints"] = {
      {"sharding_types", {"row_wise", "rowwise"}}};
  ExpectError(j, {"feature_configs[1].id_feature.embedding_constraints.sharding_types[1]",
                  "\"rowwise\" is not a valid sharding_types", "\"row_wise\""});
  j = Minimal();
  j["model_config"]["metrics"] = {{{"grouped_auc", Json::object()}}};
  ExpectError(j, {"model_config.metrics[0].grouped_auc.grouping_key: missing"});
  j = Minimal();
  j["model_config"]["losses"] = {{{"l2_loss", Json::object()}}};
  ExpectError(j, {"model_config.losses[0].l2_loss", "use one of binary_cross_entropy"});
}

TEST(Errors, LoadNamesTheFile) {
  try {
    LoadPipelineConfig("/nonexistent/dir/pipeline.json");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/dir/pipeline.json"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------- overrides

TEST(Overrides, ScalarListAndSelectors) {
  const std::string edit = R"({
    "train_config.num_steps": 100,
    "train_config.grad_clipping.clipping_type": "norm",
    "data_config.batch_size": "256",
    "model_config.dlrm.final.hidden_units": [32, 16],
    "feature_configs[1].id_feature.hash_bucket_size": 333,
    "feature_configs[feature_name=cat_b].id_feature.num_buckets": 77,
    "model_config.feature_groups[group_name=sparse].feature_names[1]": "cat_a2",
    "data_config.label_fields": ["y"]
  })";
  Json j = Minimal();
  j["feature_configs"].push_back(Json::parse(
      R"({"id_feature": {"feature_name": "cat_a2", "hash_bucket_size": 9, "embedding_dim": 8}})"));
  const PipelineConfig c = ParsePipelineConfig(j.dump(), edit);
  EXPECT_EQ(c.train_config.num_steps, 100);
  EXPECT_EQ(c.train_config.num_epochs, 0);
  EXPECT_EQ(c.train_config.grad_clipping.clipping_type, "norm");
  EXPECT_EQ(c.data_config.batch_size, 256);
  EXPECT_EQ(c.model_config.final_mlp.hidden_units, (std::vector<std::int64_t>{32, 16}));
  EXPECT_EQ(c.Feature("cat_a").num_embeddings(), 333);
  EXPECT_EQ(c.Feature("cat_b").num_embeddings(), 77);
  EXPECT_EQ(c.model_config.feature_groups[1].feature_names,
            (std::vector<std::string>{"cat_a", "cat_a2"}));
  EXPECT_EQ(c.data_config.label_fields, std::vector<std::string>{"y"});
}

TEST(Overrides, AppliedBeforeValidation) {
  Json j = Minimal();
  j["model_config"]["dlrm"]["dense_mlp"]["hidden_units"] = {32, 16};  // invalid in the file
  const PipelineConfig c =
      ParsePipelineConfig(j.dump(), R"({"model_config.dlrm.dense_mlp.hidden_units": [32, 8]})");
  EXPECT_EQ(c.model_config.dense_mlp.hidden_units.back(), 8);
  ExpectError(Minimal().dump(), R"({"feature_configs[2].id_feature.embedding_dim": 4})",
              {"must share one embedding_dim"});
  ExpectError(Minimal().dump(), R"({"data_config.batch_size": "many"})",
              {"data_config.batch_size: expected an integer"});
}

TEST(Overrides, ErrorsNameThePath) {
  const std::string base = Minimal().dump();
  ExpectError(base, R"({"train_config.num_step": 3})",
              {"edit_config_json 'train_config.num_step'", "unknown key 'num_step' in train_config",
               "did you mean 'num_steps'?"});
  ExpectError(base, R"({"feature_configs[7].id_feature.embedding_dim": 3})",
              {"feature_configs[7] does not exist: feature_configs has 3 element(s)"});
  ExpectError(base, R"({"feature_configs[feature_name=nope].id_feature.embedding_dim": 3})",
              {"feature_configs[feature_name=nope] does not exist",
               "values present: \"price\", \"cat_a\", \"cat_b\""});
  ExpectError(base, R"({"train_config[0].num_steps": 3})",
              {"train_config is a TrainConfig, not a list"});
  ExpectError(base, R"({"train_config.num_steps.value": 3})",
              {"train_config.num_steps is a int64, not a message; it has no key 'value'"});
  ExpectError(base, R"({"feature_configs.id_feature": 3})",
              {"feature_configs is a list of FeatureConfig; select an element"});
  ExpectError(base, R"({"feature_configs[1].id_featur.embedding_dim": 3})",
              {"did you mean 'id_feature'?"});
  ExpectError(base, R"({"train_config.sparse_optimizer.lamb_optimizer.lr": 3})",
              {"not supported by tzrec_train"});
  ExpectError(base, R"({"eval_config.num_steps": 3, "x..y": 1})", {"empty key in the path"});
  ExpectError(base, R"([1, 2])", {"edit_config_json: expected a JSON object"});
  ExpectError(base, R"({"data_config.input_fields[0]": "a"})",
              {"data_config.input_fields[0] does not exist: data_config.input_fields is not set"});
}

// ------------------------------------------------------------------------------------ ToJson

TEST(ToJson, RoundTripsEveryField) {
  const std::string edit = R"({
    "train_config.sparse_optimizer": {"rowwise_adagrad_optimizer": {"lr": 0.2, "eps": 1e-6,
                                       "initial_accumulator_value": 0.1, "weight_decay": 0.01}},
    "train_config.dense_optimizer": {"sgd_optimizer": {"lr": 0.3}},
    "train_config.num_steps": 77, "train_config.log_step_count_steps": 7,
    "train_config.save_checkpoints_steps": 11, "train_config.keep_checkpoint_max": 3,
    "train_config.gradient_accumulation_steps": 2,
    "train_config.grad_clipping": {"clipping_type": "norm", "max_gradient": 5, "norm_type": "inf",
                                   "enable_global_grad_clip": true},
    "train_config.mixed_precision": "FP16",
    "train_config.grad_scaler": {"init_scale": 1024, "growth_interval": 10},
    "train_config.seed": 7,
    "train_config.global_embedding_constraints.sharding_types": ["row_wise", "table_wise"],
    "eval_config.num_steps": 5, "data_config.eval_batch_size": 64,
    "data_config.dataset_type": "CsvDataset", "data_config.delimiter": "\t",
    "data_config.drop_remainder": true, "data_config.num_workers": 2,
    "feature_configs[0].raw_feature.normalizer": "method=zscore,mean=1,std=2",
    "feature_configs[0].raw_feature.default_value": -1.5,
    "feature_configs[1].id_feature.embedding_constraints.sharding_types": ["column_wise"],
    "feature_configs[1].id_feature.separator": "|",
    "feature_configs[1].id_feature.pooling": "mean",
    "model_config.dlrm.final": {"hidden_units": [4], "activation": "nn.GELU", "use_bn": true,
                                "dropout_ratio": 0.25},
    "model_config.metrics": [{"grouped_auc": {"grouping_key": "uid"}}]
  })";
  const PipelineConfig a = ParsePipelineConfig(Minimal().dump(), edit);
  const std::string text = ToJson(a);
  const PipelineConfig b = ParsePipelineConfig(text);
  EXPECT_EQ(ToJson(b), text);
  EXPECT_EQ(b.train_config.sparse_optimizer.type, "rowwise_adagrad");
  EXPECT_DOUBLE_EQ(b.train_config.sparse_optimizer.eps, 1e-6);
  EXPECT_DOUBLE_EQ(b.train_config.sparse_optimizer.initial_accumulator_value, 0.1);
  EXPECT_DOUBLE_EQ(b.train_config.sparse_optimizer.weight_decay, 0.01);
  EXPECT_EQ(b.train_config.dense_optimizer.type, "sgd");
  EXPECT_DOUBLE_EQ(b.train_config.dense_optimizer.lr, 0.3);
  EXPECT_EQ(b.train_config.num_steps, 77);
  EXPECT_EQ(b.train_config.num_epochs, 0);
  EXPECT_EQ(b.train_config.log_step_count_steps, 7);
  EXPECT_EQ(b.train_config.save_checkpoints_steps, 11);
  EXPECT_EQ(b.train_config.keep_checkpoint_max, 3);
  EXPECT_EQ(b.train_config.gradient_accumulation_steps, 2);
  EXPECT_EQ(b.train_config.grad_clipping.clipping_type, "norm");
  EXPECT_DOUBLE_EQ(b.train_config.grad_clipping.max_gradient, 5.0);
  EXPECT_TRUE(std::isinf(b.train_config.grad_clipping.norm_type));
  EXPECT_TRUE(b.train_config.grad_clipping.enable_global_grad_clip);
  EXPECT_EQ(b.train_config.mixed_precision, "FP16");
  ASSERT_TRUE(b.train_config.grad_scaler.has_value());
  EXPECT_DOUBLE_EQ(b.train_config.grad_scaler->init_scale, 1024.0);
  EXPECT_DOUBLE_EQ(b.train_config.grad_scaler->growth_factor, 2.0);
  EXPECT_EQ(b.train_config.grad_scaler->growth_interval, 10);
  EXPECT_EQ(b.train_config.seed, 7u);
  EXPECT_EQ(b.train_config.global_sharding_types,
            (std::vector<ShardingType>{ShardingType::kRowWise, ShardingType::kTableWise}));
  EXPECT_EQ(b.eval_config.num_steps, 5);
  EXPECT_EQ(b.data_config.eval_batch_size, 64);
  EXPECT_EQ(b.data_config.dataset_type, "CsvDataset");
  EXPECT_EQ(b.data_config.delimiter, "\t");
  EXPECT_TRUE(b.data_config.drop_remainder);
  EXPECT_EQ(b.data_config.num_workers, 2);
  EXPECT_EQ(b.Feature("price").normalizer, "method=zscore,mean=1,std=2");
  EXPECT_DOUBLE_EQ(b.Feature("price").default_value, -1.5);
  EXPECT_EQ(b.Feature("cat_a").sharding_types,
            std::vector<ShardingType>{ShardingType::kColumnWise});
  EXPECT_EQ(b.Feature("cat_a").separator, "|");
  EXPECT_EQ(b.Feature("cat_a").pooling, "mean");
  EXPECT_EQ(b.Feature("cat_b").expression, "user:cb");
  EXPECT_EQ(b.model_config.final_mlp.activation, "nn.GELU");
  EXPECT_TRUE(b.model_config.final_mlp.use_bn);
  EXPECT_DOUBLE_EQ(b.model_config.final_mlp.dropout_ratio, 0.25);
  EXPECT_FALSE(b.model_config.metric_auc);
  EXPECT_EQ(b.model_config.grouped_auc_key, "uid");
}

TEST(ToJson, IsProtobufJsonShaped) {
  const Json j = Json::parse(ToJson(ParsePipelineConfig(Minimal().dump())));
  EXPECT_TRUE(j["train_config"]["sparse_optimizer"].contains("adagrad_optimizer"));
  EXPECT_TRUE(j["train_config"]["sparse_optimizer"].contains("constant_learning_rate"));
  EXPECT_EQ(j["feature_configs"][1]["id_feature"]["hash_bucket_size"], 100);
  EXPECT_FALSE(j["feature_configs"][1]["id_feature"].contains("num_buckets"));
  EXPECT_TRUE(j["feature_configs"][0].contains("raw_feature"));
  EXPECT_EQ(j["model_config"]["dlrm"]["dense_mlp"]["hidden_units"], Json({16, 8}));
  EXPECT_EQ(j["model_config"]["losses"], Json::parse(R"([{"binary_cross_entropy": {}}])"));
  EXPECT_EQ(j["train_config"]["num_epochs"], 1);
}

// --------------------------------------------------------------------------------- reference

TEST(Reference, MentionsEveryKey) {
  const std::string md = ConfigReferenceMarkdown();
  for (const char* key : {"train_input_path",
                          "eval_input_path",
                          "model_dir",
                          "train_config",
                          "eval_config",
                          "data_config",
                          "feature_configs",
                          "model_config",
                          "sparse_optimizer",
                          "dense_optimizer",
                          "sgd_optimizer",
                          "adagrad_optimizer",
                          "adam_optimizer",
                          "rowwise_adagrad_optimizer",
                          "constant_learning_rate",
                          "lr",
                          "beta1",
                          "beta2",
                          "eps",
                          "weight_decay",
                          "initial_accumulator_value",
                          "num_steps",
                          "num_epochs",
                          "log_step_count_steps",
                          "save_checkpoints_steps",
                          "keep_checkpoint_max",
                          "gradient_accumulation_steps",
                          "grad_clipping",
                          "clipping_type",
                          "max_gradient",
                          "norm_type",
                          "enable_global_grad_clip",
                          "mixed_precision",
                          "grad_scaler",
                          "init_scale",
                          "growth_factor",
                          "backoff_factor",
                          "growth_interval",
                          "seed",
                          "global_embedding_constraints",
                          "sharding_types",
                          "batch_size",
                          "eval_batch_size",
                          "dataset_type",
                          "label_fields",
                          "num_workers",
                          "delimiter",
                          "with_header",
                          "input_fields",
                          "drop_remainder",
                          "id_feature",
                          "raw_feature",
                          "feature_name",
                          "expression",
                          "embedding_dim",
                          "hash_bucket_size",
                          "num_buckets",
                          "vocab_list",
                          "embedding_name",
                          "pooling",
                          "separator",
                          "embedding_constraints",
                          "boundaries",
                          "normalizer",
                          "value_dim",
                          "default_value",
                          "feature_groups",
                          "group_name",
                          "feature_names",
                          "group_type",
                          "dlrm",
                          "dense_mlp",
                          "final",
                          "arch_with_sparse",
                          "deep_fm",
                          "deep",
                          "wide_embedding_dim",
                          "multi_tower",
                          "towers",
                          "input",
                          "mlp",
                          "hidden_units",
                          "activation",
                          "use_bn",
                          "dropout_ratio",
                          "metrics",
                          "auc",
                          "grouped_auc",
                          "grouping_key",
                          "losses",
                          "binary_cross_entropy"}) {
    EXPECT_NE(md.find("| `" + std::string(key) + "` |"), std::string::npos) << key;
  }
  EXPECT_NE(md.find("| `num_steps` | int64 | `0` |"), std::string::npos);
  EXPECT_NE(md.find("| `batch_size` | int64 | `1024` |"), std::string::npos);
  EXPECT_NE(md.find("| `feature_name` | string | required |"), std::string::npos);
  EXPECT_NE(md.find("## TrainConfig"), std::string::npos);
  EXPECT_NE(md.find("Path: `train_config.grad_clipping`"), std::string::npos);
  EXPECT_NE(md.find("Path: `feature_configs[].id_feature`"), std::string::npos);
  EXPECT_NE(md.find("Paths: `train_config.sparse_optimizer`, `train_config.dense_optimizer`"),
            std::string::npos);
  EXPECT_NE(md.find("`\"BF16\"`"), std::string::npos);
  EXPECT_NE(md.find("| `lamb_optimizer` | — | — | not supported"), std::string::npos);
}

// -------------------------------------------------------------------------------- normalizer

TEST(Normalizer, ParsesAndApplies) {
  EXPECT_DOUBLE_EQ(ParseNormalizer("").Apply(-7.5), -7.5);
  const Normalizer log3 = ParseNormalizer("method=expression,expr=log(x+3)");
  EXPECT_TRUE(log3.expression_is_log);
  EXPECT_DOUBLE_EQ(log3.offset, 3.0);
  EXPECT_DOUBLE_EQ(log3.Apply(0.0), std::log(3.0));
  EXPECT_DOUBLE_EQ(log3.Apply(5.0), std::log(8.0));
  EXPECT_DOUBLE_EQ(log3.Apply(-3.0), 0.0);  // log(0) → 0, never -inf
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=expression,expr=log(x + 0.5)").Apply(0.5), 0.0);
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=expression,expr=x").Apply(4.25), 4.25);
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=log1p").Apply(1.0), std::log(2.0));
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=log1p").Apply(-2.0), 0.0);
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=minmax,min=2,max=10").Apply(6.0), 0.5);
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=zscore,mean=1,std=4").Apply(9.0), 2.0);
  for (const char* bad : {"method=foo", "log1p", "method=minmax,min=1", "method=minmax,min=3,max=1",
                          "method=zscore,mean=0,std=0", "method=zscore,mean=a,std=1",
                          "method=expression,expr=sqrt(x)", "method=expression",
                          "method=log1p,scale=2", "method=expression,expr=log(x+y)"}) {
    EXPECT_THROW(ParseNormalizer(bad), ConfigError) << bad;
  }
  try {
    ParseNormalizer("method=minmax,min=1");
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("needs max=<number>"), std::string::npos)
        << error.what();
  }
}

// ---------------------------------------------------------------------------- feature helpers

TEST(FeatureHelpers, SizesColumnsTables) {
  FeatureConfig f;
  f.feature_name = "c";
  f.hash_bucket_size = 10;
  EXPECT_EQ(f.num_embeddings(), 10);
  f.hash_bucket_size = 0;
  f.num_buckets = 20;
  EXPECT_EQ(f.num_embeddings(), 20);
  f.num_buckets = 0;
  f.vocab_list = {"a", "b", "c"};
  EXPECT_EQ(f.num_embeddings(), 5);
  f.vocab_list.clear();
  EXPECT_EQ(f.num_embeddings(), 0);
  EXPECT_TRUE(f.is_sparse());
  f.kind = FeatureKind::kRaw;
  EXPECT_FALSE(f.is_sparse());
  EXPECT_EQ(f.num_embeddings(), 0);
  f.boundaries = {1, 2, 3};
  EXPECT_TRUE(f.is_sparse());
  EXPECT_EQ(f.num_embeddings(), 4);
  EXPECT_EQ(f.input_column(), "c");
  f.expression = "item:price";
  EXPECT_EQ(f.input_column(), "price");
  f.expression = "a:b:col";
  EXPECT_EQ(f.input_column(), "col");
  EXPECT_EQ(f.table_name(), "c_emb");
  f.embedding_name = "shared";
  EXPECT_EQ(f.table_name(), "shared");

  const PipelineConfig c = ParsePipelineConfig(Minimal().dump());
  EXPECT_EQ(&c.Feature("cat_b"), &c.feature_configs[2]);
  try {
    c.Feature("cat_bb");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no feature 'cat_bb'"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean 'cat_b'?"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tzrec
