// Dataset on CSV/TSV files the tests write (RFC 4180 quotes, header, Criteo TSV, the real Criteo
// sample over three ranks) and the error messages of every reader (missing columns and files,
// bad values). Parquet reading, rank split, resume and epochs: dataset_parquet_test.cpp.
#include <ATen/core/Tensor.h>
#include <ATen/ops/isfinite.h>
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

// ------------------------------------------------------------------------------------------------

TEST(Csv, SplitRecordHandlesRfc4180Quotes) {
  std::string line = "a,\"b,c\",,\"say \"\"hi\"\"\",\"\"\r";
  std::vector<std::string_view> f;
  input::SplitRecord(line.data(), line.data() + line.size(), ',', &f);
  ASSERT_EQ(f.size(), 5U);
  EXPECT_EQ(f[0], "a");
  EXPECT_EQ(f[1], "b,c");
  EXPECT_EQ(f[2], "");
  EXPECT_EQ(f[3], "say \"hi\"");
  EXPECT_EQ(f[4], "");
  std::string tsv = "1\t\t\tx\t";
  input::SplitRecord(tsv.data(), tsv.data() + tsv.size(), '\t', &f);
  EXPECT_EQ(f.size(), 5U);
  EXPECT_EQ(f[3], "x");
  std::string bad = "\"ab\"c,d";
  EXPECT_NE(ErrorOf([&] {
              input::SplitRecord(bad.data(), bad.data() + bad.size(), ',', &f);
            }).find("after its closing quote"),
            std::string::npos);
}

TEST(Csv, HeaderQuotedFieldsAndTransformsGiveExactBatches) {
  TempDir dir;
  WriteText(dir / "a.csv",
            "label,user,price,title,tags\n"
            "1,7,2.5,\"Hello, world\",a|b\n"
            "\n"
            "0,3,,\"He said \"\"hi\"\"\nover two lines\",\n"
            "1,,10,plain,c");  // no newline at the end
  Dataset ds(CsvConfig(), dir / "a.csv", 0, 1, 2);
  EXPECT_EQ(ds.TotalRows(), 3);
  EXPECT_EQ(ds.RowsAssigned(), 3);
  EXPECT_EQ(ds.SparseFeatureNames(), (std::vector<std::string>{"user", "title", "tags"}));
  EXPECT_EQ(ds.SparseNumEmbeddings(), (std::vector<std::int64_t>{10, 100, 50}));
  EXPECT_EQ(ds.DenseDim(), 1);
  auto b1 = ds.Next();
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->size, 2);
  EXPECT_EQ(b1->sparse.Keys(), ds.SparseFeatureNames());
  EXPECT_EQ(b1->sparse.Stride(), 2);
  EXPECT_EQ(Longs(b1->sparse.Lengths()), (std::vector<std::int64_t>{1, 1, 1, 1, 2, 0}));
  EXPECT_EQ(Longs(b1->sparse.Values()),
            (std::vector<std::int64_t>{7, 3, H("Hello, world", 100),
                                       H("He said \"hi\"\nover two lines", 100), H("a", 50),
                                       H("b", 50)}));
  EXPECT_EQ(b1->dense.sizes(), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(Floats(b1->dense), (std::vector<float>{2.5F, 1.0F}));  // missing price → default 1
  EXPECT_EQ(Floats(b1->labels), (std::vector<float>{1.0F, 0.0F}));
  EXPECT_FALSE(b1->group_ids.defined());
  EXPECT_EQ(ds.Cursor().consumed, (std::vector<RowRange>{{0, 2}}));
  auto b2 = ds.Next();
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->size, 1);
  EXPECT_EQ(Longs(b2->sparse.Lengths()), (std::vector<std::int64_t>{0, 1, 1}));
  EXPECT_EQ(Longs(b2->sparse.Values()), (std::vector<std::int64_t>{H("plain", 100), H("c", 50)}));
  EXPECT_EQ(Floats(b2->dense), (std::vector<float>{10.0F}));
  EXPECT_FALSE(ds.Next());
  EXPECT_FALSE(ds.Next());
  const auto cur = ds.Cursor();
  EXPECT_EQ(cur.total_rows, 3);
  EXPECT_EQ(cur.consumed, (std::vector<RowRange>{{0, 3}}));
}

PipelineConfig CriteoConfig() {
  PipelineConfig c = FgConfig(protos::CsvDataset);
  auto* data = c.mutable_data_config();
  data->set_delimiter("\t");
  data->set_with_header(false);
  data->add_input_fields()->set_input_name("label");
  for (int i = 0; i < 13; ++i) data->add_input_fields()->set_input_name("int_" + std::to_string(i));
  for (int i = 0; i < 26; ++i) data->add_input_fields()->set_input_name("cat_" + std::to_string(i));
  for (int i = 0; i < 13; ++i) {
    auto* f = c.add_feature_configs();
    *f = Raw("int_" + std::to_string(i), "int_" + std::to_string(i));
    f->mutable_raw_feature()->set_normalizer("method=expression,expr=log(x+3)");
  }
  for (int i = 0; i < 26; ++i) {
    auto* f = c.add_feature_configs();
    *f = Id("cat_" + std::to_string(i), "cat_" + std::to_string(i));
    f->mutable_id_feature()->set_hash_bucket_size(1000);
  }
  return c;
}

TEST(Csv, CriteoTsvLineWithEmptyFields) {
  TempDir dir;
  // The first line of Criteo's train.txt: int_11 (I12) and cat_21 (C22) are empty.
  const std::string line =
      "0\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t"
      "25c83c98\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t"
      "1adce6ef\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t"
      "3a171ecb\tc5c50484\te8b83407\t9727dd16\n";
  // A row whose trailing fields are all empty (kept as empty fields), and one that stops early.
  std::string sparse_row = "1";
  for (int i = 0; i < 39; ++i) sparse_row += "\t";
  WriteText(dir / "day.txt", line + sparse_row + "\n" + "1\t7\n");
  Dataset ds(CriteoConfig(), dir / "day.txt", 0, 1, 8);
  auto b = ds.Next();
  ASSERT_TRUE(b);
  ASSERT_EQ(b->size, 3);
  EXPECT_EQ(ds.DenseDim(), 13);
  EXPECT_EQ(Floats(b->labels), (std::vector<float>{0, 1, 1}));
  const auto dense = Floats(b->dense);
  EXPECT_FLOAT_EQ(dense[0], static_cast<float>(std::log(1.0 + 3)));
  EXPECT_FLOAT_EQ(dense[4], static_cast<float>(std::log(1382.0 + 3)));
  EXPECT_FLOAT_EQ(dense[11], static_cast<float>(std::log(0.0 + 3)));  // empty I12 → default 0
  EXPECT_FLOAT_EQ(dense[12], static_cast<float>(std::log(2.0 + 3)));
  for (int k = 0; k < 13; ++k) EXPECT_FLOAT_EQ(dense[13 + k], static_cast<float>(std::log(3.0)));
  EXPECT_FLOAT_EQ(dense[26], static_cast<float>(std::log(7.0 + 3)));
  const auto lengths = Longs(b->sparse.Lengths());  // [26 * 3], feature-major
  ASSERT_EQ(lengths.size(), 78U);
  for (int f = 0; f < 26; ++f) {
    EXPECT_EQ(lengths[static_cast<std::size_t>(f * 3)], f == 21 ? 0 : 1) << f;
    EXPECT_EQ(lengths[static_cast<std::size_t>(f * 3 + 1)], 0) << f;
    EXPECT_EQ(lengths[static_cast<std::size_t>(f * 3 + 2)], 0) << f;
  }
  EXPECT_EQ(Longs(b->sparse["cat_0"].values), std::vector<std::int64_t>{H("68fd1e64", 1000)});
  EXPECT_EQ(Longs(b->sparse["cat_25"].values), std::vector<std::int64_t>{H("9727dd16", 1000)});
  EXPECT_FALSE(ds.Next());
}

TEST(Csv, RealCriteo10kSplitOverThreeRanks) {
  // TZRUN_SHARED_DIR overrides ../shared, as for the integration tests
  // (tests/integration/conftest.py).
  const char* shared = std::getenv("TZRUN_SHARED_DIR");
  const std::string data = shared != nullptr ? std::string(shared) + "/data" : TZREC_SHARED_DATA;
  const std::string found = data + "/criteo_dac_10k/train-10k.txt";
  if (!fs::exists(found)) {
    // The ci test preset requires the reference data: a skip there would hide a missing check.
    const char* required = std::getenv("TZRUN_REQUIRE_SHARED_DATA");
    if (required != nullptr && std::string(required) == "1") {
      FAIL() << found << " is absent and TZRUN_REQUIRE_SHARED_DATA=1";
    }
    GTEST_SKIP() << found << " is absent (../shared/data beside the repo)";
  }
  double positives = 0;
  std::int64_t rows = 0;
  for (int rank = 0; rank < 3; ++rank) {
    Dataset ds(CriteoConfig(), found, rank, 3, 1000);
    EXPECT_EQ(ds.TotalRows(), 10000);
    for (auto& b : ReadAll(ds)) {
      rows += b.size;
      positives += b.labels.sum().item<double>();
      EXPECT_TRUE(at::isfinite(b.dense).all().item<bool>());
    }
  }
  EXPECT_EQ(rows, 10000);
  EXPECT_EQ(positives, 2182);  // DATA.md
}

// ------------------------------------------------------------------------------------------------

TEST(Errors, MissingColumnNamesColumnFileAndAvailableColumns) {
  TempDir dir;
  WriteTypedParquet(dir / "a.parquet", 0, 3, 4);
  auto c = ParquetConfig();
  auto extra = Id("price", "item:nope");
  extra.mutable_id_feature()->set_hash_bucket_size(5);
  *c.add_feature_configs() = extra;
  const auto e = ErrorOf([&] { Dataset ds(c, dir / "a.parquet", 0, 1, 4); });
  EXPECT_NE(e.find("column 'nope'"), std::string::npos) << e;
  EXPECT_NE(e.find("feature 'price'"), std::string::npos) << e;
  EXPECT_NE(e.find(dir / "a.parquet"), std::string::npos) << e;
  EXPECT_NE(e.find("'rid', 'label', 'f', 's', 'ls', 'd'"), std::string::npos) << e;

  WriteText(dir / "a.csv", "label,user\n1,2\n");
  auto t = CsvConfig();
  const auto ce = ErrorOf([&] { Dataset ds(t, dir / "a.csv", 0, 1, 4); });
  EXPECT_NE(ce.find("column 'price'"), std::string::npos) << ce;
  EXPECT_NE(ce.find("['label', 'user']"), std::string::npos) << ce;
}

TEST(Errors, MissingFilesAndGlobsMatchingNothing) {
  TempDir dir;
  const auto e = ErrorOf([&] { Dataset ds(ParquetConfig(), dir / "*.parquet", 0, 1, 4); });
  EXPECT_NE(e.find("'" + dir / "*.parquet" + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("matches no file"), std::string::npos) << e;
  const auto m = ErrorOf([&] { Dataset ds(ParquetConfig(), dir / "missing.parquet", 0, 1, 4); });
  EXPECT_NE(m.find("missing.parquet"), std::string::npos) << m;
  WriteText(dir / "text.parquet", "not parquet\n");
  const auto np = ErrorOf([&] { Dataset ds(ParquetConfig(), dir / "text.parquet", 0, 1, 4); });
  EXPECT_NE(np.find("not a readable Parquet file"), std::string::npos) << np;
  auto c = ParquetConfig();
  c.mutable_data_config()->set_dataset_type(protos::OdpsDataset);
  EXPECT_NE(ErrorOf([&] { Dataset ds(c, dir / "text.parquet", 0, 1, 4); }).find("'OdpsDataset'"),
            std::string::npos);
  c.mutable_data_config()->set_dataset_type(protos::CsvDataset);
  c.mutable_data_config()->set_with_header(false);
  EXPECT_NE(ErrorOf([&] { Dataset ds(c, dir / "text.parquet", 0, 1, 4); }).find("input_fields"),
            std::string::npos);
}

TEST(Errors, BadValuesNameFileRowAndValue) {
  TempDir dir;
  WriteText(dir / "a.csv", "label,user,price,title,tags\n1,1,2,t,a\n1,2,abc,t,a\n");
  for (std::int64_t workers : {0, 2}) {
    auto c = CsvConfig();
    c.mutable_data_config()->set_num_workers(static_cast<std::uint32_t>(workers));
    Dataset ds(c, dir / "a.csv", 0, 1, 1);
    ASSERT_TRUE(ds.Next());  // row 0 is fine
    const auto e = ErrorOf([&] { ds.Next(); });
    EXPECT_NE(e.find(dir / "a.csv" + " row 1"), std::string::npos) << e;
    EXPECT_NE(e.find("'price'"), std::string::npos) << e;
    EXPECT_NE(e.find("'abc' is not a number"), std::string::npos) << e;
  }
  WriteParquet(dir / "b.parquet", {"label", "rid"}, {Int64s({1, 0}), Int64s({5, 1000})}, 10);
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  auto f = Id("rid", "rid");
  f.mutable_id_feature()->set_num_buckets(1000);
  *c.add_feature_configs() = f;
  Dataset ds(c, dir / "b.parquet", 0, 1, 4);
  const auto e = ErrorOf([&] { ds.Next(); });
  EXPECT_NE(e.find("b.parquet row 1"), std::string::npos) << e;
  EXPECT_NE(e.find("id 1000 is outside [0, num_buckets=1000)"), std::string::npos) << e;
  WriteText(dir / "c.csv", "label,user,price,title,tags\n,1,2,t,a\n");
  Dataset nolabel(CsvConfig(), dir / "c.csv", 0, 1, 4);
  EXPECT_NE(ErrorOf([&] { nolabel.Next(); }).find("label 'label' is missing"), std::string::npos);
  WriteText(dir / "d.csv", "label,user,price,title,tags\n1,1,2,t,a,extra\n");
  Dataset wide(CsvConfig(), dir / "d.csv", 0, 1, 4);
  EXPECT_NE(ErrorOf([&] { wide.Next(); }).find("has 6 fields but 5 columns"), std::string::npos);
}

}  // namespace
}  // namespace tzrec
