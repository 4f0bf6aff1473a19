// Feature transforms: hashing, num_buckets, vocab_list, separators, boundaries, normalizers (with
// feature generation, fg_mode FG_DAG), the fg-encoded input of fg_mode FG_NONE, and which column
// and transform a Dataset uses in each mode.
#include "transform.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cell.hpp"
#include "dataset_test_util.hpp"

namespace tzrec::input {
namespace {

// An id feature reading column `name`, embedding_dim 8 (separator: the default "\x1d").
protos::FeatureConfig IdFeature(const std::string& name) {
  protos::FeatureConfig fc;
  auto* id = fc.mutable_id_feature();
  id->set_feature_name(name);
  id->set_expression("user:" + name);
  id->set_embedding_dim(8);
  return fc;
}

protos::FeatureConfig RawFeature(const std::string& name) {
  protos::FeatureConfig fc;
  auto* raw = fc.mutable_raw_feature();
  raw->set_feature_name(name);
  raw->set_expression(name);
  return fc;
}

// data_config with feature generation (hashing, num_buckets, vocab_list, boundaries,
// normalizers): the transforms of the tests below except the FG_NONE ones.
protos::DataConfig FgDag() {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_DAG);
  return data;
}

// Shorthands for the transform of `fc` under FG_DAG.
FeatureTransform Fg(const protos::FeatureConfig& fc) {
  return FeatureTransform(fc, FgDag());
}

std::vector<std::int64_t> Ids(const FeatureTransform& t, const Cell& cell) {
  std::vector<std::int64_t> out;
  t.AppendIds(cell, &out);
  return out;
}

float Dense(const FeatureTransform& t, const Cell& cell) {
  float out = -1;
  t.WriteDense(cell, &out);
  return out;
}

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Hash, Fnv1a64KnownValues) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(Hash, IntsAndIntegralFloatsHashAsTheirDecimalText) {
  std::string buf;
  EXPECT_EQ(CellText(Cell::Int(12), &buf), "12");
  EXPECT_EQ(CellText(Cell::Int(-3), &buf), "-3");
  EXPECT_EQ(CellText(Cell::Float(3.0), &buf), "3");
  EXPECT_EQ(CellText(Cell::Float(0.25), &buf), "0.25");
  auto fc = IdFeature("c1");
  fc.mutable_id_feature()->set_hash_bucket_size(1000);
  const FeatureTransform t = Fg(fc);
  EXPECT_EQ(t.TableSize(), 1000);
  const auto expect = static_cast<std::int64_t>(Fnv1a64("12") % 1000);
  EXPECT_EQ(Ids(t, Cell::Int(12)), std::vector<std::int64_t>{expect});
  EXPECT_EQ(Ids(t, Cell::String("12")), std::vector<std::int64_t>{expect});
  EXPECT_EQ(Ids(t, Cell::Float(12.0)), std::vector<std::int64_t>{expect});
  EXPECT_EQ(Ids(t, Cell::String("68fd1e64")),
            std::vector<std::int64_t>{static_cast<std::int64_t>(Fnv1a64("68fd1e64") % 1000)});
  EXPECT_TRUE(Ids(t, Cell::Null()).empty());
}

TEST(Transform, HashWithSeparatorMapsEveryToken) {
  auto fc = IdFeature("tags");
  fc.mutable_id_feature()->set_hash_bucket_size(97);
  fc.mutable_id_feature()->set_separator("|");
  const FeatureTransform t = Fg(fc);
  const auto h = [](const char* s) { return static_cast<std::int64_t>(Fnv1a64(s) % 97); };
  EXPECT_EQ(Ids(t, Cell::String("a|bb|c")), (std::vector<std::int64_t>{h("a"), h("bb"), h("c")}));
  EXPECT_EQ(Ids(t, Cell::String("a||c")), (std::vector<std::int64_t>{h("a"), h("c")}));
}

TEST(Transform, NumBucketsTakesTheIntegerAndRejectsOutOfRange) {
  auto fc = IdFeature("uid");
  fc.mutable_id_feature()->set_num_buckets(10);
  const FeatureTransform t = Fg(fc);
  EXPECT_EQ(Ids(t, Cell::String("7")), std::vector<std::int64_t>{7});
  EXPECT_EQ(Ids(t, Cell::String(" 0 ")), std::vector<std::int64_t>{0});
  EXPECT_EQ(Ids(t, Cell::Int(9)), std::vector<std::int64_t>{9});
  EXPECT_EQ(Ids(t, Cell::Float(3.0)), std::vector<std::int64_t>{3});
  EXPECT_TRUE(Ids(t, Cell::Null()).empty());
  const auto big = ErrorOf([&] { Ids(t, Cell::Int(10)); });
  EXPECT_NE(big.find("'uid'"), std::string::npos) << big;
  EXPECT_NE(big.find("10"), std::string::npos) << big;
  EXPECT_NE(big.find("num_buckets=10"), std::string::npos) << big;
  const auto neg = ErrorOf([&] { Ids(t, Cell::String("-1")); });
  EXPECT_NE(neg.find("-1"), std::string::npos) << neg;
  const auto text = ErrorOf([&] { Ids(t, Cell::String("abc")); });
  EXPECT_NE(text.find("'abc' is not an integer"), std::string::npos) << text;
  const auto frac = ErrorOf([&] { Ids(t, Cell::Float(2.5)); });
  EXPECT_NE(frac.find("2.5"), std::string::npos) << frac;

  fc.mutable_id_feature()->set_separator(",");
  const FeatureTransform multi = Fg(fc);
  EXPECT_EQ(Ids(multi, Cell::String("1,2,9")), (std::vector<std::int64_t>{1, 2, 9}));
}

TEST(Transform, VocabListIndexPlusTwoOovOneEmptyZero) {
  auto fc = IdFeature("gender");
  for (const char* v : {"M", "F", "U"}) fc.mutable_id_feature()->add_vocab_list(v);
  const FeatureTransform t = Fg(fc);
  EXPECT_EQ(t.TableSize(), 5);
  EXPECT_EQ(Ids(t, Cell::String("M")), std::vector<std::int64_t>{2});
  EXPECT_EQ(Ids(t, Cell::String("U")), std::vector<std::int64_t>{4});
  EXPECT_EQ(Ids(t, Cell::String("X")), std::vector<std::int64_t>{1});
  EXPECT_TRUE(Ids(t, Cell::Null()).empty());
  fc.mutable_id_feature()->set_separator(",");
  const FeatureTransform multi = Fg(fc);
  EXPECT_EQ(Ids(multi, Cell::String("F,,Z,M")), (std::vector<std::int64_t>{3, 0, 1, 2}));
  fc.mutable_id_feature()->clear_vocab_list();
  for (const char* v : {"1", "2"}) fc.mutable_id_feature()->add_vocab_list(v);
  const FeatureTransform ints = Fg(fc);
  EXPECT_EQ(Ids(ints, Cell::Int(2)), std::vector<std::int64_t>{3});
}

TEST(Transform, IdFeatureNeedsExactlyOneTableSize) {
  auto fc = IdFeature("x");
  EXPECT_NE(ErrorOf([&] { Fg(fc); }).find("exactly one"), std::string::npos);
  fc.mutable_id_feature()->set_num_buckets(3);
  fc.mutable_id_feature()->set_hash_bucket_size(3);
  EXPECT_NE(ErrorOf([&] { Fg(fc); }).find("hash_bucket_size=3"), std::string::npos);
}

TEST(Transform, BoundariesBucketiseWithUpperBound) {
  auto fc = RawFeature("price");
  for (float b : {1.0F, 2.0F, 5.0F}) fc.mutable_raw_feature()->add_boundaries(b);
  fc.mutable_raw_feature()->set_default_value("1.5");
  const FeatureTransform t = Fg(fc);
  EXPECT_TRUE(t.Sparse());
  EXPECT_EQ(t.TableSize(), 4);
  EXPECT_EQ(Ids(t, Cell::Float(0.0)), std::vector<std::int64_t>{0});
  EXPECT_EQ(Ids(t, Cell::Float(1.0)), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(t, Cell::String("1.5")), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(t, Cell::Int(5)), std::vector<std::int64_t>{3});
  EXPECT_EQ(Ids(t, Cell::Float(7.0)), std::vector<std::int64_t>{3});
  EXPECT_EQ(Ids(t, Cell::Null()), std::vector<std::int64_t>{1});  // default 1.5
  // The normalizer is applied before bucketising: log(x+3) of 1 = log 4 = 1.386 → bucket 1.
  fc.mutable_raw_feature()->set_normalizer("method=expression,expr=log(x+3)");
  const FeatureTransform logged = Fg(fc);
  EXPECT_EQ(Ids(logged, Cell::Int(1)), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(logged, Cell::Int(100)), std::vector<std::int64_t>{2});  // log 103 = 4.63
  fc.mutable_raw_feature()->clear_boundaries();
  fc.mutable_raw_feature()->add_boundaries(2);
  fc.mutable_raw_feature()->add_boundaries(1);
  EXPECT_NE(ErrorOf([&] { Fg(fc); }).find("strictly increasing"), std::string::npos);
}

TEST(Transform, DenseNormalizers) {
  auto fc = RawFeature("x");
  auto* raw = fc.mutable_raw_feature();
  const FeatureTransform plain = Fg(fc);
  EXPECT_FALSE(plain.Sparse());
  EXPECT_EQ(plain.DenseDim(), 1);
  EXPECT_FLOAT_EQ(Dense(plain, Cell::String("2.5")), 2.5F);
  EXPECT_FLOAT_EQ(Dense(plain, Cell::Null()), 0.0F);
  raw->set_normalizer("method=log1p");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(1)), static_cast<float>(std::log(2.0)));
  raw->set_normalizer("method=expression,expr=log(x+3)");
  raw->set_default_value("1");
  const FeatureTransform log3 = Fg(fc);
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Int(1)), static_cast<float>(std::log(4.0)));
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Null()), static_cast<float>(std::log(4.0)));  // default 1
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Int(-2)), 0.0F);
  raw->set_normalizer("method=expression,expr=log(x + 0.5)");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Float(0.5)), 0.0F);
  raw->set_normalizer("method=expression,expr=x");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Float(-7)), -7.0F);
  raw->set_normalizer("method=minmax,min=0,max=10");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(5)), 0.5F);
  raw->set_normalizer("method=zscore,mean=2,std=4");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(10)), 2.0F);
  raw->set_normalizer("method=zscore,mean=2,standard_deviation=4");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(10)), 2.0F);
  raw->set_normalizer("method=log10,threshold=1,default=-1");
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(1000)), 3.0F);
  EXPECT_FLOAT_EQ(Dense(Fg(fc), Cell::Int(1)), -1.0F);
}

// tzrec::ParseNormalizer / Normalizer::Apply (include/tzrec/config/config.hpp), against values
// computed by hand: log10 with TorchEasyRec fg's defaults threshold=1e-10, default=-10, and with
// explicit ones; zscore with standard_deviation= (TorchEasyRec's key) and std= (kept).
TEST(Transform, NormalizerLog10AndStandardDeviation) {
  const Normalizer log10 = ParseNormalizer("method=log10");
  EXPECT_EQ(log10.method, "log10");
  EXPECT_DOUBLE_EQ(log10.Apply(100.0), 2.0);
  EXPECT_DOUBLE_EQ(log10.Apply(0.5), std::log10(0.5));
  EXPECT_DOUBLE_EQ(log10.Apply(1e-10), -10.0);  // x <= threshold → default
  EXPECT_DOUBLE_EQ(log10.Apply(0.0), -10.0);
  EXPECT_DOUBLE_EQ(log10.Apply(-5.0), -10.0);
  const Normalizer set = ParseNormalizer("method=log10,threshold=10,default=0.25");
  EXPECT_DOUBLE_EQ(set.Apply(10.0), 0.25);
  EXPECT_DOUBLE_EQ(set.Apply(10.5), std::log10(10.5));
  EXPECT_DOUBLE_EQ(set.Apply(1e4), 4.0);
  const Normalizer z = ParseNormalizer("method=zscore,mean=1.5,standard_deviation=0.5");
  EXPECT_DOUBLE_EQ(z.Apply(2.5), 2.0);
  EXPECT_DOUBLE_EQ(z.Apply(1.0), -1.0);
  EXPECT_DOUBLE_EQ(ParseNormalizer("method=zscore,mean=1.5,std=0.5").Apply(2.5), 2.0);
  // Through a dense column: the normalised value reaches the batch.
  auto fc = RawFeature("v");
  fc.mutable_raw_feature()->set_normalizer("method=log10,threshold=1,default=-3");
  float out[2];
  const Cell cells[2] = {Cell::Float(0.01), Cell::Int(100)};
  Fg(fc).WriteDenseColumn(cells, 2, out, 1);
  EXPECT_FLOAT_EQ(out[0], -3.0F);
  EXPECT_FLOAT_EQ(out[1], 2.0F);
  // Refusals name the text and the parameter.
  const auto bad = ErrorOf([] { ParseNormalizer("method=log10,threshold=abc"); });
  EXPECT_NE(bad.find("threshold=abc is not a number"), std::string::npos) << bad;
  const auto zero = ErrorOf([] { ParseNormalizer("method=zscore,mean=0,standard_deviation=0"); });
  EXPECT_NE(zero.find("std must be > 0"), std::string::npos) << zero;
  const auto missing = ErrorOf([] { ParseNormalizer("method=zscore,mean=0"); });
  EXPECT_NE(missing.find("needs standard_deviation="), std::string::npos) << missing;
  const auto unknown = ErrorOf([] { ParseNormalizer("method=log10,base=2"); });
  EXPECT_NE(unknown.find("unknown parameter 'base'"), std::string::npos) << unknown;
}

TEST(Transform, DenseValueDimSplitsTheCell) {
  auto fc = RawFeature("emb");
  fc.mutable_raw_feature()->set_value_dim(3);
  fc.mutable_raw_feature()->set_default_value("9");
  fc.mutable_raw_feature()->set_separator(",");
  const FeatureTransform t = Fg(fc);
  EXPECT_EQ(t.DenseDim(), 3);
  float out[3];
  t.WriteDense(Cell::String("1,2.5,-1"), out);
  EXPECT_FLOAT_EQ(out[0], 1.0F);
  EXPECT_FLOAT_EQ(out[1], 2.5F);
  EXPECT_FLOAT_EQ(out[2], -1.0F);
  t.WriteDense(Cell::Null(), out);
  EXPECT_FLOAT_EQ(out[2], 9.0F);
  const auto e = ErrorOf([&] { t.WriteDense(Cell::String("1,2"), out); });
  EXPECT_NE(e.find("holds 2 values"), std::string::npos) << e;
  EXPECT_NE(e.find("value_dim=3"), std::string::npos) << e;
}

TEST(Transform, BadNumbersAndNormalizersAreNamed) {
  auto fc = RawFeature("int_3");
  auto* raw = fc.mutable_raw_feature();
  const FeatureTransform t = Fg(fc);
  const auto e = ErrorOf([&] { Dense(t, Cell::String("12x")); });
  EXPECT_NE(e.find("'int_3'"), std::string::npos) << e;
  EXPECT_NE(e.find("'12x' is not a number"), std::string::npos) << e;
  raw->set_normalizer("method=expression,expr=sqrt(x)");
  const auto n = ErrorOf([&] { Fg(fc); });
  EXPECT_NE(n.find("'int_3'"), std::string::npos) << n;
  EXPECT_NE(n.find("sqrt(x)"), std::string::npos) << n;
  EXPECT_NE(n.find("log(x+C)"), std::string::npos) << n;
  raw->set_normalizer("method=minmax,min=1");
  EXPECT_NE(ErrorOf([&] { Fg(fc); }).find("needs max"), std::string::npos);
  raw->set_normalizer("method=boxcox");
  EXPECT_NE(ErrorOf([&] { Fg(fc); }).find("unknown method 'boxcox'"), std::string::npos);
}

// fg_mode FG_NONE (TorchEasyRec's default; tzrec/features/*.py `_parse_fg_encoded_*`): the cells
// are already feature-generated. Ids are integers taken as they are (no hashing, no vocab) and
// checked against the table size; multi-value cells are split on
// data_config.fg_encoded_multival_sep (default "\x03"), not on the feature's separator; dense
// values skip the normalizer; raw features with boundaries hold bucket ids.
TEST(Transform, FgNoneSplitsByMultivalSep) {
  const protos::DataConfig none;
  ASSERT_EQ(none.fg_mode(), protos::FG_NONE);
  ASSERT_EQ(none.fg_encoded_multival_sep(), "\x03");
  auto fc = IdFeature("tags");
  fc.mutable_id_feature()->set_hash_bucket_size(100);
  fc.mutable_id_feature()->set_separator("|");  // FG_NORMAL / FG_DAG only
  const FeatureTransform t(fc, none);
  EXPECT_TRUE(t.Sparse());
  EXPECT_EQ(t.TableSize(), 100);
  EXPECT_EQ(Ids(t, Cell::String("3\x03"
                                "7\x03"
                                "99")),
            (std::vector<std::int64_t>{3, 7, 99}));
  EXPECT_EQ(Ids(t, Cell::String("42")), std::vector<std::int64_t>{42});
  EXPECT_EQ(Ids(t, Cell::Int(5)), std::vector<std::int64_t>{5});
  EXPECT_EQ(Ids(t, Cell::String("1\x03\x03"
                                "2")),
            (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(Ids(t, Cell::Null()).empty());
  const auto pipe = ErrorOf([&] { Ids(t, Cell::String("1|2")); });
  EXPECT_NE(pipe.find("feature 'tags'"), std::string::npos) << pipe;
  EXPECT_NE(pipe.find("'1|2' is not an integer"), std::string::npos) << pipe;
  const auto big = ErrorOf([&] {
    Ids(t, Cell::String("3\x03"
                        "100"));
  });
  EXPECT_NE(big.find("feature 'tags'"), std::string::npos) << big;
  EXPECT_NE(big.find("id 100 is outside [0, num_buckets=100)"), std::string::npos) << big;
  const auto neg = ErrorOf([&] { Ids(t, Cell::Int(-1)); });
  EXPECT_NE(neg.find("feature 'tags'"), std::string::npos) << neg;
  EXPECT_NE(neg.find("id -1 is outside"), std::string::npos) << neg;
  const auto text = ErrorOf([&] { Ids(t, Cell::String("abc")); });
  EXPECT_NE(text.find("feature 'tags'"), std::string::npos) << text;
  EXPECT_NE(text.find("'abc' is not an integer"), std::string::npos) << text;
  const auto frac = ErrorOf([&] { Ids(t, Cell::Float(2.5)); });
  EXPECT_NE(frac.find("2.5"), std::string::npos) << frac;
  EXPECT_NE(frac.find("not an integer"), std::string::npos) << frac;

  protos::DataConfig comma;
  comma.set_fg_encoded_multival_sep(",");
  EXPECT_EQ(Ids(FeatureTransform(fc, comma), Cell::String("1,2,9")),
            (std::vector<std::int64_t>{1, 2, 9}));

  // vocab_list: the encoded ids index the table of len + 2 rows; a word is an error.
  auto vocab = IdFeature("g");
  for (const char* v : {"M", "F"}) vocab.mutable_id_feature()->add_vocab_list(v);
  const FeatureTransform encoded(vocab, none);
  EXPECT_EQ(encoded.TableSize(), 4);
  EXPECT_EQ(Ids(encoded, Cell::String("3")), std::vector<std::int64_t>{3});
  EXPECT_NE(ErrorOf([&] { Ids(encoded, Cell::String("M")); }).find("'M' is not an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { Ids(encoded, Cell::Int(4)); }).find("id 4 is outside"),
            std::string::npos);

  // Raw features: no normalizer, values split on the multi-value separator, missing → 0.
  auto raw = RawFeature("price");
  raw.mutable_raw_feature()->set_normalizer("method=log1p");
  raw.mutable_raw_feature()->set_default_value("7");
  const FeatureTransform dense(raw, none);
  EXPECT_FALSE(dense.Sparse());
  EXPECT_FLOAT_EQ(Dense(dense, Cell::String("2.5")), 2.5F);
  EXPECT_FLOAT_EQ(Dense(dense, Cell::Float(-0.5)), -0.5F);
  EXPECT_FLOAT_EQ(Dense(dense, Cell::Null()), 0.0F);
  raw.mutable_raw_feature()->set_value_dim(2);
  raw.mutable_raw_feature()->set_separator(",");
  float out[2];
  FeatureTransform(raw, none).WriteDense(Cell::String("1.5\x03-2"), out);
  EXPECT_FLOAT_EQ(out[0], 1.5F);
  EXPECT_FLOAT_EQ(out[1], -2.0F);
  raw.mutable_raw_feature()->set_value_dim(1);
  for (float b : {1.0F, 2.0F, 5.0F}) raw.mutable_raw_feature()->add_boundaries(b);
  const FeatureTransform buckets(raw, none);
  EXPECT_TRUE(buckets.Sparse());
  EXPECT_EQ(buckets.TableSize(), 4);
  EXPECT_EQ(Ids(buckets, Cell::String("3")), std::vector<std::int64_t>{3});  // not bucketised
  EXPECT_NE(ErrorOf([&] { Ids(buckets, Cell::Int(4)); }).find("id 4 is outside"),
            std::string::npos);
}

// A Dataset over the same rows in CSV and Parquet: with FG_NONE the features read the columns
// named by their feature_name (user, price) as they are; with FG_DAG they read their
// expression's columns (raw_user, raw_price), hash the ids and normalise the dense values.
TEST(Transform, FgModeChoosesColumnAndTransform) {
  input_test::TempDir dir;
  input_test::WriteText(dir / "a.csv",
                        "label,user,price,raw_user,raw_price\n"
                        "1,7,2.5,alice,3\n"
                        "0,1\x03"
                        "4,-0.5,bob,0\n");
  input_test::WriteParquet(
      dir / "a.parquet", {"label", "user", "price", "raw_user", "raw_price"},
      {input_test::Int64s({1, 0}), input_test::Int64s({7, 1}), input_test::Doubles({2.5, -0.5}),
       input_test::Strings<arrow::StringBuilder>({"alice", "bob"}), input_test::Doubles({3, 0})},
      10);
  input_test::WriteText(dir / "raw_only.csv", "label,raw_user,raw_price\n1,alice,3\n");
  auto read = [](protos::DatasetType type, protos::FgMode mode, const std::string& path) {
    PipelineConfig c = input_test::FgConfig(type);
    c.mutable_data_config()->set_fg_mode(mode);
    auto* user = c.add_feature_configs();
    *user = input_test::Id("user", "raw_user");
    user->mutable_id_feature()->set_hash_bucket_size(100);
    auto* price = c.add_feature_configs();
    *price = input_test::Raw("price", "raw_price");
    price->mutable_raw_feature()->set_normalizer("method=log1p");
    Dataset ds(c, path, 0, 1, 8);
    auto b = ds.Next();
    if (!b) throw std::runtime_error("no batch from " + path);
    return std::move(*b);
  };
  using input_test::Floats;
  using input_test::H;
  using input_test::Longs;
  for (const bool parquet : {false, true}) {
    const auto type = parquet ? protos::ParquetDataset : protos::CsvDataset;
    const std::string path = dir / (parquet ? "a.parquet" : "a.csv");
    const Batch none = read(type, protos::FG_NONE, path);
    EXPECT_EQ(Longs(none.sparse["user"].values),
              parquet ? (std::vector<std::int64_t>{7, 1}) : (std::vector<std::int64_t>{7, 1, 4}))
        << path;
    EXPECT_EQ(Floats(none.dense), (std::vector<float>{2.5F, -0.5F})) << path;
    const Batch dag = read(type, protos::FG_DAG, path);
    EXPECT_EQ(Longs(dag.sparse["user"].values),
              (std::vector<std::int64_t>{H("alice", 100), H("bob", 100)}))
        << path;
    const auto dense = Floats(dag.dense);
    ASSERT_EQ(dense.size(), 2U) << path;
    EXPECT_FLOAT_EQ(dense[0], static_cast<float>(std::log(4.0))) << path;  // log1p(3)
    EXPECT_FLOAT_EQ(dense[1], 0.0F) << path;                               // log1p(0)
    EXPECT_EQ(Floats(dag.labels), (std::vector<float>{1.0F, 0.0F})) << path;
  }
  // Without the encoded columns only FG_DAG can read the file.
  const std::string raw_only = dir / "raw_only.csv";
  const auto e = ErrorOf([&] { read(protos::CsvDataset, protos::FG_NONE, raw_only); });
  EXPECT_NE(e.find("column 'user' (needed by feature 'user')"), std::string::npos) << e;
  EXPECT_EQ(Longs(read(protos::CsvDataset, protos::FG_DAG, raw_only).sparse["user"].values),
            std::vector<std::int64_t>{H("alice", 100)});
}

TEST(Parse, StrictNumbers) {
  EXPECT_EQ(ParseInteger("42"), 42);
  EXPECT_EQ(ParseInteger("+42"), 42);
  EXPECT_EQ(ParseInteger("1e3"), 1000);
  EXPECT_EQ(ParseInteger("4.0"), 4);
  EXPECT_FALSE(ParseInteger("4.5"));
  EXPECT_FALSE(ParseInteger(""));
  EXPECT_FALSE(ParseInteger("0x10"));
  EXPECT_EQ(ParseDouble(" -2.5 "), -2.5);
  EXPECT_FALSE(ParseDouble("1,5"));
}

}  // namespace
}  // namespace tzrec::input
