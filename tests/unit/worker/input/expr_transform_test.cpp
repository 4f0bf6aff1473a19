// expr_feature (TorchEasyRec's ExprFeature, fg_mode FG_DAG): hand-computed values of every field —
// the expression over the variables, default_value for a missing input, boundaries and value_dim,
// multi-value cells split by separator with fill_missing — including TorchEasyRec's own
// expr_feature_test.py cases, and a Dataset batch reading the variables' columns.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cell.hpp"
#include "dataset_test_util.hpp"
#include "transform.hpp"
#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

using input_test::Longs;
using V = std::vector<std::int64_t>;

protos::DataConfig Fg() {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_DAG);
  return data;
}

protos::FeatureConfig Expr(const std::string& expression, const std::string& default_value = "0") {
  protos::FeatureConfig fc;
  auto* e = fc.mutable_expr_feature();
  e->set_feature_name("e");
  e->set_expression(expression);
  e->add_variables("user:a");
  e->add_variables("item:b");
  e->set_default_value(default_value);
  return fc;
}

protos::FeatureConfig Bucketed(const std::string& expression, std::vector<float> boundaries,
                               const std::string& default_value) {
  auto fc = Expr(expression, default_value);
  for (const float b : boundaries) fc.mutable_expr_feature()->add_boundaries(b);
  fc.mutable_expr_feature()->set_embedding_dim(4);
  return fc;
}

float Dense(const FeatureTransform& t, Cell a, Cell b) {
  const Cell* p[] = {&a, &b};
  float out = -1;
  t.WriteInputsDense(p, &out);
  return out;
}

V Ids(const FeatureTransform& t, Cell a, Cell b) {
  const Cell* p[] = {&a, &b};
  V out;
  t.AppendInputsIds(p, &out);
  return out;
}

TEST(ExprTransform, DenseValueAndDefaultValue) {
  // TorchEasyRec expr_feature_test.py test_expr_feature_dense: "a+b", default_value "0.1".
  const FeatureTransform t(Expr("a+b", "0.1"), Fg());
  EXPECT_FALSE(t.Sparse());
  EXPECT_EQ(t.DenseDim(), 1);
  EXPECT_EQ(t.Inputs(), 2u);
  EXPECT_FLOAT_EQ(Dense(t, Cell::String("0.2"), Cell::Float(0.2)), 0.4f);
  EXPECT_FLOAT_EQ(Dense(t, Cell::String(""), Cell::Float(0.2)), 0.1f);  // missing: default
  EXPECT_FLOAT_EQ(Dense(t, Cell::Null(), Cell::Float(0.2)), 0.1f);
  EXPECT_FLOAT_EQ(Dense(t, Cell::Float(0.3), Cell::Null()), 0.1f);
  EXPECT_FLOAT_EQ(Dense(t, Cell::Int(3), Cell::String(" 4 ")), 7.0f);
  const FeatureTransform s(Expr("sigmoid(a / (1 + b))"), Fg());
  EXPECT_FLOAT_EQ(Dense(s, Cell::Int(6), Cell::Int(2)),
                  static_cast<float>(1 / (1 + std::exp(-2.0))));
  const FeatureTransform cmp(Expr("a == b ? 1 : 0"), Fg());
  EXPECT_FLOAT_EQ(Dense(cmp, Cell::Int(18), Cell::String("18")), 1.0f);
  EXPECT_FLOAT_EQ(Dense(cmp, Cell::Int(18), Cell::String("19")), 0.0f);
  // Refusals of the data, named: a text that is not a number, a list result, an infinite value.
  EXPECT_THROW(Dense(t, Cell::String("x"), Cell::Int(1)), InputError);
  EXPECT_THROW(Dense(t,
                     Cell::String("1\x1d"
                                  "2"),
                     Cell::Int(1)),
               InputError);
  const FeatureTransform div(Expr("a / b"), Fg());
  try {
    Dense(div, Cell::Int(1), Cell::Int(0));
    ADD_FAILURE() << "1/0 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("feature 'e': expression \"a / b\" is inf"),
              std::string::npos)
        << error.what();
  }
}

TEST(ExprTransform, BoundariesAndValueDim) {
  // test_expr_feature_with_boundaries: boundaries [0.15, 0.25, 0.35], default "0.1".
  const FeatureTransform t(Bucketed("a+b", {0.15f, 0.25f, 0.35f}, "0.1"), Fg());
  EXPECT_TRUE(t.Sparse());
  EXPECT_EQ(t.TableSize(), 4);
  EXPECT_EQ(Ids(t, Cell::Float(0.2), Cell::Float(0.2)), (V{3}));
  EXPECT_EQ(Ids(t, Cell::Float(0.1), Cell::Float(0.2)), (V{2}));
  EXPECT_EQ(Ids(t, Cell::Null(), Cell::Float(0.2)), (V{0}));  // default 0.1
  // default_value "": a missing input gives no id.
  const FeatureTransform none(Bucketed("a+b", {0.15f, 0.25f, 0.35f}, ""), Fg());
  EXPECT_EQ(Ids(none, Cell::String(""), Cell::Float(0.2)), (V{}));
  EXPECT_EQ(Ids(none, Cell::String("0.3"), Cell::Float(0.2)), (V{3}));
  // test_expr_feature_dot: boundaries [0.05, 0.10, 0.15]. Numeric lists are read as float32
  // (0.2f*0.2f + 0.3f*0.2f > 0.1f: id 2); texts as doubles (0.2*0.2 + 0.3*0.2 < 0.1f: id 1); the
  // default "0.1" as a double (< 0.1f: id 1).
  const FeatureTransform dot(Bucketed("dot(a,b)", {0.05f, 0.10f, 0.15f}, "0.1"), Fg());
  const Cell a[] = {Cell::Float(0.2), Cell::Float(0.3)};
  const Cell b[] = {Cell::Float(0.2), Cell::Float(0.2)};
  EXPECT_EQ(Ids(dot, Cell::List(a, 2), Cell::List(b, 2)), (V{2}));
  EXPECT_EQ(Ids(dot,
                Cell::String("0.2\x1d"
                             "0.3"),
                Cell::String("0.2\x1d"
                             "0.2")),
            (V{1}));
  EXPECT_EQ(Ids(dot, Cell::List(a, 0), Cell::List(b, 2)), (V{1}));
  // Multi-value: one id per value; value_dim n keeps the first n.
  auto fc = Bucketed("a*b", {1.0f, 10.0f}, "0");
  const FeatureTransform all(fc, Fg());
  EXPECT_EQ(Ids(all,
                Cell::String("0.5\x1d"
                             "2\x1d"
                             "20"),
                Cell::Int(1)),
            (V{0, 1, 2}));
  fc.mutable_expr_feature()->set_value_dim(2);
  const FeatureTransform two(fc, Fg());
  EXPECT_EQ(Ids(two,
                Cell::String("0.5\x1d"
                             "2\x1d"
                             "20"),
                Cell::Int(1)),
            (V{0, 1}));
  // A NaN cannot be bucketized: refused with the inputs named.
  EXPECT_THROW(Ids(all,
                   Cell::String("1\x1d"
                                "2"),
                   Cell::String("1\x1d"
                                "2\x1d"
                                "3")),
               InputError);
}

TEST(ExprTransform, MultiValueSeparatorAndFillMissing) {
  auto fc = Bucketed("a-b", {0.0f}, "0");
  fc.mutable_expr_feature()->set_separator(";");
  fc.mutable_expr_feature()->set_fill_missing(5.0f);
  const FeatureTransform t(fc, Fg());
  // [1, 2, 3] - [2, 1] padded with 5: [-1, 1, -2] -> ids [0, 1, 0]
  EXPECT_EQ(Ids(t, Cell::String("1;2;3"), Cell::String("2;1")), (V{0, 1, 0}));
  // [3, 4] - 1 (one value broadcasts): [2, 3]
  EXPECT_EQ(Ids(t, Cell::String("3;4"), Cell::Int(1)), (V{1, 1}));
  const FeatureTransform d(Expr("reduce_sum(a) * b"), Fg());
  const Cell items[] = {Cell::Int(1), Cell::Int(2), Cell::Int(4)};
  EXPECT_FLOAT_EQ(Dense(d, Cell::List(items, 3), Cell::Int(2)), 14.0f);
}

TEST(ExprTransform, DatasetReadsEveryVariable) {
  input_test::TempDir dir;
  input_test::WriteText(dir / "a.csv", "label,a,b\n1,6,2\n0,,1\n");
  PipelineConfig c = input_test::FgConfig(protos::CsvDataset);
  *c.add_feature_configs() = Expr("a / b", "-1");
  auto ids = Bucketed("a * b", {5.0f}, "");
  ids.mutable_expr_feature()->set_feature_name("e_ids");
  *c.add_feature_configs() = ids;
  Dataset ds(c, dir / "a.csv", 0, 1, 2);
  const auto batch = ds.Next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(input_test::Floats(batch->dense), (std::vector<float>{3.0f, -1.0f}));
  EXPECT_EQ(Longs(batch->sparse.Lengths()), (V{1, 0}));
  EXPECT_EQ(Longs(batch->sparse.Values()), (V{1}));
}

}  // namespace
}  // namespace tzrec::input
