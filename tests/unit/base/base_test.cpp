// tzrun::base: the shared string and system helpers (include/tzrun/base).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <set>

#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::base {
namespace {

TEST(Strings, StripRemovesAsciiWhiteSpaceOnBothEnds) {
  EXPECT_EQ(Strip(" \t a b \r\n"), "a b");
  EXPECT_EQ(Strip(""), "");
  EXPECT_EQ(Strip(" \v\f "), "");
}

TEST(Strings, LowerOnlyTouchesAsciiLetters) {
  EXPECT_EQ(Lower("GlOo-1_X"), "gloo-1_x");
}

TEST(Strings, SplitKeepsEmptyFieldsLikePython) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(Split(",", ','), (std::vector<std::string>{"", ""}));
}

TEST(Strings, JoinIsSplitsInverse) {
  EXPECT_EQ(Join(Split("x:y::z", ':'), ":"), "x:y::z");
  EXPECT_EQ(Join({}, ", "), "");
}

TEST(Strings, QuotedListLimitsAndCounts) {
  EXPECT_EQ(QuotedList({"a", "b"}), "'a', 'b'");
  EXPECT_EQ(QuotedList({"a", "b", "c"}, 2), "'a', 'b', ... (3 keys)");
  EXPECT_EQ(QuotedList({"a", "b", "c"}, 3), "'a', 'b', 'c'");
  EXPECT_EQ(QuotedList({"a", "b", "c"}, 1, "tables"), "'a', ... (3 tables)");
  EXPECT_EQ(QuotedList({}), "");
}

TEST(Strings, EditDistanceCountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3U);
  EXPECT_EQ(EditDistance("", "abc"), 3U);
  EXPECT_EQ(EditDistance("num_step", "num_steps"), 1U);
  EXPECT_EQ(EditDistance("same", "same"), 0U);
}

TEST(Strings, ClosestNamePrefersSmallestDistanceThenFirst) {
  EXPECT_EQ(ClosestName("num_step", {"num_epochs", "num_steps", "log_step_count_steps"}),
            "num_steps");
  EXPECT_EQ(ClosestName("ab", {"xb", "ay"}), "xb");  // tie: the first
  EXPECT_EQ(ClosestName("x", {}), "");
}

TEST(System, ErrnoTextIsTheSystemMessage) {
  EXPECT_EQ(ErrnoText(ENOENT), "No such file or directory");
}

TEST(System, EnvironMapSeesSetenv) {
  ASSERT_EQ(::setenv("TZRUN_BASE_TEST_VAR", "a=b", 1), 0);
  const auto env = EnvironMap();
  ASSERT_TRUE(env.count("TZRUN_BASE_TEST_VAR"));
  EXPECT_EQ(env.at("TZRUN_BASE_TEST_VAR"), "a=b");  // only the first '=' separates
  ::unsetenv("TZRUN_BASE_TEST_VAR");
}

TEST(System, Uuid4IsVersion4AndRandom) {
  const std::regex form("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    const std::string id = Uuid4();
    EXPECT_TRUE(std::regex_match(id, form)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 64U);
}

TEST(System, DurationTextUsesSecondsWhenWhole) {
  EXPECT_EQ(DurationText(std::chrono::milliseconds(30000)), "30 s");
  EXPECT_EQ(DurationText(std::chrono::milliseconds(1500)), "1.5 s");
  EXPECT_EQ(DurationText(std::chrono::milliseconds(1999)), "1.9 s");
  EXPECT_EQ(DurationText(std::chrono::milliseconds(250)), "250 ms");
  EXPECT_EQ(DurationText(std::chrono::milliseconds(0)), "0 s");
}

}  // namespace
}  // namespace tzrun::base
