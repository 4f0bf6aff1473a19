// Feature transforms: hashing, num_buckets, vocab_list, separators, boundaries, normalizers.
#include "transform.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cell.hpp"

namespace tzrec::input {
namespace {

FeatureConfig IdFeature(const std::string& name) {
  FeatureConfig fc;
  fc.kind = FeatureKind::kId;
  fc.feature_name = name;
  fc.expression = "user:" + name;
  fc.embedding_dim = 8;
  return fc;
}

FeatureConfig RawFeature(const std::string& name) {
  FeatureConfig fc;
  fc.kind = FeatureKind::kRaw;
  fc.feature_name = name;
  fc.expression = name;
  return fc;
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
  fc.hash_bucket_size = 1000;
  FeatureTransform t(fc);
  EXPECT_EQ(t.table_size(), 1000);
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
  fc.hash_bucket_size = 97;
  fc.separator = "|";
  FeatureTransform t(fc);
  const auto h = [](const char* s) { return static_cast<std::int64_t>(Fnv1a64(s) % 97); };
  EXPECT_EQ(Ids(t, Cell::String("a|bb|c")), (std::vector<std::int64_t>{h("a"), h("bb"), h("c")}));
  EXPECT_EQ(Ids(t, Cell::String("a||c")), (std::vector<std::int64_t>{h("a"), h("c")}));
}

TEST(Transform, NumBucketsTakesTheIntegerAndRejectsOutOfRange) {
  auto fc = IdFeature("uid");
  fc.num_buckets = 10;
  FeatureTransform t(fc);
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

  fc.separator = ",";
  FeatureTransform multi(fc);
  EXPECT_EQ(Ids(multi, Cell::String("1,2,9")), (std::vector<std::int64_t>{1, 2, 9}));
}

TEST(Transform, VocabListIndexPlusTwoOovOneEmptyZero) {
  auto fc = IdFeature("gender");
  fc.vocab_list = {"M", "F", "U"};
  FeatureTransform t(fc);
  EXPECT_EQ(t.table_size(), 5);
  EXPECT_EQ(Ids(t, Cell::String("M")), std::vector<std::int64_t>{2});
  EXPECT_EQ(Ids(t, Cell::String("U")), std::vector<std::int64_t>{4});
  EXPECT_EQ(Ids(t, Cell::String("X")), std::vector<std::int64_t>{1});
  EXPECT_TRUE(Ids(t, Cell::Null()).empty());
  fc.separator = ",";
  FeatureTransform multi(fc);
  EXPECT_EQ(Ids(multi, Cell::String("F,,Z,M")), (std::vector<std::int64_t>{3, 0, 1, 2}));
  fc.vocab_list = {"1", "2"};
  FeatureTransform ints(fc);
  EXPECT_EQ(Ids(ints, Cell::Int(2)), std::vector<std::int64_t>{3});
}

TEST(Transform, IdFeatureNeedsExactlyOneTableSize) {
  auto fc = IdFeature("x");
  EXPECT_NE(ErrorOf([&] { FeatureTransform t(fc); }).find("exactly one"), std::string::npos);
  fc.num_buckets = 3;
  fc.hash_bucket_size = 3;
  EXPECT_NE(ErrorOf([&] { FeatureTransform t(fc); }).find("hash_bucket_size=3"), std::string::npos);
}

TEST(Transform, BoundariesBucketiseWithUpperBound) {
  auto fc = RawFeature("price");
  fc.boundaries = {1, 2, 5};
  fc.default_value = 1.5;
  FeatureTransform t(fc);
  EXPECT_TRUE(t.sparse());
  EXPECT_EQ(t.table_size(), 4);
  EXPECT_EQ(Ids(t, Cell::Float(0.0)), std::vector<std::int64_t>{0});
  EXPECT_EQ(Ids(t, Cell::Float(1.0)), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(t, Cell::String("1.5")), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(t, Cell::Int(5)), std::vector<std::int64_t>{3});
  EXPECT_EQ(Ids(t, Cell::Float(7.0)), std::vector<std::int64_t>{3});
  EXPECT_EQ(Ids(t, Cell::Null()), std::vector<std::int64_t>{1});  // default 1.5
  // The normalizer is applied before bucketising: log(x+3) of 1 = log 4 = 1.386 → bucket 1.
  fc.normalizer = "method=expression,expr=log(x+3)";
  FeatureTransform logged(fc);
  EXPECT_EQ(Ids(logged, Cell::Int(1)), std::vector<std::int64_t>{1});
  EXPECT_EQ(Ids(logged, Cell::Int(100)), std::vector<std::int64_t>{2});  // log 103 = 4.63
  fc.boundaries = {2, 1};
  EXPECT_NE(ErrorOf([&] { FeatureTransform bad(fc); }).find("strictly increasing"),
            std::string::npos);
}

TEST(Transform, DenseNormalizers) {
  auto fc = RawFeature("x");
  FeatureTransform plain(fc);
  EXPECT_FALSE(plain.sparse());
  EXPECT_EQ(plain.dense_dim(), 1);
  EXPECT_FLOAT_EQ(Dense(plain, Cell::String("2.5")), 2.5F);
  EXPECT_FLOAT_EQ(Dense(plain, Cell::Null()), 0.0F);
  fc.normalizer = "method=log1p";
  EXPECT_FLOAT_EQ(Dense(FeatureTransform(fc), Cell::Int(1)), static_cast<float>(std::log(2.0)));
  fc.normalizer = "method=expression,expr=log(x+3)";
  fc.default_value = 1;
  FeatureTransform log3(fc);
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Int(1)), static_cast<float>(std::log(4.0)));
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Null()), static_cast<float>(std::log(4.0)));  // default 1
  EXPECT_FLOAT_EQ(Dense(log3, Cell::Int(-2)), 0.0F);
  fc.normalizer = "method=expression, expr=log(x + 0.5)";
  EXPECT_FLOAT_EQ(Dense(FeatureTransform(fc), Cell::Float(0.5)), 0.0F);
  fc.normalizer = "method=expression,expr=x";
  EXPECT_FLOAT_EQ(Dense(FeatureTransform(fc), Cell::Float(-7)), -7.0F);
  fc.normalizer = "method=minmax,min=0,max=10";
  EXPECT_FLOAT_EQ(Dense(FeatureTransform(fc), Cell::Int(5)), 0.5F);
  fc.normalizer = "method=zscore,mean=2,std=4";
  EXPECT_FLOAT_EQ(Dense(FeatureTransform(fc), Cell::Int(10)), 2.0F);
}

TEST(Transform, DenseValueDimSplitsTheCell) {
  auto fc = RawFeature("emb");
  fc.value_dim = 3;
  fc.default_value = 9;
  FeatureTransform t(fc);
  EXPECT_EQ(t.dense_dim(), 3);
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
  FeatureTransform t(fc);
  const auto e = ErrorOf([&] { Dense(t, Cell::String("12x")); });
  EXPECT_NE(e.find("'int_3'"), std::string::npos) << e;
  EXPECT_NE(e.find("'12x' is not a number"), std::string::npos) << e;
  fc.normalizer = "method=expression,expr=sqrt(x)";
  const auto n = ErrorOf([&] { FeatureTransform bad(fc); });
  EXPECT_NE(n.find("sqrt(x)"), std::string::npos) << n;
  EXPECT_NE(n.find("log(x+<number>)"), std::string::npos) << n;
  fc.normalizer = "method=minmax,min=1";
  EXPECT_NE(ErrorOf([&] { FeatureTransform bad(fc); }).find("needs max"), std::string::npos);
  fc.normalizer = "method=boxcox";
  EXPECT_NE(ErrorOf([&] { FeatureTransform bad(fc); }).find("unknown method 'boxcox'"),
            std::string::npos);
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
