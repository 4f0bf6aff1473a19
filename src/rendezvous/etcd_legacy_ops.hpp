// tzrun rendezvous internals: the pure state transitions of torchrun's legacy `etcd` backend
// (torch/distributed/elastic/rendezvous/etcd_rendezvous.py, EtcdRendezvous). The state is the
// JSON document under <prefix>run_<run_id>/rdzv/active_version:
//   {"status": "setup"}                                   (ttl 5 s while a node creates it)
//   {"status": "joinable", "version": "<n>", "participants": [0, 1, ...]}
//   {"status": "frozen",   ..., "keep_alives": ["<key>", ...]}
//   {"status": "final",    ..., "keep_alives": [...], "num_workers_waiting": <k>}
//   {"status": "closed",   ...}
// Each function maps the state read to the state to write with compare-and-swap (or says why
// the node must retry), rule by rule as in the Python methods named. tzrun adds
// "tzrun_exit_code" to a state it closes after a final failure (torchrun keeps unknown keys:
// it rewrites the JSON it read).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tzrun/rendezvous/handler.hpp"

namespace tzrun::rendezvous::detail {

struct LegacyState {
  std::string status;  ///< setup, joinable, frozen, final, closed
  std::string version;
  std::vector<int> participants;
  std::vector<std::string> keep_alives;
  std::int64_t num_workers_waiting = 0;
  std::optional<int> tzrun_exit_code;
  /// The JSON object read: keys tzrun does not know are written back as they were.
  std::string extra;
};

/// Throws RendezvousStateError when `json` is not such a state.
LegacyState ParseLegacyState(const std::string& json);
std::string DumpLegacyState(const LegacyState& s);

/// What a node does next after reading the state.
enum class LegacyStep {
  kWrite,             ///< write the new state (compare-and-swap on the one read)
  kRetryImmediately,  ///< EtcdRendezvousRetryImmediately: start the join over now
  kRetryLater,        ///< EtcdRendezvousRetryableFailure: start over after 1 s
  kDone,              ///< nothing to write
};

struct LegacyWrite {
  LegacyStep step = LegacyStep::kDone;
  LegacyState next;
  std::optional<std::int64_t> ttl;  ///< the ttl of the written key (nullopt: none)
  int rank = -1;                    ///< join: the rank taken
  std::string why;                  ///< for the log
};

inline constexpr std::int64_t kLegacySetupTtl = 5;
inline constexpr std::int64_t kLegacyFrozenTtl = 10;
inline constexpr std::int64_t kLegacyJoinableTtl = 10;
inline constexpr std::int64_t kLegacyKeepAliveTtl = 10;
inline constexpr std::int64_t kLegacyRunIdTtl = 7200;

/// join_rendezvous: take the next rank of version `expected`; freeze at `max_nodes`.
LegacyWrite LegacyJoin(const LegacyState& s, const std::string& expected, int min_nodes,
                       int max_nodes);

/// confirm_membership: add `lease_key` to keep_alives; final once everyone confirmed.
LegacyWrite LegacyConfirm(const LegacyState& s, const std::string& expected,
                          const std::string& lease_key);

/// announce_self_waiting: num_workers_waiting + 1 on <final, expected>.
LegacyWrite LegacyAnnounceWaiting(const LegacyState& s, const std::string& expected);

/// handle_join_last_call at its deadline: <joinable, expected> -> frozen.
LegacyWrite LegacyFreeze(const LegacyState& s, const std::string& expected);

/// set_closed (with tzrun's exit code when given); kDone when already closed.
LegacyWrite LegacyClose(const LegacyState& s, std::optional<int> exit_code);

/// wait_for_rendezvous_to_free: the first keep-alive key of `s` that is not in `alive`.
std::optional<std::string> LegacyExpiredKeepAlive(const LegacyState& s,
                                                  const std::set<std::string>& alive);

/// What the watcher reports for the state read (nullopt: the key is gone) while this node
/// runs round `my_version`: the rendezvous closed (kJobFailed with tzrun's exit code, 125
/// without one), or nodes waiting (kMembershipChanged, scale_up) / the round destroyed or
/// replaced (kMembershipChanged); each once (`closed_seen`, `membership_seen` are updated).
std::optional<WatchEvent> LegacyWatchEvent(const std::optional<LegacyState>& s,
                                           const std::string& my_version, const std::string& run_id,
                                           bool& closed_seen, bool& membership_seen);

}  // namespace tzrun::rendezvous::detail
