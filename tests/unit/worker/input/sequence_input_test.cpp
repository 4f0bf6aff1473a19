// Sequence features in the input (issue 14, item 2; TorchEasyRec tzrec/features/
// sequence_feature.py FG_NONE parsing): a text cell "id;id;..." split on sequence_delim, a
// Parquet list<int64> cell item by item, the first sequence_length items kept, an empty cell
// read as fg_encoded_default_value (or no ids), ids checked against the table size; the batch
// holds them as a jagged feature (lengths + values) of the KeyedJaggedTensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cell.hpp"
#include "dataset_test_util.hpp"
#include "transform.hpp"

namespace tzrec::input {
namespace {

using input_test::Check;
using input_test::Int64s;
using input_test::Longs;
using input_test::TempDir;
using input_test::WriteParquet;
using input_test::WriteText;

protos::FeatureConfig Seq(const std::string& name, std::uint32_t length, std::uint64_t rows) {
  protos::FeatureConfig fc;
  auto* s = fc.mutable_sequence_id_feature();
  s->set_feature_name(name);
  s->set_sequence_length(length);
  s->set_num_buckets(rows);
  s->set_embedding_dim(4);
  return fc;
}

std::vector<std::int64_t> Ids(const FeatureTransform& t, const Cell& cell) {
  std::vector<std::int64_t> out;
  t.AppendIds(cell, &out);
  return out;
}

using V = std::vector<std::int64_t>;

TEST(Transform, SequenceIdsSplitTruncateAndFill) {
  const protos::DataConfig none;  // fg_mode FG_NONE (TorchEasyRec's default)
  const FeatureTransform t(Seq("clicks", 3, 100), none);
  EXPECT_TRUE(t.Sparse());
  EXPECT_EQ(t.TableSize(), 100);
  EXPECT_EQ(Ids(t, Cell::String("4;5")), (V{4, 5}));
  EXPECT_EQ(Ids(t, Cell::String(" 4 ; 5 ")), (V{4, 5}));
  // sequence_length 3: the first three items are kept.
  EXPECT_EQ(Ids(t, Cell::String("1;2;3;4;5")), (V{1, 2, 3}));
  EXPECT_EQ(Ids(t, Cell::Int(9)), (V{9}));
  // Empty cells without fg_encoded_default_value: no ids (length 0).
  EXPECT_EQ(Ids(t, Cell::Null()), V{});
  EXPECT_EQ(Ids(t, Cell::String("")), V{});
  // The separator is sequence_delim, not fg_encoded_multival_sep.
  auto bar = Seq("b", 5, 10);
  bar.mutable_sequence_id_feature()->set_sequence_delim("|");
  EXPECT_EQ(Ids(FeatureTransform(bar, none), Cell::String("1|2|3")), (V{1, 2, 3}));
  // fg_encoded_default_value fills an empty cell, parsed as a sequence.
  auto filled = Seq("f", 5, 10);
  filled.mutable_sequence_id_feature()->set_fg_encoded_default_value("0;1");
  EXPECT_EQ(Ids(FeatureTransform(filled, none), Cell::Null()), (V{0, 1}));
  EXPECT_EQ(Ids(FeatureTransform(filled, none), Cell::String("7")), (V{7}));
  // An id outside the table, a non-integer or an empty item is an error naming the feature.
  std::string e = input_test::ErrorOf([&] { Ids(t, Cell::String("1;100")); });
  EXPECT_NE(e.find("feature 'clicks': id 100 is outside [0, num_buckets=100)"), std::string::npos)
      << e;
  e = input_test::ErrorOf([&] { Ids(t, Cell::String("1;;2")); });
  EXPECT_NE(e.find("is not an integer id"), std::string::npos) << e;
  // A bucketized sequence_raw_feature's column holds bucket ids in [0, len(boundaries) + 1).
  protos::FeatureConfig raw;
  auto* r = raw.mutable_sequence_raw_feature();
  r->set_feature_name("prices");
  r->set_sequence_length(4);
  r->add_boundaries(1);
  r->add_boundaries(2);
  r->set_embedding_dim(2);
  const FeatureTransform rt(raw, none);
  EXPECT_EQ(rt.TableSize(), 3);
  EXPECT_EQ(Ids(rt, Cell::String("0;2;1")), (V{0, 2, 1}));
  EXPECT_THROW(Ids(rt, Cell::String("3")), std::exception);
}

TEST(Transform, SequenceListCells) {
  const protos::DataConfig none;
  const FeatureTransform t(Seq("clicks", 2, 100), none);
  const Cell items[] = {Cell::Int(3), Cell::Null(), Cell::Int(4), Cell::Int(5)};
  EXPECT_EQ(Ids(t, Cell::List(items, 4)), (V{3, 4}));  // null items skipped, first 2 kept
  EXPECT_EQ(Ids(t, Cell::List(items, 0)), V{});
}

// CSV and Parquet (text and list<int64>) sequence columns become the same jagged feature.
TEST(Dataset, SequenceColumnsBecomeJaggedFeatures) {
  TempDir dir;
  WriteText(dir / "s.csv", "label,clicks\n1,1;2;3;4\n0,\n1,7\n");
  arrow::ListBuilder list(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
  auto* values = static_cast<arrow::Int64Builder*>(list.value_builder());
  Check(list.Append());
  Check(values->AppendValues({1, 2, 3, 4}));
  Check(list.AppendNull());
  Check(list.Append());
  Check(values->Append(7));
  WriteParquet(dir / "l.parquet", {"label", "clicks"},
               {Int64s({1, 0, 1}), list.Finish().ValueOrDie()}, 10);
  WriteParquet(
      dir / "t.parquet", {"label", "clicks"},
      {Int64s({1, 0, 1}), input_test::Strings<arrow::StringBuilder>({"1;2;3;4", "<null>", "7"})},
      10);
  for (const auto& [type, path] : std::vector<std::pair<protos::DatasetType, std::string>>{
           {protos::CsvDataset, dir / "s.csv"},
           {protos::ParquetDataset, dir / "l.parquet"},
           {protos::ParquetDataset, dir / "t.parquet"}}) {
    PipelineConfig c = input_test::FgConfig(type);
    c.mutable_data_config()->set_fg_mode(protos::FG_NONE);
    *c.add_feature_configs() = Seq("clicks", 3, 10);
    Dataset ds(c, path, 0, 1, 8);
    const auto b = ds.Next();
    ASSERT_TRUE(b.has_value()) << path;
    EXPECT_EQ(Longs(b->sparse["clicks"].lengths), (V{3, 0, 1})) << path;
    EXPECT_EQ(Longs(b->sparse["clicks"].values), (V{1, 2, 3, 7})) << path;
  }
}

}  // namespace
}  // namespace tzrec::input
