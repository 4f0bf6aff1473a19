// The legacy etcd rendezvous transitions (src/rendezvous/etcd_legacy_ops.hpp) against the
// rules of torch/distributed/elastic/rendezvous/etcd_rendezvous.py.
#include "etcd_legacy_ops.hpp"

#include <gtest/gtest.h>

#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

LegacyState Joinable(std::vector<int> participants) {
  LegacyState s = ParseLegacyState(R"({"status": "joinable", "version": "4", "participants": []})");
  s.participants = std::move(participants);
  return s;
}

TEST(LegacyOps, ParsesTorchrunJsonAndKeepsUnknownKeys) {
  const auto s = ParseLegacyState(
      R"({"status": "final", "version": "3", "participants": [0, 1], "keep_alives": ["/a", "/b"],)"
      R"( "num_workers_waiting": 2, "future_key": 7})");
  EXPECT_EQ(s.status, "final");
  EXPECT_EQ(s.version, "3");
  EXPECT_EQ(s.participants, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.num_workers_waiting, 2);
  const auto back = ParseLegacyState(DumpLegacyState(s));
  EXPECT_EQ(back.keep_alives, s.keep_alives);
  EXPECT_NE(DumpLegacyState(s).find("\"future_key\":7"), std::string::npos);
  EXPECT_THROW((void)ParseLegacyState("[1]"), RendezvousStateError);
  EXPECT_THROW((void)ParseLegacyState("not json"), RendezvousStateError);
  // The setup state has nothing but its status (torchrun writes {"status": "setup"}).
  LegacyState setup;
  setup.status = "setup";
  EXPECT_EQ(DumpLegacyState(setup), R"({"status":"setup"})");
}

TEST(LegacyOps, JoinTakesTheNextRankAndFreezesAtMax) {
  auto w = LegacyJoin(Joinable({}), "4", 2, 3);
  ASSERT_EQ(w.step, LegacyStep::kWrite);
  EXPECT_EQ(w.rank, 0);
  EXPECT_FALSE(w.ttl);  // below MIN: no ttl
  w = LegacyJoin(Joinable({0}), "4", 2, 3);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.next.status, "joinable");
  EXPECT_EQ(w.ttl, kLegacyJoinableTtl);  // MIN reached: ephemeral
  w = LegacyJoin(Joinable({0, 1}), "4", 2, 3);
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.next.status, "frozen");
  EXPECT_TRUE(w.next.keep_alives.empty());
  EXPECT_EQ(w.ttl, kLegacyFrozenTtl);
  EXPECT_EQ(LegacyJoin(Joinable({0}), "5", 2, 3).step, LegacyStep::kRetryImmediately);
  auto frozen = Joinable({0, 1});
  frozen.status = "frozen";
  EXPECT_EQ(LegacyJoin(frozen, "4", 2, 3).step, LegacyStep::kRetryLater);
}

TEST(LegacyOps, ConfirmFinalizesWhenEveryoneConfirmed) {
  auto s = Joinable({0, 1});
  s.status = "frozen";
  auto w = LegacyConfirm(s, "4", "/k0");
  ASSERT_EQ(w.step, LegacyStep::kWrite);
  EXPECT_EQ(w.next.status, "frozen");
  EXPECT_EQ(w.ttl, kLegacyFrozenTtl);
  w = LegacyConfirm(w.next, "4", "/k1");
  EXPECT_EQ(w.next.status, "final");
  EXPECT_EQ(w.next.num_workers_waiting, 0);
  EXPECT_FALSE(w.ttl);  // the final state has no ttl
  EXPECT_EQ(LegacyConfirm(Joinable({0}), "4", "/k").step, LegacyStep::kRetryImmediately);
  // Waiting nodes, last call, close, expired keep-alives.
  auto a = LegacyAnnounceWaiting(w.next, "4");
  EXPECT_EQ(a.next.num_workers_waiting, 1);
  EXPECT_EQ(LegacyAnnounceWaiting(w.next, "3").step, LegacyStep::kRetryImmediately);
  EXPECT_EQ(LegacyExpiredKeepAlive(w.next, {"/k0", "/k1"}), std::nullopt);
  EXPECT_EQ(LegacyExpiredKeepAlive(w.next, {"/k1"}), "/k0");
  auto c = LegacyClose(w.next, 3);
  EXPECT_EQ(c.next.status, "closed");
  EXPECT_EQ(ParseLegacyState(DumpLegacyState(c.next)).tzrun_exit_code, 3);
  EXPECT_EQ(LegacyClose(c.next, 1).step, LegacyStep::kDone);
  auto f = LegacyFreeze(Joinable({0, 1}), "4");
  EXPECT_EQ(f.next.status, "frozen");
  EXPECT_EQ(LegacyFreeze(s, "4").step, LegacyStep::kDone);  // already frozen
  EXPECT_EQ(LegacyFreeze(Joinable({0}), "9").step, LegacyStep::kRetryLater);
}

TEST(LegacyOps, WatcherReportsWaitingNodesReplacedRoundsAndCloseOnce) {
  auto fin = ParseLegacyState(
      R"({"status": "final", "version": "4", "participants": [0], "keep_alives": ["/k"],)"
      R"( "num_workers_waiting": 0})");
  bool closed = false;
  bool membership = false;
  EXPECT_FALSE(LegacyWatchEvent(fin, "4", "job", closed, membership));
  fin.num_workers_waiting = 1;
  auto ev = LegacyWatchEvent(fin, "4", "job", closed, membership);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kMembershipChanged);
  EXPECT_TRUE(ev->scale_up);
  EXPECT_FALSE(LegacyWatchEvent(fin, "4", "job", closed, membership));  // once
  membership = false;
  ev = LegacyWatchEvent(std::nullopt, "4", "job", closed, membership);  // round destroyed
  ASSERT_TRUE(ev);
  EXPECT_FALSE(ev->scale_up);
  auto c = LegacyClose(fin, 7).next;
  ev = LegacyWatchEvent(c, "4", "job", closed, membership);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kJobFailed);
  EXPECT_EQ(ev->exit_code, 7);
  EXPECT_FALSE(LegacyWatchEvent(c, "4", "job", closed, membership));
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
