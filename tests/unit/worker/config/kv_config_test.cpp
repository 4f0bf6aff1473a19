// lookup_feature / match_feature configs: accepted with their tables and inputs, and every
// combination TorchEasyRec overrides or ignores refused with a message naming the field.
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

using test::ErrorOf;

std::string Config(const std::string& feature, const std::string& fg = "FG_DAG") {
  return test::OneFeatureConfig(feature, fg);
}

std::string Lookup(const std::string& fields) {
  return R"(lookup_feature { feature_name: "f" map: "item:kv" key: "user:k" )" + fields + " }";
}

std::string Match(const std::string& fields) {
  return R"(match_feature { feature_name: "f" nested_map: "user:kkv" pkey: "item:c" skey: "ALL" )" +
         fields + " }";
}

TEST(KvFeatures, AcceptedWithTablesAndInputs) {
  EXPECT_EQ(ErrorOf(Config(Lookup("combiner: \"mean\""))), "");
  EXPECT_EQ(ErrorOf(Config(Lookup("hash_bucket_size: 10 embedding_dim: 4 need_key: true"))), "");
  EXPECT_EQ(ErrorOf(Config(Lookup("value_dim: 3 value_separator: \";\""))), "");
  EXPECT_EQ(ErrorOf(Config(Match("boundaries: [1, 2] embedding_dim: 4"))), "");
  EXPECT_EQ(ErrorOf(Config(Match("vocab_list: [\"a\"] embedding_dim: 4 show_pkey: true"))), "");
  const PipelineConfig c =
      ParsePipelineConfig(Config(Match("vocab_dict: [{key: \"a\" value: 5}] embedding_dim: 4")), "",
                          "t.config")
          .config;
  const auto& f = c.feature_configs(1);
  EXPECT_TRUE(IsSparse(f));
  EXPECT_EQ(NumEmbeddings(f), 6);
  EXPECT_EQ(InputColumns(c, f), (std::vector<std::string>{"kkv", "c"}));
  const PipelineConfig none =
      ParsePipelineConfig(Config(Lookup(""), "FG_NONE"), "", "t.config").config;
  EXPECT_EQ(InputColumns(none, none.feature_configs(1)), std::vector<std::string>{"f"});
  EXPECT_FALSE(IsSparse(none.feature_configs(1)));
}

TEST(KvFeatures, RefusalsNameTheField) {
  auto refused = [](const std::string& feature, const std::string& expected) {
    const std::string error = ErrorOf(Config(feature));
    EXPECT_NE(error.find(expected), std::string::npos) << feature << "\n -> " << error;
  };
  refused(Lookup("hash_bucket_size: 10 num_buckets: 3 embedding_dim: 4"),
          "hash_bucket_size and num_buckets are set");
  refused(Lookup("combiner: \"median\""),
          ".combiner: \"median\"; use sum, mean, min, max or count");
  refused(Lookup("hash_bucket_size: 10 embedding_dim: 4 combiner: \"max\""),
          ".combiner: \"max\" with hash_bucket_size");
  refused(Lookup("need_discrete: true"), ".need_discrete: true without hash_bucket_size");
  refused(Lookup("need_key: true boundaries: [1] embedding_dim: 4"),
          ".need_key: true without hash_bucket_size");
  refused(Lookup("num_buckets: 4 embedding_dim: 4 value_dim: 2"), ".value_dim: 2 with num_buckets");
  refused(Lookup("value_dim: 0"), ".value_dim: 0 on a numeric lookup");
  refused(Lookup("value_separator: \";\""), ".value_separator: set without value_dim > 1");
  refused(Lookup("embedding_dim: 4"), ".embedding_dim: 4 on a numeric (dense) feature");
  refused(Lookup("hash_bucket_size: 10"), ".embedding_dim: must be > 0");
  refused(Lookup("default_value: \"x\""), ".default_value: \"x\" is not a number");
  refused(Lookup("hash_bucket_size: 10 embedding_dim: 4 normalizer: \"method=log10\""),
          ".normalizer: set with hash_bucket_size");
  refused(Lookup("vocab_list: [\"0\"] embedding_dim: 4"), "is the default_value (id 0)");
  refused(Lookup("vocab_file: \"v.txt\""), "'vocab_file' (LookupFeature) is a TorchEasyRec option");
  refused(Lookup("default_bucketize_value: 1"), "always maps unknown values to id 1");
  refused(Lookup("fg_value_type: \"int64\""), "'fg_value_type' (LookupFeature)");
  refused(Lookup("zch { zch_size: 10 }"), "'zch' (LookupFeature)");
  refused(Match("show_skey: true"), ".show_skey: true without hash_bucket_size");
  refused(Match("value_dim: 2"), ".value_dim: 2 on a numeric match_feature");
  refused(Match("num_buckets: 3 embedding_dim: 4 value_dim: 3"), ".value_dim: 3; ids take 0");
  refused(Match("init_fn: \"nn.init.zeros_\""), "'init_fn' (MatchFeature)");
  refused(Match("stub_type: true"), "'stub_type' (MatchFeature)");
  refused(R"(lookup_feature { feature_name: "f" key: "user:k" })", ".map: empty; give the input");
  refused(R"(match_feature { feature_name: "f" nested_map: "user:m" skey: "ALL" })",
          ".pkey: empty; give the input");
}

}  // namespace
}  // namespace tzrec
