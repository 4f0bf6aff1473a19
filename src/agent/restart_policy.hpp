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
// Counting (torchrun 2.11 api.py _invoke_run / local_elastic_agent.py _start_workers):
// TORCHELASTIC_RESTART_COUNT is this agent's own failure-restart count (spec.max_restarts -
// remaining_restarts); a restart for a membership change does not raise it, so nodes of one
// c10d job may run with different counts. tzrun additions: membership restarts are counted
// and bounded (--max-membership-restarts; torchrun has no bound), and a failure the worker
// marked not retryable (error file extraInfo.retryable == "false") or whose exit code is in
// --no-restart-exit-codes is not retried: the node fails the whole job as a node without
// restarts left does (Handler::OnFailure with can_restart = false).
//
// The agent asks decide() what to do; two answers ask it to talk to the rendezvous first
// (kWaitExitBarrier, kAskRendezvous): it does, records the answer in the AttemptOutcome and
// asks again. Everything the agent should say is in the returned Action.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <set>
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

/// The local root-cause worker of a failed attempt (report.hpp SelectRootCause).
struct RootCause {
  int global_rank = 0;
  int local_rank = 0;
  int exit_code = 0;  ///< tzrun's exit code for it: the worker's code, 128+N for signal N
  /// Its TORCHELASTIC_ERROR_FILE has message.extraInfo.retryable == "false".
  bool marked_not_retryable = false;
  std::string error_message;  ///< the error file's message ("" if none)
};

/// What happened in an attempt, plus what the rendezvous answered when asked.
struct AttemptOutcome {
  AttemptResult result = AttemptResult::kSucceeded;
  int stop_signal = 0;  ///< handled signal received (0: none)
  /// A rendezvous watcher event not acted on yet (it may arrive as the group succeeds).
  std::optional<rendezvous::WatchEvent> peer_event;
  int local_exit_code = 0;        ///< kFailed: tzrun exit code of the local root-cause worker
  std::optional<RootCause> root;  ///< kFailed: the local root cause, when known
  /// The exit barrier's result, once the agent waited for it (after kWaitExitBarrier).
  std::optional<rendezvous::BarrierOutcome> barrier;
  /// The job-wide verdict on the local failure, once asked (after kAskRendezvous).
  std::optional<rendezvous::FailureDecision> verdict;
};

/// Failure restarts left (--max-restarts budget), the restarts this agent performed, and
/// the rules that bound them.
struct RestartBudget {
  int remaining = 0;            ///< restarts left; never negative
  int max_restarts = 0;         ///< --max-restarts
  int local_restarts = 0;       ///< failure restarts of this agent (TORCHELASTIC_RESTART_COUNT)
  int membership_restarts = 0;  ///< restarts of this agent for membership changes
  int max_membership_restarts = -1;     ///< --max-membership-restarts; -1: unbounded (torchrun)
  std::set<int> no_restart_exit_codes;  ///< --no-restart-exit-codes (tzrun exit codes)
};

/// The exit code of a node that stops the job because it ran out of membership restarts
/// (an infrastructure problem: nodes keep joining or leaving).
inline constexpr int kMembershipRestartsExhaustedExitCode = 125;

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
  /// kFinish: stop the other nodes too (Handler::OnFailure(false, exit_code)) before
  /// closing the rendezvous.
  bool fail_job = false;
  Say say = Say::kNothing;
  std::string message;  ///< kStderrError: printed as "tzrun: error: <message>"
  /// Why no restart although --max-restarts would allow one (a failure not worth retrying,
  /// membership restarts used up); "" otherwise. For the run summary.
  std::string no_restart_reason;
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

/// `budget` after one restart for a membership change.
[[nodiscard]] RestartBudget SpendMembership(RestartBudget budget);

/// Why the local failure in `what` must not be retried ("" if it may be): the root cause's
/// error file marks it not retryable, or its exit code is in budget.no_restart_exit_codes.
[[nodiscard]] std::string NotRetryableReason(const AttemptOutcome& what,
                                             const RestartBudget& budget);

}  // namespace tzrun::agent
