// The expr_feature expression language (include/tzrec/config/expr.hpp): hand-computed values of
// every operator and function, precedence and associativity, multi-value broadcasting and
// fill_missing, and every refused part named at parse; expr_feature configs accepted and refused.
#include "tzrec/config/expr.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "config_test_util.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

using Vs = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The value of `text` over a = 2, b = 3 (single values).
double Eval(const std::string& text) {
  const Expression e(text, {"a", "b"});
  const Vs out = e.Evaluate({{2.0}, {3.0}}, kNaN);
  EXPECT_EQ(out.size(), 1u) << text;
  return out.at(0);
}

std::string ParseError(const std::string& text) {
  try {
    Expression(text, {"a", "b"});
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(Expression, PrecedenceAndAssociativity) {
  EXPECT_DOUBLE_EQ(Eval("a + b * 2"), 8.0);
  EXPECT_DOUBLE_EQ(Eval("(a + b) * 2"), 10.0);
  EXPECT_DOUBLE_EQ(Eval("a - b - 1"), -2.0);   // left-associative
  EXPECT_DOUBLE_EQ(Eval("12 / a / b"), 2.0);   // left-associative
  EXPECT_DOUBLE_EQ(Eval("a ^ b ^ 2"), 512.0);  // right-associative: 2^9
  EXPECT_DOUBLE_EQ(Eval("-a ^ 2"), -4.0);      // signs bind looser than ^
  EXPECT_DOUBLE_EQ(Eval("a ^ -1"), 0.5);
  EXPECT_DOUBLE_EQ(Eval("--a"), 2.0);
  EXPECT_DOUBLE_EQ(Eval("+a * -b"), -6.0);
  EXPECT_DOUBLE_EQ(Eval("a < b == 1"), 1.0);  // (a < b) == 1
  EXPECT_DOUBLE_EQ(Eval("a + 1 == b"), 1.0);  // + before ==
  EXPECT_DOUBLE_EQ(Eval("a == 2 && b == 2 || 1"), 1.0);
  EXPECT_DOUBLE_EQ(Eval("0 || a == 2 && b == 2"), 0.0);          // && before ||
  EXPECT_DOUBLE_EQ(Eval("a > b ? 10 : b > 2 ? 20 : 30"), 20.0);  // ?: right-associative
  EXPECT_DOUBLE_EQ(Eval("a == b ? 1 : 0"), 0.0);
  EXPECT_DOUBLE_EQ(Eval("1 + (a < b ? 4 : 5)"), 5.0);
  EXPECT_DOUBLE_EQ(Eval("a != b"), 1.0);
  EXPECT_DOUBLE_EQ(Eval("a <= 2") + Eval("a >= 3") + Eval("a > 1") + Eval("a < 1"), 2.0);
  EXPECT_DOUBLE_EQ(Eval("1.5e1 + .5 + 2."), 17.5);
  EXPECT_DOUBLE_EQ(Eval("_pi"), M_PI);
  EXPECT_DOUBLE_EQ(Eval("_e"), M_E);
  EXPECT_TRUE(std::isinf(Eval("a / 0")));  // IEEE: no error at evaluation
  EXPECT_TRUE(std::isnan(Eval("0 / 0")));
}

TEST(Expression, ScalarFunctions) {
  EXPECT_DOUBLE_EQ(Eval("sqrt(a * 8)"), 4.0);
  EXPECT_DOUBLE_EQ(Eval("log(_e)") + Eval("ln(_e)"), 2.0);  // base e, both
  EXPECT_DOUBLE_EQ(Eval("log2(8)") + Eval("log10(1000)"), 6.0);
  EXPECT_DOUBLE_EQ(Eval("exp(0)") + Eval("abs(-3)"), 4.0);
  EXPECT_DOUBLE_EQ(Eval("sign(-5)") + Eval("sign(0)") + 2 * Eval("sign(7)"), 1.0);
  EXPECT_DOUBLE_EQ(Eval("rint(2.5)") + Eval("rint(-2.5)"), 1.0);    // floor(x + 0.5): 3, -2
  EXPECT_DOUBLE_EQ(Eval("round(2.5)") + Eval("round(-2.5)"), 0.0);  // half away from zero
  EXPECT_DOUBLE_EQ(Eval("round(2.4)"), 2.0);
  EXPECT_DOUBLE_EQ(Eval("floor(-1.5)") + Eval("ceil(-1.5)") + Eval("trunc(-1.5)"), -4.0);
  EXPECT_DOUBLE_EQ(Eval("roundp(3.14159, 2)"), 3.14);
  EXPECT_DOUBLE_EQ(Eval("sigmoid(0)"), 0.5);
  EXPECT_DOUBLE_EQ(Eval("sigmoid(a)"), 1.0 / (1.0 + std::exp(-2.0)));
  EXPECT_DOUBLE_EQ(Eval("min(b, a, 7)") + Eval("max(b, a, 7)"), 9.0);
  EXPECT_DOUBLE_EQ(Eval("sum(a, b, 5)") + Eval("avg(a, b, 7)"), 14.0);
  EXPECT_DOUBLE_EQ(Eval("min(a)"), 2.0);
  EXPECT_DOUBLE_EQ(Eval("sin(0) + cos(0) + tan(0) + asin(0) + acos(1) + atan(0)"), 1.0);
  EXPECT_DOUBLE_EQ(Eval("sinh(0) + cosh(0) + tanh(0) + asinh(0) + acosh(1) + atanh(0)"), 1.0);
}

TEST(Expression, MultiValueBroadcastAndFillMissing) {
  const Expression add("a + b", {"a", "b"});
  EXPECT_EQ(add.Evaluate({{1, 2, 3}, {10, 20, 30}}, kNaN), (Vs{11, 22, 33}));
  EXPECT_EQ(add.Evaluate({{1, 2, 3}, {10}}, kNaN), (Vs{11, 12, 13}));     // one value broadcasts
  EXPECT_EQ(add.Evaluate({{1, 2, 3}, {10, 20}}, -1.0), (Vs{11, 22, 2}));  // padded with fill
  const Vs nan = add.Evaluate({{1, 2, 3}, {10, 20}}, kNaN);
  EXPECT_TRUE(std::isnan(nan.at(2)));
  const Expression f("a > 1 ? sqrt(a) : min(a, b)", {"a", "b"});
  EXPECT_EQ(f.Evaluate({{4, 1}, {0}}, kNaN), (Vs{2, 0}));
}

TEST(Expression, VectorFunctions) {
  const Vs v{1, 2, 3, 6};  // mean 3, squared deviations 4 1 0 9 = 14
  auto one = [&](const std::string& fn) {
    return Expression(fn + "(a)", {"a"}).Evaluate({v}, kNaN).at(0);
  };
  EXPECT_DOUBLE_EQ(one("len"), 4.0);
  EXPECT_DOUBLE_EQ(one("squared_norm"), 50.0);
  EXPECT_DOUBLE_EQ(one("reduce_min") + one("reduce_max"), 7.0);
  EXPECT_DOUBLE_EQ(one("reduce_sum") + one("reduce_mean"), 15.0);
  EXPECT_DOUBLE_EQ(one("reduce_prod"), 36.0);
  EXPECT_DOUBLE_EQ(one("variance"), 14.0 / 4);
  EXPECT_DOUBLE_EQ(one("pop_variance"), 14.0 / 3);
  EXPECT_DOUBLE_EQ(one("std_dev"), std::sqrt(14.0 / 4));
  EXPECT_DOUBLE_EQ(one("pop_std_dev"), std::sqrt(14.0 / 3));
  const Expression dot("dot(a, b) + euclid_dist(a, b) * c", {"a", "b", "c"});
  // dot 1*4 + 2*6 = 16; distance sqrt(9 + 16) = 5
  EXPECT_EQ(dot.Evaluate({{1, 2}, {4, 6}, {10}}, kNaN), (Vs{66}));
  // lengths 3 and 2: b padded with fill_missing 0 -> dot 16, distance sqrt(9 + 16 + 9)
  EXPECT_DOUBLE_EQ(dot.Evaluate({{1, 2, 3}, {4, 6}, {1}}, 0.0).at(0), 16 + std::sqrt(34.0));
  try {
    dot.Evaluate({{1}, {2}, {3, 4}}, kNaN);
    ADD_FAILURE() << "a multi-value c outside the vector functions was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("variable 'c' has 2 values"), std::string::npos)
        << error.what();
  }
}

TEST(Expression, RefusedPartsNamed) {
  auto has = [](const std::string& text, const std::string& part) {
    const std::string error = ParseError(text);
    EXPECT_NE(error.find(part), std::string::npos) << text << " -> " << error;
  };
  has("a & b", "the bitwise operator '&'");
  has("a | b", "the bitwise operator '|'");
  has("a % b", "unexpected '%'");
  has("!a", "unexpected '!'");
  has("a = 1", "unexpected '='");
  has("rnd()", "rnd (a random number)");
  has("l2_norm(a)", "l2_norm");
  has("sphere_dist(a, b, a, b)", "sphere_dist / haversine");
  has("haversine(a, b, a, b)", "sphere_dist / haversine");
  has("foo(a)", "unknown function 'foo'");
  has("c + 1", "unknown name 'c'");
  has("pi", "unknown name 'pi'");
  has("sqrt(a, b)", "sqrt with 2 argument(s)");
  has("max()", "max with 0 argument(s)");
  has("dot(a)", "dot with 1 argument(s)");
  has("dot(a + 1, b)", "an argument of dot that is not a variable name");
  has("(a + b", "add a ')'");
  has("a ? b", "the ':' of the ?: operator");
  has("2a", "a number runs into a name");
  has("", "empty expression");
  has("a +", "ends early");
  EXPECT_EQ(ParseError("sigmoid(a/(1+b))"), "");
}

using test::ErrorOf;

std::string Config(const std::string& expr, const std::string& fg = "FG_DAG") {
  return test::OneFeatureConfig(R"(expr_feature { feature_name: "f" )" + expr + " }", fg);
}

TEST(ExprConfig, AcceptedAndRefusedByName) {
  const std::string vars = R"(variables: ["user:a", "item:b"] )";
  EXPECT_EQ(ErrorOf(Config(vars + R"(expression: "a / b + 1")")), "");
  EXPECT_EQ(ErrorOf(Config(vars + R"(expression: "a+b" boundaries: [0.5, 1] embedding_dim: 4
                                     value_dim: 1 default_value: "" fill_missing: 0)")),
            "");
  const PipelineConfig c =
      ParsePipelineConfig(
          Config(vars + R"(expression: "a+b" boundaries: [0.5, 1] embedding_dim: 4)"), "", "t")
          .config;
  EXPECT_TRUE(IsSparse(c.feature_configs(1)));
  EXPECT_EQ(NumEmbeddings(c.feature_configs(1)), 3);
  EXPECT_EQ(InputColumns(c, c.feature_configs(1)), (std::vector<std::string>{"a", "b"}));
  auto has = [](const std::string& text, const std::string& part) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find(part), std::string::npos) << error;
  };
  has(Config(vars + R"(expression: "a & b")"), "expr_feature.expression: expression \"a & b\"");
  has(Config(vars + R"(expression: "rnd() + 1")"), "rnd (a random number)");
  has(Config(R"(expression: "1")"), ".variables: empty");
  has(Config(R"(variables: ["user:a-b"] expression: "1")"), "'a-b' is not a name");
  has(Config(R"(variables: ["user:a", "item:a"] expression: "a")"), "listed twice");
  has(Config(vars + R"(expression: "a" default_value: "x")"), "default_value: \"x\" is not a");
  has(Config(vars + R"(expression: "a" embedding_dim: 4)"), "embedding_dim: 4 on a numeric");
  has(Config(vars + R"(expression: "a" value_dim: 2)"), "value_dim: 2; a dense expr_feature");
  has(Config(vars + R"(expression: "a" boundaries: [2, 1] embedding_dim: 4)"),
      "strictly increasing");
  has(Config(vars + R"(expression: "a" stub_type: true)"), "'stub_type' (ExprFeature)");
  has(Config(vars + R"(expression: "a" init_fn: "x")"), "'init_fn' (ExprFeature)");
  has(Config(vars + R"(expression: "a" fg_encoded_default_value: "0")"),
      "'fg_encoded_default_value' (ExprFeature)");
  // FG_NONE: the column named feature_name holds the generated value.
  const PipelineConfig none =
      ParsePipelineConfig(Config(vars + R"(expression: "a+b")", "FG_NONE"), "", "t").config;
  EXPECT_EQ(InputColumns(none, none.feature_configs(1)), (std::vector<std::string>{"f"}));
}

}  // namespace
}  // namespace tzrec
