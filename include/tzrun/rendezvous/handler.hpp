// tzrun/rendezvous/handler.hpp — what the agent needs from a rendezvous: who is in the job,
// which node rank this agent has, where the workers' store is, and when the job must
// restart or stop because of something that happened on another node.
//
// Follows torchrun 2.11's RendezvousHandler (torch/distributed/elastic/rendezvous/api.py:
// next_rendezvous, num_nodes_waiting, set_closed, shutdown) and the parts of
// SimpleElasticAgent (torch/distributed/elastic/agent/server/api.py) that talk to other
// nodes (exit barrier). tzrun additions:
//   * watch(): a background watcher reports membership changes (nodes waiting, a
//     participant lost), job-wide restart requests and a lost store through a file
//     descriptor the agent polls, instead of torchrun's num_nodes_waiting() every
//     monitor tick;
//   * OnFailure(): a node whose workers failed tells the others, so restarts line up
//     across nodes (static: one job-wide restart round; dynamic: the closing node's exit
//     code travels with the closed state).
//
// Blocking calls (next_rendezvous, exit_barrier, on_failure) wait in slices of at most
// ~1 s and call the Interrupt callback between slices; it may throw (the agent throws
// Interrupted when a handled signal arrived) and the exception propagates unchanged.
//
// Thread-safety: a Handler is used by one agent thread; the watcher runs on its own thread
// with its own store connection and is stopped by unwatch()/NextRendezvous()/shutdown().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/store/log.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous {

/// Called between the slices of every blocking wait; may throw to abandon the wait.
using Interrupt = std::function<void()>;

/// The outcome of one rendezvous round (torchrun's RendezvousInfo + bootstrap store info).
struct RendezvousInfo {
  /// Round-scoped store for the agents' own keys (rank assignment, exit barrier):
  /// static: PrefixStore("<run_id>") in attempt 0, "<run_id>.<attempt>" later;
  /// dynamic: PrefixStore("torch.rendezvous.<run_id>.<round>").
  std::shared_ptr<store::Store> store;
  int rank = 0;        ///< node (group) rank, 0-based
  int world_size = 1;  ///< number of nodes in this round
  int round = 0;       ///< static: the job-wide attempt; dynamic: the rendezvous round
  /// The round's restart number, the same on every node: static: the job-wide attempt;
  /// dynamic: the largest local failure-restart count among this round's participants.
  /// Informational: the agent gives its workers its own failure-restart count as
  /// TORCHELASTIC_RESTART_COUNT (torchrun's spec.max_restarts - remaining_restarts).
  int restart_count = 0;
  std::string master_addr;  ///< workers' MASTER_ADDR (the agent-hosted worker store)
  int master_port = 0;      ///< workers' MASTER_PORT
};

/// Something the watcher saw while this node's workers were running.
struct WatchEvent {
  enum class Kind {
    kMembershipChanged,  ///< nodes waiting / a participant left or died: restart, no budget
    kRestartRequested,   ///< static: another node's workers failed; job-wide restart
    kJobFailed,          ///< another node failed for good (or closed the rendezvous): stop
    kStoreLost,          ///< the rendezvous store is unreachable: stop, exit 125
  };
  Kind kind = Kind::kMembershipChanged;
  /// kMembershipChanged only because new nodes wait to join (the round itself is intact):
  /// running workers restart to admit them; a node already in the exit barrier ignores it.
  bool scale_up = false;
  std::string detail;  ///< human-readable: which node, what happened
  int exit_code = 1;   ///< kJobFailed: the exit code the failing node reported
  int from_node = -1;  ///< node rank that triggered it, when known
};

/// The job-wide decision after a local failure (see Handler::on_failure).
struct FailureDecision {
  bool restart = false;  ///< true: every node restarts; false: the job fails
  int node = -1;         ///< node rank whose failure decided it
  int exit_code = 1;     ///< that node's root-cause exit code
};

/// How the exit barrier ended.
struct BarrierOutcome {
  enum class Kind { kDone, kTimedOut, kRestart, kJobFailed, kStoreLost };
  Kind kind = Kind::kDone;
  std::string detail;
  int exit_code = 0;                       ///< kJobFailed: the failing node's exit code
  bool counts_as_failure_restart = false;  ///< kRestart: spend one restart of the budget
};

class Handler {
 public:
  virtual ~Handler() = default;
  Handler() = default;
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  /// "static" or "c10d".
  [[nodiscard]] virtual std::string Backend() const = 0;
  [[nodiscard]] virtual const std::string& RunId() const = 0;

  /// Blocks until this node is part of a complete round and returns it. Stops the watcher.
  /// `local_restart_count` is this agent's failure-restart count (dynamic: the round's
  /// restart_count is the participants' maximum). Throws RendezvousTimeoutError,
  /// RendezvousClosedError, RendezvousGracefulExit, RendezvousConnectionError,
  /// RendezvousStateError, or whatever `interrupt` throws.
  virtual RendezvousInfo NextRendezvous(int local_restart_count) = 0;

  /// Starts the background watcher for the round returned last. Idempotent.
  virtual void Watch() = 0;
  /// Stops the watcher (joins its thread). Idempotent.
  virtual void Unwatch() = 0;
  /// Readable (POLLIN) when TakeEvent() has an event; -1 when the handler never has any.
  [[nodiscard]] virtual int EventFd() const = 0;
  /// The next event, if any (non-blocking); clears the fd's readiness when drained.
  virtual std::optional<WatchEvent> TakeEvent() = 0;

  /// This node's workers failed with `exit_code`; `can_restart` says whether its budget
  /// allows a restart. Returns what the whole job does: static posts the decision (the
  /// first failing node wins, the others follow it); dynamic restarts through
  /// NextRendezvous() (restart = can_restart) or, when it cannot restart, closes the
  /// rendezvous carrying `exit_code` so the other nodes stop too.
  virtual FailureDecision OnFailure(bool can_restart, int exit_code) = 0;

  /// torchrun's exit barrier after local success (utils/store.py barrier on
  /// "torchelastic/agent/terminal_state", 300 s): waits until every node of the round
  /// arrived, or a restart / failure / store loss happened meanwhile (nodes merely waiting
  /// to join do not count: as in torchrun, a finished node does not restart for them). A
  /// timeout is reported (kTimedOut) and, as in torchrun, not an error. tzrun addition: a
  /// node that hosts a store the others use does not time out while a node that has not
  /// arrived is still alive (it warns naming it and waits on; src/rendezvous/exit_barrier.hpp),
  /// so its leaving never tears the store down under healthy, still running workers.
  virtual BarrierOutcome ExitBarrier(std::chrono::milliseconds timeout) = 0;

  /// End of job (success or final failure): stop the watcher, close the rendezvous
  /// (dynamic), and — if this agent hosts the store — keep it up until the other nodes
  /// are done with it (bounded). Never throws; problems are logged. Not called when the
  /// agent stops because of a signal (the rendezvous stays open for the others).
  virtual void Shutdown() = 0;
  /// Signal path (`exit_code` = 128+signal): stop the watcher; dynamic: leave the round
  /// quickly (best effort, short timeout) so the others re-form without waiting for
  /// heartbeats to lapse, never closing the rendezvous; static: post a job failure (there is
  /// no elasticity to wait for). Never throws.
  virtual void Abandon(int exit_code) = 0;

  /// Interrupt callback used by every blocking wait (may be empty).
  void SetInterrupt(Interrupt interrupt) { interrupt_ = std::move(interrupt); }

 protected:
  void CheckInterrupt() const {
    if (interrupt_) interrupt_();
  }

 private:
  Interrupt interrupt_;
};

}  // namespace tzrun::rendezvous
