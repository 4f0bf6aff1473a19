#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <vector>

#include "etcd_http.hpp"
#include "torch_state.hpp"
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/client.hpp"
#include "util.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using Clock = std::chrono::steady_clock;

class Dynamic : public ::testing::Test {
 protected:
  void SetUp() override { server_ = testing::StartServer(); }

  DynamicOptions Opts(const std::string& addr, int min, int max) const {
    DynamicOptions o;
    o.run_id = "job";
    o.min_nodes = min;
    o.max_nodes = max;
    o.endpoint = {"127.0.0.1", server_->Port()};
    o.is_host = false;
    o.local_addr = addr;
    o.join_timeout = 30s;
    o.last_call_timeout = 300ms;
    o.close_timeout = 5s;
    o.read_timeout = 3s;
    o.heartbeat_timeout = 2s;
    o.keep_alive_interval = 200ms;
    o.keep_alive_max_attempt = 3;
    o.poll_interval = 100ms;
    o.first_round_jitter = false;
    return o;
  }

  static std::vector<RendezvousInfo> JoinAll(std::vector<std::unique_ptr<Handler>>& hs,
                                             int restart_count = 0) {
    std::vector<std::future<RendezvousInfo>> f;
    for (auto& h : hs) {
      f.push_back(std::async(std::launch::async,
                             [&h, restart_count] { return h->NextRendezvous(restart_count); }));
    }
    std::vector<RendezvousInfo> out;
    for (auto& x : f) out.push_back(x.get());
    return out;
  }

  std::unique_ptr<store::Server> server_;
};

TEST_F(Dynamic, FormsAtMaxWithoutWaitingForTheLastCall) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"c", "a", "b"}) {
    auto o = Opts(a, 2, 3);
    o.last_call_timeout = 60s;  // would dominate if MAX did not complete the round at once
    hs.push_back(MakeDynamicRendezvous(o));
  }
  const auto t0 = Clock::now();
  auto infos = JoinAll(hs);
  EXPECT_LT(Clock::now() - t0, 20s);
  // Ranks follow the sorted node descriptors (addr first): a=0, b=1, c=2.
  EXPECT_EQ(infos[0].rank, 2);
  EXPECT_EQ(infos[1].rank, 0);
  EXPECT_EQ(infos[2].rank, 1);
  for (const auto& i : infos) {
    EXPECT_EQ(i.world_size, 3);
    EXPECT_EQ(i.round, 0);
    // Round rank 0 ("a") hosts the workers' store and publishes it.
    EXPECT_EQ(i.master_addr, "a");
    EXPECT_EQ(i.master_port, infos[1].master_port);
    EXPECT_NE(i.master_port, 0);
  }
  // The round store is torchrun's PrefixStore("torch.rendezvous.<run_id>.<round>").
  store::ClientOptions co;
  co.port = server_->Port();
  store::Client c(co);
  EXPECT_EQ(c.Get("torch.rendezvous.job.0/MASTER_ADDR"), "a");
}

TEST_F(Dynamic, FormsAtMinAfterTheLastCall) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"x", "y"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 4)));
  auto infos = JoinAll(hs);
  EXPECT_EQ(infos[0].world_size, 2);
  EXPECT_EQ(infos[0].rank, 0);
  EXPECT_EQ(infos[1].rank, 1);
  // Rank assignment on the round store works like torchrun's.
  std::vector<std::future<AssignedRanks>> f;
  for (std::size_t i = 0; i < 2; ++i) {
    f.push_back(std::async(std::launch::async, [&, i] {
      return AssignWorkerRanks(*infos[i].store, infos[i].rank, 2, "default", 2, 10s, {});
    }));
  }
  EXPECT_EQ(f[0].get(), (AssignedRanks{0, 4, 0, 4}));
  EXPECT_EQ(f[1].get(), (AssignedRanks{2, 4, 2, 4}));
}

TEST_F(Dynamic, LateJoinerWaitsAndTriggersAScaleUp) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 3)));
  auto first = JoinAll(hs);
  ASSERT_EQ(first[0].world_size, 2);
  for (auto& h : hs) h->Watch();
  auto late = MakeDynamicRendezvous(Opts("c", 2, 3));
  auto late_join = std::async(std::launch::async, [&] { return late->NextRendezvous(0); });
  // The running nodes see the waiting node (torchrun: num_nodes_waiting() > 0).
  for (auto& h : hs) {
    std::optional<WatchEvent> ev;
    ASSERT_TRUE(Eventually([&] { return (ev = h->TakeEvent()).has_value(); }));
    EXPECT_EQ(ev->kind, WatchEvent::Kind::kMembershipChanged);
    EXPECT_NE(ev->detail.find("waiting"), std::string::npos) << ev->detail;
  }
  // Everybody re-rendezvouses (no restart budget involved) into a 3-node round.
  auto second = JoinAll(hs);
  const auto third = late_join.get();
  EXPECT_EQ(second[0].world_size, 3);
  EXPECT_EQ(third.world_size, 3);
  EXPECT_EQ(second[0].round, 1);
  EXPECT_EQ(third.rank, 2);
  EXPECT_EQ(second[0].restart_count, 0);
}

TEST_F(Dynamic, FinishedNodeIgnoresNewcomersButNotALeavingPeer) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 3)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  // "a" finished; a newcomer arrives while "b" still runs: "a" keeps waiting (torchrun).
  auto a_barrier = std::async(std::launch::async, [&] { return hs[0]->ExitBarrier(30s); });
  auto late = MakeDynamicRendezvous(Opts("c", 2, 3));
  auto late_join = std::async(std::launch::async, [&] { return late->NextRendezvous(0); });
  std::optional<WatchEvent> ev;
  ASSERT_TRUE(Eventually([&] { return (ev = hs[1]->TakeEvent()).has_value(); }));
  EXPECT_TRUE(ev->scale_up);
  EXPECT_EQ(a_barrier.wait_for(500ms), std::future_status::timeout);
  // "b" finishes too: the barrier completes for both, the job ends, the newcomer is refused.
  EXPECT_EQ(hs[1]->ExitBarrier(30s).kind, BarrierOutcome::Kind::kDone);
  EXPECT_EQ(a_barrier.get().kind, BarrierOutcome::Kind::kDone);
  auto s0 = std::async(std::launch::async, [&] { hs[0]->Shutdown(); });
  hs[1]->Shutdown();
  s0.get();
  EXPECT_THROW((void)late_join.get(), RendezvousClosedError);
}

TEST_F(Dynamic, FinishedNodeRestartsWhenAPeerLeavesTheRound) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 1, 2)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  auto a_barrier = std::async(std::launch::async, [&] { return hs[0]->ExitBarrier(30s); });
  // "b"'s workers fail and it re-joins (torchrun's failure restart): "a" must restart too.
  auto b_join = std::async(std::launch::async, [&] { return hs[1]->NextRendezvous(1); });
  const auto out = a_barrier.get();
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kRestart);
  EXPECT_FALSE(out.counts_as_failure_restart);
  const auto a_info = hs[0]->NextRendezvous(0);
  EXPECT_EQ(a_info.world_size, 2);
  EXPECT_EQ(b_join.get().restart_count, 1);
}

TEST_F(Dynamic, RedundantNodeIsNotWaitingAndExitsGracefullyWhenClosed) {
  auto a = MakeDynamicRendezvous(Opts("a", 1, 1));
  const auto info = a->NextRendezvous(0);
  EXPECT_EQ(info.world_size, 1);
  a->Watch();
  auto b = MakeDynamicRendezvous(Opts("b", 1, 1));
  auto b_join = std::async(std::launch::async, [&] { return b->NextRendezvous(0); });
  std::this_thread::sleep_for(800ms);
  EXPECT_FALSE(a->TakeEvent().has_value()) << "a full round must not restart for spares";
  a->Shutdown();  // job done: closes the rendezvous
  EXPECT_THROW((void)b_join.get(), RendezvousGracefulExit);
}

TEST_F(Dynamic, DeadNodeIsPrunedAndSurvivorsReform) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b", "c"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 3)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  hs[1]->Unwatch();  // "b" freezes: no more heartbeats
  const auto t0 = Clock::now();
  for (std::size_t i : {0u, 2u}) {
    std::optional<WatchEvent> ev;
    ASSERT_TRUE(Eventually([&] { return (ev = hs[i]->TakeEvent()).has_value(); }));
    EXPECT_EQ(ev->kind, WatchEvent::Kind::kMembershipChanged);
    EXPECT_NE(ev->detail.find("b_"), std::string::npos) << ev->detail;
  }
  // 3 x 200 ms heartbeats + polling; generous bound for a loaded box.
  EXPECT_LT(Clock::now() - t0, 15s);
  std::vector<std::unique_ptr<Handler>> survivors;
  survivors.push_back(std::move(hs[0]));
  survivors.push_back(std::move(hs[2]));
  auto infos = JoinAll(survivors, 1);
  EXPECT_EQ(infos[0].world_size, 2);
  EXPECT_EQ(infos[0].rank, 0);
  EXPECT_EQ(infos[1].rank, 1);
  EXPECT_EQ(infos[0].restart_count, 1);
}

TEST_F(Dynamic, RestartCountIsTheParticipantsMaximum) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 2)));
  std::vector<std::future<RendezvousInfo>> f;
  f.push_back(std::async(std::launch::async, [&] { return hs[0]->NextRendezvous(0); }));
  f.push_back(std::async(std::launch::async, [&] { return hs[1]->NextRendezvous(2); }));
  EXPECT_EQ(f[0].get().restart_count, 2);
  EXPECT_EQ(f[1].get().restart_count, 2);
}

TEST_F(Dynamic, FinalFailureClosesWithItsExitCode) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 2)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  const auto d = hs[0]->OnFailure(false, 7);
  EXPECT_FALSE(d.restart);
  std::optional<WatchEvent> ev;
  ASSERT_TRUE(Eventually([&] { return (ev = hs[1]->TakeEvent()).has_value(); }));
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kJobFailed);
  EXPECT_EQ(ev->exit_code, 7);
  // Later joiners are refused and learn the exit code.
  auto late = MakeDynamicRendezvous(Opts("z", 2, 2));
  try {
    (void)late->NextRendezvous(0);
    FAIL() << "expected a closed rendezvous";
  } catch (const RendezvousClosedError& e) {
    EXPECT_EQ(e.ExitCode(), 7);
  }
}

TEST_F(Dynamic, SignalledNodeLeavesWithoutClosing) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 1, 2)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  hs[1]->Abandon(143);
  std::optional<WatchEvent> ev;
  ASSERT_TRUE(Eventually([&] { return (ev = hs[0]->TakeEvent()).has_value(); }, 5s));
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kMembershipChanged);
  // The rendezvous stays open: the survivor re-forms alone (MIN 1).
  const auto info = hs[0]->NextRendezvous(0);
  EXPECT_EQ(info.world_size, 1);
}

TEST_F(Dynamic, JoinTimeoutSaysWhoIsMissing) {
  auto o = Opts("lonely", 2, 2);
  o.join_timeout = 500ms;
  auto h = MakeDynamicRendezvous(o);
  const auto t0 = Clock::now();
  try {
    (void)h->NextRendezvous(0);
    FAIL() << "expected a timeout";
  } catch (const RendezvousTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("join_timeout"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, 10s);
}

TEST_F(Dynamic, LostStoreFailsFastEverywhere) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* a : {"a", "b"}) hs.push_back(MakeDynamicRendezvous(Opts(a, 2, 2)));
  JoinAll(hs);
  for (auto& h : hs) h->Watch();
  const auto t0 = Clock::now();
  server_->Stop();
  for (auto& h : hs) {
    std::optional<WatchEvent> ev;
    ASSERT_TRUE(Eventually([&] { return (ev = h->TakeEvent()).has_value(); }));
    EXPECT_EQ(ev->kind, WatchEvent::Kind::kStoreLost);
  }
  EXPECT_THROW((void)hs[0]->NextRendezvous(1), RendezvousConnectionError);
  EXPECT_LT(Clock::now() - t0, 10s);
}

TEST_F(Dynamic, UnreachableStoreIsRetriedUntilJoinTimeout) {
  auto o = Opts("a", 1, 1);
  o.endpoint = {"127.0.0.1", 1};  // nothing listens on port 1
  o.join_timeout = 600ms;
  const auto t0 = Clock::now();
  EXPECT_THROW((void)MakeDynamicRendezvous(o), RendezvousConnectionError);
  EXPECT_GE(Clock::now() - t0, 500ms);
  o.endpoint = {"no-such-host.invalid", server_->Port()};
  EXPECT_THROW((void)MakeDynamicRendezvous(o), RendezvousConnectionError);
}

TEST_F(Dynamic, InferredHostFallsBackToClientWhenThePortIsTaken) {
  auto o = Opts("a", 1, 1);
  o.is_host.reset();  // 127.0.0.1 is this machine; the port is busy (our test server)
  auto h = MakeDynamicRendezvous(o);
  EXPECT_EQ(DynamicStoreEndpoint(*h), "127.0.0.1:" + std::to_string(server_->Port()));
  EXPECT_EQ(h->NextRendezvous(0).world_size, 1);
  auto explicit_host = Opts("b", 1, 1);
  explicit_host.is_host = true;
  EXPECT_THROW((void)MakeDynamicRendezvous(explicit_host), RendezvousConnectionError);
}

TEST_F(Dynamic, StandaloneHostsOnAFreePort) {
  auto o = Opts("me", 1, 1);
  o.endpoint = {"localhost", 0};
  o.is_host.reset();
  auto h = MakeDynamicRendezvous(o);
  EXPECT_NE(DynamicStoreEndpoint(*h), "127.0.0.1:0");
  const auto info = h->NextRendezvous(0);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.master_addr, "me");
  EXPECT_GT(info.master_port, 0);
  EXPECT_EQ(h->ExitBarrier(5s).kind, BarrierOutcome::Kind::kDone);
  h->Shutdown();
}

TEST_F(Dynamic, StateIsTorchrunsPickleUnderItsKeyAndGarbageIsRejected) {
  store::ClientOptions co;
  co.port = server_->Port();
  store::Client c(co);
  {
    auto h = MakeDynamicRendezvous(Opts("a", 1, 1));
    (void)h->NextRendezvous(0);
    // C10dRendezvousBackend: base64 of the pickled _RendezvousState (protocol 4: 0x80 0x04).
    const auto pickle = detail::Base64Decode(c.Get("torch.rendezvous.job"));
    ASSERT_TRUE(pickle.has_value());
    EXPECT_EQ(pickle->substr(0, 2), std::string("\x80\x04", 2));
    EXPECT_EQ(detail::DecodeTorchState(*pickle).participants.size(), 1U);
    h->Shutdown();
  }
  c.Set("torch.rendezvous.other", "not base64!");
  auto o = Opts("a", 1, 1);
  o.run_id = "other";
  auto h = MakeDynamicRendezvous(o);
  EXPECT_THROW((void)h->NextRendezvous(0), RendezvousStateError);
}

TEST(State, NodeDescOrderAndName) {
  EXPECT_LT((NodeDesc{"a", 9, 9}), (NodeDesc{"b", 1, 1}));
  EXPECT_LT((NodeDesc{"a", 1, 2}), (NodeDesc{"a", 2, 0}));
  EXPECT_EQ((NodeDesc{"h", 12, 3}).Str(), "h_12_3");
}

}  // namespace
}  // namespace tzrun::rendezvous
