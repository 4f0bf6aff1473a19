// Dataset on Parquet files the tests write with Arrow C++: types, nulls, dictionaries and row
// groups, batches (ids, dense, labels, group ids), rank split over several files, resume at
// another world size, epochs and prefetching. CSV/TSV and error messages: dataset_text_test.cpp.
#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dataset_test_util.hpp"
#include "reader.hpp"
#include "tzrec/input/input.hpp"

namespace tzrec {
namespace {

using namespace input_test;  // NOLINT(google-build-using-namespace): the shared test helpers

TEST(Parquet, TypesNullsDictionaryAndRowGroups) {
  TempDir dir;
  WriteTypedParquet(dir / "t.parquet", 0, 10, 4);  // row groups of 4, 4, 2
  auto reader = input::OpenParquet(dir / "t.parquet");
  EXPECT_EQ(reader->NumRows(), 10);
  EXPECT_EQ(reader->ChunkEnd(0), 4);
  EXPECT_EQ(reader->ChunkEnd(5), 8);
  EXPECT_EQ(reader->ChunkEnd(9), 10);

  Dataset ds(ParquetConfig(), dir / "t.parquet", 0, 1, 3);
  const auto batches = ReadAll(ds);
  ASSERT_EQ(batches.size(), 4U);
  EXPECT_EQ(batches.back().size, 1);
  EXPECT_EQ(IdsOf(batches, "rid"), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<std::int64_t> s, ls, d;
  std::vector<float> f, labels;
  for (std::int64_t i = 0; i < 10; ++i) {
    if (i % 5 != 4) s.push_back(H("s" + std::to_string(i), 1000));
    ls.push_back(H(std::to_string(i * 10), 1000));
    if (i % 4 != 3) d.push_back(i % 4 == 0 ? 2 : (i % 4 == 1 ? 3 : 1));  // "z" → OOV 1
    f.push_back(i % 3 == 0 ? -1.0F : static_cast<float>(i) / 4);
    labels.push_back(static_cast<float>(i % 2));
  }
  EXPECT_EQ(IdsOf(batches, "s"), s);
  EXPECT_EQ(IdsOf(batches, "ls"), ls);
  EXPECT_EQ(IdsOf(batches, "d"), d);
  std::vector<float> got_f, got_labels;
  for (const auto& b : batches) {
    for (float v : Floats(b.dense)) got_f.push_back(v);
    for (float v : Floats(b.labels)) got_labels.push_back(v);
  }
  EXPECT_EQ(got_f, f);
  EXPECT_EQ(got_labels, labels);
}

TEST(Parquet, IntsHashLikeTheirCsvText) {
  TempDir dir;
  WriteParquet(dir / "p.parquet", {"label", "c"}, {Int64s({1, 0}), Int64s({12, -3})}, 10);
  WriteText(dir / "p.csv", "label,c\n1,12\n0,-3\n");
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  auto f = Id("c", "c");
  f.mutable_id_feature()->set_hash_bucket_size(777);
  *c.add_feature_configs() = f;
  Dataset p(c, dir / "p.parquet", 0, 1, 8);
  c.mutable_data_config()->set_dataset_type(protos::CsvDataset);
  Dataset t(c, dir / "p.csv", 0, 1, 8);
  const auto pv = IdsOf(ReadAll(p), "c");
  EXPECT_EQ(pv, IdsOf(ReadAll(t), "c"));
  EXPECT_EQ(pv, (std::vector<std::int64_t>{H("12", 777), H("-3", 777)}));
}

// Files of 5, 0, 7 and 4 rows (16 in all): every world size reads each row once, in order.
TEST(Parquet, RankSplitOverUnevenFilesHasNoOverlapAndNoLoss) {
  TempDir dir;
  WriteTypedParquet(dir / "part-0.parquet", 0, 5, 2);
  WriteTypedParquet(dir / "part-1.parquet", 5, 0, 2);
  WriteTypedParquet(dir / "part-2.parquet", 5, 7, 3);
  WriteTypedParquet(dir / "part-3.parquet", 12, 4, 100);
  const std::string glob = dir / "part-[23].parquet" + "," + dir / "part-[01].parquet";
  for (int world : {1, 2, 3}) {
    std::vector<std::int64_t> all;
    for (int rank = 0; rank < world; ++rank) {
      Dataset ds(ParquetConfig(), glob, rank, world, 2);
      EXPECT_EQ(ds.TotalRows(), 16);
      EXPECT_EQ(ds.Files().size(), 4U);
      EXPECT_EQ(ds.RowsAssigned(), 16 / world + (rank < 16 % world ? 1 : 0));
      const auto ids = IdsOf(ReadAll(ds), "rid");
      EXPECT_EQ(static_cast<std::int64_t>(ids.size()), ds.RowsAssigned());
      all.insert(all.end(), ids.begin(), ids.end());
    }
    ASSERT_EQ(all.size(), 16U) << world;
    for (std::int64_t i = 0; i < 16; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i) << world;
  }
}

TEST(Parquet, ResumeAtAnotherWorldSizeReadsExactlyTheRest) {
  TempDir dir;
  WriteTypedParquet(dir / "a.parquet", 0, 11, 3);
  WriteTypedParquet(dir / "b.parquet", 11, 12, 5);
  const std::string path = dir / "*.parquet";
  // World 3 (8 rows each): rank 0 trains 1 batch of 3, rank 1 two, rank 2 none.
  std::vector<DataCursor> cursors;
  std::set<std::int64_t> seen;
  const std::vector<int> steps = {1, 2, 0};
  for (int rank = 0; rank < 3; ++rank) {
    Dataset ds(ParquetConfig(), path, rank, 3, 3);
    for (int s = 0; s < steps[static_cast<std::size_t>(rank)]; ++s) {
      auto b = ds.Next();
      ASSERT_TRUE(b);
      for (auto id : Longs(b->sparse["rid"].values)) seen.insert(id);
    }
    cursors.push_back(ds.Cursor());
  }
  const auto merged = DataCursor::FromJson(DataCursor::Merge(cursors).ToJson());
  EXPECT_EQ(merged.consumed, (std::vector<RowRange>{{0, 3}, {8, 14}}));
  std::multiset<std::int64_t> rest;
  for (int rank = 0; rank < 2; ++rank) {
    Dataset ds(ParquetConfig(), path, rank, 2, 4, merged);
    EXPECT_EQ(ds.RowsAssigned(), rank == 0 ? 7 : 7);
    for (auto id : IdsOf(ReadAll(ds), "rid")) rest.insert(id);
    const auto done = ds.Cursor();
    EXPECT_EQ(done.ConsumedRows(), 9 + 7);
  }
  EXPECT_EQ(rest.size() + seen.size(), 23U);
  for (std::int64_t r = 0; r < 23; ++r) EXPECT_EQ(rest.count(r) + seen.count(r), 1U) << r;
  // A cursor of other data is refused.
  DataCursor other{99, 0, {}, {}};
  const auto e = ErrorOf([&] { Dataset ds(ParquetConfig(), path, 0, 1, 4, other); });
  EXPECT_NE(e.find("99 rows"), std::string::npos) << e;
  EXPECT_NE(e.find("hold 23"), std::string::npos) << e;
}

TEST(Dataset, EpochsPrefetchDepthsAndDropRemainder) {
  TempDir dir;
  WriteTypedParquet(dir / "a.parquet", 0, 10, 4);
  auto config = ParquetConfig();
  std::vector<std::vector<std::int64_t>> runs;
  for (std::int64_t workers : {0, 1, 3}) {
    config.mutable_data_config()->set_num_workers(static_cast<std::uint32_t>(workers));
    Dataset ds(config, dir / "a.parquet", 0, 1, 4);
    runs.push_back(IdsOf(ReadAll(ds), "s"));
    EXPECT_EQ(ds.Cursor().consumed, (std::vector<RowRange>{{0, 10}}));
    ds.StartNextEpoch();
    EXPECT_EQ(ds.Cursor().epochs_completed, 1);
    EXPECT_TRUE(ds.Cursor().consumed.empty());
    EXPECT_EQ(IdsOf(ReadAll(ds), "s"), runs.back());
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  config.mutable_data_config()->set_drop_remainder(true);
  Dataset ds(config, dir / "a.parquet", 0, 1, 4);
  const auto batches = ReadAll(ds);
  ASSERT_EQ(batches.size(), 2U);
  EXPECT_EQ(IdsOf(batches, "rid"), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Restarting mid-epoch drops the prefetched batches and starts over.
  Dataset again(config, dir / "a.parquet", 0, 1, 4);
  ASSERT_TRUE(again.Next());
  again.StartNextEpoch();
  EXPECT_EQ(IdsOf(ReadAll(again), "rid").front(), 0);
}

TEST(Dataset, GroupIdsHashTheGroupingColumn) {
  TempDir dir;
  WriteText(dir / "g.csv", "label,user\n1,u1\n0,u2\n1,u1\n");
  PipelineConfig c = FgConfig(protos::CsvDataset);
  auto f = Id("uid", "user");
  f.mutable_id_feature()->set_hash_bucket_size(10);
  *c.add_feature_configs() = f;
  // A feature name: its input column 'user' is used.
  c.mutable_model_config()->add_metrics()->mutable_grouped_auc()->set_grouping_key("uid");
  Dataset ds(c, dir / "g.csv", 0, 1, 8);
  auto b = ds.Next();
  ASSERT_TRUE(b);
  const auto g = Longs(b->group_ids);
  const auto u1 = static_cast<std::int64_t>(Fnv1a64("u1") & 0x7fffffffffffffffULL);
  EXPECT_EQ(g, (std::vector<std::int64_t>{
                   u1, static_cast<std::int64_t>(Fnv1a64("u2") & 0x7fffffffffffffffULL), u1}));
}

// Criteo layout (label, 13 float dense, 26 int64 ids) written with Arrow C++: every row read once
// at world 2, with the label sum equal to the file's. (The read rate of this layout is measured by
// tools/bench/input.)
TEST(Parquet, CriteoLayoutReadsEveryRowOnce) {
  TempDir dir;
  const std::string path = dir / "criteo.parquet";
  const std::int64_t rows = 200000;
  const double expect_positives = bench::WriteCriteoParquet(path, rows);
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  for (int i = 0; i < 13; ++i) {
    auto* f = c.add_feature_configs();
    *f = Raw("int_" + std::to_string(i), "int_" + std::to_string(i));
    f->mutable_raw_feature()->set_normalizer("method=log1p");
  }
  for (int i = 0; i < 26; ++i) {
    auto* f = c.add_feature_configs();
    *f = Id("cat_" + std::to_string(i), "cat_" + std::to_string(i));
    f->mutable_id_feature()->set_hash_bucket_size(100000);
  }
  std::int64_t read = 0;
  double positives = 0;
  std::int64_t total = 0;
  for (int rank = 0; rank < 2; ++rank) {
    Dataset ds(c, path, rank, 2, 4096);
    total = ds.TotalRows();
    while (auto b = ds.Next()) {
      read += b->size;
      positives += b->labels.sum().item<double>();
      ASSERT_EQ(b->sparse.Values().numel(), 26 * b->size);
    }
  }
  EXPECT_EQ(read, total);
  EXPECT_EQ(total, rows);
  EXPECT_EQ(positives, expect_positives);
}

// label_fields: every entry is read (Batch::all_labels, Batch::labels the first);
// sample_weight_fields[0] into Batch::sample_weights; a missing weight names the column and row.
TEST(Dataset, ReadsEveryLabelAndTheSampleWeight) {
  TempDir dir;
  WriteParquet(
      dir / "w.parquet", {"clk", "buy", "w", "u"},
      {Int64s({1, 0, 1}), Doubles({0.5, 1.0, 0.0}), Doubles({2.0, 0.5, 3.0}), Int64s({3, 4, 5})},
      2);
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  c.mutable_data_config()->clear_label_fields();
  c.mutable_data_config()->add_label_fields("clk");
  c.mutable_data_config()->add_label_fields("buy");
  c.mutable_data_config()->add_sample_weight_fields("w");
  auto u = Id("u", "u");
  u.mutable_id_feature()->set_num_buckets(10);
  *c.add_feature_configs() = u;
  Dataset ds(c, dir / "w.parquet", 0, 1, 8);
  const auto batches = ReadAll(ds);
  ASSERT_EQ(batches.size(), 1U);
  const Batch& b = batches[0];
  ASSERT_EQ(b.all_labels.size(), 2U);
  EXPECT_EQ(Floats(b.labels), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(Floats(b.all_labels[0]), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(Floats(b.all_labels[1]), (std::vector<float>{0.5F, 1, 0}));
  EXPECT_EQ(Floats(b.sample_weights), (std::vector<float>{2, 0.5F, 3}));

  WriteText(dir / "w.csv", "clk,w,u\n1,2.5,3\n0,,4\n");
  c.mutable_data_config()->set_dataset_type(protos::CsvDataset);
  c.mutable_data_config()->clear_label_fields();
  c.mutable_data_config()->add_label_fields("clk");
  const auto e = ErrorOf([&] {
    Dataset t(c, dir / "w.csv", 0, 1, 8);
    ReadAll(t);
  });
  EXPECT_NE(e.find("sample weight 'w' is missing"), std::string::npos) << e;
  EXPECT_NE(e.find("w.csv row 1"), std::string::npos) << e;
}

// Parquet list<int64> / list<string> / list<double> columns are multi-value features: every
// item one value (a null list or null item: none; raw features: default_value), a raw list of
// value_dim numbers.
TEST(Parquet, ListColumnsAreMultiValueFeatures) {
  TempDir dir;
  arrow::ListBuilder ids(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
  auto* id_values = static_cast<arrow::Int64Builder*>(ids.value_builder());
  arrow::ListBuilder tags(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  auto* tag_values = static_cast<arrow::StringBuilder*>(tags.value_builder());
  arrow::ListBuilder vals(arrow::default_memory_pool(), std::make_shared<arrow::DoubleBuilder>());
  auto* val_values = static_cast<arrow::DoubleBuilder*>(vals.value_builder());
  // Row 0
  Check(ids.Append());
  Check(id_values->AppendValues({1, 2, 3}));
  Check(tags.Append());
  Check(tag_values->Append("a"));
  Check(tag_values->Append("b"));
  Check(vals.Append());
  Check(val_values->AppendValues({0.5, 1.5}));
  // Row 1
  Check(ids.AppendNull());
  Check(tags.Append());
  Check(tag_values->Append("c"));
  Check(vals.Append());
  Check(val_values->Append(2));
  Check(val_values->AppendNull());
  // Row 2
  Check(ids.Append());  // empty list
  Check(tags.AppendNull());
  Check(vals.Append());
  Check(val_values->AppendValues({3, 4}));
  // Row 3
  Check(ids.Append());
  Check(id_values->Append(7));
  Check(tags.Append());
  Check(tag_values->Append(""));
  Check(tag_values->Append("d"));
  Check(vals.AppendNull());
  WriteParquet(dir / "l.parquet", {"label", "ids", "tags", "vals"},
               {Int64s({1, 0, 1, 0}), ids.Finish().ValueOrDie(), tags.Finish().ValueOrDie(),
                vals.Finish().ValueOrDie()},
               3);
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  auto id = Id("ids", "ids");
  id.mutable_id_feature()->set_num_buckets(100);
  auto tag = Id("tags", "tags");
  tag.mutable_id_feature()->set_hash_bucket_size(1000);
  auto val = Raw("vals", "vals");
  val.mutable_raw_feature()->set_value_dim(2);
  val.mutable_raw_feature()->set_default_value("9");
  for (const auto& fc : {id, tag, val}) *c.add_feature_configs() = fc;
  Dataset ds(c, dir / "l.parquet", 0, 1, 8);
  const auto batches = ReadAll(ds);
  ASSERT_EQ(batches.size(), 1U);
  const Batch& b = batches[0];
  EXPECT_EQ(Longs(b.sparse["ids"].values), (std::vector<std::int64_t>{1, 2, 3, 7}));
  EXPECT_EQ(Longs(b.sparse["ids"].lengths), (std::vector<std::int64_t>{3, 0, 0, 1}));
  EXPECT_EQ(Longs(b.sparse["tags"].values),
            (std::vector<std::int64_t>{H("a", 1000), H("b", 1000), H("c", 1000), H("d", 1000)}));
  EXPECT_EQ(Longs(b.sparse["tags"].lengths), (std::vector<std::int64_t>{2, 1, 0, 1}));
  EXPECT_EQ(Floats(b.dense), (std::vector<float>{0.5F, 1.5F, 2, 9, 3, 4, 9, 9}));
  // A list of another length than value_dim names the feature.
  c.mutable_feature_configs(2)->mutable_raw_feature()->set_value_dim(3);
  const auto e = ErrorOf([&] {
    Dataset bad(c, dir / "l.parquet", 0, 1, 8);
    ReadAll(bad);
  });
  EXPECT_NE(e.find("feature 'vals': list [0.5, 1.5] holds 2 values but value_dim=3"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tzrec
