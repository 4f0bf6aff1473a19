// Unit tests of the restart policy (src/agent/restart_policy.hpp): every branch of decide().
#include <gtest/gtest.h>

#include <csignal>

#include "restart_policy.hpp"

namespace tzrun::agent {
namespace {

using Kind = Action::Kind;
using Say = Action::Say;
using BK = rendezvous::BarrierOutcome::Kind;
using WK = rendezvous::WatchEvent::Kind;

const RestartBudget kBudget{2, 3, 1};

AttemptOutcome Ended(AttemptResult r) {
  AttemptOutcome o;
  o.result = r;
  return o;
}

rendezvous::WatchEvent Event(WK kind, std::string detail, int code = 1) {
  rendezvous::WatchEvent ev;
  ev.kind = kind;
  ev.detail = std::move(detail);
  ev.exit_code = code;
  return ev;
}

rendezvous::BarrierOutcome Barrier(BK kind, std::string detail = {}, int code = 0,
                                   bool counts = false) {
  rendezvous::BarrierOutcome b;
  b.kind = kind;
  b.detail = std::move(detail);
  b.exit_code = code;
  b.counts_as_failure_restart = counts;
  return b;
}

TEST(RestartPolicy, SuccessWaitsForTheExitBarrierFirst) {
  const auto a = Decide(Ended(AttemptResult::kSucceeded), kBudget, "trainer");
  EXPECT_EQ(a.kind, Kind::kWaitExitBarrier);
  EXPECT_EQ(a.say, Say::kInfo);
  EXPECT_EQ(a.message,
            "[trainer] worker group successfully finished. Waiting 300 seconds for other agents "
            "to finish.");
}

TEST(RestartPolicy, TheBarrierMessageNamesTheConfiguredTimeout) {
  const auto a = Decide(Ended(AttemptResult::kSucceeded), kBudget, "default", 2.5);
  EXPECT_EQ(a.message,
            "[default] worker group successfully finished. Waiting 2.5 seconds for other agents "
            "to finish.");
}

TEST(RestartPolicy, SuccessAfterTheBarrierFinishesWithZero) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kDone);
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.say, Say::kNothing);
  EXPECT_FALSE(a.report_failure);
}

TEST(RestartPolicy, BarrierTimeoutStillReportsSuccess) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kTimedOut, "timed out after 300 s");
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.say, Say::kError);
  EXPECT_EQ(a.message,
            "Error waiting on exit barrier: timed out after 300 s; reporting success anyway");
}

TEST(RestartPolicy, BarrierRestartSpendsOnlyWhenItCountsAsAFailure) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kRestart, "node 1 failed", 0, /*counts=*/true);
  auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_TRUE(a.spend_restart);
  EXPECT_EQ(a.say, Say::kWarning);
  EXPECT_EQ(a.message,
            "[default] node 1 failed after this node finished; will restart worker group");
  o.barrier = Barrier(BK::kRestart, "a node joined", 0, /*counts=*/false);
  a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_FALSE(a.spend_restart);
}

TEST(RestartPolicy, BarrierJobFailedFinishesWithTheOtherNodesCode) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kJobFailed, "node 2 failed with exit code 7", 7);
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 7);
  EXPECT_EQ(a.say, Say::kStderrError);
  EXPECT_EQ(a.message, "node 2 failed with exit code 7");
}

TEST(RestartPolicy, BarrierStoreLost) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kStoreLost, "the rendezvous store is gone");
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kStoreLost);
  EXPECT_EQ(a.message, "the rendezvous store is gone");
}

TEST(RestartPolicy, FailureAsksTheRendezvousWithTheBudget) {
  auto o = Ended(AttemptResult::kFailed);
  o.local_exit_code = 3;
  auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kAskRendezvous);
  EXPECT_TRUE(a.can_restart);
  a = Decide(o, RestartBudget{0, 3, 3}, "default");
  EXPECT_EQ(a.kind, Kind::kAskRendezvous);
  EXPECT_FALSE(a.can_restart);
}

TEST(RestartPolicy, FailureWithRestartsLeftRestarts) {
  auto o = Ended(AttemptResult::kFailed);
  o.local_exit_code = 3;
  o.verdict = rendezvous::FailureDecision{true, 0, 3};
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_TRUE(a.spend_restart);
  EXPECT_EQ(a.say, Say::kWarning);
  EXPECT_EQ(a.message,
            "[default] Worker group FAILED. 2/3 attempts left; will restart worker group");
}

TEST(RestartPolicy, FailureWithoutRestartsFinishesWithTheRootCause) {
  auto o = Ended(AttemptResult::kFailed);
  o.local_exit_code = 137;
  o.verdict = rendezvous::FailureDecision{false, -1, 137};
  const auto a = Decide(o, RestartBudget{0, 0, 0}, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 137);
  EXPECT_TRUE(a.report_failure);
}

TEST(RestartPolicy, LocalCodeWinsOverTheVerdictsCode) {
  auto o = Ended(AttemptResult::kFailed);
  o.local_exit_code = 5;
  o.verdict = rendezvous::FailureDecision{false, 1, 9};
  EXPECT_EQ(Decide(o, kBudget, "default").exit_code, 5);
}

TEST(RestartPolicy, SignalLeavesWith128PlusN) {
  auto o = Ended(AttemptResult::kSignaled);
  o.stop_signal = SIGTERM;
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kLeaveSignaled);
  EXPECT_EQ(a.exit_code, 128 + SIGTERM);
}

TEST(RestartPolicy, SignalDuringAFailedGroupsStopEndsTheRun) {
  auto o = Ended(AttemptResult::kFailed);
  o.stop_signal = SIGINT;
  o.local_exit_code = 1;
  EXPECT_EQ(EffectiveResult(o), AttemptResult::kSignaled);
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kLeaveSignaled);
  EXPECT_EQ(a.exit_code, 128 + SIGINT);
  o = Ended(AttemptResult::kPeerEvent);
  o.stop_signal = SIGHUP;
  o.peer_event = Event(WK::kMembershipChanged, "x");
  EXPECT_EQ(Decide(o, kBudget, "default").kind, Kind::kLeaveSignaled);
}

TEST(RestartPolicy, SuccessWithASignalIsStillSuccess) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.stop_signal = SIGTERM;
  EXPECT_EQ(EffectiveResult(o), AttemptResult::kSucceeded);
  EXPECT_EQ(Decide(o, kBudget, "default").kind, Kind::kWaitExitBarrier);
}

TEST(RestartPolicy, MembershipChangeUnderC10dRestartsWithoutSpending) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kMembershipChanged, "1 node(s) waiting to join");
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_FALSE(a.spend_restart);
  EXPECT_EQ(a.say, Say::kWarning);
  EXPECT_EQ(a.message, "[default] 1 node(s) waiting to join; will restart worker group");
}

TEST(RestartPolicy, PeerEventAsTheGroupSucceededIsNotLost) {
  auto o = Ended(AttemptResult::kSucceeded);
  o.peer_event = Event(WK::kMembershipChanged, "node 1 left");
  EXPECT_EQ(EffectiveResult(o), AttemptResult::kPeerEvent);
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_FALSE(a.spend_restart);
}

TEST(RestartPolicy, StaticRestartRequestSpendsARestart) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kRestartRequested, "node 1's workers failed");
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);
  EXPECT_TRUE(a.spend_restart);
  EXPECT_EQ(a.message,
            "[default] node 1's workers failed. 2/3 attempts left; will restart worker group");
}

TEST(RestartPolicy, RendezvousClosedByAFailedNodeFinishesWithItsCode) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kJobFailed, "the rendezvous was closed by node 0 (exit code 7)", 7);
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 7);
  EXPECT_EQ(a.say, Say::kStderrError);
  EXPECT_FALSE(a.report_failure);
}

TEST(RestartPolicy, PeerStoreLost) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kStoreLost, "lost the store");
  const auto a = Decide(o, kBudget, "default");
  EXPECT_EQ(a.kind, Kind::kStoreLost);
  EXPECT_EQ(a.message, "lost the store");
}

TEST(RestartPolicy, SpendNeverGoesNegative) {
  auto b = Spend(RestartBudget{1, 3, 2});
  EXPECT_EQ(b.remaining, 0);
  EXPECT_EQ(b.local_restarts, 3);
  b = Spend(b);
  EXPECT_EQ(b.remaining, 0);
  EXPECT_EQ(b.local_restarts, 4);
  EXPECT_EQ(b.max_restarts, 3);
}

}  // namespace
}  // namespace tzrun::agent
