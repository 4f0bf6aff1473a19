// tzrun/rendezvous/dynamic_rendezvous.hpp — the `c10d` backend: elastic membership with
// MIN..MAX nodes, a shared state under one store key, heartbeats, re-rendezvous rounds.
//
// Upstream: torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
// (DynamicRendezvousHandler, _RendezvousState, the exit/join/close/keep-alive operations and
// their decision tables, _remove_participant_epilogue, _BackendRendezvousStateHolder
// sanitize) and c10d_rendezvous_backend.py (store hosting, compare_set fencing). Same
// semantics: the agent whose host matches the endpoint (or rdzv-conf is_host) hosts the
// rendezvous store (an inferred host that cannot bind falls back to a client); nodes join
// until MAX, or MIN plus last_call_timeout; ranks = order of sorted node descriptors
// (addr, pid, local_id); later nodes wait for the next round (wait list → nodes waiting)
// or sit in the redundancy list when the round is full; nodes whose heartbeat is older
// than keep_alive_interval * keep_alive_max_attempt are pruned; the round store is
// PrefixStore("torch.rendezvous.<run_id>.<round>"); round rank 0 hosts the workers' store
// on a free port and publishes MASTER_ADDR/MASTER_PORT there (torchrun 2.11 shared store).
//
// The `etcd-v2` backend (DynamicOptions::backend, torchrun's etcd_rendezvous_backend.py) runs
// the same state machine with the state in etcd, as torchrun's pickle, so tzrun and torchrun
// agents can share an etcd-v2 rendezvous; no agent hosts a rendezvous store there, the round
// store is torch's EtcdStore (src/rendezvous/state_channel.hpp, torch_state.hpp).
//
// Under c10d the state is torchrun's too: base64 of its pickle under the store key
// torch.rendezvous.<run_id>, "no state" its sentinel (c10d_rendezvous_backend.py), so tzrun and
// torchrun agents can share a c10d rendezvous, over the TCP store or (store_type=file) over
// torch's FileStore in a shared file (src/rendezvous/file_store.hpp), which no agent hosts.
// Differences from torchrun: tzrun's waiting nodes are also woken by a notify key the writer sets
// for the state it replaced, instead of only polling every second; every store reply is bounded by
// read_timeout and the connect by join_timeout; participants record their local restart count so
// the round's TORCHELASTIC_RESTART_COUNT is the same on every node (their maximum); round rank 0
// hosts a fresh workers' store every round (torch 2.11 workers use the agent store without a
// per-attempt prefix, so a reused store hands stale gloo addresses to restarted workers —
// torchrun's gloo restarts fail that way); the watcher also reports a participant that
// left or died; a node
// that gives up after its last restart closes the rendezvous with its exit code so every
// other node stops and exits with it; a signalled agent leaves its round (never closes).
//
// Thread-safety: see handler.hpp.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/store/log.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous {

struct DynamicOptions {
  /// "c10d" (the state in the rendezvous TCP store) or "etcd-v2" (the state and the round
  /// store in etcd at `endpoint`, torchrun's etcd_rendezvous_backend.py; see
  /// src/rendezvous/state_channel.hpp).
  std::string backend = "c10d";
  std::string run_id;
  int min_nodes = 1;
  int max_nodes = 1;
  Endpoint endpoint{"localhost", 29400};
  /// etcd-v2 only: http or https with certificates (params.hpp).
  EtcdTls etcd_tls;
  /// c10d with rdzv-conf store_type=file: the path of torch's FileStore holding the state and
  /// the round stores ("" = a new temporary file, tempfile.mkstemp); `endpoint` and `is_host`
  /// are then unused. nullopt: the TCP store at `endpoint` (store_type=tcp).
  std::optional<std::string> store_file;
  /// rdzv-conf is_host; nullopt = infer from the endpoint host (matches_machine_hostname),
  /// falling back to a client when binding fails.
  std::optional<bool> is_host;
  /// This node's address: node descriptor and published MASTER_ADDR (--local-addr or the
  /// FQDN; the caller resolves it). Must not be empty.
  std::string local_addr;
  std::chrono::milliseconds join_timeout = std::chrono::seconds(600);
  std::chrono::milliseconds last_call_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds close_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds heartbeat_timeout = std::chrono::seconds(5);
  std::chrono::milliseconds keep_alive_interval = std::chrono::seconds(5);
  int keep_alive_max_attempt = 3;
  /// Longest wait between two reads of the state while nothing changes.
  std::chrono::milliseconds poll_interval = std::chrono::seconds(1);
  /// --monitor-interval: while the workers run, the watcher re-reads the state at least this
  /// often (torchrun's agent calls num_nodes_waiting() every monitor_interval to see nodes
  /// that want to join); changes the store signals are seen at once. Heartbeats and deadlines
  /// still wake it sooner.
  std::chrono::milliseconds watch_interval = std::chrono::milliseconds(100);
  /// torchrun's random 0-0.3 s delay before the first join (skipped when max_nodes == 1).
  bool first_round_jitter = true;
  /// Address the rendezvous store binds when hosting ("" = all interfaces).
  std::string bind_host;
  store::LogSink log;
};

/// torchrun's _NodeDesc; ordered like the Python dataclass (addr, pid, local_id).
struct NodeDesc {
  std::string addr;
  std::int64_t pid = 0;
  std::int64_t local_id = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 false positive on a defaulted <=>
  auto operator<=>(const NodeDesc&) const = default;
  bool operator==(const NodeDesc&) const = default;
  /// "addr_pid_localid", as torchrun prints it.
  [[nodiscard]] std::string Str() const;
};

/// torchrun's _RendezvousState plus tzrun's fields (version, closing exit code, restart
/// counts). Times are wall-clock Unix seconds (torchrun: UTC datetimes).
struct RendezvousState {
  std::int64_t version = 0;  ///< +1 on every write in this process (not stored)
  int round = 0;
  bool complete = false;
  std::optional<double> deadline;
  bool closed = false;
  std::optional<int> closed_exit_code;  ///< set when a node closed it after a final failure
  std::string closed_by;                ///< descriptor of the closing node
  struct Participant {
    int rank = 0;
    int restart_count = 0;
    bool operator==(const Participant&) const = default;
  };
  std::map<NodeDesc, Participant> participants;
  std::set<NodeDesc> wait_list;
  std::set<NodeDesc> redundancy_list;
  std::map<NodeDesc, double> last_heartbeats;
  bool operator==(const RendezvousState&) const = default;
};

/// Creates the handler. Construction connects to (or hosts) the rendezvous store:
/// hosting binds endpoint.port on all interfaces (0 = a free port); clients retry until
/// join_timeout, also while the endpoint name does not resolve. Throws ConfigError for bad
/// options, RendezvousConnectionError when the store cannot be hosted or reached.
[[nodiscard]] std::unique_ptr<Handler> MakeDynamicRendezvous(DynamicOptions options,
                                                             const Interrupt& interrupt = {});

/// The rendezvous store endpoint actually in use (for --standalone's port 0), available
/// on handlers made by make_dynamic_rendezvous; "" for others.
[[nodiscard]] std::string DynamicStoreEndpoint(const Handler& handler);

}  // namespace tzrun::rendezvous
