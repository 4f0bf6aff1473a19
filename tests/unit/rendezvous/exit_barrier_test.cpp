// The exit barrier's hold on the store host (src/rendezvous/exit_barrier.hpp): the pure
// liveness tracker, and two static handlers in-process where node 1 is slower than node 0's
// barrier timeout.
#include "exit_barrier.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tzrun/rendezvous/static_rendezvous.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;
using detail::PeerLiveness;

TEST(ExitBarrierLiveness, ANodeIsAliveWhileItsCounterMoves) {
  PeerLiveness l(1000ms);
  const auto t0 = PeerLiveness::Clock::now();
  EXPECT_FALSE(l.Alive(1, t0));  // never seen
  l.Observe(1, 5, t0);
  EXPECT_TRUE(l.Alive(1, t0 + 999ms));  // first sight counts as a change
  l.Observe(1, 5, t0 + 900ms);
  EXPECT_FALSE(l.Alive(1, t0 + 1000ms));  // unchanged for stale_after
  l.Observe(1, 6, t0 + 1500ms);
  EXPECT_TRUE(l.Alive(1, t0 + 2400ms));
  EXPECT_FALSE(l.Alive(1, t0 + 2500ms));
  EXPECT_FALSE(l.Alive(2, t0 + 2400ms));
}

TEST(ExitBarrierLiveness, NodeListNamesTheNodes) {
  EXPECT_EQ(detail::NodeList({1}), "node 1");
  EXPECT_EQ(detail::NodeList({1, 3}), "nodes 1, 3");
}

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

struct Warnings {
  std::mutex mu;
  std::vector<std::string> lines;
  store::LogSink Sink() {
    return [this](store::LogLevel level, std::string_view m) {
      std::lock_guard lock(mu);
      if (level == store::LogLevel::kWarning) lines.emplace_back(m);
    };
  }
  bool Has(const std::string& part) {
    std::lock_guard lock(mu);
    for (const auto& l : lines) {
      if (l.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

std::unique_ptr<Handler> Node(int port, int rank, Warnings& w) {
  StaticOptions o;
  o.run_id = "job";
  o.master_port = port;
  o.node_rank = rank;
  o.nnodes = 2;
  o.timeout = 20s;
  o.read_timeout = 5s;
  o.close_timeout = 5s;
  o.poll_interval = 50ms;
  o.peer_stale_after = 1500ms;
  o.bind_host = "127.0.0.1";
  o.log = w.Sink();
  return MakeStaticRendezvous(o);
}

/// Both nodes rendezvous and start their watchers (as agents with running workers do).
void Form(std::vector<std::unique_ptr<Handler>>& nodes) {
  std::vector<std::future<void>> f;
  for (auto& n : nodes) {
    f.push_back(std::async(std::launch::async, [&n] {
      (void)n->NextRendezvous(0);
      n->Watch();
    }));
  }
  for (auto& x : f) x.get();
}

TEST(ExitBarrierHold, StoreHostWaitsPastItsTimeoutForAHealthySlowerNode) {
  Warnings w;
  const int port = FreePort();
  std::vector<std::unique_ptr<Handler>> nodes;
  nodes.push_back(Node(port, 0, w));
  nodes.push_back(Node(port, 1, w));
  Form(nodes);
  const auto t0 = std::chrono::steady_clock::now();
  auto host = std::async(std::launch::async, [&] { return nodes[0]->ExitBarrier(300ms); });
  // Node 1's workers run 3 s, ten times node 0's barrier timeout; it heartbeats meanwhile.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(host.wait_for(0s), std::future_status::timeout) << "node 0 left under node 1";
  EXPECT_TRUE(w.Has("node 1 still running healthy workers"));
  EXPECT_EQ(nodes[1]->ExitBarrier(300ms).kind, BarrierOutcome::Kind::kDone);
  EXPECT_EQ(host.get().kind, BarrierOutcome::Kind::kDone);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(ExitBarrierHold, StoreHostGivesUpOnANodeThatStoppedHeartbeating) {
  Warnings w;
  const int port = FreePort();
  std::vector<std::unique_ptr<Handler>> nodes;
  nodes.push_back(Node(port, 0, w));
  nodes.push_back(Node(port, 1, w));
  Form(nodes);
  nodes[1].reset();  // node 1's agent is gone without a word (SIGKILL)
  const auto out = nodes[0]->ExitBarrier(300ms);
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kTimedOut);
  EXPECT_NE(out.detail.find("node 1 stopped sending heartbeats"), std::string::npos) << out.detail;
}

TEST(ExitBarrierHold, ANodeDeadBeforeTheDeadlineDoesNotHoldTheStoreHostAtAll) {
  Warnings w;
  const int port = FreePort();
  std::vector<std::unique_ptr<Handler>> nodes;
  nodes.push_back(Node(port, 0, w));
  nodes.push_back(Node(port, 1, w));
  Form(nodes);
  nodes[1].reset();
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = nodes[0]->ExitBarrier(2500ms);  // longer than peer_stale_after (1.5 s)
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kTimedOut);
  EXPECT_NE(out.detail.find("node 1 stopped sending heartbeats"), std::string::npos) << out.detail;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_FALSE(w.Has("still running healthy workers"));
}

TEST(ExitBarrierHold, ANodeThatHostsNothingLeavesAtItsTimeout) {
  Warnings w;
  const int port = FreePort();
  std::vector<std::unique_ptr<Handler>> nodes;
  nodes.push_back(Node(port, 0, w));
  nodes.push_back(Node(port, 1, w));
  Form(nodes);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = nodes[1]->ExitBarrier(300ms);
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kTimedOut);
  EXPECT_NE(out.detail.find("1 of 2 arrived"), std::string::npos) << out.detail;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

}  // namespace
TEST(ExitBarrierHold, AZeroTimeoutEndsDoneOnceEveryNodeArrived) {
  // --exit-barrier-timeout 0 with both nodes finished: done, not "not every node finished
  // (2 of 2 arrived)" (found by a new-user trial).
  Warnings w;
  const int port = FreePort();
  std::vector<std::unique_ptr<Handler>> nodes;
  nodes.push_back(Node(port, 0, w));
  nodes.push_back(Node(port, 1, w));
  Form(nodes);
  EXPECT_EQ(nodes[1]->ExitBarrier(300ms).kind, BarrierOutcome::Kind::kTimedOut);  // alone: 1 of 2
  const auto out = nodes[0]->ExitBarrier(0ms);  // the second to arrive: all 2 are in
  EXPECT_EQ(out.kind, BarrierOutcome::Kind::kDone) << out.detail;
  EXPECT_FALSE(w.Has("not every node finished"));
}

}  // namespace tzrun::rendezvous
