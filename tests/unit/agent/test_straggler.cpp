// Unit tests of the straggler check (src/agent/straggler.hpp).
#include <gtest/gtest.h>

#include "straggler.hpp"

namespace tzrun::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(1'000'000));

RankRun Done(std::chrono::milliseconds at, bool ok = true) {
  return RankRun{false, ok, kT0 + at};
}
RankRun Running() {
  return RankRun{};
}

TEST(Straggler, OnlyTheLastWorkerStillRunningAfterTheOthersSucceededIsOne) {
  const StragglerLimits lim{60, 0};
  EXPECT_FALSE(CheckStraggler({Running(), Running()}, kT0, lim, false).straggler);
  EXPECT_FALSE(CheckStraggler({Running()}, kT0 + 100s, lim, false).straggler);  // alone
  // A failed worker: the failure path handles the group, not the straggler check.
  EXPECT_FALSE(CheckStraggler({Done(0s, false), Running()}, kT0 + 100s, lim, false).straggler);
  // Two of three still running: not yet.
  EXPECT_FALSE(CheckStraggler({Done(0s), Running(), Running()}, kT0 + 100s, lim, false).straggler);
  const auto c = CheckStraggler({Done(1s), Running(), Done(4s)}, kT0 + 10s, lim, false);
  ASSERT_TRUE(c.straggler);
  EXPECT_EQ(*c.straggler, 1U);
  EXPECT_DOUBLE_EQ(c.behind_s, 6.0);  // measured from the last other exit
  EXPECT_FALSE(c.warn);
  EXPECT_FALSE(c.stop);
  EXPECT_EQ(c.wake_in_ms, 54'001);  // wake up for the warning
}

TEST(Straggler, WarnsOnceAtTheWarningThenWaitsForTheTimeout) {
  const StragglerLimits lim{2, 5};
  auto c = CheckStraggler({Done(0s), Running()}, kT0 + 2s, lim, false);
  EXPECT_TRUE(c.warn);
  EXPECT_FALSE(c.stop);
  EXPECT_EQ(c.wake_in_ms, 3'001);
  c = CheckStraggler({Done(0s), Running()}, kT0 + 3s, lim, /*warned=*/true);
  EXPECT_FALSE(c.warn);
  EXPECT_EQ(c.wake_in_ms, 2'001);
  c = CheckStraggler({Done(0s), Running()}, kT0 + 5s, lim, true);
  EXPECT_TRUE(c.stop);
  EXPECT_EQ(c.wake_in_ms, -1);
}

TEST(Straggler, ZeroDisablesTheWarningAndTheTimeout) {
  auto c = CheckStraggler({Done(0s), Running()}, kT0 + 1000s, {0, 0}, false);
  ASSERT_TRUE(c.straggler);
  EXPECT_FALSE(c.warn);
  EXPECT_FALSE(c.stop);
  EXPECT_EQ(c.wake_in_ms, -1);  // nothing to wake up for: block as before
  // A timeout shorter than the warning stops without warning first.
  c = CheckStraggler({Done(0s), Running()}, kT0 + 3s, {60, 3}, false);
  EXPECT_TRUE(c.stop);
  EXPECT_FALSE(c.warn);
}

TEST(Straggler, MessagesNameTheWorkerAndHowLong) {
  EXPECT_EQ(StragglerMessage(1, 4242, 61.2, 75.0, 0),
            "worker local_rank 1 (pid 4242) is still running 61 s after every other local "
            "worker exited 0 (running 75 s in all); still waiting for it (--straggler-timeout S "
            "stops such a worker, --straggler-warning S moves this warning)");
  EXPECT_EQ(StragglerMessage(0, 7, 2.04, 3.5, 2),
            "worker local_rank 0 (pid 7) is still running 2 s after every other local worker "
            "exited 0 (running 3.5 s in all): stopping it (--straggler-timeout=2); the worker "
            "group counts as failed");
}

}  // namespace
}  // namespace tzrun::agent
