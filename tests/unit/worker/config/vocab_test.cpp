// Vocabularies of id features: vocab_list / vocab_dict / vocab_file with and without
// default_bucketize_value, against TorchEasyRec's own expectations (alibaba/TorchEasyRec
// tzrec/features/id_feature_test.py test_id_feature_with_vocab_{list,dict,file} and its
// data/test/id_vocab_* files), and the refusals of value_dim, weighted and bad vocabularies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config_test_util.hpp"
#include "internal.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

using test::ErrorOf;

namespace fs = std::filesystem;

// Sets vocab_dict[key] = value (adds the entry when missing).
void AddDict(protos::IdFeature* f, const std::string& key, std::uint64_t value) {
  for (auto& entry : *f->mutable_vocab_dict()) {
    if (entry.key() == key) return entry.set_value(value);
  }
  protos::VocabDictEntry* entry = f->add_vocab_dict();
  entry->set_key(key);
  entry->set_value(value);
}

protos::IdFeature Id(std::initializer_list<const char*> vocab_list) {
  protos::IdFeature f;
  f.set_feature_name("id_feat");
  f.set_embedding_dim(16);
  for (const char* v : vocab_list) f.add_vocab_list(v);
  return f;
}

std::int64_t IdOf(const Vocabulary& v, const std::string& token) {
  auto it = v.ids.find(token);
  return it == v.ids.end() ? v.unknown_id : it->second;
}

// TorchEasyRec: vocab_list ["abc", "efg"], default_value "": abc 2, efg 3, hij (unknown) 1, 4 rows;
// with default_bucketize_value 0 and ["xyz", "abc", "efg"]: abc 1, efg 2, hij 0, 3 rows.
TEST(Vocab, ListMatchesTorchEasyRec) {
  const Vocabulary reserved = IdVocabulary(Id({"abc", "efg"}));
  EXPECT_EQ(reserved.rows, 4);
  EXPECT_EQ(VocabRows(Id({"abc", "efg"})), 4);
  EXPECT_EQ(IdOf(reserved, "abc"), 2);
  EXPECT_EQ(IdOf(reserved, "efg"), 3);
  EXPECT_EQ(IdOf(reserved, "hij"), 1);
  EXPECT_EQ(IdOf(reserved, ""), 0);
  protos::IdFeature f = Id({"xyz", "abc", "efg"});
  f.set_default_bucketize_value(0);
  const Vocabulary own = IdVocabulary(f);
  EXPECT_EQ(own.rows, 3);
  EXPECT_EQ(IdOf(own, "abc"), 1);
  EXPECT_EQ(IdOf(own, "efg"), 2);
  EXPECT_EQ(IdOf(own, "hij"), 0);
}

// TorchEasyRec: vocab_dict {abc: 2, efg: 2}: abc 2, efg 2, hij 1, 3 rows; with
// default_bucketize_value 0 and {abc: 1, efg: 1}: 1, 1, 0 and 2 rows.
TEST(Vocab, DictMatchesTorchEasyRec) {
  protos::IdFeature f = Id({});
  AddDict(&f, "abc", 2);
  AddDict(&f, "efg", 2);
  const Vocabulary reserved = IdVocabulary(f);
  EXPECT_EQ(reserved.rows, 3);
  EXPECT_EQ(IdOf(reserved, "abc"), 2);
  EXPECT_EQ(IdOf(reserved, "efg"), 2);
  EXPECT_EQ(IdOf(reserved, "hij"), 1);
  EXPECT_EQ(IdOf(reserved, ""), 0);
  AddDict(&f, "abc", 1);
  AddDict(&f, "efg", 1);
  f.set_default_bucketize_value(0);
  const Vocabulary own = IdVocabulary(f);
  EXPECT_EQ(own.rows, 2);
  EXPECT_EQ(IdOf(own, "abc"), 1);
  EXPECT_EQ(IdOf(own, "hij"), 0);
}

// TorchEasyRec's data/test/id_vocab_list_0 ("\n<OOV>\nabc\nefg\n": 4 rows, abc 2, efg 3) and
// id_vocab_dict_3 ("xyz 0\n<OOV> 1\nabc 2\nefg 2\n": 3 rows).
TEST(Vocab, FileFormsMatchTorchEasyRec) {
  const auto list = ParseVocabFile("\n<OOV>\nabc\nefg\n", "id_vocab_list_0");
  EXPECT_EQ(list.size(), 4u);
  EXPECT_EQ(list.at(""), 0);
  EXPECT_EQ(list.at("<OOV>"), 1);
  EXPECT_EQ(list.at("abc"), 2);
  EXPECT_EQ(list.at("efg"), 3);
  const auto dict = ParseVocabFile("xyz 0\n<OOV> 1\nabc 2\r\nefg 2\n\n", "id_vocab_dict_3");
  EXPECT_EQ(dict.size(), 4u);
  EXPECT_EQ(dict.at("abc"), 2);
  EXPECT_EQ(dict.at("efg"), 2);
  auto error = [](const std::string& text) {
    try {
      ParseVocabFile(text, "v.txt");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("a 1\nb\n").find("v.txt:2: \"b\" mixes"), std::string::npos);
  EXPECT_NE(error("a x\n").find("v.txt:1: id \"x\" of token \"a\""), std::string::npos);
  EXPECT_NE(error("a\nb\na\n").find("v.txt:3: token \"a\" appears twice"), std::string::npos);
}

std::string Config(const std::string& id_fields, const std::string& data = "") {
  return R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" )" +
         data + R"( }
feature_configs { id_feature { feature_name: "u" expression: "user:u" embedding_dim: 4 )" +
         id_fields + R"( } }
model_config {
  feature_groups { group_name: "user" feature_names: "u" group_type: DEEP }
  multi_tower { towers { input: "user" mlp { hidden_units: [8] } } final { hidden_units: [4] } }
  metrics { auc { thresholds: 0 } }
  losses { binary_cross_entropy {} }
}
)";
}

// vocab_file is read into vocab_dict when the config is loaded (the written config carries it).
TEST(Vocab, FileLoadsIntoTheConfig) {
  const fs::path path = fs::temp_directory_path() / "tzrec_vocab_test_list.txt";
  std::ofstream(path) << "\n<OOV>\nabc\nefg\n";
  const LoadedConfig loaded = ParsePipelineConfig(Config(
      "vocab_file: \"" + path.string() + "\" default_bucketize_value: 1", "fg_mode: FG_NORMAL"));
  const protos::FeatureConfig& f = loaded.config.feature_configs(0);
  EXPECT_FALSE(f.id_feature().has_vocab_file());
  ASSERT_EQ(f.id_feature().vocab_dict_size(), 4);
  EXPECT_EQ(f.id_feature().vocab_dict(3).key(), "efg");  // written in id order
  EXPECT_EQ(f.id_feature().vocab_dict(3).value(), 3u);
  EXPECT_EQ(NumEmbeddings(f), 4);
  const LoadedConfig again = ParsePipelineConfig(ToText(loaded.config));
  EXPECT_EQ(NumEmbeddings(again.config.feature_configs(0)), 4);
  EXPECT_NE(ErrorOf(Config("vocab_file: \"" + path.string() + "\""))
                .find("without default_bucketize_value"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("vocab_file: \"/nonexistent/v.txt\" default_bucketize_value: 1"))
                .find("id_feature.vocab_file: cannot open '/nonexistent/v.txt'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("vocab_file: \"" + path.string() +
                           "\" default_bucketize_value: 1 num_buckets: 3"))
                .find("set exactly one of them"),
            std::string::npos);
  fs::remove(path);
}

TEST(Vocab, RefusalsNameTheField) {
  EXPECT_NE(ErrorOf(Config("vocab_list: [\"a\"] default_bucketize_value: 1"))
                .find("is outside the table of 1 rows"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("vocab_dict: [{key: \"a\" value: 0}]")).find("<OOV> id"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("num_buckets: 3 default_bucketize_value: 1"))
                .find(".default_bucketize_value: set without vocab_list"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("vocab_list: [\"a\"] vocab_dict: [{key: \"b\" value: 2}]"))
                .find("both vocab_list and vocab_dict are set"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("num_buckets: 3 value_dim: 2")).find(".value_dim: 2; an id_feature"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Config("num_buckets: 3 weighted: true"))
                .find(".weighted: true with data_config.fg_mode FG_NONE is not implemented"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(Config("num_buckets: 3 weighted: true", "fg_mode: FG_DAG")), "");
  EXPECT_EQ(
      ErrorOf(Config("vocab_dict: [{key: \"a\" value: 2}] value_dim: 1", "fg_mode: FG_NORMAL")),
      "");
  const LoadedConfig fg_none = ParsePipelineConfig(Config("num_buckets: 3 value_dim: 1"));
  ASSERT_EQ(fg_none.warnings.size(), 1u);
  EXPECT_NE(fg_none.warnings[0].find("id_feature.value_dim: not applied with fg_mode FG_NONE"),
            std::string::npos);
}

}  // namespace
}  // namespace tzrec
