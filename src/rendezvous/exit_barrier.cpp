// The shared exit barrier and the store host's hold (see exit_barrier.hpp).
#include "exit_barrier.hpp"

#include <algorithm>

#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
using Kind = BarrierOutcome::Kind;

constexpr milliseconds kHoldPoll{1000};  // how often the host re-checks the pending nodes

void Say(const store::LogSink& sink, store::LogLevel level, const std::string& message) {
  if (sink) sink(level, message);
}

/// The barrier outcome for a watcher event, if the event ends the barrier.
std::optional<BarrierOutcome> FromEvent(const WatchEvent& ev) {
  BarrierOutcome out;
  out.detail = ev.detail;
  switch (ev.kind) {
    case WatchEvent::Kind::kMembershipChanged:
      if (ev.scale_up) return std::nullopt;  // only the nodes still running admit newcomers
      out.kind = Kind::kRestart;
      return out;
    case WatchEvent::Kind::kRestartRequested:
      out.kind = Kind::kRestart;
      out.counts_as_failure_restart = true;
      return out;
    case WatchEvent::Kind::kJobFailed:
      out.kind = Kind::kJobFailed;
      out.exit_code = ev.exit_code;
      return out;
    case WatchEvent::Kind::kStoreLost:
      out.kind = Kind::kStoreLost;
      return out;
  }
  return std::nullopt;
}

std::vector<int> Pending(store::Store& s, const ExitBarrierParams& p) {
  std::vector<int> out;
  for (int r = 0; r < p.world_size; ++r) {
    if (r != p.node_rank && !s.Check({BarrierArrivedKey(r)})) out.push_back(r);
  }
  return out;
}

/// The barrier's state past its timeout on a store host.
class Hold {
 public:
  Hold(store::Store& s, const ExitBarrierParams& p) : s_(s), p_(p) {}

  /// Before the deadline: feeds the liveness test (throttled), so that at the deadline a node
  /// that died earlier is already known to be silent.
  void Track() {
    const auto now = SteadyClock::now();
    if (!p_.hosting || !p_.live || now < next_check_) return;
    next_check_ = now + kHoldPoll;
    if (const auto pending = Pending(s_, p_); !pending.empty()) (void)p_.live(pending);
  }

  /// Past the deadline: the outcome when the barrier ends now (no live pending node).
  std::optional<BarrierOutcome> Check(std::int64_t arrived) {
    const auto now = SteadyClock::now();
    if (holding_ && now < next_check_) return std::nullopt;  // (first call: check at once)
    next_check_ = now + kHoldPoll;
    const std::vector<int> pending = p_.hosting ? Pending(s_, p_) : std::vector<int>{};
    const std::vector<int> live = pending.empty() ? pending : p_.live ? p_.live(pending) : pending;
    const std::string counts =
        std::to_string(arrived) + " of " + std::to_string(p_.world_size) + " arrived";
    if (live.empty()) {
      BarrierOutcome out;
      out.kind = Kind::kTimedOut;
      out.detail =
          "not every node finished within " + base::DurationText(p_.timeout) + " (" + counts +
          (pending.empty() ? "" : "; " + NodeList(pending) + " stopped sending heartbeats") + ")";
      return out;
    }
    if (!holding_ || now >= next_warn_) {
      Say(p_.log, store::LogLevel::kWarning,
          "exit barrier: not every node finished within " + base::DurationText(p_.timeout) + " (" +
              counts + "); " + NodeList(live) +
              " still running healthy workers: this node hosts the store they use and keeps "
              "it up until they finish (waiting " +
              base::DurationText(std::chrono::duration_cast<milliseconds>(now - start_)) +
              " so far)");
      next_warn_ = now + p_.warn_every;
    }
    holding_ = true;
    return std::nullopt;
  }

 private:
  store::Store& s_;
  const ExitBarrierParams& p_;
  bool holding_ = false;
  SteadyClock::time_point start_ = SteadyClock::now();
  SteadyClock::time_point next_check_{};
  SteadyClock::time_point next_warn_{};
};

}  // namespace

std::string BarrierArrivedKey(int node_rank) {
  return "tzrun/exit_barrier/" + std::to_string(node_rank);
}

std::string HeartbeatKey(int node_rank) {
  return "tzrun/heartbeat/" + std::to_string(node_rank);
}

std::string NodeList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "node " : "nodes ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

void PeerLiveness::Observe(int node_rank, std::int64_t counter, Clock::time_point now) {
  auto [it, inserted] = seen_.try_emplace(node_rank, Seen{counter, now});
  if (!inserted && it->second.counter != counter) it->second = Seen{counter, now};
}

bool PeerLiveness::Alive(int node_rank, Clock::time_point now) const {
  auto it = seen_.find(node_rank);
  return it != seen_.end() && now - it->second.changed < stale_after_;
}

BarrierOutcome ExitBarrier(store::Store& round_store, const ExitBarrierParams& p,
                           const Interrupt& interrupt,
                           const std::function<std::optional<WatchEvent>()>& take_event) {
  const std::string prefix(kTerminalStatePrefix);
  const std::string last_member = prefix + "/last_member";
  try {
    round_store.Set(BarrierArrivedKey(p.node_rank), "1");
    const auto idx = round_store.Add(prefix + "/num_members", 1);
    if (idx == p.world_size) round_store.Set(last_member, "<val_ignored>");
    const auto deadline = SteadyClock::now() + p.timeout;
    Hold hold(round_store, p);
    while (true) {
      if (interrupt) interrupt();
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
      if (left <= milliseconds(0)) {
        // Every node arrived (a zero timeout reaches here before any wait): done, not timed out.
        const auto arrived = round_store.Add(prefix + "/num_members", 0);
        if (arrived >= p.world_size || round_store.Check({last_member})) return {};
        if (auto out = hold.Check(arrived)) return *out;
      } else {
        hold.Track();
      }
      try {
        const milliseconds slice = left <= milliseconds(0)
                                       ? milliseconds(200)
                                       : std::clamp(left, milliseconds(1), milliseconds(200));
        round_store.Wait({last_member}, slice);
        return {};  // kDone
      } catch (const store::TimeoutError&) {
      }
      if (round_store.Check({last_member})) return {};
      if (!take_event) continue;
      while (auto ev = take_event()) {
        if (auto out = FromEvent(*ev)) return *out;
      }
    }
  } catch (const store::StoreError& e) {
    BarrierOutcome out;
    out.kind = Kind::kStoreLost;
    out.detail = std::string("the rendezvous store failed during the exit barrier: ") + e.what();
    return out;
  }
}

}  // namespace tzrun::rendezvous::detail
