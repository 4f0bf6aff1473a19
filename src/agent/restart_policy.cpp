#include "restart_policy.hpp"

#include <algorithm>
#include <sstream>

namespace tzrun::agent {
namespace {

using Kind = Action::Kind;
using Say = Action::Say;

Action Make(Kind kind, Say say = Say::kNothing, std::string message = {}) {
  Action a;
  a.kind = kind;
  a.say = say;
  a.message = std::move(message);
  return a;
}

Action Finish(int exit_code, Say say = Say::kNothing, std::string message = {}) {
  Action a = Make(Kind::kFinish, say, std::move(message));
  a.exit_code = exit_code;
  return a;
}

Action Restart(bool spend_restart, std::string warning) {
  Action a = Make(Kind::kRestart, Say::kWarning, std::move(warning));
  a.spend_restart = spend_restart;
  return a;
}

std::string AttemptsLeft(const RestartBudget& b) {
  return std::to_string(b.remaining) + "/" + std::to_string(b.max_restarts) + " attempts left";
}

Action AfterBarrier(const rendezvous::BarrierOutcome& b, const std::string& role) {
  using BK = rendezvous::BarrierOutcome::Kind;
  switch (b.kind) {
    case BK::kDone:
      return Finish(0);
    case BK::kTimedOut:
      return Finish(0, Say::kError,
                    "Error waiting on exit barrier: " + b.detail + "; reporting success anyway");
    case BK::kRestart:
      return Restart(
          b.counts_as_failure_restart,
          "[" + role + "] " + b.detail + " after this node finished; will restart worker group");
    case BK::kJobFailed:
      return Finish(b.exit_code, Say::kStderrError, b.detail);
    case BK::kStoreLost:
      break;
  }
  return Make(Kind::kStoreLost, Say::kNothing, b.detail);
}

Action AfterEvent(const rendezvous::WatchEvent& ev, const RestartBudget& budget,
                  const std::string& role) {
  using WK = rendezvous::WatchEvent::Kind;
  switch (ev.kind) {
    case WK::kMembershipChanged:
      return Restart(false, "[" + role + "] " + ev.detail + "; will restart worker group");
    case WK::kRestartRequested:
      return Restart(true, "[" + role + "] " + ev.detail + ". " + AttemptsLeft(budget) +
                               "; will restart worker group");
    case WK::kJobFailed:
      return Finish(ev.exit_code, Say::kStderrError, ev.detail);
    case WK::kStoreLost:
      break;
  }
  return Make(Kind::kStoreLost, Say::kNothing, ev.detail);
}

Action AfterFailure(const AttemptOutcome& what, const RestartBudget& budget,
                    const std::string& role) {
  if (!what.verdict) {
    Action a = Make(Kind::kAskRendezvous);
    a.can_restart = budget.remaining > 0;
    return a;
  }
  if (what.verdict->restart) {
    return Restart(true, "[" + role + "] Worker group FAILED. " + AttemptsLeft(budget) +
                             "; will restart worker group");
  }
  Action a = Finish(what.local_exit_code);
  a.report_failure = true;
  return a;
}

}  // namespace

AttemptResult EffectiveResult(const AttemptOutcome& what) {
  AttemptResult r = what.result;
  // Another node's news that arrived as the last local worker finished is not lost: the
  // job is not done until every node is.
  if (r == AttemptResult::kSucceeded && what.peer_event) r = AttemptResult::kPeerEvent;
  // A handled signal that arrived while a failed group was being stopped ends the run.
  if (r != AttemptResult::kSucceeded && what.stop_signal != 0) r = AttemptResult::kSignaled;
  return r;
}

Action Decide(const AttemptOutcome& what, const RestartBudget& budget, const std::string& role,
              double exit_barrier_timeout_s) {
  switch (EffectiveResult(what)) {
    case AttemptResult::kSignaled: {
      Action a = Make(Kind::kLeaveSignaled);
      a.exit_code = 128 + what.stop_signal;
      return a;
    }
    case AttemptResult::kSucceeded:
      if (!what.barrier) {
        std::ostringstream seconds;  // as Python prints the number: 300, 2.5
        seconds << exit_barrier_timeout_s;
        return Make(Kind::kWaitExitBarrier, Say::kInfo,
                    "[" + role + "] worker group successfully finished. Waiting " + seconds.str() +
                        " seconds for other agents to finish.");
      }
      return AfterBarrier(*what.barrier, role);
    case AttemptResult::kPeerEvent:
      if (what.peer_event) return AfterEvent(*what.peer_event, budget, role);
      return Restart(false, "[" + role + "] news from another node; will restart worker group");
    case AttemptResult::kFailed:
      break;
  }
  return AfterFailure(what, budget, role);
}

RestartBudget Spend(RestartBudget budget) {
  budget.remaining = std::max(0, budget.remaining - 1);
  ++budget.local_restarts;
  return budget;
}

}  // namespace tzrun::agent
