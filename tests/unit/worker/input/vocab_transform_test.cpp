// Id feature transforms with vocab_list / vocab_dict / default_bucketize_value and value_dim,
// against TorchEasyRec's expectations (alibaba/TorchEasyRec tzrec/features/id_feature_test.py:
// input ["abc\x1defg", "", "hij"], fg_mode FG_NORMAL, default_value ""), and a vocab_file read
// through ParsePipelineConfig into the Dataset's transform.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cell.hpp"
#include "transform.hpp"

namespace tzrec::input {
namespace {

// Sets vocab_dict[key] = value (adds the entry when missing).
void AddDict(protos::IdFeature* f, const std::string& key, std::uint64_t value) {
  for (auto& entry : *f->mutable_vocab_dict()) {
    if (entry.key() == key) return entry.set_value(value);
  }
  protos::VocabDictEntry* entry = f->add_vocab_dict();
  entry->set_key(key);
  entry->set_value(value);
}

protos::FeatureConfig Id() {
  protos::FeatureConfig fc;
  auto* id = fc.mutable_id_feature();
  id->set_feature_name("id_feat");
  id->set_expression("user:id_str");
  id->set_embedding_dim(16);
  return fc;
}

// The ids and lengths of TorchEasyRec's three-row input.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> RunRows(
    const protos::FeatureConfig& fc) {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_NORMAL);
  const FeatureTransform t(fc, data);
  const Cell cells[] = {Cell::String("abc\x1d"
                                     "efg"),
                        Cell::String(""), Cell::String("hij")};
  std::vector<std::int64_t> ids, lengths;
  t.AppendIdsColumn(cells, 3, &ids, &lengths);
  return {ids, lengths};
}

using V = std::vector<std::int64_t>;

TEST(VocabTransform, ListMatchesTorchEasyRec) {
  auto fc = Id();
  for (const char* v : {"abc", "efg"}) fc.mutable_id_feature()->add_vocab_list(v);
  EXPECT_EQ(RunRows(fc), std::make_pair(V{2, 3, 1}, V{2, 0, 1}));
  fc.mutable_id_feature()->clear_vocab_list();
  for (const char* v : {"xyz", "abc", "efg"}) fc.mutable_id_feature()->add_vocab_list(v);
  fc.mutable_id_feature()->set_default_bucketize_value(0);
  EXPECT_EQ(RunRows(fc), std::make_pair(V{1, 2, 0}, V{2, 0, 1}));
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_NORMAL);
  EXPECT_EQ(FeatureTransform(fc, data).TableSize(), 3);
}

TEST(VocabTransform, DictMatchesTorchEasyRec) {
  auto fc = Id();
  AddDict(fc.mutable_id_feature(), "abc", 2);
  AddDict(fc.mutable_id_feature(), "efg", 2);
  EXPECT_EQ(RunRows(fc), std::make_pair(V{2, 2, 1}, V{2, 0, 1}));
  AddDict(fc.mutable_id_feature(), "abc", 1);
  AddDict(fc.mutable_id_feature(), "efg", 1);
  fc.mutable_id_feature()->set_default_bucketize_value(0);
  EXPECT_EQ(RunRows(fc), std::make_pair(V{1, 1, 0}, V{2, 0, 1}));
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_NORMAL);
  EXPECT_EQ(FeatureTransform(fc, data).TableSize(), 2);
}

// TorchEasyRec (sequence_id_feature tests with value_dim 1): of "abc\x1defg" only abc is kept.
TEST(VocabTransform, ValueDimOneKeepsTheFirstValue) {
  auto fc = Id();
  for (const char* v : {"abc", "efg"}) fc.mutable_id_feature()->add_vocab_list(v);
  fc.mutable_id_feature()->set_value_dim(1);
  EXPECT_EQ(RunRows(fc), std::make_pair(V{2, 1}, V{1, 0, 1}));
  fc.mutable_id_feature()->clear_vocab_list();
  fc.mutable_id_feature()->set_num_buckets(10);
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_NORMAL);
  const FeatureTransform t(fc, data);
  std::vector<std::int64_t> ids;
  t.AppendIds(Cell::String("3\x1d"
                           "4\x1d"
                           "5"),
              &ids);
  EXPECT_EQ(ids, V{3});
  fc.mutable_id_feature()->set_value_dim(0);
  ids.clear();
  FeatureTransform(fc, data).AppendIds(Cell::String("3\x1d"
                                                    "4"),
                                       &ids);
  EXPECT_EQ(ids, (V{3, 4}));
}

}  // namespace
}  // namespace tzrec::input
