// The c10d (dynamic) backend (see include/tzrun/rendezvous/dynamic_rendezvous.hpp).
// The decision tables below follow torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
// (_RendezvousExitOp, _RendezvousJoinOp, _RendezvousCloseOp, _RendezvousKeepAliveOp and
// _DistributedRendezvousOpExecutor) rule by rule.
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "common.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using detail::milliseconds;
using detail::SteadyClock;
using store::LogLevel;
using TimePoint = SteadyClock::time_point;

constexpr std::string_view kNullState = "null";

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
  kSync,
  kErrorClosed,
  kErrorTimeout,
  kFinish,
};

enum class Op { kExit, kJoin, kClose, kKeepAlive };

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds(milliseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

milliseconds ms_until(double wall_time) {
  const double left = wall_time - wall_now();
  if (left <= 0) return milliseconds(0);
  return milliseconds(static_cast<std::int64_t>(std::ceil(left * 1000.0)));
}

std::atomic<std::int64_t> g_next_local_id{0};

class DynamicRendezvous final : public detail::WatchingHandler {
 public:
  DynamicRendezvous(DynamicOptions o, const Interrupt& interrupt) : o_(std::move(o)) {
    if (o_.run_id.empty()) throw ConfigError("the run id (--rdzv-id) must not be empty");
    if (o_.min_nodes < 1 || o_.max_nodes < o_.min_nodes) {
      throw ConfigError("--nnodes=" + std::to_string(o_.min_nodes) + ":" +
                        std::to_string(o_.max_nodes) + ": need 0 < MIN <= MAX");
    }
    if (o_.local_addr.empty()) throw ConfigError("the local address must not be empty");
    if (o_.keep_alive_max_attempt < 1) {
      throw ConfigError("--rdzv-conf keep_alive_max_attempt must be >= 1");
    }
    me_ = {o_.local_addr, static_cast<std::int64_t>(::getpid()), g_next_local_id++};
    key_ = "torch.rendezvous." + o_.run_id;
    connect_store(interrupt);
  }

  ~DynamicRendezvous() override {
    watcher_.stop();
    worker_server_.reset();
    if (rdzv_server_) rdzv_server_->stop();
  }

  [[nodiscard]] std::string backend() const override { return "c10d"; }
  [[nodiscard]] const std::string& run_id() const override { return o_.run_id; }
  [[nodiscard]] const std::string& store_endpoint() const { return store_endpoint_; }

  RendezvousInfo next_rendezvous(int local_restart_count) override {
    unwatch();
    const Interrupt intr = [this] { check_interrupt(); };
    std::unique_lock lock(mu_);
    if (!joined_once_ && o_.first_round_jitter && o_.max_nodes > 1) {
      std::mt19937 rng(std::random_device{}());
      detail::sleep_for(milliseconds(std::uniform_int_distribution<int>(0, 300)(rng)), intr);
    }
    joined_once_ = true;
    detail::log(o_.log, LogLevel::kInfo,
                "The node '" + me_.str() + "' attempts to join the next round of the rendezvous '" +
                    o_.run_id + "'.");
    TimePoint deadline = SteadyClock::now() + o_.join_timeout;
    try {
      run_op(*client_, Op::kExit, deadline, true, local_restart_count, std::nullopt);
      run_op(*client_, Op::kJoin, deadline, true, local_restart_count, std::nullopt);
    } catch (const store::StoreError& e) {
      throw connection_lost(e);
    }
    RendezvousInfo info;
    const auto& p = state_.participants;
    info.rank = p.at(me_).rank;
    info.world_size = static_cast<int>(p.size());
    info.round = state_.round;
    for (const auto& [n, part] : p)
      info.restart_count = std::max(info.restart_count, part.restart_count);
    my_round_ = state_.round;
    my_participants_.clear();
    for (const auto& [n, part] : p) my_participants_.insert(n);
    lock.unlock();

    round_store_ =
        std::make_shared<store::PrefixStore>(key_ + "." + std::to_string(info.round), client_);
    info.store = round_store_;
    my_world_ = info.world_size;
    detail::log(o_.log, LogLevel::kInfo,
                "The node '" + me_.str() + "' has joined round " + std::to_string(info.round) +
                    " of the rendezvous '" + o_.run_id + "' as rank " + std::to_string(info.rank) +
                    " in a world of size " + std::to_string(info.world_size) + ".");
    // Bootstrap store (torchrun 2.11 TCPStore sharing): round rank 0 hosts the workers' store.
    try {
      if (info.rank == 0) {
        // A fresh store every round: torch 2.11 workers use the agent store without any
        // per-attempt prefix (torch/distributed/rendezvous.py _create_c10d_store), so keys
        // of the previous round's workers (gloo peer addresses, barrier counters) would
        // poison the next round. (torchrun reuses one store and its gloo restarts fail.)
        {
          worker_server_.reset();
          try {
            worker_server_ = detail::host_store("", 0, o_.log);
          } catch (const store::BindError& e) {
            throw RendezvousConnectionError(std::string("cannot host the workers' store: ") +
                                            e.what() +
                                            "; check that this host can open listening TCP "
                                            "sockets");
          }
        }
        info.master_addr = o_.local_addr;
        info.master_port = worker_server_->port();
        round_store_->set("MASTER_ADDR", info.master_addr);
        round_store_->set("MASTER_PORT", std::to_string(info.master_port));
      } else {
        worker_server_.reset();
        wait_keys(*round_store_, {"MASTER_ADDR", "MASTER_PORT"}, o_.join_timeout, intr,
                  "waiting for rank 0 to publish the workers' store");
        info.master_addr = round_store_->get("MASTER_ADDR");
        info.master_port = std::stoi(round_store_->get("MASTER_PORT"));
      }
    } catch (const store::StoreError& e) {
      throw connection_lost(e);
    }
    watch();
    return info;
  }

  void watch() override {
    if (watcher_.active() || my_round_ < 0) return;
    // --standalone: a private store on a free port with a random run id and one node;
    // nobody can join or prune this node, so no heartbeats are needed.
    if (o_.max_nodes == 1 && rdzv_server_ && o_.endpoint.port == 0) return;
    const auto gen = events_.reset();
    watcher_.start([this, gen](const std::atomic<bool>& stop) { watch_loop(stop, gen); });
  }

  FailureDecision on_failure(bool can_restart, int exit_code) override {
    FailureDecision d{can_restart, -1, exit_code};
    if (can_restart) return d;  // next_rendezvous() re-forms the round (torchrun)
    close(exit_code);
    return d;
  }

  BarrierOutcome exit_barrier(milliseconds timeout) override {
    if (!round_store_) return {};
    watch();
    auto out = detail::exit_barrier(
        *round_store_, my_world_, timeout, [this] { check_interrupt(); },
        [this] { return events_.take(); });
    return out;
  }

  void shutdown() override {
    unwatch();
    if (!closed_by_me_) close(std::nullopt);
    if (round_store_) {
      detail::depart(*round_store_, my_world_, rdzv_server_ != nullptr, o_.close_timeout, o_.log);
    }
    worker_server_.reset();
    if (rdzv_server_) rdzv_server_->stop();
  }

  void abandon(int /*exit_code*/) override {
    unwatch();
    if (my_round_ < 0) return;
    try {
      client_->set_timeout(milliseconds(2000));
      std::unique_lock lock(mu_, std::defer_lock);
      // The watcher may be stuck on an unreachable store while holding mu_: give up then.
      const auto give_up = SteadyClock::now() + milliseconds(2000);
      while (!lock.try_lock()) {
        if (SteadyClock::now() >= give_up) return;
        std::this_thread::sleep_for(milliseconds(10));
      }
      run_op(*client_, Op::kExit, SteadyClock::now() + milliseconds(2000), false, 0, std::nullopt);
    } catch (const std::exception& e) {
      detail::log(o_.log, LogLevel::kDebug,
                  std::string("could not leave the rendezvous round: ") + e.what());
    }
  }

 private:
  // ---- store ----------------------------------------------------------------------------
  void connect_store(const Interrupt& interrupt) {
    const bool inferred = !o_.is_host.has_value();
    const bool is_host = o_.is_host.value_or(matches_machine_hostname(o_.endpoint.host));
    std::string host = o_.endpoint.host;
    int port = o_.endpoint.port;
    if (is_host) {
      try {
        rdzv_server_ = detail::host_store(o_.bind_host, port, o_.log);
        port = rdzv_server_->port();
        host = o_.bind_host.empty() ? "127.0.0.1" : o_.bind_host;
        detail::log(o_.log, LogLevel::kInfo,
                    "hosting the c10d rendezvous store on " + rdzv_server_->endpoint());
      } catch (const store::BindError& e) {
        if (!inferred) {
          throw RendezvousConnectionError(
              std::string("cannot host the rendezvous store (rdzv-conf is_host=true): ") +
              e.what() + "; free the port or pick another --rdzv-endpoint port");
        }
        detail::log(o_.log, LogLevel::kInfo,
                    std::string("could not host the rendezvous store (") + e.what() +
                        "); another agent on this machine hosts it, connecting as a client");
      }
    }
    if (port == 0) {
      throw ConfigError("--rdzv-endpoint " + format_endpoint(o_.endpoint) +
                        ": port 0 (a free port) only works on the node that hosts the store; "
                        "give the other nodes the real port");
    }
    client_ = detail::connect(host, port, o_.join_timeout, o_.read_timeout, interrupt, o_.log,
                              "c10d rendezvous '" + o_.run_id + "'");
    store_endpoint_ = format_endpoint({host, port});
    try {
      client_->compare_set(key_, "", kNullState);
    } catch (const store::StoreError& e) {
      throw connection_lost(e);
    }
  }

  RendezvousConnectionError connection_lost(const std::exception& e) const {
    return RendezvousConnectionError(
        "lost the c10d rendezvous store at " + format_endpoint(o_.endpoint) + " (" + e.what() +
        "); the agent hosting it (the node matching --rdzv-endpoint) probably exited or "
        "crashed, or the network failed");
  }

  [[nodiscard]] std::string notify_key(std::int64_t version) const {
    return key_ + ".notify/" + std::to_string(version);
  }

  // ---- state holder (mu_ held) ------------------------------------------------------------
  std::optional<bool> sync(store::Store& s) {
    std::optional<bool> has_set;
    std::string bits;
    if (dirty_) {
      RendezvousState next = state_;
      next.version = state_.version + 1;
      const std::string nb = encode_state(next);
      bits = s.compare_set(key_, token_, nb);
      has_set = bits == nb;
      if (*has_set) s.set(notify_key(next.version), "");
    } else {
      bits = s.get(key_);
    }
    last_read_ = SteadyClock::now();
    state_ = decode_state(bits);
    token_ = std::move(bits);
    dirty_ = false;
    sanitize();
    return has_set;
  }

  void sanitize() {
    const double expire = wall_now() - seconds(o_.keep_alive_interval) * o_.keep_alive_max_attempt;
    bool participant_removed = false;
    for (auto it = state_.last_heartbeats.begin(); it != state_.last_heartbeats.end();) {
      if (it->second >= expire) {
        ++it;
        continue;
      }
      const NodeDesc dead = it->first;
      detail::log(o_.log, LogLevel::kDebug,
                  "Detected dead node '" + dead.str() + "', removing it from the rendezvous");
      it = state_.last_heartbeats.erase(it);
      participant_removed |= state_.participants.erase(dead) > 0;
      state_.wait_list.erase(dead);
      state_.redundancy_list.erase(dead);
    }
    if (participant_removed) remove_participant_epilogue();
  }

  void remove_participant_epilogue() {
    if (state_.complete) {
      if (state_.participants.empty()) {
        state_.complete = false;
        state_.round += 1;
      }
    } else if (static_cast<int>(state_.participants.size()) < o_.min_nodes) {
      state_.deadline.reset();
    }
  }

  [[nodiscard]] bool keep_alive_due() const {
    auto it = state_.last_heartbeats.find(me_);
    if (it == state_.last_heartbeats.end()) return false;
    return it->second <= wall_now() - seconds(o_.keep_alive_interval);
  }

  // ---- decisions --------------------------------------------------------------------------
  Action decide(Op op, TimePoint deadline) const {
    const auto& s = state_;
    const bool participant = s.participants.contains(me_);
    const auto now = SteadyClock::now();
    const auto n = static_cast<int>(s.participants.size());
    switch (op) {
      case Op::kExit:
        if (participant)
          return now > deadline ? Action::kErrorTimeout : Action::kRemoveFromParticipants;
        return Action::kFinish;
      case Op::kClose:
        if (s.closed) return Action::kFinish;
        return now > deadline ? Action::kErrorTimeout : Action::kMarkClosed;
      case Op::kKeepAlive:
        if (keep_alive_due()) return now > deadline ? Action::kErrorTimeout : Action::kKeepAlive;
        return Action::kFinish;
      case Op::kJoin:
        break;
    }
    // Join (_RendezvousJoinOp), rule by rule.
    if (s.closed) {
      if (s.redundancy_list.contains(me_)) {
        throw RendezvousGracefulExit("the rendezvous '" + o_.run_id +
                                     "' is closed; this node was not needed (it waited in the "
                                     "redundancy list) and exits");
      }
      return Action::kErrorClosed;
    }
    if (s.redundancy_list.contains(me_)) {
      if (n == o_.max_nodes) return keep_alive_due() ? Action::kKeepAlive : Action::kSync;
      return Action::kRemoveFromRedundancyList;
    }
    if (s.complete && participant) return Action::kFinish;
    if (now > deadline) {
      if (now <= deadline + std::chrono::seconds(5)) {
        if (participant) return Action::kRemoveFromParticipants;
        if (s.wait_list.contains(me_)) return Action::kRemoveFromWaitList;
      }
      return Action::kErrorTimeout;
    }
    if (s.complete) {
      if (n < o_.max_nodes) {
        if (!s.wait_list.contains(me_)) return Action::kAddToWaitList;
      } else if (!s.redundancy_list.contains(me_) && !s.wait_list.contains(me_)) {
        return Action::kAddToRedundancyList;
      }
    } else if (participant) {
      if (n >= o_.min_nodes && n <= o_.max_nodes && s.deadline && *s.deadline < wall_now()) {
        return Action::kMarkComplete;
      }
    } else {
      return Action::kAddToParticipants;
    }
    return keep_alive_due() ? Action::kKeepAlive : Action::kSync;
  }

  void keep_alive() { state_.last_heartbeats[me_] = wall_now(); }

  void mark_complete() {
    state_.complete = true;
    state_.deadline.reset();
    int rank = 0;
    for (auto& [node, p] : state_.participants) p.rank = rank++;  // std::map: sorted order
  }

  void apply(Action a, int restart_count, std::optional<int> close_code, TimePoint& deadline) {
    auto& s = state_;
    switch (a) {
      case Action::kKeepAlive:
        keep_alive();
        break;
      case Action::kAddToParticipants:
        s.wait_list.erase(me_);
        s.participants[me_] = {0, restart_count};
        keep_alive();
        if (static_cast<int>(s.participants.size()) == o_.min_nodes) {
          s.deadline = wall_now() + seconds(o_.last_call_timeout);
        }
        if (static_cast<int>(s.participants.size()) == o_.max_nodes) mark_complete();
        break;
      case Action::kAddToWaitList:
        s.redundancy_list.erase(me_);
        s.wait_list.insert(me_);
        keep_alive();
        break;
      case Action::kAddToRedundancyList:
        s.redundancy_list.insert(me_);
        keep_alive();
        break;
      case Action::kRemoveFromParticipants:
        s.participants.erase(me_);
        s.last_heartbeats.erase(me_);
        remove_participant_epilogue();
        break;
      case Action::kRemoveFromWaitList:
        s.wait_list.erase(me_);
        s.last_heartbeats.erase(me_);
        break;
      case Action::kRemoveFromRedundancyList:
        s.redundancy_list.erase(me_);
        s.last_heartbeats.erase(me_);
        deadline = SteadyClock::now() + o_.join_timeout;
        break;
      case Action::kMarkComplete:
        mark_complete();
        break;
      case Action::kMarkClosed:
        s.closed = true;
        s.closed_exit_code = close_code;
        s.closed_by = me_.str();
        break;
      default:
        break;
    }
  }

  // How long a SYNC may sleep before something time-based can change the decision.
  [[nodiscard]] milliseconds next_wake(TimePoint deadline) const {
    milliseconds w = o_.poll_interval;
    const auto slack = milliseconds(5);
    if (state_.deadline) w = std::min(w, ms_until(*state_.deadline) + slack);
    const double dead_after = seconds(o_.keep_alive_interval) * o_.keep_alive_max_attempt;
    for (const auto& [node, t] : state_.last_heartbeats) {
      const double due = node == me_ ? t + seconds(o_.keep_alive_interval) : t + dead_after;
      w = std::min(w, ms_until(due) + slack);
    }
    const auto op_left =
        std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()) + slack;
    w = std::min(w, op_left);
    return std::max(w, milliseconds(1));
  }

  // Reads of the shared state are at least this far apart per node: 5 ms per known node,
  // capped by poll_interval. Small jobs react to every change at once; large ones batch
  // (every write wakes every waiter, so without a gap N nodes would read N^2 states per
  // round of writes; with it the whole job reads at most ~200 states per second).
  [[nodiscard]] milliseconds min_read_gap() const {
    const auto nodes =
        state_.participants.size() + state_.wait_list.size() + state_.redundancy_list.size();
    return std::min(o_.poll_interval, milliseconds(5 * static_cast<std::int64_t>(nodes)));
  }

  // What a wait for the next state change needs, computed under mu_.
  struct ChangeWait {
    std::string key;                     // notify key of the next version
    SteadyClock::time_point not_before;  // last read + min_read_gap()
  };
  [[nodiscard]] ChangeWait change_wait() const {
    return {notify_key(state_.version + 1), last_read_ + min_read_gap()};
  }

  // Waits until the state changes (its notify key appears) or `max_wait` passes, then
  // keeps min_read_gap() since the last read. Touches no state (callable without mu_).
  void wait_for_change(store::Store& s, const ChangeWait& cw, milliseconds max_wait,
                       bool interruptible, const std::atomic<bool>* stop = nullptr) {
    const auto end = SteadyClock::now() + max_wait;
    const std::string& key = cw.key;
    const auto slice = stop != nullptr ? milliseconds(100) : milliseconds(1000);
    while (stop == nullptr || !*stop) {
      if (interruptible) check_interrupt();
      const auto left = std::chrono::duration_cast<milliseconds>(end - SteadyClock::now());
      if (left <= milliseconds(0)) return;
      try {
        s.wait({key}, std::clamp(left, milliseconds(1), slice));
        break;
      } catch (const store::TimeoutError&) {
      }
    }
    const auto gap_end = std::min(end, cw.not_before);
    while ((stop == nullptr || !*stop) && SteadyClock::now() < gap_end) {
      if (interruptible) check_interrupt();
      std::this_thread::sleep_for(std::min(
          std::chrono::duration_cast<milliseconds>(gap_end - SteadyClock::now()) + milliseconds(1),
          milliseconds(100)));
    }
  }

  std::string describe() const {
    std::string out = std::to_string(state_.participants.size()) + " participant(s)";
    if (!state_.participants.empty()) {
      out += " [";
      bool first = true;
      for (const auto& [n, p] : state_.participants) {
        if (!first) out += ", ";
        first = false;
        out += n.str();
      }
      out += "]";
    }
    if (!state_.wait_list.empty())
      out += ", " + std::to_string(state_.wait_list.size()) + " waiting";
    return out;
  }

  void run_op(store::Store& s, Op op, TimePoint deadline, bool interruptible, int restart_count,
              std::optional<int> close_code) {
    while (true) {
      if (interruptible) check_interrupt();
      sync(s);
      const Action a = decide(op, deadline);
      switch (a) {
        case Action::kFinish:
          return;
        case Action::kErrorClosed: {
          std::string by = state_.closed_by.empty() ? "" : " by node '" + state_.closed_by + "'";
          std::string code = state_.closed_exit_code
                                 ? " after its workers failed (exit code " +
                                       std::to_string(*state_.closed_exit_code) + ")"
                                 : "";
          throw RendezvousClosedError("the rendezvous '" + o_.run_id + "' was closed" + by + code +
                                          "; the job has ended, start a new one (with a new "
                                          "--rdzv-id) to run again",
                                      state_.closed_exit_code);
        }
        case Action::kErrorTimeout:
          throw timeout_error(op);
        case Action::kSync:
          wait_for_change(s, change_wait(), next_wake(deadline), interruptible);
          break;
        default:
          apply(a, restart_count, close_code, deadline);
          dirty_ = true;
          break;
      }
    }
  }

  RendezvousTimeoutError timeout_error(Op op) const {
    switch (op) {
      case Op::kJoin:
        return RendezvousTimeoutError(
            "the rendezvous '" + o_.run_id + "' did not complete within join_timeout (" +
            detail::ms_text(o_.join_timeout) + "): " + describe() + ", need " +
            std::to_string(o_.min_nodes) +
            (o_.min_nodes == o_.max_nodes ? "" : ".." + std::to_string(o_.max_nodes)) +
            " node(s); start the missing nodes with the same --rdzv-id/--rdzv-endpoint, lower "
            "--nnodes MIN, or raise --rdzv-conf join_timeout=SECONDS");
      case Op::kClose:
        return RendezvousTimeoutError("could not close the rendezvous '" + o_.run_id +
                                      "' within close_timeout (" +
                                      detail::ms_text(o_.close_timeout) + ")");
      case Op::kExit:
        return RendezvousTimeoutError("could not leave the previous round of the rendezvous '" +
                                      o_.run_id + "' in time");
      case Op::kKeepAlive:
        break;
    }
    return RendezvousTimeoutError("the keep-alive heartbeat of node '" + me_.str() +
                                  "' did not reach the rendezvous store within " +
                                  detail::ms_text(o_.heartbeat_timeout));
  }

  void close(std::optional<int> exit_code) {
    unwatch();
    try {
      std::lock_guard lock(mu_);
      run_op(*client_, Op::kClose, SteadyClock::now() + o_.close_timeout, false, 0, exit_code);
      closed_by_me_ = true;
      detail::log(o_.log, LogLevel::kInfo,
                  "The node '" + me_.str() + "' has closed the rendezvous '" + o_.run_id + "'.");
    } catch (const std::exception& e) {
      detail::log(o_.log, LogLevel::kWarning,
                  "The node '" + me_.str() + "' has failed to close the rendezvous '" + o_.run_id +
                      "': " + e.what());
    }
  }

  // ---- watcher ----------------------------------------------------------------------------
  void watch_loop(const std::atomic<bool>& stop, std::uint64_t gen) {
    std::unique_ptr<store::Store> conn;
    bool reported_membership = false;
    bool reported_scale_up = false;
    bool reported_closed = false;
    try {
      conn = client_->clone();
      while (!stop) {
        milliseconds wake = o_.poll_interval;
        ChangeWait cw;
        {
          std::lock_guard lock(mu_);
          if (stop) return;  // unwatch(): the main thread owns the state now
          sync(*conn);
          if (state_.closed && !reported_closed) {
            reported_closed = true;
            WatchEvent ev;
            ev.kind = WatchEvent::Kind::kJobFailed;
            ev.exit_code = state_.closed_exit_code.value_or(125);
            ev.detail =
                "the rendezvous '" + o_.run_id + "' was closed by node '" + state_.closed_by + "'" +
                (state_.closed_exit_code ? " after its workers failed (exit code " +
                                               std::to_string(*state_.closed_exit_code) + ")"
                                         : "") +
                ": stopping this node too";
            events_.push(std::move(ev), gen);
          }
          if (!reported_membership) {
            std::string why;
            bool scale_up = false;
            if (state_.round != my_round_) {
              why = "round " + std::to_string(my_round_) + " of the rendezvous ended (round " +
                    std::to_string(state_.round) + " is forming)";
            } else if (!state_.participants.contains(me_)) {
              why = "this node is no longer a participant of round " + std::to_string(my_round_) +
                    " (its heartbeats were late?)";
            } else {
              std::string gone;
              for (const auto& n : my_participants_) {
                if (!state_.participants.contains(n)) gone += (gone.empty() ? "" : ", ") + n.str();
              }
              if (!gone.empty()) {
                why = "node(s) " + gone + " left round " + std::to_string(my_round_) +
                      " (stopped, or missed their heartbeats)";
              } else if (!state_.wait_list.empty() && !reported_scale_up) {
                why = "detected " + std::to_string(state_.wait_list.size()) +
                      " new node(s) waiting to join";
                scale_up = true;
              }
            }
            if (!why.empty()) {
              // A scale-up is reported once; a lost participant or a new round still is later.
              (scale_up ? reported_scale_up : reported_membership) = true;
              WatchEvent ev;
              ev.kind = WatchEvent::Kind::kMembershipChanged;
              ev.scale_up = scale_up;
              ev.detail = why;
              events_.push(std::move(ev), gen);
            }
          }
          if (keep_alive_due()) {
            try {
              run_op(*conn, Op::kKeepAlive, SteadyClock::now() + o_.heartbeat_timeout, false, 0,
                     std::nullopt);
            } catch (const RendezvousTimeoutError& e) {
              detail::log(o_.log, LogLevel::kWarning, e.what());
            }
          }
          wake = next_wake(SteadyClock::now() + o_.poll_interval);
          cw = change_wait();
        }
        // Wait for a state change in short slices so unwatch() is quick.
        wait_for_change(*conn, cw, wake, false, &stop);
      }
    } catch (const std::exception& e) {
      if (stop) return;
      WatchEvent ev;
      ev.kind = WatchEvent::Kind::kStoreLost;
      ev.detail = connection_lost(e).what();
      events_.push(std::move(ev), gen);
    }
  }

  DynamicOptions o_;
  NodeDesc me_;
  std::string key_;
  std::unique_ptr<store::Server> rdzv_server_;
  std::shared_ptr<store::Client> client_;
  std::string store_endpoint_;

  std::mutex mu_;  // guards the state holder below
  RendezvousState state_;
  std::string token_{kNullState};
  bool dirty_ = false;
  SteadyClock::time_point last_read_{};

  bool joined_once_ = false;
  bool closed_by_me_ = false;
  int my_round_ = -1;
  int my_world_ = 0;
  std::set<NodeDesc> my_participants_;
  std::shared_ptr<store::Store> round_store_;
  std::unique_ptr<store::Server> worker_server_;
};

}  // namespace

std::unique_ptr<Handler> make_dynamic_rendezvous(DynamicOptions options,
                                                 const Interrupt& interrupt) {
  return std::make_unique<DynamicRendezvous>(std::move(options), interrupt);
}

std::string dynamic_store_endpoint(const Handler& handler) {
  if (const auto* d = dynamic_cast<const DynamicRendezvous*>(&handler)) return d->store_endpoint();
  return "";
}

}  // namespace tzrun::rendezvous
