// Python-compatible conversions and textwrap used by the CLI.
#include "text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tzrun/cli/cli.hpp"

namespace tzrun::cli::detail {
namespace {

using ::testing::ElementsAre;

TEST(PythonInt, AcceptsWhatIntAccepts) {
  EXPECT_EQ(python_int("42"), 42);
  EXPECT_EQ(python_int(" -7 "), -7);
  EXPECT_EQ(python_int("+3"), 3);
  EXPECT_EQ(python_int("007"), 7);
  EXPECT_EQ(python_int("1_000"), 1000);
  EXPECT_EQ(python_int("-9223372036854775808"), INT64_MIN);
  for (const char* bad :
       {"", " ", "x", "1.0", "0x10", "1__0", "_1", "1_", "--1", "1e3", "9223372036854775808"}) {
    EXPECT_FALSE(python_int(bad).has_value()) << bad;
  }
}

TEST(PythonFloat, AcceptsWhatFloatAccepts) {
  EXPECT_DOUBLE_EQ(*python_float("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*python_float(" 1e-1 "), 0.1);
  EXPECT_DOUBLE_EQ(*python_float("-.5"), -0.5);
  EXPECT_DOUBLE_EQ(*python_float("1."), 1.0);
  EXPECT_DOUBLE_EQ(*python_float("1_0.5"), 10.5);
  EXPECT_TRUE(std::isinf(*python_float("inf")));
  EXPECT_TRUE(std::isinf(*python_float("-Infinity")));
  EXPECT_TRUE(std::isnan(*python_float("NaN")));
  EXPECT_TRUE(std::isinf(*python_float("1e999")));
  for (const char* bad : {"", ".", "e5", "0x1p3", "1e", "1_.5", "fast", "1.2.3", "infinit"}) {
    EXPECT_FALSE(python_float(bad).has_value()) << bad;
  }
}

TEST(TextWrap, MatchesPythonTextwrap) {
  // Reference values from Python 3.11: textwrap.wrap(text, width).
  EXPECT_THAT(wrap("name of a registered event logging handler (see: "
                   "https://docs.pytorch.org/docs/stable/elastic/events.html)",
                   54),
              ElementsAre("name of a registered event logging handler (see: https",
                          "://docs.pytorch.org/docs/stable/elastic/events.html)"));
  EXPECT_THAT(wrap("Start a local standalone rendezvous backend that is represented by a C10d TCP "
                   "store on a free port. Useful when launching single-node, multi-worker job.",
                   54),
              ElementsAre("Start a local standalone rendezvous backend that is",
                          "represented by a C10d TCP store on a free port. Useful",
                          "when launching single-node, multi-worker job."));
  EXPECT_THAT(wrap("aaaa bbbb-cccc", 10), ElementsAre("aaaa bbbb-", "cccc"));
  EXPECT_THAT(wrap("  a   b  ", 10), ElementsAre("a b"));
  EXPECT_THAT(wrap("\ta\n\n b\r\v\fc\t", 10), ElementsAre("a b c"));
  EXPECT_TRUE(wrap(" \t\n ", 10).empty());
  EXPECT_TRUE(wrap("", 10).empty());
}

TEST(PyRepr, QuotesLikePython) {
  EXPECT_EQ(py_repr("x"), "'x'");
  EXPECT_EQ(py_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_repr("a\nb"), "'a\\nb'");
}

TEST(RdzvConf, PublicHelper) {
  EXPECT_TRUE(parse_rdzv_conf("  ").empty());
  EXPECT_EQ(parse_rdzv_conf("a=1").at("a"), "1");
  EXPECT_THROW(parse_rdzv_conf("a=1,"), std::invalid_argument);
}

TEST(StdSpecParse, PublicHelper) {
  EXPECT_EQ(parse_std_spec("3").all, Std::kAll);
  EXPECT_EQ(parse_std_spec("10:2").for_rank(10), Std::kErr);
  EXPECT_THROW(parse_std_spec("1234567890:1"), std::invalid_argument);
}

}  // namespace
}  // namespace tzrun::cli::detail
