// The c10d (dynamic) backend (see include/tzrun/rendezvous/dynamic_rendezvous.hpp): the store
// I/O, the ops loop of torch/distributed/elastic/rendezvous/dynamic_rendezvous.py's
// _DistributedRendezvousOpExecutor, and the watcher thread. The decisions themselves are the
// pure functions of dynamic_ops.hpp.
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "common.hpp"
#include "dynamic_ops.hpp"
#include "etcd_client.hpp"
#include "exit_barrier.hpp"
#include "file_store.hpp"
#include "state_channel.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using detail::milliseconds;
using detail::SteadyClock;
using store::LogLevel;
using TimePoint = SteadyClock::time_point;

using detail::Action;
using detail::Op;

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
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
    ConnectStore(interrupt);
  }

  ~DynamicRendezvous() override {
    watcher_.Stop();
    worker_server_.reset();
    if (rdzv_server_) rdzv_server_->Stop();
  }

  [[nodiscard]] std::string Backend() const override { return o_.backend; }
  [[nodiscard]] const std::string& RunId() const override { return o_.run_id; }
  [[nodiscard]] const std::string& StoreEndpoint() const { return store_endpoint_; }

  RendezvousInfo NextRendezvous(int local_restart_count) override {
    Unwatch();
    const Interrupt intr = [this] { CheckInterrupt(); };
    std::unique_lock lock(mu_);
    if (!joined_once_ && o_.first_round_jitter && o_.max_nodes > 1) {
      std::mt19937 rng(std::random_device{}());
      detail::SleepFor(milliseconds(std::uniform_int_distribution<int>(0, 300)(rng)), intr);
    }
    joined_once_ = true;
    detail::Log(o_.log, LogLevel::kInfo,
                "The node '" + me_.Str() + "' attempts to join the next round of the rendezvous '" +
                    o_.run_id + "'.");
    TimePoint deadline = SteadyClock::now() + o_.join_timeout;
    try {
      RunOp(*channel_, Op::kExit, deadline, true, local_restart_count, std::nullopt);
      RunOp(*channel_, Op::kJoin, deadline, true, local_restart_count, std::nullopt);
    } catch (const store::StoreError& e) {
      throw ConnectionLost(e);
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
        std::make_shared<store::PrefixStore>(key_ + "." + std::to_string(info.round), kv_);
    info.store = round_store_;
    my_world_ = info.world_size;
    my_rank_ = info.rank;
    detail::Log(o_.log, LogLevel::kInfo,
                "The node '" + me_.Str() + "' has joined round " + std::to_string(info.round) +
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
            worker_server_ = detail::HostStore("", 0, o_.log);
          } catch (const store::BindError& e) {
            throw RendezvousConnectionError(std::string("cannot host the workers' store: ") +
                                            e.what() +
                                            "; check that this host can open listening TCP "
                                            "sockets");
          }
        }
        info.master_addr = o_.local_addr;
        info.master_port = worker_server_->Port();
        round_store_->Set("MASTER_ADDR", info.master_addr);
        round_store_->Set("MASTER_PORT", std::to_string(info.master_port));
      } else {
        worker_server_.reset();
        WaitKeys(*round_store_, {"MASTER_ADDR", "MASTER_PORT"}, o_.join_timeout, intr,
                 "waiting for rank 0 to publish the workers' store");
        info.master_addr = round_store_->Get("MASTER_ADDR");
        info.master_port = std::stoi(round_store_->Get("MASTER_PORT"));
      }
    } catch (const store::StoreError& e) {
      throw ConnectionLost(e);
    }
    Watch();
    return info;
  }

  void Watch() override {
    if (watcher_.Active() || my_round_ < 0) return;
    // --standalone: a private store on a free port with a random run id and one node;
    // nobody can join or prune this node, so no heartbeats are needed.
    if (o_.max_nodes == 1 && rdzv_server_ && o_.endpoint.port == 0) return;
    const auto gen = events_.Reset();
    watcher_.Start([this, gen](const std::atomic<bool>& stop) { WatchLoop(stop, gen); });
  }

  FailureDecision OnFailure(bool can_restart, int exit_code) override {
    FailureDecision d{can_restart, -1, exit_code};
    if (can_restart) return d;  // NextRendezvous() re-forms the round (torchrun)
    Close(exit_code);
    return d;
  }

  BarrierOutcome ExitBarrier(milliseconds timeout) override {
    if (!round_store_) return {};
    Watch();
    detail::ExitBarrierParams p;
    p.world_size = my_world_;
    p.node_rank = my_rank_;
    p.timeout = timeout;
    // The rendezvous store or the round's workers' store: both go away with this agent. Lost
    // participants reach the barrier as watcher events, so every pending node counts as live.
    p.hosting = rdzv_server_ != nullptr || worker_server_ != nullptr;
    p.log = o_.log;
    return detail::ExitBarrier(
        *round_store_, p, [this] { CheckInterrupt(); }, [this] { return events_.Take(); });
  }

  void Shutdown() override {
    Unwatch();
    if (!closed_by_me_) Close(std::nullopt);
    if (round_store_) {
      detail::Depart(*round_store_, my_world_, rdzv_server_ != nullptr, o_.close_timeout, o_.log);
    }
    worker_server_.reset();
    if (rdzv_server_) rdzv_server_->Stop();
  }

  void Abandon(int /*exit_code*/) override {
    Unwatch();
    if (my_round_ < 0) return;
    try {
      channel_->SetTimeout(milliseconds(2000));
      std::unique_lock lock(mu_, std::defer_lock);
      // The watcher may be stuck on an unreachable store while holding mu_: give up then.
      const auto give_up = SteadyClock::now() + milliseconds(2000);
      while (!lock.try_lock()) {
        if (SteadyClock::now() >= give_up) return;
        std::this_thread::sleep_for(milliseconds(10));
      }
      RunOp(*channel_, Op::kExit, SteadyClock::now() + milliseconds(2000), false, 0, std::nullopt);
    } catch (const std::exception& e) {
      detail::Log(o_.log, LogLevel::kDebug,
                  std::string("could not leave the rendezvous round: ") + e.what());
    }
  }

 private:
  // ---- store ----------------------------------------------------------------------------
  void ConnectStore(const Interrupt& interrupt) {
    if (o_.backend == "etcd-v2") {
      ConnectEtcd(interrupt);
      return;
    }
    if (o_.store_file) {
      ConnectFile();
      return;
    }
    const bool inferred = !o_.is_host.has_value();
    const bool is_host = o_.is_host.value_or(MatchesMachineHostname(o_.endpoint.host));
    std::string host = o_.endpoint.host;
    int port = o_.endpoint.port;
    if (is_host) {
      try {
        rdzv_server_ = detail::HostStore(o_.bind_host, port, o_.log);
        port = rdzv_server_->Port();
        host = o_.bind_host.empty() ? "127.0.0.1" : o_.bind_host;
        detail::Log(o_.log, LogLevel::kInfo,
                    "hosting the c10d rendezvous store on " + rdzv_server_->Endpoint());
      } catch (const store::BindError& e) {
        if (!inferred) {
          throw RendezvousConnectionError(
              std::string("cannot host the rendezvous store (rdzv-conf is_host=true): ") +
              e.what() + "; free the port or pick another --rdzv-endpoint port");
        }
        detail::Log(o_.log, LogLevel::kInfo,
                    std::string("could not host the rendezvous store (") + e.what() +
                        "); another agent on this machine hosts it, connecting as a client");
      }
    }
    if (port == 0) {
      throw ConfigError("--rdzv-endpoint " + FormatEndpoint(o_.endpoint) +
                        ": port 0 (a free port) only works on the node that hosts the store; "
                        "give the other nodes the real port");
    }
    client_ = detail::Connect(host, port, o_.join_timeout, o_.read_timeout, interrupt, o_.log,
                              "c10d rendezvous '" + o_.run_id + "'");
    store_endpoint_ = FormatEndpoint({host, port});
    try {
      client_->CompareSet(key_, "", std::string(detail::kC10dNullState));
    } catch (const store::StoreError& e) {
      throw ConnectionLost(e);
    }
    kv_ = client_;
    channel_ = detail::MakeStoreChannel(client_, key_);
  }

  // store_type=file: torch's FileStore at the endpoint path, or a new temporary file
  // (c10d_rendezvous_backend.py _create_file_store); nobody hosts it.
  void ConnectFile() {
    std::string path = *o_.store_file;
    try {
      if (path.empty()) {
        path = detail::MakeTempStoreFile();
        if (o_.max_nodes > 1) {
          detail::Log(o_.log, LogLevel::kWarning,
                      "--rdzv-conf store_type=file without --rdzv-endpoint: the rendezvous "
                      "store is the new temporary file " +
                          path +
                          ", which no other node knows; give every node --rdzv-endpoint=<a "
                          "file on a filesystem they share>");
        }
      }
      store_endpoint_ = path;
      kv_ = detail::MakeFileStore(path, store::Store::kDefaultTimeout);
      kv_->CompareSet(key_, "", std::string(detail::kC10dNullState));
    } catch (const store::StoreError& e) {
      throw RendezvousConnectionError(
          std::string("cannot use the c10d rendezvous FileStore: ") + e.what() +
          "; give --rdzv-endpoint a file this user can create and lock (flock), on a "
          "filesystem every node shares");
    }
    detail::Log(o_.log, LogLevel::kInfo, "c10d rendezvous store: the FileStore " + path);
    channel_ = detail::MakeStoreChannel(kv_, key_);
  }

  // etcd-v2: the state and the round store live in etcd (torchrun's etcd_rendezvous_backend.py).
  void ConnectEtcd(const Interrupt& interrupt) {
    detail::EtcdClient etcd(o_.endpoint.host, o_.endpoint.port, o_.read_timeout, o_.etcd_tls);
    store_endpoint_ = FormatEndpoint(o_.endpoint);
    channel_ = detail::MakeEtcdChannel(etcd, o_.run_id);
    kv_ = detail::MakeEtcdStore(etcd, o_.read_timeout);
    const auto deadline = SteadyClock::now() + o_.join_timeout;
    bool told = false;
    while (true) {
      try {
        channel_->Get();
        return;
      } catch (const store::StoreError& e) {
        if (SteadyClock::now() >= deadline) throw ConnectionLost(e);
        if (!told) {
          detail::Log(o_.log, LogLevel::kWarning,
                      "etcd at " + store_endpoint_ + " does not answer (" + e.what() +
                          "); retrying until --rdzv-conf join_timeout");
          told = true;
        }
      }
      detail::SleepFor(milliseconds(500), interrupt);
    }
  }

  RendezvousConnectionError ConnectionLost(const std::exception& e) const {
    if (o_.backend == "etcd-v2") {
      return RendezvousConnectionError(
          "lost etcd at " + FormatEndpoint(o_.endpoint) + " (" + e.what() +
          "), which holds the etcd-v2 rendezvous; check that etcd runs there with "
          "--enable-v2=true and that this node can reach it (--rdzv-endpoint)");
    }
    if (o_.store_file) {
      return RendezvousConnectionError(
          "lost the c10d rendezvous FileStore " + store_endpoint_ + " (" + e.what() +
          "); check that the file is still there and that its filesystem is reachable");
    }
    return RendezvousConnectionError(
        "lost the c10d rendezvous store at " + FormatEndpoint(o_.endpoint) + " (" + e.what() +
        "); the agent hosting it (the node matching --rdzv-endpoint) probably exited or "
        "crashed, or the network failed");
  }

  // ---- state holder (mu_ held) ------------------------------------------------------------
  std::optional<bool> Sync(detail::StateChannel& ch) {
    std::optional<bool> has_set;
    detail::StateChannel::Read r;
    if (dirty_) {
      RendezvousState next = state_;
      next.version = state_.version + 1;
      r = ch.CompareSet(token_, next);
      has_set = r.written;
    } else {
      r = ch.Get();
    }
    last_read_ = SteadyClock::now();
    state_ = std::move(r.state);
    token_ = std::move(r.token);
    dirty_ = false;
    Sanitize();
    return has_set;
  }

  void Sanitize() {
    for (const auto& dead : detail::RemoveDeadNodes(state_, o_, WallNow())) {
      detail::Log(o_.log, LogLevel::kDebug,
                  "Detected dead node '" + dead.Str() + "', removing it from the rendezvous");
    }
  }

  [[nodiscard]] bool KeepAliveDue() const {
    return detail::KeepAliveDue(state_, me_, o_, WallNow());
  }

  // How long a SYNC may sleep before something time-based can change the decision.
  // The watcher's next read: within watch_interval (--monitor-interval), sooner for a
  // heartbeat or a deadline.
  [[nodiscard]] milliseconds NextWatchWake() const {
    DynamicOptions o = o_;
    o.poll_interval = o_.watch_interval;
    return detail::NextWake(state_, me_, o, o_.watch_interval, WallNow());
  }

  [[nodiscard]] milliseconds NextWake(TimePoint deadline) const {
    const auto now = SteadyClock::now();
    return detail::NextWake(state_, me_, o_,
                            std::chrono::duration_cast<milliseconds>(deadline - now), WallNow());
  }

  // What a wait for the next state change needs, computed under mu_.
  struct ChangeWait {
    std::string token;                   // of the state last read
    std::int64_t next_version = 0;       // c10d: its notify key
    SteadyClock::time_point not_before;  // last read + MinReadGap()
  };
  [[nodiscard]] ChangeWait NextChangeWait() const {
    return {token_, state_.version + 1, last_read_ + detail::MinReadGap(state_, o_)};
  }

  // Waits until the state changes (its notify key appears) or `max_wait` passes, then
  // keeps MinReadGap() since the last read. Touches no state (callable without mu_).
  void WaitForChange(detail::StateChannel& ch, const ChangeWait& cw, milliseconds max_wait,
                     bool interruptible, const std::atomic<bool>* stop = nullptr) {
    const auto end = SteadyClock::now() + max_wait;
    const auto slice = stop != nullptr ? milliseconds(100) : milliseconds(1000);
    while (stop == nullptr || !*stop) {
      if (interruptible) CheckInterrupt();
      const auto left = std::chrono::duration_cast<milliseconds>(end - SteadyClock::now());
      if (left <= milliseconds(0)) return;
      if (ch.WaitChange(cw.token, cw.next_version, std::clamp(left, milliseconds(1), slice))) {
        break;
      }
    }
    const auto gap_end = std::min(end, cw.not_before);
    while ((stop == nullptr || !*stop) && SteadyClock::now() < gap_end) {
      if (interruptible) CheckInterrupt();
      std::this_thread::sleep_for(std::min(
          std::chrono::duration_cast<milliseconds>(gap_end - SteadyClock::now()) + milliseconds(1),
          milliseconds(100)));
    }
  }

  void RunOp(detail::StateChannel& s, Op op, TimePoint deadline, bool interruptible,
             int restart_count, std::optional<int> close_code) {
    while (true) {
      if (interruptible) CheckInterrupt();
      Sync(s);
      const Action a = detail::Decide(op, state_, me_, o_, SteadyClock::now(), deadline, WallNow());
      switch (a) {
        case Action::kFinish:
          return;
        case Action::kErrorClosed:
          throw RendezvousClosedError(detail::ClosedMessage(state_, o_), state_.closed_exit_code);
        case Action::kExitRedundant:
          throw RendezvousGracefulExit("the rendezvous '" + o_.run_id +
                                       "' is closed; this node was not needed (it waited in the "
                                       "redundancy list) and exits");
        case Action::kErrorTimeout:
          throw RendezvousTimeoutError(detail::TimeoutMessage(op, state_, me_, o_));
        case Action::kSync:
          WaitForChange(s, NextChangeWait(), NextWake(deadline), interruptible);
          break;
        default:
          if (detail::Apply(a, state_, me_, o_, restart_count, close_code, WallNow())) {
            deadline = SteadyClock::now() + o_.join_timeout;
          }
          dirty_ = true;
          if (a == Action::kAddToWaitList || a == Action::kAddToRedundancyList) SaySpare(a);
          break;
      }
    }
  }

  // A node that cannot take part in the current round says so at the default log level
  // (torchrun's agent is silent there, which reads like a hang).
  void SaySpare(Action a) {
    const std::string where = "The node '" + me_.Str() + "' is waiting in the rendezvous '" +
                              o_.run_id + "' (" + detail::Describe(state_) + "): ";
    detail::Log(o_.log, LogLevel::kWarning,
                a == Action::kAddToWaitList
                    ? where +
                          "the current round is complete; it joins the next round, which the "
                          "running nodes start when they see it (every --monitor-interval)"
                    : where + "the round already has --nnodes MAX=" + std::to_string(o_.max_nodes) +
                          " nodes; it stays a spare and joins when a node leaves");
  }

  void Close(std::optional<int> exit_code) {
    Unwatch();
    try {
      std::lock_guard lock(mu_);
      RunOp(*channel_, Op::kClose, SteadyClock::now() + o_.close_timeout, false, 0, exit_code);
      closed_by_me_ = true;
      detail::Log(o_.log, LogLevel::kInfo,
                  "The node '" + me_.Str() + "' has closed the rendezvous '" + o_.run_id + "'.");
    } catch (const std::exception& e) {
      detail::Log(o_.log, LogLevel::kWarning,
                  "The node '" + me_.Str() + "' has failed to close the rendezvous '" + o_.run_id +
                      "': " + e.what());
    }
  }

  // ---- watcher ----------------------------------------------------------------------------
  // What the watcher already reported this round.
  struct Reported {
    bool membership = false;
    bool scale_up = false;
    bool closed = false;
  };

  void WatchLoop(const std::atomic<bool>& stop, std::uint64_t gen) {
    Reported reported;
    try {
      std::unique_ptr<detail::StateChannel> conn = channel_->Clone();
      while (!stop) {
        milliseconds wake = o_.watch_interval;
        ChangeWait cw;
        {
          std::lock_guard lock(mu_);
          if (stop) return;  // unwatch(): the main thread owns the state now
          Sync(*conn);
          ReportChanges(gen, reported);
          if (KeepAliveDue()) {
            try {
              RunOp(*conn, Op::kKeepAlive, SteadyClock::now() + o_.heartbeat_timeout, false, 0,
                    std::nullopt);
            } catch (const RendezvousTimeoutError& e) {
              detail::Log(o_.log, LogLevel::kWarning, e.what());
            }
          }
          wake = NextWatchWake();
          cw = NextChangeWait();
        }
        // Wait for a state change in short slices so unwatch() is quick.
        WaitForChange(*conn, cw, wake, false, &stop);
      }
    } catch (const std::exception& e) {
      if (stop) return;
      WatchEvent ev;
      ev.kind = WatchEvent::Kind::kStoreLost;
      ev.detail = ConnectionLost(e).what();
      events_.Push(std::move(ev), gen);
    }
  }

  // Queues the watcher's events for the state just read (mu_ held): the job closed, or the
  // round changed. A scale-up is reported once; a lost participant or a new round still is
  // later.
  void ReportChanges(std::uint64_t gen, Reported& reported) {
    if (state_.closed && !reported.closed) {
      reported.closed = true;
      WatchEvent ev;
      ev.kind = WatchEvent::Kind::kJobFailed;
      ev.exit_code = state_.closed_exit_code.value_or(125);
      ev.detail = detail::ClosedEventDetail(state_, o_);
      events_.Push(std::move(ev), gen);
    }
    if (reported.membership) return;
    const auto change =
        detail::DetectMembershipChange(state_, me_, my_round_, my_participants_, reported.scale_up);
    if (!change) return;
    (change->scale_up ? reported.scale_up : reported.membership) = true;
    WatchEvent ev;
    ev.kind = WatchEvent::Kind::kMembershipChanged;
    ev.scale_up = change->scale_up;
    ev.detail = change->why;
    events_.Push(std::move(ev), gen);
  }

  DynamicOptions o_;
  NodeDesc me_;
  std::string key_;
  std::unique_ptr<store::Server> rdzv_server_;
  std::shared_ptr<store::Client> client_;
  std::string store_endpoint_;

  std::mutex mu_;  // guards the state holder below
  RendezvousState state_;
  std::string token_;
  std::unique_ptr<detail::StateChannel> channel_;  // the state (c10d store key or etcd key)
  std::shared_ptr<store::Store> kv_;               // under the round stores
  bool dirty_ = false;
  SteadyClock::time_point last_read_{};

  bool joined_once_ = false;
  bool closed_by_me_ = false;
  int my_round_ = -1;
  int my_world_ = 0;
  int my_rank_ = 0;
  std::set<NodeDesc> my_participants_;
  std::shared_ptr<store::Store> round_store_;
  std::unique_ptr<store::Server> worker_server_;
};

}  // namespace

std::unique_ptr<Handler> MakeDynamicRendezvous(DynamicOptions options, const Interrupt& interrupt) {
  return std::make_unique<DynamicRendezvous>(std::move(options), interrupt);
}

std::string DynamicStoreEndpoint(const Handler& handler) {
  if (const auto* d = dynamic_cast<const DynamicRendezvous*>(&handler)) return d->StoreEndpoint();
  return "";
}

}  // namespace tzrun::rendezvous
