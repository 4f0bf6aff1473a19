// Internal: the pure state machine of the c10d (dynamic) rendezvous — what one node does next
// to the shared RendezvousState (include/tzrun/rendezvous/dynamic_rendezvous.hpp) and how the
// state changes when it does. dynamic_rendezvous.cpp does the store I/O around these.
//
// The decision tables follow torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
// (_RendezvousExitOp, _RendezvousJoinOp, _RendezvousCloseOp, _RendezvousKeepAliveOp and
// _RendezvousStateHolder._sanitize) rule by rule. Clocks are inputs: `now` is the steady time
// the op deadline is measured in, `wall` the wall-clock time in seconds since the epoch that
// the shared state's deadline and heartbeats use (they are compared across machines).
//
// Pure functions; thread-compatible (callers hold the handler's state lock).
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tzrun/rendezvous/dynamic_rendezvous.hpp"

namespace tzrun::rendezvous::detail {

/// One step of an op on the shared state.
enum class Action {
  kKeepAlive,
  kAddToParticipants,
  kAddToWaitList,
  kAddToRedundancyList,
  kRemoveFromParticipants,
  kRemoveFromWaitList,
  kRemoveFromRedundancyList,
  kMarkComplete,
  kMarkClosed,
  kSync,           ///< nothing to write: wait for the state to change
  kErrorClosed,    ///< the rendezvous is closed: RendezvousClosedError
  kErrorTimeout,   ///< the op deadline passed: RendezvousTimeoutError
  kExitRedundant,  ///< closed while this node waited as redundant: RendezvousGracefulExit
  kFinish,         ///< the op is done
};

/// The ops of torchrun's _DistributedRendezvousOpExecutor.
enum class Op { kExit, kJoin, kClose, kKeepAlive };

using SteadyTime = std::chrono::steady_clock::time_point;

/// Seconds in `d` as a double.
double Seconds(std::chrono::milliseconds d);

/// Whether `me`'s last heartbeat is at least keep_alive_interval old at `wall` (false when
/// `me` has none).
bool KeepAliveDue(const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
                  double wall);

/// The next step of `op` for node `me` on state `s` (the op started with `deadline`).
Action Decide(Op op, const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
              SteadyTime now, SteadyTime deadline, double wall);

/// Applies a writing action (kKeepAlive .. kMarkClosed) for `me` to `s`; other actions are
/// no-ops. Returns true when the op deadline restarts (kRemoveFromRedundancyList: the node
/// joins afresh).
bool Apply(Action a, RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
           int restart_count, std::optional<int> close_code, double wall);

/// Completes the round: ranks 0..n-1 in node order, no last-call deadline.
void MarkComplete(RendezvousState& s);

/// After a participant left: a complete round without participants starts the next round;
/// an incomplete one below min_nodes drops its last-call deadline.
void RemoveParticipantEpilogue(RendezvousState& s, const DynamicOptions& o);

/// Removes the nodes whose last heartbeat is older than keep_alive_interval ·
/// keep_alive_max_attempt at `wall` from every list; returns them (for the log).
std::vector<NodeDesc> RemoveDeadNodes(RendezvousState& s, const DynamicOptions& o, double wall);

/// How long a SYNC may sleep before something time-based can change the decision: at most
/// poll_interval and `op_left`, until the state's deadline, `me`'s next heartbeat or another
/// node's expiry (+5 ms slack each); at least 1 ms.
std::chrono::milliseconds NextWake(const RendezvousState& s, const NodeDesc& me,
                                   const DynamicOptions& o, std::chrono::milliseconds op_left,
                                   double wall);

/// Reads of the shared state are at least this far apart per node: 5 ms per known node,
/// capped by poll_interval. Small jobs react to every change at once; large ones batch
/// (every write wakes every waiter, so without a gap N nodes would read N^2 states per
/// round of writes; with it the whole job reads at most ~200 states per second).
std::chrono::milliseconds MinReadGap(const RendezvousState& s, const DynamicOptions& o);

/// "2 participant(s) [a_1_0, b_2_0], 1 waiting" for timeout messages.
std::string Describe(const RendezvousState& s);

/// The error message of kErrorTimeout in `op` (join: who is there and what to do).
std::string TimeoutMessage(Op op, const RendezvousState& s, const NodeDesc& me,
                           const DynamicOptions& o);

/// The message of kErrorClosed (who closed the rendezvous, with which exit code).
std::string ClosedMessage(const RendezvousState& s, const DynamicOptions& o);

/// The watcher's view of a change in the round `me` joined as round `my_round` with
/// `my_participants`.
struct MembershipChange {
  std::string why;        ///< for the WatchEvent detail
  bool scale_up = false;  ///< only new nodes are waiting (reported once)
};

/// The first reason the round `me` works in is no longer the one it joined: a new round, `me`
/// dropped, participants gone, or (unless already reported) nodes waiting to join; nullopt
/// when nothing changed.
std::optional<MembershipChange> DetectMembershipChange(const RendezvousState& s, const NodeDesc& me,
                                                       int my_round,
                                                       const std::set<NodeDesc>& my_participants,
                                                       bool scale_up_reported);

/// The watcher's kJobFailed detail once the state is closed.
std::string ClosedEventDetail(const RendezvousState& s, const DynamicOptions& o);

}  // namespace tzrun::rendezvous::detail
