#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <vector>

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/rendezvous/static_rendezvous.hpp"
#include "util.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

StaticOptions Opts(int port, int rank, int nnodes) {
  StaticOptions o;
  o.run_id = "job";
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.node_rank = rank;
  o.nnodes = nnodes;
  o.timeout = 20s;
  o.read_timeout = 5s;
  o.close_timeout = 5s;
  o.poll_interval = 50ms;
  o.bind_host = "127.0.0.1";
  return o;
}

struct Node {
  std::unique_ptr<Handler> h;
  RendezvousInfo info;
  AssignedRanks ranks;
};

// Runs next_rendezvous + rank assignment on every node concurrently.
void Form(std::vector<Node>& nodes, const std::vector<int>& nproc) {
  std::vector<std::future<void>> f;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    f.push_back(std::async(std::launch::async, [&, i] {
      auto& n = nodes[i];
      n.info = n.h->NextRendezvous(0);
      n.ranks = AssignWorkerRanks(*n.info.store, n.info.rank, n.info.world_size, "default",
                                  nproc[i], 20s, {});
      n.h->Watch();
    }));
  }
  for (auto& x : f) x.get();
}

std::vector<Node> MakeNodes(int port, int n) {
  std::vector<Node> nodes(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    nodes[static_cast<std::size_t>(r)].h = MakeStaticRendezvous(Opts(port, r, n));
  return nodes;
}

TEST(Static, ThreeNodesHeterogeneousNproc) {
  const int port = FreePort();
  auto nodes = MakeNodes(port, 3);
  Form(nodes, {2, 3, 1});
  EXPECT_EQ(nodes[0].ranks, (AssignedRanks{0, 6, 0, 6}));
  EXPECT_EQ(nodes[1].ranks, (AssignedRanks{2, 6, 2, 6}));
  EXPECT_EQ(nodes[2].ranks, (AssignedRanks{5, 6, 5, 6}));
  for (const auto& n : nodes) {
    EXPECT_EQ(n.info.world_size, 3);
    EXPECT_EQ(n.info.restart_count, 0);
    EXPECT_EQ(n.info.master_addr, "127.0.0.1");
    EXPECT_EQ(n.info.master_port, port);
  }
  // Exit barrier: all three arrive.
  std::vector<std::future<BarrierOutcome>> b;
  for (auto& n : nodes) {
    b.push_back(std::async(std::launch::async, [&n] { return n.h->ExitBarrier(20s); }));
  }
  for (auto& x : b) EXPECT_EQ(x.get().kind, BarrierOutcome::Kind::kDone);
  std::vector<std::future<void>> s;
  for (auto& n : nodes) s.push_back(std::async(std::launch::async, [&n] { n.h->Shutdown(); }));
  for (auto& x : s) x.get();
}

TEST(Static, ClientRetriesUntilNodeZeroComesUp) {
  const int port = FreePort();
  std::vector<Node> nodes(2);
  nodes[1].h = MakeStaticRendezvous(Opts(port, 1, 2));
  auto late = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(700ms);
    nodes[0].h = MakeStaticRendezvous(Opts(port, 0, 2));
    nodes[0].info = nodes[0].h->NextRendezvous(0);
    nodes[0].ranks = AssignWorkerRanks(*nodes[0].info.store, 0, 2, "default", 1, 20s, {});
  });
  nodes[1].info = nodes[1].h->NextRendezvous(0);
  nodes[1].ranks = AssignWorkerRanks(*nodes[1].info.store, 1, 2, "default", 1, 20s, {});
  late.get();
  EXPECT_EQ(nodes[1].ranks, (AssignedRanks{1, 2, 1, 2}));
}

TEST(Static, FailureOnOneNodeRestartsEveryNodeWithTheSameAttempt) {
  const int port = FreePort();
  auto nodes = MakeNodes(port, 2);
  Form(nodes, {1, 1});
  // Node 1's workers fail and it may restart: node 0 hears about it.
  const auto d = nodes[1].h->OnFailure(true, 3);
  EXPECT_TRUE(d.restart);
  EXPECT_EQ(d.node, 1);
  std::optional<WatchEvent> ev;
  ASSERT_TRUE(Eventually([&] { return (ev = nodes[0].h->TakeEvent()).has_value(); }));
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kRestartRequested);
  EXPECT_EQ(ev->from_node, 1);
  // A concurrent failure on node 0 follows node 1's decision instead of posting its own.
  const auto d0 = nodes[0].h->OnFailure(false, 9);
  EXPECT_TRUE(d0.restart);
  EXPECT_EQ(d0.node, 1);
  Form(nodes, {1, 1});
  for (const auto& n : nodes) {
    EXPECT_EQ(n.info.round, 1);
    EXPECT_EQ(n.info.restart_count, 1);
  }
  EXPECT_EQ(nodes[1].ranks, (AssignedRanks{1, 2, 1, 2}));
  // Now node 0 fails for good: node 1 stops with node 0's exit code.
  const auto fin = nodes[0].h->OnFailure(false, 42);
  EXPECT_FALSE(fin.restart);
  ASSERT_TRUE(Eventually([&] { return (ev = nodes[1].h->TakeEvent()).has_value(); }));
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kJobFailed);
  EXPECT_EQ(ev->exit_code, 42);
}

TEST(Static, BarrierEndsWithARestartRequestedMeanwhile) {
  const int port = FreePort();
  auto nodes = MakeNodes(port, 2);
  Form(nodes, {1, 1});
  auto waiting = std::async(std::launch::async, [&] { return nodes[0].h->ExitBarrier(20s); });
  std::this_thread::sleep_for(200ms);
  (void)nodes[1].h->OnFailure(true, 1);
  const auto out = waiting.get();
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kRestart);
  EXPECT_TRUE(out.counts_as_failure_restart);
}

TEST(Static, LosingNodeZeroIsReportedFast) {
  const int port = FreePort();
  auto nodes = MakeNodes(port, 2);
  Form(nodes, {1, 1});
  const auto t0 = std::chrono::steady_clock::now();
  nodes[0].h.reset();  // node 0 (the store host) vanishes
  std::optional<WatchEvent> ev;
  ASSERT_TRUE(Eventually([&] { return (ev = nodes[1].h->TakeEvent()).has_value(); }, 15s));
  EXPECT_EQ(ev->kind, WatchEvent::Kind::kStoreLost);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(Static, BusyPortIsAConnectionErrorWithAFix) {
  auto server = testing::StartServer();
  auto h = MakeStaticRendezvous(Opts(server->Port(), 0, 2));
  try {
    (void)h->NextRendezvous(0);
    FAIL() << "expected a bind error";
  } catch (const RendezvousConnectionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(server->Port())), std::string::npos) << what;
    EXPECT_NE(what.find("--master-port"), std::string::npos) << what;
  }
}

TEST(Static, ConnectTimeoutAndInterrupt) {
  const int port = FreePort();
  auto o = Opts(port, 1, 2);
  o.timeout = 600ms;
  auto h = MakeStaticRendezvous(o);
  EXPECT_THROW((void)h->NextRendezvous(0), RendezvousConnectionError);
  o.timeout = 60s;
  auto h2 = MakeStaticRendezvous(o);
  struct Stop {};
  const auto t0 = std::chrono::steady_clock::now();
  h2->SetInterrupt([&] {
    if (std::chrono::steady_clock::now() - t0 > 300ms) throw Stop{};
  });
  EXPECT_THROW((void)h2->NextRendezvous(0), Stop);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(Static, RejectsBadRanks) {
  EXPECT_THROW((void)MakeStaticRendezvous(Opts(1234, 2, 2)), ConfigError);
  EXPECT_THROW((void)MakeStaticRendezvous(Opts(0, 0, 2)), ConfigError);
}

}  // namespace
}  // namespace tzrun::rendezvous
