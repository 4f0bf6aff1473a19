// Slurm host-list expansion and TorchX -j job shapes (tzrun/platform/platform.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tzrun/platform/platform.hpp"

namespace tzrun::platform {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string HostlistError(const std::string& list, std::size_t limit = 1u << 20) {
  try {
    ExpandHostlist(list, limit);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(HostList, PlainNamesAndSingleHost) {
  EXPECT_THAT(ExpandHostlist("gpu5"), ElementsAre("gpu5"));
  EXPECT_THAT(ExpandHostlist("a,b,c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(ExpandHostlist("node-1.cluster.local"), ElementsAre("node-1.cluster.local"));
}

TEST(HostList, RangesKeepZeroPaddingOfLowerBound) {
  EXPECT_THAT(ExpandHostlist("node[01-03,07],gpu5"),
              ElementsAre("node01", "node02", "node03", "node07", "gpu5"));
  EXPECT_THAT(ExpandHostlist("n[08-11]"), ElementsAre("n08", "n09", "n10", "n11"));
  EXPECT_THAT(ExpandHostlist("n[9-11]"), ElementsAre("n9", "n10", "n11"));
  EXPECT_THAT(ExpandHostlist("gnode[10,20,25,37]"),
              ElementsAre("gnode10", "gnode20", "gnode25", "gnode37"));
  EXPECT_THAT(ExpandHostlist("n[5]"), ElementsAre("n5"));
}

TEST(HostList, SuffixAndSeveralGroupsFormAProduct) {
  EXPECT_THAT(ExpandHostlist("r[1-2]n[1,3]"), ElementsAre("r1n1", "r1n3", "r2n1", "r2n3"));
  EXPECT_THAT(ExpandHostlist("x[1-2]-ib"), ElementsAre("x1-ib", "x2-ib"));
  EXPECT_THAT(ExpandHostlist("a[1-2],b[3-4]-c,d"), ElementsAre("a1", "a2", "b3-c", "b4-c", "d"));
  EXPECT_THAT(ExpandHostlist(" a , b "), ElementsAre("a", "b"));
}

TEST(HostList, MalformedListsAreRejectedWithTheReason) {
  EXPECT_THAT(HostlistError("node[01-03"), HasSubstr("unbalanced '['"));
  EXPECT_THAT(HostlistError("node01-03]"), HasSubstr("unbalanced ']'"));
  EXPECT_THAT(HostlistError("node[1-[2]]"), HasSubstr("nested"));
  EXPECT_THAT(HostlistError("node[3-1]"), HasSubstr("reversed"));
  EXPECT_THAT(HostlistError("node[a-b]"), HasSubstr("not N or N-M"));
  EXPECT_THAT(HostlistError("node[]"), HasSubstr("empty brackets"));
  EXPECT_THAT(HostlistError("node[1,]"), HasSubstr("not N or N-M"));
  EXPECT_THAT(HostlistError("a,,b"), HasSubstr("empty host name"));
  EXPECT_THAT(HostlistError(""), HasSubstr("empty host name"));
  EXPECT_THAT(HostlistError("node[1-99999999999999999999999]"), HasSubstr("out of range"));
}

TEST(HostList, HugeExpansionsStopAtTheLimit) {
  EXPECT_THAT(HostlistError("n[1-100]", 10), HasSubstr("more than 10 hosts"));
  EXPECT_THAT(HostlistError("a[1-4]b[1-4]", 10), HasSubstr("more than 10 hosts"));
  EXPECT_THAT(HostlistError("n[1-6],m[1-6]", 10), HasSubstr("more than 10 hosts"));
  EXPECT_EQ(ExpandHostlist("n[1-10]", 10).size(), 10u);
  EXPECT_THAT(HostlistError("n[0-18446744073709551615]"), HasSubstr("more than"));
}

std::string ShapeError(const std::string& text) {
  try {
    ParseJobShape(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(JobShape, TorchxForms) {
  auto s = ParseJobShape("2x8");
  EXPECT_EQ(s.min_nodes, 2);
  EXPECT_EQ(s.max_nodes, 2);
  EXPECT_EQ(s.nproc_per_node, 8);
  EXPECT_EQ(s.Nnodes(), "2");

  s = ParseJobShape("1:4x8");
  EXPECT_EQ(s.min_nodes, 1);
  EXPECT_EQ(s.max_nodes, 4);
  EXPECT_EQ(s.nproc_per_node, 8);
  EXPECT_EQ(s.Nnodes(), "1:4");

  s = ParseJobShape("4");  // one node, four workers
  EXPECT_EQ(s.Nnodes(), "1");
  EXPECT_EQ(s.nproc_per_node, 4);

  s = ParseJobShape("3X2");
  EXPECT_EQ(s.Nnodes(), "3");
  EXPECT_EQ(s.nproc_per_node, 2);
}

TEST(JobShape, InvalidShapesShowTheAcceptedForms) {
  for (const char* bad : {"", "x8", "2x", "0x8", "2x0", "-1x8", "4:2x8", "ax8", "2x8x1", "2:x8",
                          ":2x8", "1:2:3x8", "2 x8", "99999999999x1"}) {
    const auto msg = ShapeError(bad);
    EXPECT_THAT(msg, HasSubstr("[[MIN:]MAX x]NPROC")) << bad;
    EXPECT_THAT(msg, HasSubstr(std::string("'") + bad + "'")) << bad;
  }
  EXPECT_THAT(ShapeError("4:2x8"), HasSubstr("MIN 4 is larger than MAX 2"));
  EXPECT_THAT(ShapeError("2x0"), HasSubstr("NPROC must be > 0"));
}

}  // namespace
}  // namespace tzrun::platform
