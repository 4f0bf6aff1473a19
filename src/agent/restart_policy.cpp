#include "restart_policy.hpp"

#include <algorithm>

namespace tzrun::agent {
namespace {

using Kind = Action::Kind;
using Say = Action::Say;

Action make(Kind kind, Say say = Say::kNothing, std::string message = {}) {
  Action a;
  a.kind = kind;
  a.say = say;
  a.message = std::move(message);
  return a;
}

Action finish(int exit_code, Say say = Say::kNothing, std::string message = {}) {
  Action a = make(Kind::kFinish, say, std::move(message));
  a.exit_code = exit_code;
  return a;
}

Action restart(bool spend_restart, std::string warning) {
  Action a = make(Kind::kRestart, Say::kWarning, std::move(warning));
  a.spend_restart = spend_restart;
  return a;
}

std::string attempts_left(const RestartBudget& b) {
  return std::to_string(b.remaining) + "/" + std::to_string(b.max_restarts) + " attempts left";
}

Action after_barrier(const rendezvous::BarrierOutcome& b, const std::string& role) {
  using BK = rendezvous::BarrierOutcome::Kind;
  switch (b.kind) {
    case BK::kDone:
      return finish(0);
    case BK::kTimedOut:
      return finish(0, Say::kError,
                    "Error waiting on exit barrier: " + b.detail + "; reporting success anyway");
    case BK::kRestart:
      return restart(
          b.counts_as_failure_restart,
          "[" + role + "] " + b.detail + " after this node finished; will restart worker group");
    case BK::kJobFailed:
      return finish(b.exit_code, Say::kStderrError, b.detail);
    case BK::kStoreLost:
      break;
  }
  return make(Kind::kStoreLost, Say::kNothing, b.detail);
}

Action after_event(const rendezvous::WatchEvent& ev, const RestartBudget& budget,
                   const std::string& role) {
  using WK = rendezvous::WatchEvent::Kind;
  switch (ev.kind) {
    case WK::kMembershipChanged:
      return restart(false, "[" + role + "] " + ev.detail + "; will restart worker group");
    case WK::kRestartRequested:
      return restart(true, "[" + role + "] " + ev.detail + ". " + attempts_left(budget) +
                               "; will restart worker group");
    case WK::kJobFailed:
      return finish(ev.exit_code, Say::kStderrError, ev.detail);
    case WK::kStoreLost:
      break;
  }
  return make(Kind::kStoreLost, Say::kNothing, ev.detail);
}

Action after_failure(const AttemptOutcome& what, const RestartBudget& budget,
                     const std::string& role) {
  if (!what.verdict) {
    Action a = make(Kind::kAskRendezvous);
    a.can_restart = budget.remaining > 0;
    return a;
  }
  if (what.verdict->restart) {
    return restart(true, "[" + role + "] Worker group FAILED. " + attempts_left(budget) +
                             "; will restart worker group");
  }
  Action a = finish(what.local_exit_code);
  a.report_failure = true;
  return a;
}

}  // namespace

AttemptResult effective_result(const AttemptOutcome& what) {
  AttemptResult r = what.result;
  // Another node's news that arrived as the last local worker finished is not lost: the
  // job is not done until every node is.
  if (r == AttemptResult::kSucceeded && what.peer_event) r = AttemptResult::kPeerEvent;
  // A handled signal that arrived while a failed group was being stopped ends the run.
  if (r != AttemptResult::kSucceeded && what.stop_signal != 0) r = AttemptResult::kSignaled;
  return r;
}

Action decide(const AttemptOutcome& what, const RestartBudget& budget, const std::string& role) {
  switch (effective_result(what)) {
    case AttemptResult::kSignaled: {
      Action a = make(Kind::kLeaveSignaled);
      a.exit_code = 128 + what.stop_signal;
      return a;
    }
    case AttemptResult::kSucceeded:
      if (!what.barrier) {
        return make(Kind::kWaitExitBarrier, Say::kInfo,
                    "[" + role +
                        "] worker group successfully finished. Waiting 300 seconds for other "
                        "agents to finish.");
      }
      return after_barrier(*what.barrier, role);
    case AttemptResult::kPeerEvent:
      if (what.peer_event) return after_event(*what.peer_event, budget, role);
      return restart(false, "[" + role + "] news from another node; will restart worker group");
    case AttemptResult::kFailed:
      break;
  }
  return after_failure(what, budget, role);
}

RestartBudget spend(RestartBudget budget) {
  budget.remaining = std::max(0, budget.remaining - 1);
  ++budget.local_restarts;
  return budget;
}

}  // namespace tzrun::agent
