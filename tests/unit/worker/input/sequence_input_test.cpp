// Sequence features in the input (issue 14, item 2; TorchEasyRec tzrec/features/
// sequence_feature.py FG_NONE parsing): a text cell "id;id;..." split on sequence_delim, a
// Parquet list<int64> cell item by item, the first sequence_length items kept, an empty cell
// read as fg_encoded_default_value (or no ids), ids checked against the table size; the batch
// holds them as a jagged feature (lengths + values) of the KeyedJaggedTensor.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
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
  // sequence_length 3: up to three items are read whole; TorchEasyRec keeps every item of an
  // FG_NONE sequence, so a longer one is refused (not cut), naming both lengths and the fixes.
  EXPECT_EQ(Ids(t, Cell::String("1;2;3")), (V{1, 2, 3}));
  std::string longer = input_test::ErrorOf([&] { Ids(t, Cell::String("1;2;3;4;5")); });
  EXPECT_NE(longer.find("feature 'clicks': a sequence of 5 items, more than its sequence_length 3"),
            std::string::npos)
      << longer;
  EXPECT_NE(longer.find("set sequence_length to at least"), std::string::npos) << longer;
  const std::vector<Cell> items = {Cell::Int(1), Cell::Int(2), Cell::Int(3), Cell::Int(4)};
  longer = input_test::ErrorOf([&] { Ids(t, Cell::List(items.data(), 4)); });
  EXPECT_NE(longer.find("a sequence of 4 items"), std::string::npos) << longer;
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
  const FeatureTransform t(Seq("clicks", 3, 100), none);
  const Cell items[] = {Cell::Int(3), Cell::Null(), Cell::Int(4), Cell::Int(5)};
  EXPECT_EQ(Ids(t, Cell::List(items, 4)), (V{3, 4, 5}));  // null items skipped
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
    *c.add_feature_configs() = Seq("clicks", 4, 10);
    Dataset ds(c, path, 0, 1, 8);
    const auto b = ds.Next();
    ASSERT_TRUE(b.has_value()) << path;
    EXPECT_EQ(Longs(b->sparse["clicks"].lengths), (V{4, 0, 1})) << path;
    EXPECT_EQ(Longs(b->sparse["clicks"].values), (V{1, 2, 3, 4, 7})) << path;
  }
}

// fg_mode FG_NORMAL / FG_DAG (TorchEasyRec sequence_feature.py with pyfg; the expectations are
// those of its sequence_feature_test.py, with our FNV-1a hash for hash_bucket_size).
std::vector<std::int64_t> FgIds(const protos::FeatureConfig& fc, const Cell& cell) {
  protos::DataConfig dag;
  dag.set_fg_mode(protos::FG_DAG);
  return Ids(FeatureTransform(fc, dag), cell);
}

std::int64_t Hash(std::string_view text, std::uint64_t rows) {
  return static_cast<std::int64_t>(Fnv1a64(text) % rows);
}

TEST(Transform, SequenceFgSplitsDefaultsAndTruncates) {
  // num_buckets: an empty cell is one item of default_value "" -> "0" (TorchEasyRec resets it).
  auto nb = Seq("n", 50, 10);
  EXPECT_EQ(FgIds(nb, Cell::String("1;2")), (V{1, 2}));
  EXPECT_EQ(FgIds(nb, Cell::String("")), (V{0}));
  EXPECT_EQ(FgIds(nb, Cell::Null()), (V{0}));
  EXPECT_EQ(FgIds(nb, Cell::String("3")), (V{3}));
  EXPECT_EQ(FgIds(nb, Cell::Int(4)), (V{4}));
  const Cell ints[] = {Cell::Int(1), Cell::Int(2)};
  EXPECT_EQ(FgIds(nb, Cell::List(ints, 2)), (V{1, 2}));
  EXPECT_EQ(FgIds(nb, Cell::List(ints, 0)), (V{0}));
  const Cell texts[] = {Cell::String("1"), Cell::Null(), Cell::String("3")};
  EXPECT_EQ(FgIds(nb, Cell::List(texts, 3)), (V{1, 0, 3}));  // a null item is empty
  // sequence_length 3 keeps the first three items, empty ones included.
  auto short_nb = Seq("s", 3, 10);
  EXPECT_EQ(FgIds(short_nb, Cell::String("5;;6;7;8")), (V{5, 0, 6}));
  EXPECT_EQ(FgIds(short_nb, Cell::List(texts, 3)), (V{1, 0, 3}));
  // default_value fills empty items and empty cells.
  auto filled = Seq("f", 50, 10);
  filled.mutable_sequence_id_feature()->set_default_value("9");
  EXPECT_EQ(FgIds(filled, Cell::String("1;;2;")), (V{1, 9, 2, 9}));
  EXPECT_EQ(FgIds(filled, Cell::Null()), (V{9}));
  // vocab_list with sequence_delim "|": [default "0", "<OOV>", a, b, c] -> 0, 1, 2, 3, 4.
  protos::FeatureConfig vocab;
  auto* v = vocab.mutable_sequence_id_feature();
  v->set_feature_name("v");
  v->set_sequence_length(50);
  v->set_sequence_delim("|");
  v->set_embedding_dim(4);
  for (const char* w : {"a", "b", "c"}) v->add_vocab_list(w);
  EXPECT_EQ(FgIds(vocab, Cell::String("c||a|b|b|")), (V{4, 0, 2, 3, 3, 0}));
  EXPECT_EQ(FgIds(vocab, Cell::String("")), (V{0}));
  EXPECT_EQ(FgIds(vocab, Cell::String("a|b||c|zz")), (V{2, 3, 0, 4, 1}));
  // The default value in the list keeps its list id (TorchEasyRec's vocab_list doc).
  v->add_vocab_list("0");
  EXPECT_EQ(FgIds(vocab, Cell::String("|0")), (V{5, 5}));
  // vocab_dict: the given ids, the default value 0, unknown values 1.
  protos::FeatureConfig dict = vocab;
  dict.mutable_sequence_id_feature()->clear_vocab_list();
  for (const auto& [key, id] : {std::pair{"a", 2}, {"b", 3}, {"0", 7}}) {
    auto* entry = dict.mutable_sequence_id_feature()->add_vocab_dict();
    entry->set_key(key);
    entry->set_value(id);
  }
  EXPECT_EQ(FgIds(dict, Cell::String("a|b||q|0")), (V{2, 3, 0, 1, 0}));
  // hash_bucket_size: each item's text hashed; the empty cell hashes "0".
  protos::FeatureConfig hash;
  auto* h = hash.mutable_sequence_id_feature();
  h->set_feature_name("h");
  h->set_sequence_length(50);
  h->set_embedding_dim(4);
  h->set_hash_bucket_size(100);
  EXPECT_EQ(FgIds(hash, Cell::String("abc;hij")), (V{Hash("abc", 100), Hash("hij", 100)}));
  EXPECT_EQ(FgIds(hash, Cell::String("")), (V{Hash("0", 100)}));
  // Several values in one item are refused, naming the feature and the item.
  std::string e = input_test::ErrorOf([&] {
    FgIds(hash, Cell::String("abc\x1d"
                             "efg;hij"));
  });
  EXPECT_NE(e.find("feature 'h': sequence item 'abc\x1d"
                   "efg' holds several values"),
            std::string::npos)
      << e;
  h->set_separator(",");
  EXPECT_EQ(FgIds(hash, Cell::String("abc\x1d"
                                     "efg")),
            (V{Hash("abc\x1d"
                    "efg",
                    100)}));
  e = input_test::ErrorOf([&] { FgIds(nb, Cell::String("1;12")); });
  EXPECT_NE(e.find("id 12 is outside [0, num_buckets=10)"), std::string::npos) << e;
}

TEST(Transform, SequenceFgRawBoundaries) {
  // boundaries [0.05, 0.15, 0.25]: 0.1 -> 1, 0.2 -> 2, 0.3 -> 3, 0 -> 0.
  protos::FeatureConfig raw;
  auto* r = raw.mutable_sequence_raw_feature();
  r->set_feature_name("r");
  r->set_sequence_length(50);
  r->set_embedding_dim(4);
  for (const float b : {0.05F, 0.15F, 0.25F}) r->add_boundaries(b);
  r->set_default_value("");
  EXPECT_EQ(FgIds(raw, Cell::String("0.1;0.2")), (V{1, 2}));
  EXPECT_EQ(FgIds(raw, Cell::String("")), V{});  // default "": an empty cell has no items
  EXPECT_EQ(FgIds(raw, Cell::String("0.3")), (V{3}));
  std::string e = input_test::ErrorOf([&] { FgIds(raw, Cell::String("0.1;;0.3")); });
  EXPECT_NE(e.find("an empty sequence item and default_value \"\""), std::string::npos) << e;
  r->set_default_value("0.0");  // the proto's default is "0"
  EXPECT_EQ(FgIds(raw, Cell::String("")), (V{0}));
  EXPECT_EQ(FgIds(raw, Cell::String("0.1;;0.3")), (V{1, 0, 3}));
  const Cell nums[] = {Cell::Float(0.2), Cell::Int(1)};
  EXPECT_EQ(FgIds(raw, Cell::List(nums, 2)), (V{2, 3}));
  e = input_test::ErrorOf([&] { FgIds(raw, Cell::String("x")); });
  EXPECT_NE(e.find("feature 'r': sequence item 'x' is not a number"), std::string::npos) << e;
}

// With FG_DAG a sequence reads the column of its expression; CSV and Parquet list<string> agree.
TEST(Dataset, SequenceFgReadsExpressionColumn) {
  TempDir dir;
  WriteText(dir / "s.csv", "label,hist\n1,1;2;3;4\n0,\n1,7;;x\n");
  arrow::ListBuilder list(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  auto* values = static_cast<arrow::StringBuilder*>(list.value_builder());
  Check(list.Append());
  Check(values->AppendValues({"1", "2", "3", "4"}));
  Check(list.AppendNull());
  Check(list.Append());
  Check(values->AppendValues({"7", "", "x"}));
  WriteParquet(dir / "l.parquet", {"label", "hist"},
               {Int64s({1, 0, 1}), list.Finish().ValueOrDie()}, 10);
  for (const auto& [type, path] : std::vector<std::pair<protos::DatasetType, std::string>>{
           {protos::CsvDataset, dir / "s.csv"}, {protos::ParquetDataset, dir / "l.parquet"}}) {
    PipelineConfig c = input_test::FgConfig(type);
    protos::FeatureConfig fc;
    auto* s = fc.mutable_sequence_id_feature();
    s->set_feature_name("seq__item");
    s->set_expression("user:hist");
    s->set_sequence_length(3);
    s->set_embedding_dim(4);
    for (const char* w : {"1", "2", "3", "7"}) s->add_vocab_list(w);
    *c.add_feature_configs() = fc;
    Dataset ds(c, path, 0, 1, 8);
    const auto b = ds.Next();
    ASSERT_TRUE(b.has_value()) << path;
    // [default, OOV, 1, 2, 3, 7]: "1;2;3" (first 3), "" -> [0], "7;;x" -> [5, 0, 1].
    EXPECT_EQ(Longs(b->sparse["seq__item"].lengths), (V{3, 1, 3})) << path;
    EXPECT_EQ(Longs(b->sparse["seq__item"].values), (V{2, 3, 4, 0, 5, 0, 1})) << path;
  }
}

}  // namespace
}  // namespace tzrec::input
