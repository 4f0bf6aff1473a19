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
  EXPECT_EQ(PythonInt("42"), 42);
  EXPECT_EQ(PythonInt(" -7 "), -7);
  EXPECT_EQ(PythonInt("+3"), 3);
  EXPECT_EQ(PythonInt("007"), 7);
  EXPECT_EQ(PythonInt("1_000"), 1000);
  EXPECT_EQ(PythonInt("-9223372036854775808"), INT64_MIN);
  for (const char* bad :
       {"", " ", "x", "1.0", "0x10", "1__0", "_1", "1_", "--1", "1e3", "9223372036854775808"}) {
    EXPECT_FALSE(PythonInt(bad).has_value()) << bad;
  }
}

TEST(PythonFloat, AcceptsWhatFloatAccepts) {
  EXPECT_DOUBLE_EQ(*PythonFloat("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*PythonFloat(" 1e-1 "), 0.1);
  EXPECT_DOUBLE_EQ(*PythonFloat("-.5"), -0.5);
  EXPECT_DOUBLE_EQ(*PythonFloat("1."), 1.0);
  EXPECT_DOUBLE_EQ(*PythonFloat("1_0.5"), 10.5);
  EXPECT_TRUE(std::isinf(*PythonFloat("inf")));
  EXPECT_TRUE(std::isinf(*PythonFloat("-Infinity")));
  EXPECT_TRUE(std::isnan(*PythonFloat("NaN")));
  EXPECT_TRUE(std::isinf(*PythonFloat("1e999")));
  for (const char* bad : {"", ".", "e5", "0x1p3", "1e", "1_.5", "fast", "1.2.3", "infinit"}) {
    EXPECT_FALSE(PythonFloat(bad).has_value()) << bad;
  }
}

TEST(TextWrap, MatchesPythonTextwrap) {
  // Reference values from Python 3.11: textwrap.wrap(text, width).
  EXPECT_THAT(Wrap("name of a registered event logging handler (see: "
                   "https://docs.pytorch.org/docs/stable/elastic/events.html)",
                   54),
              ElementsAre("name of a registered event logging handler (see: https",
                          "://docs.pytorch.org/docs/stable/elastic/events.html)"));
  EXPECT_THAT(Wrap("Start a local standalone rendezvous backend that is represented by a C10d TCP "
                   "store on a free port. Useful when launching single-node, multi-worker job.",
                   54),
              ElementsAre("Start a local standalone rendezvous backend that is",
                          "represented by a C10d TCP store on a free port. Useful",
                          "when launching single-node, multi-worker job."));
  EXPECT_THAT(Wrap("aaaa bbbb-cccc", 10), ElementsAre("aaaa bbbb-", "cccc"));
  EXPECT_THAT(Wrap("  a   b  ", 10), ElementsAre("a b"));
  EXPECT_THAT(Wrap("\ta\n\n b\r\v\fc\t", 10), ElementsAre("a b c"));
  EXPECT_TRUE(Wrap(" \t\n ", 10).empty());
  EXPECT_TRUE(Wrap("", 10).empty());
}

TEST(PyRepr, QuotesLikePython) {
  EXPECT_EQ(PyRepr("x"), "'x'");
  EXPECT_EQ(PyRepr("it's"), "\"it's\"");
  EXPECT_EQ(PyRepr("a\nb"), "'a\\nb'");
}

TEST(RdzvConf, PublicHelper) {
  EXPECT_TRUE(ParseRdzvConf("  ").empty());
  EXPECT_EQ(ParseRdzvConf("a=1").at("a"), "1");
  EXPECT_THROW(ParseRdzvConf("a=1,"), std::invalid_argument);
}

TEST(StdSpecParse, PublicHelper) {
  EXPECT_EQ(ParseStdSpec("3").all, Std::kAll);
  EXPECT_EQ(ParseStdSpec("10:2").ForRank(10), Std::kErr);
  EXPECT_THROW(ParseStdSpec("1234567890:1"), std::invalid_argument);
}

}  // namespace
}  // namespace tzrun::cli::detail
