// Unit tests of the restart policy (src/agent/restart_policy.hpp): every branch of decide(),
// the membership-restart bound and the not-retryable rules.
#include <gtest/gtest.h>

#include <csignal>

#include "restart_policy.hpp"

namespace tzrun::agent {
namespace {

using Kind = Action::Kind;
using Say = Action::Say;
using BK = rendezvous::BarrierOutcome::Kind;
using WK = rendezvous::WatchEvent::Kind;

RestartBudget Budget(int remaining, int max_restarts, int local_restarts) {
  RestartBudget b;
  b.remaining = remaining;
  b.max_restarts = max_restarts;
  b.local_restarts = local_restarts;
  return b;
}

const RestartBudget kBudget = Budget(2, 3, 1);

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
  a = Decide(o, Budget(0, 3, 3), "default");
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
  const auto a = Decide(o, Budget(0, 0, 0), "default");
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
  auto b = Spend(Budget(1, 3, 2));
  EXPECT_EQ(b.remaining, 0);
  EXPECT_EQ(b.local_restarts, 3);
  b = Spend(b);
  EXPECT_EQ(b.remaining, 0);
  EXPECT_EQ(b.local_restarts, 4);
  EXPECT_EQ(b.max_restarts, 3);
}

// ---- membership restarts: counted, bounded (--max-membership-restarts) ----------------

TEST(RestartPolicy, MembershipRestartsAreCountedApartFromFailureRestarts) {
  auto b = SpendMembership(Budget(0, 0, 0));
  b = SpendMembership(b);
  EXPECT_EQ(b.membership_restarts, 2);
  EXPECT_EQ(b.local_restarts, 0);  // TORCHELASTIC_RESTART_COUNT stays
  EXPECT_EQ(b.remaining, 0);
}

TEST(RestartPolicy, MembershipRestartBeyondTheBoundStopsTheJob) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kMembershipChanged, "node 2 left the round");
  auto b = Budget(0, 0, 0);
  b.max_membership_restarts = 2;
  b.membership_restarts = 1;
  auto a = Decide(o, b, "default");
  EXPECT_EQ(a.kind, Kind::kRestart);  // the second one is still allowed
  EXPECT_FALSE(a.spend_restart);
  b.membership_restarts = 2;
  a = Decide(o, b, "default");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, kMembershipRestartsExhaustedExitCode);
  EXPECT_TRUE(a.fail_job);  // every node stops, not only this one
  EXPECT_FALSE(a.report_failure);
  EXPECT_EQ(a.say, Say::kStderrError);
  EXPECT_EQ(a.message,
            "[default] node 2 left the round, but this node already restarted its worker group "
            "2 time(s) for membership changes (--max-membership-restarts=2); stopping the job "
            "with exit code 125. Find out why nodes keep joining or leaving, or raise "
            "--max-membership-restarts (-1: no bound, as torchrun)");
  EXPECT_EQ(a.no_restart_reason, "--max-membership-restarts=2 used up");
}

TEST(RestartPolicy, MembershipBoundAppliesToBarrierAndUnknownNews) {
  auto b = Budget(3, 3, 0);
  b.max_membership_restarts = 0;
  auto o = Ended(AttemptResult::kSucceeded);
  o.barrier = Barrier(BK::kRestart, "node 1 left", 0, /*counts=*/false);
  EXPECT_TRUE(Decide(o, b, "default").fail_job);
  o.barrier = Barrier(BK::kRestart, "node 1 failed", 0, /*counts=*/true);
  EXPECT_EQ(Decide(o, b, "default").kind, Kind::kRestart);  // a failure restart: budget
  o = Ended(AttemptResult::kPeerEvent);
  EXPECT_TRUE(Decide(o, b, "default").fail_job);
}

TEST(RestartPolicy, UnboundedMembershipRestartsAsTorchrun) {
  auto o = Ended(AttemptResult::kPeerEvent);
  o.peer_event = Event(WK::kMembershipChanged, "1 node(s) waiting to join");
  auto b = Budget(0, 0, 0);
  b.max_membership_restarts = -1;
  b.membership_restarts = 1000;
  EXPECT_EQ(Decide(o, b, "default").kind, Kind::kRestart);
}

// ---- failures not worth retrying ----------------------------------------------------

AttemptOutcome FailedWith(int exit_code, bool not_retryable, std::string message = {}) {
  auto o = Ended(AttemptResult::kFailed);
  o.local_exit_code = exit_code;
  RootCause r;
  r.global_rank = 3;
  r.local_rank = 1;
  r.exit_code = exit_code;
  r.marked_not_retryable = not_retryable;
  r.error_message = std::move(message);
  o.root = r;
  return o;
}

TEST(RestartPolicy, ErrorFileMarkedNotRetryableStopsTheJobWithRestartsLeft) {
  auto o = FailedWith(2, true, "ConfigError: bad config");
  auto a = Decide(o, kBudget, "trainer");
  EXPECT_EQ(a.kind, Kind::kAskRendezvous);
  EXPECT_FALSE(a.can_restart);  // the rendezvous then stops every node
  EXPECT_EQ(a.say, Say::kError);
  EXPECT_EQ(a.message,
            "[trainer] Worker group FAILED and will not be restarted: rank 3 (local_rank 1) "
            "failed with exit code 2 and its error file marks the failure not retryable "
            "(extraInfo.retryable = \"false\"): ConfigError: bad config; 2/3 attempts left "
            "unused; stopping the job");
  EXPECT_EQ(a.no_restart_reason,
            "rank 3 (local_rank 1) failed with exit code 2 and its error file marks the failure "
            "not retryable (extraInfo.retryable = \"false\"): ConfigError: bad config");
  o.verdict = rendezvous::FailureDecision{false, 0, 2};
  a = Decide(o, kBudget, "trainer");
  EXPECT_EQ(a.kind, Kind::kFinish);
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_TRUE(a.report_failure);
}

TEST(RestartPolicy, ListedExitCodeIsNotRetried) {
  auto b = kBudget;
  b.no_restart_exit_codes = {2, 3};
  auto a = Decide(FailedWith(3, false), b, "default");
  EXPECT_FALSE(a.can_restart);
  EXPECT_EQ(a.no_restart_reason,
            "rank 3 (local_rank 1) failed with exit code 3, which --no-restart-exit-codes lists "
            "as not worth retrying");
  a = Decide(FailedWith(1, false), b, "default");  // not listed: retried
  EXPECT_TRUE(a.can_restart);
  EXPECT_EQ(a.say, Say::kNothing);
  EXPECT_TRUE(a.no_restart_reason.empty());
}

TEST(RestartPolicy, NotRetryableSaysNothingExtraWithoutRestartsLeft) {
  const auto a = Decide(FailedWith(2, true), Budget(0, 0, 0), "default");
  EXPECT_FALSE(a.can_restart);
  EXPECT_EQ(a.say, Say::kNothing);
  EXPECT_TRUE(a.no_restart_reason.empty());
}

TEST(RestartPolicy, DefaultRulesRetryEveryExitCode) {
  EXPECT_EQ(NotRetryableReason(FailedWith(2, false), kBudget), "");
  EXPECT_EQ(NotRetryableReason(Ended(AttemptResult::kFailed), kBudget), "");  // root unknown
}

}  // namespace
}  // namespace tzrun::agent
