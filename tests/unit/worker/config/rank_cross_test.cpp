// Validation of wide_and_deep, dcn_v1 and dcn_v2 (src/worker/config/validate_rank_cross.cpp): a
// config of each parses; a missing group, a group the model would not read, a missing required
// message and empty sizes are refused with a ConfigError naming the field; WideAndDeep's
// wide_init_fn (left out of our .proto) is refused by name.
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

using test::ErrorOf;

std::string Config(const std::string& groups, const std::string& model) {
  return R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" }
feature_configs { id_feature { feature_name: "u" expression: "user:u" num_buckets: 10 embedding_dim: 4 } }
feature_configs { id_feature { feature_name: "i" expression: "item:i" num_buckets: 10 embedding_dim: 4 } }
feature_configs { raw_feature { feature_name: "p" expression: "item:p" } }
model_config {
)" + groups +
         model +
         R"(
  metrics { auc {} }
  losses { binary_cross_entropy {} }
}
)";
}

constexpr const char* kWideDeep = R"(
  feature_groups { group_name: "wide" feature_names: "u" feature_names: "i" group_type: WIDE }
  feature_groups { group_name: "deep" feature_names: "u" feature_names: "p" group_type: DEEP }
)";
constexpr const char* kOneGroup = R"(
  feature_groups { group_name: "all" feature_names: "u" feature_names: "i" feature_names: "p" }
)";

void ExpectError(const std::string& text, const std::string& part) {
  const std::string e = ErrorOf(text);
  EXPECT_NE(e.find(part), std::string::npos) << "want '" << part << "', got: " << e;
}

TEST(RankCrossConfig, WideAndDeep) {
  const std::string model =
      "wide_and_deep { deep { hidden_units: [8] } final { hidden_units: [4] } "
      "wide_embedding_dim: 2 }";
  const LoadedConfig c = ParsePipelineConfig(Config(kWideDeep, model));
  EXPECT_EQ(ModelType(c.config), "wide_and_deep");
  EXPECT_EQ(c.config.model_config().wide_and_deep().wide_embedding_dim(), 2U);
  EXPECT_EQ(ParsePipelineConfig(Config(kWideDeep, "wide_and_deep { deep { hidden_units: [8] } }"))
                .config.model_config()
                .wide_and_deep()
                .wide_embedding_dim(),
            4U);  // TorchEasyRec's default
  ExpectError(Config(kOneGroup, model),
              "model_config.wide_and_deep: feature group \"wide\" is not");
  std::string deep_only = kWideDeep;
  deep_only.replace(deep_only.find("group_type: WIDE"), 16, "group_type: DEEP");
  ExpectError(Config(deep_only, model), "group \"wide\" has group_type DEEP; set group_type: WIDE");
  ExpectError(Config(std::string(kWideDeep) + kOneGroup, model),
              "group 'all' is not read by WideAndDeep");
  std::string raw_wide = kWideDeep;
  raw_wide.replace(raw_wide.find("feature_names: \"i\""), 18, "feature_names: \"p\"");
  ExpectError(Config(raw_wide, model), "group \"wide\" holds 'p', a dense raw feature");
  ExpectError(Config(kWideDeep, "wide_and_deep { final { hidden_units: [4] } }"),
              "model_config.wide_and_deep.deep: not set");
  ExpectError(Config(kWideDeep, "wide_and_deep { deep { hidden_units: [8] } final {} }"),
              "model_config.wide_and_deep.final.hidden_units: empty");
  ExpectError(
      Config(kWideDeep, "wide_and_deep { deep { hidden_units: [8] } wide_embedding_dim: 0 }"),
      "model_config.wide_and_deep.wide_embedding_dim: must be > 0");
  ExpectError(Config(kWideDeep, "wide_and_deep { deep { hidden_units: [8] } wide_init_fn: \"x\" }"),
              "'wide_init_fn' (WideAndDeep) is a TorchEasyRec option that tzrec_train does not "
              "support");
}

TEST(RankCrossConfig, DcnV1) {
  const std::string model =
      "dcn_v1 { cross { cross_num: 2 } deep { hidden_units: [8] } final { hidden_units: [4] } }";
  const LoadedConfig c = ParsePipelineConfig(Config(kOneGroup, model));
  EXPECT_EQ(ModelType(c.config), "dcn_v1");
  EXPECT_EQ(ParsePipelineConfig(Config(kOneGroup,
                                       "dcn_v1 { cross {} deep { hidden_units: [8] } "
                                       "final { hidden_units: [4] } }"))
                .config.model_config()
                .dcn_v1()
                .cross()
                .cross_num(),
            3U);  // TorchEasyRec's default
  ExpectError(Config(kWideDeep, model),
              "model_config.dcn_v1: 2 feature groups, but the model "
              "reads only the first ('wide')");
  std::string wide = kOneGroup;
  wide.replace(wide.find(" }"), 2, " group_type: WIDE }");
  ExpectError(Config(wide, model), "model_config.dcn_v1: group 'all' has group_type WIDE");
  ExpectError(
      Config(kOneGroup, "dcn_v1 { deep { hidden_units: [8] } final { hidden_units: [4] } }"),
      "model_config.dcn_v1.cross: not set");
  ExpectError(Config(kOneGroup,
                     "dcn_v1 { cross { cross_num: 0 } deep { hidden_units: [8] } "
                     "final { hidden_units: [4] } }"),
              "model_config.dcn_v1.cross.cross_num: must be > 0");
  ExpectError(Config(kOneGroup, "dcn_v1 { cross {} final { hidden_units: [4] } }"),
              "model_config.dcn_v1.deep: not set");
  ExpectError(Config(kOneGroup, "dcn_v1 { cross {} deep { hidden_units: [8] } }"),
              "model_config.dcn_v1.final: not set");
  ExpectError(Config(kOneGroup,
                     "dcn_v1 { cross {} deep { hidden_units: [8] use_bn: true "
                     "use_ln: true } final { hidden_units: [4] } }"),
              "model_config.dcn_v1.deep.use_bn and");
  ExpectError(Config(kOneGroup,
                     "dcn_v1 { cross_tower { cross_num: 2 } deep { hidden_units: [8] } "
                     "final { hidden_units: [4] } }"),
              "'cross_tower' (DCNV1) is a TorchEasyRec option that tzrec_train does not support: "
              "earlier TorchEasyRec versions' name of DCNV1.cross; rename it to cross");
}

TEST(RankCrossConfig, DcnV2) {
  const std::string model =
      "dcn_v2 { backbone { hidden_units: [8] } cross { cross_num: 2 low_rank: 4 } "
      "deep { hidden_units: [8] } final { hidden_units: [4] } }";
  const LoadedConfig c = ParsePipelineConfig(Config(kOneGroup, model));
  EXPECT_EQ(ModelType(c.config), "dcn_v2");
  const LoadedConfig d =
      ParsePipelineConfig(Config(kOneGroup, "dcn_v2 { cross {} final { hidden_units: [4] } }"));
  const protos::DCNV2& v2 = d.config.model_config().dcn_v2();
  EXPECT_EQ(v2.cross().cross_num(), 3U);  // TorchEasyRec's defaults
  EXPECT_EQ(v2.cross().low_rank(), 32U);
  ExpectError(Config(kWideDeep, model), "model_config.dcn_v2: 2 feature groups");
  ExpectError(Config(kOneGroup, "dcn_v2 { final { hidden_units: [4] } }"),
              "model_config.dcn_v2.cross: not set");
  ExpectError(Config(kOneGroup, "dcn_v2 { cross { low_rank: 0 } final { hidden_units: [4] } }"),
              "model_config.dcn_v2.cross.low_rank: must be > 0");
  ExpectError(Config(kOneGroup, "dcn_v2 { cross { cross_num: 0 } final { hidden_units: [4] } }"),
              "model_config.dcn_v2.cross.cross_num: must be > 0");
  ExpectError(Config(kOneGroup, "dcn_v2 { cross {} }"), "model_config.dcn_v2.final: not set");
  ExpectError(Config(kOneGroup, "dcn_v2 { backbone {} cross {} final { hidden_units: [4] } }"),
              "model_config.dcn_v2.backbone.hidden_units: empty");
  ExpectError(Config(kOneGroup,
                     "dcn_v2 { cross {} deep { hidden_units: [0] } final { "
                     "hidden_units: [4] } }"),
              "model_config.dcn_v2.deep.hidden_units[0]: must be > 0");
}

}  // namespace
}  // namespace tzrec
