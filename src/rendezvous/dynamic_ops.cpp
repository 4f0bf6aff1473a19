// The pure state machine of the c10d rendezvous (see dynamic_ops.hpp).
#include "dynamic_ops.hpp"

#include <algorithm>
#include <cmath>

#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;

milliseconds MsUntil(double when, double wall) {
  const double left = when - wall;
  if (left <= 0) return milliseconds(0);
  return milliseconds(static_cast<std::int64_t>(std::ceil(left * 1000.0)));
}

/// _RendezvousJoinOp, rule by rule.
Action DecideJoin(const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
                  SteadyTime now, SteadyTime deadline, double wall) {
  const bool participant = s.participants.contains(me);
  const auto n = static_cast<int>(s.participants.size());
  if (s.closed) {
    return s.redundancy_list.contains(me) ? Action::kExitRedundant : Action::kErrorClosed;
  }
  if (s.redundancy_list.contains(me)) {
    if (n == o.max_nodes) return KeepAliveDue(s, me, o, wall) ? Action::kKeepAlive : Action::kSync;
    return Action::kRemoveFromRedundancyList;
  }
  if (s.complete && participant) return Action::kFinish;
  if (now > deadline) {
    if (now <= deadline + std::chrono::seconds(5)) {
      if (participant) return Action::kRemoveFromParticipants;
      if (s.wait_list.contains(me)) return Action::kRemoveFromWaitList;
    }
    return Action::kErrorTimeout;
  }
  if (s.complete) {
    if (n < o.max_nodes) {
      if (!s.wait_list.contains(me)) return Action::kAddToWaitList;
    } else if (!s.redundancy_list.contains(me) && !s.wait_list.contains(me)) {
      return Action::kAddToRedundancyList;
    }
  } else if (participant) {
    if (n >= o.min_nodes && n <= o.max_nodes && s.deadline && *s.deadline < wall) {
      return Action::kMarkComplete;
    }
  } else {
    return Action::kAddToParticipants;
  }
  return KeepAliveDue(s, me, o, wall) ? Action::kKeepAlive : Action::kSync;
}

// Under store_type=file the closed state outlives the job in the file, so a new or removed file
// starts a new job as well as a new --rdzv-id does.
std::string FileStoreHint(const DynamicOptions& o) {
  if (!o.store_file || o.store_file->empty()) return "";
  std::string hint = " (--rdzv-conf store_type=file keeps the ended job's state in '";
  hint.append(*o.store_file);
  return hint.append(
      "': remove that file, or pass another --rdzv-endpoint file, to run again "
      "under the same --rdzv-id)");
}

}  // namespace

double Seconds(milliseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

bool KeepAliveDue(const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
                  double wall) {
  auto it = s.last_heartbeats.find(me);
  if (it == s.last_heartbeats.end()) return false;
  return it->second <= wall - Seconds(o.keep_alive_interval);
}

Action Decide(Op op, const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
              SteadyTime now, SteadyTime deadline, double wall) {
  switch (op) {
    case Op::kExit:
      if (s.participants.contains(me)) {
        return now > deadline ? Action::kErrorTimeout : Action::kRemoveFromParticipants;
      }
      return Action::kFinish;
    case Op::kClose:
      if (s.closed) return Action::kFinish;
      return now > deadline ? Action::kErrorTimeout : Action::kMarkClosed;
    case Op::kKeepAlive:
      if (KeepAliveDue(s, me, o, wall)) {
        return now > deadline ? Action::kErrorTimeout : Action::kKeepAlive;
      }
      return Action::kFinish;
    case Op::kJoin:
      break;
  }
  return DecideJoin(s, me, o, now, deadline, wall);
}

void MarkComplete(RendezvousState& s) {
  s.complete = true;
  s.deadline.reset();
  int rank = 0;
  for (auto& [node, p] : s.participants) p.rank = rank++;  // std::map: sorted order
}

void RemoveParticipantEpilogue(RendezvousState& s, const DynamicOptions& o) {
  if (s.complete) {
    if (s.participants.empty()) {
      s.complete = false;
      s.round += 1;
    }
  } else if (static_cast<int>(s.participants.size()) < o.min_nodes) {
    s.deadline.reset();
  }
}

bool Apply(Action a, RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
           int restart_count, std::optional<int> close_code, double wall) {
  switch (a) {
    case Action::kKeepAlive:
      s.last_heartbeats[me] = wall;
      break;
    case Action::kAddToParticipants:
      s.wait_list.erase(me);
      s.participants[me] = {0, restart_count};
      s.last_heartbeats[me] = wall;
      if (static_cast<int>(s.participants.size()) == o.min_nodes) {
        s.deadline = wall + Seconds(o.last_call_timeout);
      }
      if (static_cast<int>(s.participants.size()) == o.max_nodes) MarkComplete(s);
      break;
    case Action::kAddToWaitList:
      s.redundancy_list.erase(me);
      s.wait_list.insert(me);
      s.last_heartbeats[me] = wall;
      break;
    case Action::kAddToRedundancyList:
      s.redundancy_list.insert(me);
      s.last_heartbeats[me] = wall;
      break;
    case Action::kRemoveFromParticipants:
      s.participants.erase(me);
      s.last_heartbeats.erase(me);
      RemoveParticipantEpilogue(s, o);
      break;
    case Action::kRemoveFromWaitList:
      s.wait_list.erase(me);
      s.last_heartbeats.erase(me);
      break;
    case Action::kRemoveFromRedundancyList:
      s.redundancy_list.erase(me);
      s.last_heartbeats.erase(me);
      return true;
    case Action::kMarkComplete:
      MarkComplete(s);
      break;
    case Action::kMarkClosed:
      s.closed = true;
      s.closed_exit_code = close_code;
      s.closed_by = me.Str();
      break;
    default:
      break;
  }
  return false;
}

std::vector<NodeDesc> RemoveDeadNodes(RendezvousState& s, const DynamicOptions& o, double wall) {
  const double expire = wall - Seconds(o.keep_alive_interval) * o.keep_alive_max_attempt;
  std::vector<NodeDesc> dead;
  bool participant_removed = false;
  for (auto it = s.last_heartbeats.begin(); it != s.last_heartbeats.end();) {
    if (it->second >= expire) {
      ++it;
      continue;
    }
    const NodeDesc node = it->first;
    dead.push_back(node);
    it = s.last_heartbeats.erase(it);
    participant_removed |= s.participants.erase(node) > 0;
    s.wait_list.erase(node);
    s.redundancy_list.erase(node);
  }
  if (participant_removed) RemoveParticipantEpilogue(s, o);
  return dead;
}

milliseconds NextWake(const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
                      milliseconds op_left, double wall) {
  milliseconds w = o.poll_interval;
  const auto slack = milliseconds(5);
  if (s.deadline) w = std::min(w, MsUntil(*s.deadline, wall) + slack);
  const double dead_after = Seconds(o.keep_alive_interval) * o.keep_alive_max_attempt;
  for (const auto& [node, t] : s.last_heartbeats) {
    const double due = node == me ? t + Seconds(o.keep_alive_interval) : t + dead_after;
    w = std::min(w, MsUntil(due, wall) + slack);
  }
  w = std::min(w, op_left + slack);
  return std::max(w, milliseconds(1));
}

milliseconds MinReadGap(const RendezvousState& s, const DynamicOptions& o) {
  const auto nodes = s.participants.size() + s.wait_list.size() + s.redundancy_list.size();
  return std::min(o.poll_interval, milliseconds(5 * static_cast<std::int64_t>(nodes)));
}

std::string Describe(const RendezvousState& s) {
  std::string out = std::to_string(s.participants.size()) + " participant(s)";
  if (!s.participants.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, p] : s.participants) names.push_back(n.Str());
    out += " [" + base::Join(names, ", ") + "]";
  }
  if (!s.wait_list.empty()) out += ", " + std::to_string(s.wait_list.size()) + " waiting";
  return out;
}

std::string TimeoutMessage(Op op, const RendezvousState& s, const NodeDesc& me,
                           const DynamicOptions& o) {
  switch (op) {
    case Op::kJoin: {
      // The timed-out join removes this node from the lists before it reports (as torchrun's
      // _RendezvousJoinOp does); name it among the nodes that had joined all the same.
      RendezvousState joined = s;
      if (joined.participants.count(me) == 0U && joined.wait_list.count(me) == 0U) {
        joined.participants[me] = {};
      }
      return "the rendezvous '" + o.run_id + "' did not complete within join_timeout (" +
             base::DurationText(o.join_timeout) + "): " + Describe(joined) + ", need " +
             std::to_string(o.min_nodes) +
             (o.min_nodes == o.max_nodes ? "" : ".." + std::to_string(o.max_nodes)) +
             " node(s); start the missing nodes with the same --rdzv-id/--rdzv-endpoint, lower "
             "--nnodes MIN, or raise --rdzv-conf join_timeout=SECONDS";
    }
    case Op::kClose:
      return "could not close the rendezvous '" + o.run_id + "' within close_timeout (" +
             base::DurationText(o.close_timeout) + ")";
    case Op::kExit:
      return "could not leave the previous round of the rendezvous '" + o.run_id + "' in time";
    case Op::kKeepAlive:
      break;
  }
  return "the keep-alive heartbeat of node '" + me.Str() +
         "' did not reach the rendezvous store within " + base::DurationText(o.heartbeat_timeout);
}

std::string ClosedMessage(const RendezvousState& s, const DynamicOptions& o) {
  const std::string by = s.closed_by.empty() ? "" : " by node '" + s.closed_by + "'";
  const std::string code = s.closed_exit_code ? " after its workers failed (exit code " +
                                                    std::to_string(*s.closed_exit_code) + ")"
                                              : "";
  return "the rendezvous '" + o.run_id + "' was closed" + by + code +
         "; the job has ended, start a new one (with a new --rdzv-id) to run again" +
         FileStoreHint(o);
}

std::optional<MembershipChange> DetectMembershipChange(const RendezvousState& s, const NodeDesc& me,
                                                       int my_round,
                                                       const std::set<NodeDesc>& my_participants,
                                                       bool scale_up_reported) {
  const std::string round = std::to_string(my_round);
  if (s.round != my_round) {
    return MembershipChange{"round " + round + " of the rendezvous ended (round " +
                                std::to_string(s.round) + " is forming)",
                            false};
  }
  if (!s.participants.contains(me)) {
    return MembershipChange{
        "this node is no longer a participant of round " + round + " (its heartbeats were late?)",
        false};
  }
  std::vector<std::string> gone;
  for (const auto& n : my_participants) {
    if (!s.participants.contains(n)) gone.push_back(n.Str());
  }
  if (!gone.empty()) {
    return MembershipChange{"node(s) " + base::Join(gone, ", ") + " left round " + round +
                                " (stopped, or missed their heartbeats)",
                            false};
  }
  if (!s.wait_list.empty() && !scale_up_reported) {
    return MembershipChange{
        "detected " + std::to_string(s.wait_list.size()) + " new node(s) waiting to join", true};
  }
  return std::nullopt;
}

std::string ClosedEventDetail(const RendezvousState& s, const DynamicOptions& o) {
  return "the rendezvous '" + o.run_id + "' was closed by node '" + s.closed_by + "'" +
         (s.closed_exit_code
              ? " after its workers failed (exit code " + std::to_string(*s.closed_exit_code) + ")"
              : "") +
         ": stopping this node too";
}

}  // namespace tzrun::rendezvous::detail
