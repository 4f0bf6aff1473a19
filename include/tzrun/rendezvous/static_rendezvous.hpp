// tzrun/rendezvous/static_rendezvous.hpp — the `static` backend: a fixed set of nodes,
// ranks from --node-rank, node 0 hosts the store.
//
// Upstream: torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py. As torchrun:
// world size = --nnodes (MAX), rank = --node-rank, node 0's agent hosts a c10d TCPStore on
// MASTER_PORT (all interfaces) that the agents *and* the workers use (torch 2.11 workers add no
// /worker/attempt_<N> prefix, so every attempt starts from a clean workers' store — see
// docs/design.md), the others connect as clients and retry — also while the endpoint name does not
// resolve — until `timeout` (rdzv-conf timeout, 900 s). Agent keys live under
// PrefixStore(<run_id>).
//
// tzrun additions (torchrun's static backend has no cross-node restart at all):
//   * job-wide restarts: a node whose workers fail posts a decision under
//     "<run_id>/tzrun/restart/<attempt>" with compare_set (the first node wins); every node
//     watches that key, stops its workers and either restarts with attempt+1 (the same
//     TORCHELASTIC_RESTART_COUNT everywhere) or, when the failing node had no restarts
//     left, exits with that node's exit code. A signal on one node posts a failure too
//     (there is no elasticity to wait for a replacement);
//   * attempt N >= 1 uses the round store PrefixStore("<run_id>.<N>") so rank-assignment
//     and exit-barrier keys of attempts never mix, and starts with a barrier of all nodes
//     (every node has stopped its workers) after which node 0 deletes the previous
//     workers' keys: torch 2.11 workers use the agent store without a per-attempt prefix
//     (torch/distributed/rendezvous.py _create_c10d_store), so stale gloo peer addresses
//     would make the restarted workers fail (as they do under torchrun);
//   * the hosting node keeps the store up after its own end until every node has left
//     (bounded by close_timeout), so a fast node 0 never cuts the others off;
//   * exit barrier: node 0 does not leave when its barrier times out while a node that has
//     not arrived is still alive (its watcher bumps "<round>/tzrun/heartbeat/<rank>" every
//     poll_interval; silent for peer_stale_after = gone): it warns naming the nodes and waits
//     for them (src/rendezvous/exit_barrier.hpp). torchrun's node 0 leaves after 300 s.
//
// Thread-safety: see handler.hpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/store/log.hpp"

namespace tzrun::rendezvous {

struct StaticOptions {
  std::string run_id = "none";
  std::string master_addr = "127.0.0.1";  ///< node 0's address (workers' MASTER_ADDR)
  int master_port = 29500;
  int node_rank = 0;
  int nnodes = 1;
  /// Connect / rendezvous timeout (rdzv-conf `timeout`, LaunchConfig default 900 s).
  std::chrono::milliseconds timeout = std::chrono::seconds(900);
  /// Bound on each store reply (rdzv-conf `read_timeout`, tzrun extension): a silent
  /// store host is an error after this long.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  /// How long the hosting node waits for the others to leave at the end.
  std::chrono::milliseconds close_timeout = std::chrono::seconds(30);
  /// Period of the restart watcher's store polls and of its heartbeat.
  std::chrono::milliseconds poll_interval = std::chrono::seconds(1);
  /// Node 0's exit barrier past its timeout: a node whose heartbeat did not change for this
  /// long no longer holds the store up.
  std::chrono::milliseconds peer_stale_after = std::chrono::seconds(10);
  /// Node 0 binds this address ("" = all interfaces, dual-stack).
  std::string bind_host;
  /// One node whose port came from no flag or variable (torchrun's default 29500): when that
  /// port is taken (another single-node job), host the store on a free port instead, with a
  /// warning, rather than fail. Only for nnodes == 1: other nodes could not find the new port.
  bool port_fallback = false;
  store::LogSink log;
};

/// Creates the handler; nothing touches the network before NextRendezvous(). Node 0's
/// first NextRendezvous() binds the store and throws RendezvousConnectionError (with the
/// port and a fix) when the port is taken (unless port_fallback). Throws ConfigError for bad
/// options.
[[nodiscard]] std::unique_ptr<Handler> MakeStaticRendezvous(StaticOptions options);

}  // namespace tzrun::rendezvous
