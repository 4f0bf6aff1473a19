// --hang-timeout's decision core (src/agent/hang_detector.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "hang_detector.hpp"

namespace tzrun::agent::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

RankProgress At(ProgressClock::time_point t, const char* line = "1 train 0") {
  return {line, t};
}

TEST(HangDetector, ARankBehindItsPeersIsStalled) {
  const auto now = ProgressClock::now();
  const std::vector<RankProgress> r = {At(now - seconds(1)), At(now - seconds(12)),
                                       At(now - milliseconds(10))};
  EXPECT_EQ(StalledRanks(r, now, seconds(10)), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(StalledRanks(r, now, seconds(13)).empty());
}

TEST(HangDetector, AWholeGroupWithoutProgressIsStalled) {
  const auto now = ProgressClock::now();
  const std::vector<RankProgress> r = {At(now - seconds(20)), At(now - seconds(11))};
  EXPECT_EQ(StalledRanks(r, now, seconds(10)), (std::vector<std::size_t>{0, 1}));
}

TEST(HangDetector, RanksThatNeverReportedAreNotWatched) {
  const auto now = ProgressClock::now();
  std::vector<RankProgress> r(3);
  r[0].last_change = now - seconds(100);  // never reported (no line)
  r[1] = At(now - seconds(100));
  r[2].last_change = now - seconds(100);
  EXPECT_EQ(StalledRanks(r, now, seconds(10)), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(StalledRanks({}, now, seconds(1)).empty());
}

TEST(HangDetector, DescribesReportsAndReadsThreadStates) {
  EXPECT_EQ(DescribeReport("120 eval 1764000000.5"), "step 120, phase eval");
  EXPECT_EQ(DescribeReport("garbage"), "'garbage'");
  const std::string states = ThreadStates(::getpid());
  EXPECT_NE(states.find("tid "), std::string::npos) << states;
  EXPECT_NE(states.find(" R"), std::string::npos) << states;  // this thread runs
  EXPECT_EQ(ThreadStates(-5), "(no /proc entry)");
  EXPECT_EQ(ReadProgressLine("/nonexistent/progress"), "");
}

}  // namespace
}  // namespace tzrun::agent::detail
