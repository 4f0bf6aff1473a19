// tzrun agent internals: what the agent does after a worker group attempt ended — the
// restart policy, as a pure function.
//
// Follows torchrun's SimpleElasticAgent._invoke_run (torch/distributed/elastic/agent/
// server/api.py): SUCCEEDED → exit barrier, then done; FAILED with restarts left → restart;
// FAILED without → the job fails with the root cause's code; other nodes waiting
// (membership change) → restart without spending the budget. tzrun additions (see
// include/tzrun/agent/agent.hpp): a handled signal ends the run with 128+N without closing
// the rendezvous, news from other nodes (rendezvous::WatchEvent) and the job-wide failure
// verdict (rendezvous::Handler::on_failure) decide across nodes, and a lost store ends the
// run with 125.
//
// The agent asks decide() what to do; two answers ask it to talk to the rendezvous first
// (kWaitExitBarrier, kAskRendezvous): it does, records the answer in the AttemptOutcome and
// asks again. Everything the agent should say is in the returned Action.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "tzrun/rendezvous/handler.hpp"

namespace tzrun::agent {

/// How monitoring a worker group ended.
enum class AttemptResult {
  kSucceeded,  ///< every local worker exited 0
  kFailed,     ///< a local worker failed
  kSignaled,   ///< tzrun received a handled signal
  kPeerEvent,  ///< news from another node (rendezvous watcher)
};

/// What happened in an attempt, plus what the rendezvous answered when asked.
struct AttemptOutcome {
  AttemptResult result = AttemptResult::kSucceeded;
  int stop_signal = 0;  ///< handled signal received (0: none)
  /// A rendezvous watcher event not acted on yet (it may arrive as the group succeeds).
  std::optional<rendezvous::WatchEvent> peer_event;
  int local_exit_code = 0;  ///< kFailed: tzrun exit code of the local root-cause worker
  /// The exit barrier's result, once the agent waited for it (after kWaitExitBarrier).
  std::optional<rendezvous::BarrierOutcome> barrier;
  /// The job-wide verdict on the local failure, once asked (after kAskRendezvous).
  std::optional<rendezvous::FailureDecision> verdict;
};

/// Failure restarts left (--max-restarts budget) and the restarts this agent performed.
struct RestartBudget {
  int remaining = 0;       ///< restarts left; never negative
  int max_restarts = 0;    ///< --max-restarts
  int local_restarts = 0;  ///< failure restarts of this agent (TORCHELASTIC_RESTART_COUNT)
};

/// The agent's next step.
struct Action {
  enum class Kind {
    kWaitExitBarrier,  ///< local group succeeded: wait for the other nodes, then decide again
    kAskRendezvous,    ///< local group failed: ask Handler::OnFailure(can_restart, code)
    kRestart,          ///< rendezvous again and start a new worker group
    kFinish,           ///< end of the job: close the rendezvous, exit with exit_code
    kLeaveSignaled,    ///< leave without closing the rendezvous; exit with exit_code (128+N)
    kStoreLost,        ///< the rendezvous store is gone: error `message`, exit 125
  };
  /// Where `message` goes.
  enum class Say { kNothing, kInfo, kWarning, kError, kStderrError };

  Kind kind = Kind::kFinish;
  int exit_code = 0;            ///< kFinish / kLeaveSignaled
  bool spend_restart = false;   ///< kRestart: counts against the --max-restarts budget
  bool can_restart = false;     ///< kAskRendezvous: this node's budget allows a restart
  bool report_failure = false;  ///< kFinish: print the local failure report first
  Say say = Say::kNothing;
  std::string message;  ///< kStderrError: printed as "tzrun: error: <message>"
};

/// The result that counts: success with a pending peer event is that event; anything but
/// success with a handled signal received is kSignaled.
[[nodiscard]] AttemptResult EffectiveResult(const AttemptOutcome& what);

/// The next step after an attempt (see above). `role` is --role, used in the messages;
/// `exit_barrier_timeout_s` (--exit-barrier-timeout) in the exit barrier's message.
[[nodiscard]] Action Decide(const AttemptOutcome& what, const RestartBudget& budget,
                            const std::string& role, double exit_barrier_timeout_s = 300);

/// `budget` after one failure restart (remaining never drops below 0).
[[nodiscard]] RestartBudget Spend(RestartBudget budget);

}  // namespace tzrun::agent
