// Sequence features in the config (issue 14, item 2): sequence_id_feature and
// sequence_raw_feature read by a DEEP group's sequence_groups and pooled by its
// pooling_encoder or (multi_tower) din_encoder / simple_attention / multi_window_din_encoder;
// what stays refused by name
// (the newer attention encoders, multi_tower_din, SEQUENCE groups, feature generation of
// sequences).
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

using test::ErrorOf;

// multi_tower over group "all": id feature "item" (num_buckets 100, dim 4, table "item_emb")
// and a pooled sequence "clicks" sharing its table; `feature_extra` goes inside the sequence
// feature, `group_extra` inside the group, `encoder` is its sequence_encoders entry.
std::string SeqConfig(const std::string& feature_extra = "", const std::string& group_extra = "",
                      const std::string& encoder = R"(pooling_encoder { input: "hist" })",
                      const std::string& item_pooling = "mean",
                      const std::string& clicks_table = "item_emb") {
  return R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" }
feature_configs { id_feature { feature_name: "item" num_buckets: 100 embedding_dim: 4
  embedding_name: "item_emb" pooling: ")" +
         item_pooling + R"(" } }
feature_configs { sequence_id_feature { feature_name: "clicks" sequence_length: 5
  num_buckets: 100 embedding_dim: 4 embedding_name: ")" +
         clicks_table + "\" " + feature_extra + R"( } }
model_config {
  feature_groups { group_name: "all" feature_names: "item" group_type: DEEP
    sequence_groups { group_name: "hist" feature_names: "item" feature_names: "clicks" }
    sequence_encoders { )" +
         encoder + R"( } )" + group_extra + R"( }
  multi_tower { towers { input: "all" mlp { hidden_units: [8] } } final { hidden_units: [4] } }
  metrics { auc {} }
  losses { binary_cross_entropy {} }
}
)";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(Sequence, SequenceFeaturesAccepted) {
  const LoadedConfig c = ParsePipelineConfig(SeqConfig());
  const auto& clicks = c.config.feature_configs(1);
  EXPECT_TRUE(IsSequence(clicks));
  EXPECT_TRUE(IsSparse(clicks));
  EXPECT_FALSE(IsIdFeature(clicks));
  EXPECT_EQ(FeatureName(clicks), "clicks");
  EXPECT_EQ(SequenceLength(clicks), 5);
  EXPECT_EQ(SequenceDelim(clicks), ";");  // TorchEasyRec's default
  EXPECT_EQ(NumEmbeddings(clicks), 100);
  EXPECT_EQ(EmbeddingDim(clicks), 4);
  EXPECT_EQ(TableName(clicks), "item_emb");
  EXPECT_EQ(EffectivePooling(c.config, clicks), "mean");  // PoolingEncoder's default
  EXPECT_EQ(InputColumn(c.config, clicks), "clicks");
  // vocab_list and hash_bucket_size size the table as for an id feature.
  const LoadedConfig v = ParsePipelineConfig(
      SeqConfig("", "", R"(pooling_encoder { input: "hist" })", "mean", "v_emb"),
      R"({"feature_configs[1].sequence_id_feature.num_buckets": 0,
          "feature_configs[1].sequence_id_feature.vocab_list": ["a", "b", "c"]})");
  EXPECT_EQ(NumEmbeddings(v.config.feature_configs(1)), 5);
  // A bucketized sequence_raw_feature: boundaries size the table.
  const std::string raw = SeqConfig() + R"(feature_configs { sequence_raw_feature {
      feature_name: "prices" sequence_length: 3 sequence_delim: "|" boundaries: [1, 2]
      embedding_dim: 2 } })";
  const LoadedConfig r = ParsePipelineConfig(
      raw, R"({"model_config.feature_groups[0].sequence_groups[0].feature_names":
               ["item", "clicks", "prices"]})");
  const auto& prices = r.config.feature_configs(2);
  EXPECT_TRUE(IsSparse(prices));
  EXPECT_EQ(NumEmbeddings(prices), 3);
  EXPECT_EQ(SequenceDelim(prices), "|");
  // Not read by a pooling encoder: the sequence feature's table pools with "sum".
  const std::string unread =
      SeqConfig() + R"(feature_configs { sequence_id_feature { feature_name: "other"
      sequence_length: 2 hash_bucket_size: 7 embedding_dim: 3 } })";
  const LoadedConfig u = ParsePipelineConfig(unread);
  EXPECT_EQ(EffectivePooling(u.config, u.config.feature_configs(2)), "sum");
}

TEST(Sequence, SequencePoolingAgreesPerTable) {
  // "item" sums, the encoder pools the shared table with mean: refused, naming both.
  std::string e = ErrorOf(SeqConfig("", "", R"(pooling_encoder { input: "hist" })", "sum"));
  EXPECT_HAS(e, "shares table 'item_emb'");
  EXPECT_HAS(e, "pooling \"mean\" != \"sum\"");
  EXPECT_HAS(e, "pooling_encoder's pooling_type");
  // With pooling_type sum they agree.
  EXPECT_EQ(
      ErrorOf(SeqConfig("", "", R"(pooling_encoder { input: "hist" pooling_type: "sum" })", "sum")),
      "");
  // Two encoders pooling one sequence feature differently.
  e = ErrorOf(SeqConfig("", R"(sequence_encoders { pooling_encoder { input: "hist"
                                   pooling_type: "sum" } })"));
  EXPECT_HAS(e, "a sequence feature has one pooling");
}

// The config with clicks in its own table (so the encoder's pooling cannot clash with item's).
std::string Own(const std::string& group_extra = "",
                const std::string& encoder = R"(pooling_encoder { input: "hist" })") {
  return SeqConfig("", group_extra, encoder, "mean", "clicks_emb");
}

TEST(Sequence, SequenceValidation) {
  std::string e =
      ErrorOf(SeqConfig(), R"({"feature_configs[1].sequence_id_feature.sequence_length": 0})");
  EXPECT_HAS(e, "sequence_length: must be > 0");
  e = ErrorOf(SeqConfig(), R"({"feature_configs[1].sequence_id_feature.sequence_delim": ""})");
  EXPECT_HAS(e, "sequence_delim: empty");
  // With feature generation a sequence_id_feature needs exactly one table option.
  e = ErrorOf(SeqConfig(), R"({"data_config.fg_mode": "FG_DAG",
      "feature_configs[1].sequence_id_feature.hash_bucket_size": 7})");
  EXPECT_HAS(e, "needs exactly one of hash_bucket_size, num_buckets, vocab_list / vocab_dict");
  // A sequence feature directly in a group's feature_names.
  e = ErrorOf(SeqConfig(),
              R"({"model_config.feature_groups[0].feature_names": ["item", "clicks"]})");
  EXPECT_HAS(e, "'clicks' is a sequence feature");
  // The encoder's input must be a sequence group of the same group.
  e = ErrorOf(Own("", R"(pooling_encoder { input: "hits" })"));
  EXPECT_HAS(e, "'hits' is not a sequence group of group 'all'");
  EXPECT_HAS(e, "did you mean 'hist'");
  e = ErrorOf(Own("", R"(pooling_encoder { input: "hist" pooling_type: "max" })"));
  EXPECT_HAS(e, "pooling_type: \"max\"");
  // A sequence group no encoder reads would be ignored: refused.
  e = ErrorOf(Own(R"(sequence_groups { group_name: "lone" feature_names: "clicks" })"));
  EXPECT_HAS(e, "'lone' is read by no sequence_encoders entry");
  // A sequence group without a sequence feature.
  e = ErrorOf(Own(),
              R"({"model_config.feature_groups[0].sequence_groups[0].feature_names": ["item"]})");
  EXPECT_HAS(e, "has no sequence feature");
  // A dense sequence_raw_feature.
  e = ErrorOf(SeqConfig() + R"(feature_configs { sequence_raw_feature { feature_name: "d"
      sequence_length: 3 } })");
  EXPECT_HAS(e, "a dense sequence is not implemented");
}

// din_encoder / simple_attention over a sequence group with a query (multi_tower only).
TEST(Sequence, AttentionEncodersAccepted) {
  const std::string din = R"(din_encoder { input: "hist" attn_mlp { hidden_units: [4] } })";
  const LoadedConfig c = ParsePipelineConfig(SeqConfig("", "", din));
  EXPECT_TRUE(c.config.model_config().feature_groups(0).sequence_encoders(0).has_din_encoder());
  ParsePipelineConfig(SeqConfig("", "", R"(simple_attention { input: "hist" })"));
  std::string e = ErrorOf(SeqConfig("", "", R"(din_encoder { input: "hits" })"));
  EXPECT_HAS(e, "din_encoder.input: 'hits' is not a sequence group of group 'all'");
  e = ErrorOf(SeqConfig("", "", din),
              R"({"model_config.feature_groups[0].sequence_groups[0].feature_names": ["clicks"]})");
  EXPECT_HAS(e, "sequence group 'hist' has no query feature");
  // Another model: refused by name.
  const std::string mmoe = SeqConfig("", "", din);
  e = ErrorOf(mmoe.substr(0, mmoe.find("  multi_tower")) + R"(
  dcn_v1 { cross { cross_num: 1 } deep { hidden_units: [8] } final { hidden_units: [4] } }
  metrics { auc {} } losses { binary_cross_entropy {} } })");
  EXPECT_HAS(e, "model_config.dcn_v1 does not read attention sequence encoders");
}

// multi_tower_din: towers over DEEP groups, din_towers over SEQUENCE groups.
std::string DinConfig(const std::string& seq_type = "SEQUENCE",
                      const std::string& din_input = "seq") {
  std::string c = SeqConfig();
  c = c.substr(0, c.find("model_config {"));
  return c +
         R"(feature_configs { id_feature { feature_name: "user" num_buckets: 10 embedding_dim: 4 } }
model_config {
  feature_groups { group_name: "user" feature_names: "user" group_type: DEEP }
  feature_groups { group_name: "seq" feature_names: "item" feature_names: "clicks" group_type: )" +
         seq_type + R"( }
  multi_tower_din { towers { input: "user" mlp { hidden_units: [8] } }
    din_towers { input: ")" +
         din_input + R"(" attn_mlp { hidden_units: [4] } } final { hidden_units: [4] } }
  metrics { auc {} }
  losses { binary_cross_entropy {} }
}
)";
}

TEST(Sequence, MultiTowerDinAccepted) {
  const LoadedConfig c = ParsePipelineConfig(DinConfig());
  EXPECT_EQ(ModelType(c.config), "multi_tower_din");
  std::string e = ErrorOf(DinConfig("DEEP"));
  EXPECT_HAS(e, "'clicks' is a sequence feature");
  e = ErrorOf(DinConfig("SEQUENCE", "user"));
  EXPECT_HAS(e, "din_towers[0].input: group 'user' is DEEP; din_towers read SEQUENCE groups");
  e = ErrorOf(DinConfig(), R"({"model_config.feature_groups[1].feature_names": ["clicks"]})");
  EXPECT_HAS(e, "has no query feature");
  e = ErrorOf(DinConfig(), R"({"model_config.multi_tower_din.din_towers[0].input": "user"})");
  EXPECT_HAS(e, "din_towers read SEQUENCE groups");
  // A SEQUENCE group outside multi_tower_din is still refused.
  e = ErrorOf(SeqConfig(), R"({"model_config.feature_groups[0].group_type": "SEQUENCE"})");
  EXPECT_HAS(e, "reads only in multi_tower_din");
}

// multi_window_din_encoder (TorchEasyRec's field numbers: windows_len = 4, the oneof's 4).
TEST(Sequence, MultiWindowDinEncoderAccepted) {
  const std::string mw =
      R"(multi_window_din_encoder { input: "hist" attn_mlp { hidden_units: [4] }
         windows_len: [1, 2, 5] })";
  const LoadedConfig c = ParsePipelineConfig(SeqConfig("", "", mw));
  const auto& enc = c.config.model_config().feature_groups(0).sequence_encoders(0);
  ASSERT_TRUE(enc.has_multi_window_din_encoder());
  EXPECT_EQ(enc.multi_window_din_encoder().windows_len_size(), 3);
  EXPECT_EQ(enc.multi_window_din_encoder().windows_len(2), 5U);
  EXPECT_EQ(SeqEncoderKind(enc), "multi_window_din_encoder");
  EXPECT_EQ(*AttentionInput(enc), "hist");
  EXPECT_EQ(enc.GetDescriptor()->FindFieldByName("multi_window_din_encoder")->number(), 4);
  EXPECT_EQ(
      enc.multi_window_din_encoder().GetDescriptor()->FindFieldByName("windows_len")->number(), 4);
}

TEST(Sequence, MultiWindowDinEncoderRefusals) {
  const std::string mlp = R"(attn_mlp { hidden_units: [4] })";
  auto encoder = [](const std::string& body) {
    return "multi_window_din_encoder { input: \"hist\" " + body + " }";
  };
  std::string e = ErrorOf(SeqConfig("", "", encoder(mlp)));
  EXPECT_HAS(e, "sequence_encoders[0].multi_window_din_encoder.windows_len: empty");
  EXPECT_HAS(e, "windows_len: [2, 4, 8]");
  e = ErrorOf(SeqConfig("", "", encoder(mlp + " windows_len: [3, 0]")));
  EXPECT_HAS(e, "multi_window_din_encoder.windows_len[1]: 0; every window needs at least 1 item");
  e = ErrorOf(SeqConfig("", "", encoder("windows_len: [3]")));
  EXPECT_HAS(e, "multi_window_din_encoder.attn_mlp.hidden_units: empty");
  e = ErrorOf(SeqConfig("", "", R"(multi_window_din_encoder { input: "hits" windows_len: 2 })"));
  EXPECT_HAS(e, "multi_window_din_encoder.input: 'hits' is not a sequence group of group 'all'");
  e = ErrorOf(SeqConfig("", "", encoder(mlp + " windows_len: 2")),
              R"({"model_config.feature_groups[0].sequence_groups[0].feature_names": ["clicks"]})");
  EXPECT_HAS(e, "sequence group 'hist' has no query feature");
  const std::string other = SeqConfig("", "", encoder(mlp + " windows_len: 2"));
  e = ErrorOf(other.substr(0, other.find("  multi_tower")) + R"(
  dcn_v1 { cross { cross_num: 1 } deep { hidden_units: [8] } final { hidden_units: [4] } }
  metrics { auc {} } losses { binary_cross_entropy {} } })");
  EXPECT_HAS(e, "model_config.dcn_v1 does not read attention sequence encoders");
}

TEST(Sequence, SequenceRefusals) {
  // Still refused by name, with the nearest supported form.
  std::string e = ErrorOf(SeqConfig("", "", R"(hstu_encoder { input: "hist" })"));
  EXPECT_HAS(e, "'hstu_encoder' (SeqEncoderConfig) is a TorchEasyRec option");
  EXPECT_HAS(e, "use din_encoder, simple_attention, multi_window_din_encoder or pooling_encoder");
  e = ErrorOf(SeqConfig("pooling: 'mean'"));
  EXPECT_HAS(e, "'pooling' (SequenceIdFeature)");
  e = ErrorOf(SeqConfig(), R"({"feature_configs[0].id_feature.sequence_length": 3})");
  EXPECT_HAS(e, "'sequence_length' (IdFeature)");
  e = ErrorOf(SeqConfig(), R"({"model_config.feature_groups[0].group_type": "SEQUENCE"})");
  EXPECT_HAS(e, "sequence groups");
  // Models reading a group per feature (DeepFM's FM, DLRM, WuKong, ...) do not take encoders.
  const std::string dlrm = R"(
train_config { sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} } }
data_config { batch_size: 8 label_fields: "clk" }
feature_configs { id_feature { feature_name: "item" num_buckets: 100 embedding_dim: 4 } }
feature_configs { sequence_id_feature { feature_name: "clicks" sequence_length: 5
  num_buckets: 100 embedding_dim: 4 } }
model_config {
  feature_groups { group_name: "sparse" feature_names: "item"
    sequence_groups { group_name: "hist" feature_names: "clicks" }
    sequence_encoders { pooling_encoder { input: "hist" } } }
  dlrm { final { hidden_units: [4] } }
  losses { binary_cross_entropy {} }
})";
  e = ErrorOf(dlrm);
  EXPECT_HAS(e, "model_config.dlrm does not read sequence encoders");
}

// TorchEasyRec's grouped form: sequence_feature { sequence_name features { id_feature ... } }.
std::string Grouped(const std::string& sub_extra = "", const std::string& seq_extra = "",
                    const std::string& raw_extra = "") {
  return R"(
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} } }
data_config { batch_size: 8 label_fields: "clk" }
feature_configs { id_feature { feature_name: "item" num_buckets: 100 embedding_dim: 4
  pooling: "mean" } }
feature_configs { sequence_feature { sequence_name: "click" sequence_length: 3
  sequence_delim: "|" sequence_pk: "user:click" )" +
         seq_extra + R"(
  features { id_feature { feature_name: "item" expression: "item:item" num_buckets: 100
    embedding_dim: 4 )" +
         sub_extra + R"( } }
  features { raw_feature { feature_name: "price" boundaries: [1, 2] embedding_dim: 2 )" +
         raw_extra + R"( } } } }
model_config {
  feature_groups { group_name: "all" feature_names: "item"
    sequence_groups { group_name: "hist"
      feature_names: "item" feature_names: "click__item" feature_names: "click__price" }
    sequence_encoders { pooling_encoder { input: "hist" } } }
  multi_tower { towers { input: "all" mlp { hidden_units: [8] } } final { hidden_units: [4] } }
  losses { binary_cross_entropy {} }
})";
}

TEST(Sequence, GroupedSequenceFeatureExpands) {
  const LoadedConfig c = ParsePipelineConfig(Grouped());
  ASSERT_EQ(c.config.feature_configs_size(), 3);
  const auto& item = c.config.feature_configs(1);
  ASSERT_TRUE(item.has_sequence_id_feature());
  EXPECT_EQ(FeatureName(item), "click__item");  // upstream's name and column
  EXPECT_EQ(InputColumn(c.config, item), "click__item");
  EXPECT_EQ(SequenceLength(item), 3);
  EXPECT_EQ(SequenceDelim(item), "|");
  EXPECT_EQ(TableName(item), "item_emb");  // the sub-feature's own name: shared with "item"
  EXPECT_EQ(NumEmbeddings(item), 100);
  EXPECT_EQ(EffectivePooling(c.config, item), "mean");
  const auto& price = c.config.feature_configs(2);
  ASSERT_TRUE(price.has_sequence_raw_feature());
  EXPECT_EQ(FeatureName(price), "click__price");
  EXPECT_EQ(TableName(price), "price_emb");
  EXPECT_EQ(NumEmbeddings(price), 3);
  ASSERT_EQ(c.warnings.size(), 1U);
  EXPECT_HAS(c.warnings[0], "sequence_feature.sequence_pk: no effect");
  // Fields a sequence item cannot carry are refused, naming the sub-feature.
  std::string e = ErrorOf(Grouped("pooling: 'sum'"));
  EXPECT_HAS(e, "sequence_feature.features[0].id_feature.pooling: a sequence is pooled");
  e = ErrorOf(Grouped("separator: ','"));
  EXPECT_HAS(e, "features[0].id_feature.separator is a feature-generation field");
  e = ErrorOf(Grouped(), R"({"feature_configs[1].sequence_feature.sequence_length": 0})");
  EXPECT_HAS(e, "feature_configs[1].sequence_feature.sequence_length: must be > 0");
}

// fg_mode FG_DAG: a sub-feature reads "<sequence_name>__<input>" of its expression (upstream's
// _build_side_inputs) and keeps separator / vocab_dict; fields upstream's SequenceIdFeature
// ignores are refused.
TEST(Sequence, GroupedSequenceFgExpands) {
  const std::string dag = R"({"data_config.fg_mode": "FG_DAG"})";
  const LoadedConfig c =
      ParsePipelineConfig(Grouped("separator: ','", "", R"(expression: "item:price")"), dag);
  const auto& item = c.config.feature_configs(1);
  EXPECT_EQ(item.sequence_id_feature().expression(), "item:click__item");
  EXPECT_EQ(InputColumn(c.config, item), "click__item");
  EXPECT_EQ(item.sequence_id_feature().separator(), ",");
  EXPECT_EQ(InputColumn(c.config, c.config.feature_configs(2)), "click__price");
  std::string e = ErrorOf(Grouped(), dag);  // the raw sub-feature has no expression
  EXPECT_HAS(e, "features[1].raw_feature.expression: empty");
  e = ErrorOf(Grouped("default_bucketize_value: 3", "", R"(expression: "item:price")"), dag);
  EXPECT_HAS(e, "id_feature.default_bucketize_value: TorchEasyRec's SequenceIdFeature ignores");
  e = ErrorOf(Grouped("value_dim: 2", "", R"(expression: "item:price")"), dag);
  EXPECT_HAS(e, "id_feature.value_dim: 2; a sequence item is one id");
  e = ErrorOf(Grouped("", "", R"(expression: "item:price" normalizer: "method=log1p")"), dag);
  EXPECT_HAS(e, "raw_feature.normalizer: not implemented for sequence items");
}

}  // namespace
}  // namespace tzrec
