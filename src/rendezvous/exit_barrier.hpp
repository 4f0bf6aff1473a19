// Internal: the exit barrier both backends share (torchrun's store barrier on
// kTerminalStatePrefix, SimpleElasticAgent._exit_barrier in torch/distributed/elastic/agent/
// server/api.py, utils/store.py barrier), with tzrun's hold for the node that hosts a store.
//
// tzrun addition (torchrun has none): when the barrier times out on a node that hosts a store
// the other nodes use (static: node 0's rendezvous/workers' store; c10d: the rendezvous store
// or the round's workers' store), that node does not leave while a node that has not arrived
// is still alive, because leaving would tear the store down under that node's healthy, still
// running workers. It warns naming those nodes (again every `warn_every`) and keeps waiting
// until they arrive, a watcher event ends the barrier (a failure, a restart, a lost node), or
// no pending node is alive any more (then: kTimedOut as before).
//
// Liveness: static agents bump a per-node heartbeat counter on the round store from their
// watcher thread (HeartbeatKey); PeerLiveness tracks those counters as the host observes
// them (its own steady clock, so clock skew between machines does not matter). The c10d
// backend passes no liveness test: its watcher already reports lost participants as events.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/store/log.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous::detail {

/// Round-store key a node sets when it enters the exit barrier.
[[nodiscard]] std::string BarrierArrivedKey(int node_rank);
/// Round-store counter a node's watcher bumps while its agent is alive.
[[nodiscard]] std::string HeartbeatKey(int node_rank);

/// "node 1", "nodes 1, 3".
[[nodiscard]] std::string NodeList(const std::vector<int>& ranks);

/// Heartbeat tracker (pure; not thread-safe). A node is alive while its counter changed
/// within `stale_after` of the latest observation; a node first seen counts as just changed.
class PeerLiveness {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PeerLiveness(std::chrono::milliseconds stale_after) : stale_after_(stale_after) {}
  void Observe(int node_rank, std::int64_t counter, Clock::time_point now);
  [[nodiscard]] bool Alive(int node_rank, Clock::time_point now) const;

 private:
  struct Seen {
    std::int64_t counter = 0;
    Clock::time_point changed;
  };
  std::chrono::milliseconds stale_after_;
  std::map<int, Seen> seen_;
};

struct ExitBarrierParams {
  int world_size = 1;
  int node_rank = 0;
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  /// This node hosts a store the others use: hold past the timeout (see above).
  bool hosting = false;
  /// The pending nodes (not arrived) that are alive; empty function: all of them are.
  std::function<std::vector<int>(const std::vector<int>& pending)> live;
  std::chrono::milliseconds warn_every{std::chrono::seconds(60)};
  store::LogSink log;
};

/// Waits for every node (see above and Handler::ExitBarrier). Store errors are kStoreLost.
BarrierOutcome ExitBarrier(store::Store& round_store, const ExitBarrierParams& params,
                           const Interrupt& interrupt,
                           const std::function<std::optional<WatchEvent>()>& take_event);

}  // namespace tzrun::rendezvous::detail
