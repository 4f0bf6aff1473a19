// --hang-timeout's decision core (src/agent/hang_detector.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "hang_detector.hpp"

namespace tzrun::agent::detail {
namespace {

// A forked child that stopped itself (SIGSTOP), as a hung rank under SIGSTOP; -1 on failure.
pid_t StoppedChild() {
  const pid_t child = ::fork();
  if (child == 0) {
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, WUNTRACED) != child) return -1;
  return child;
}

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

TEST(HangDetector, RanksThatWentQuietTogetherAreNamedTogetherLongestQuietFirst) {
  const auto now = ProgressClock::now();
  // rank 1 stopped, rank 0 reported once more (0.5 s later) before it blocked on rank 1
  std::vector<RankProgress> r = {At(now - milliseconds(9500)), At(now - seconds(10))};
  EXPECT_EQ(StalledRanks(r, now, seconds(10)), (std::vector<std::size_t>{1, 0}));
  r[0] = At(now - seconds(7));  // still progressing 3 s after: only rank 1
  EXPECT_EQ(StalledRanks(r, now, seconds(10)), (std::vector<std::size_t>{1}));
  r[0] = At(now - milliseconds(1400));  // grace is at most S/2: 1.5 s of 3 s
  EXPECT_EQ(StalledRanks(r, now, seconds(3)), (std::vector<std::size_t>{1}));
  r[0] = At(now - milliseconds(1600));
  EXPECT_EQ(StalledRanks(r, now, seconds(3)), (std::vector<std::size_t>{1, 0}));
  EXPECT_TRUE(StalledRanks({At(now - seconds(9)), At(now - seconds(9))}, now, seconds(10)).empty());
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

TEST(HangDetector, KeepStackLinesKeepsThreadHeadersAndFramesOfEuStackAndGdb) {
  const std::string eu =
      "PID 7 - process\nTID 7:\n#0  0x00007f clock_nanosleep@GLIBC_2.2.5\n"
      "#1  0x00007f time_sleep\nTID 9:\n#0  0x00007f __futex_abstimed_wait_common\n";
  EXPECT_EQ(KeepStackLines(eu),
            "TID 7:\n#0  0x00007f clock_nanosleep@GLIBC_2.2.5\n#1  0x00007f time_sleep\n"
            "TID 9:\n#0  0x00007f __futex_abstimed_wait_common\n");
  const std::string gdb =
      "[New LWP 12]\nwarning: could not find '.gnu_debugaltlink'\n\n"
      "Thread 2 (Thread 0x7f (LWP 12) \"python\"):\n#0  0x00007f in poll ()\n"
      "[Inferior 1 (process 11) detached]\n";
  EXPECT_EQ(KeepStackLines(gdb),
            "Thread 2 (Thread 0x7f (LWP 12) \"python\"):\n#0  0x00007f in poll ()\n");
  EXPECT_EQ(KeepStackLines("ptrace: Operation not permitted.\n"), "");
}

TEST(HangDetector, ThreadBacktracesOfAStoppedProcessNameTheToolAndItsFrames) {
  const bool eu = std::system("command -v eu-stack >/dev/null 2>&1") == 0;
  const bool gdb = std::system("command -v gdb >/dev/null 2>&1") == 0;
  if (!eu && !gdb) GTEST_SKIP() << "neither eu-stack (elfutils) nor gdb is installed";
  const pid_t child = StoppedChild();
  ASSERT_GT(child, 0);
  int status = 0;
  const std::string bt = ThreadBacktraces(child, 20);
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  const std::string head = eu ? "backtrace (eu-stack -p " : "backtrace (gdb -batch -p ";
  EXPECT_EQ(bt.rfind(head + std::to_string(child) + "):\n", 0), 0U) << bt;
  EXPECT_NE(bt.find("\n#0 "), std::string::npos) << bt;
}

TEST(HangDetector, TheLikelyCauseIsAStoppedRankThenTheLowestStep) {
  // rank 0 (index 0) waits in the collective of step 21; rank 1 stopped at step 20
  EXPECT_EQ(OrderByLikelyCause({0, 1}, {{false, 21}, {true, 20}}),
            (std::vector<std::size_t>{1, 0}));
  // a stopped rank comes first even with a higher step
  EXPECT_EQ(OrderByLikelyCause({0, 1}, {{false, 3}, {true, 20}}), (std::vector<std::size_t>{1, 0}));
  // none stopped: the lowest step; equal steps keep StalledRanks' order (longest quiet first)
  EXPECT_EQ(OrderByLikelyCause({2, 0, 1}, {{false, 7}, {false, 5}, {false, 7}}),
            (std::vector<std::size_t>{0, 2, 1}));
  // a report without a step goes after those with one
  EXPECT_EQ(OrderByLikelyCause({0, 1}, {{false, std::nullopt}, {false, 9}}),
            (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(ReportStep("120 eval 1764000000.5"), 120);
  EXPECT_EQ(ReportStep("garbage"), std::nullopt);
}

TEST(HangDetector, IsStoppedReadsTheMainThreadsState) {
  const pid_t child = StoppedChild();
  ASSERT_GT(child, 0);
  int status = 0;
  EXPECT_TRUE(IsStopped(child));
  EXPECT_FALSE(IsStopped(::getpid()));
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(IsStopped(child));  // gone
}

}  // namespace
}  // namespace tzrun::agent::detail
