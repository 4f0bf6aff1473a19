// The legacy `etcd` backend (see include/tzrun/rendezvous/etcd_rendezvous.hpp): the etcd I/O
// of torchrun's EtcdRendezvous around the pure transitions of etcd_legacy_ops.hpp.
#include "tzrun/rendezvous/etcd_rendezvous.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common.hpp"
#include "etcd_client.hpp"
#include "etcd_legacy_ops.hpp"
#include "etcd_store.hpp"
#include "exit_barrier.hpp"
#include "state_channel.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using detail::CasDelay;
using detail::EtcdError;
using detail::EtcdResult;
using detail::EtcdWrite;
using detail::LegacyState;
using detail::LegacyStep;
using detail::LegacyWrite;
using detail::milliseconds;
using detail::SteadyClock;
using store::LogLevel;
namespace code = detail::etcd_code;

// EtcdRendezvousRetryImmediately / EtcdRendezvousRetryableFailure.
struct RetryNow {
  std::string why;
};
struct RetryLater {
  std::string why;
};

struct Read {
  EtcdResult res;
  LegacyState state;
};

class EtcdRendezvous final : public detail::WatchingHandler {
 public:
  EtcdRendezvous(EtcdOptions o, const Interrupt& interrupt)
      : o_(std::move(o)), client_(o_.endpoint.host, o_.endpoint.port, o_.read_timeout, o_.tls) {
    if (o_.run_id.empty()) throw ConfigError("the run id (--rdzv-id) must not be empty");
    if (o_.min_nodes < 1 || o_.max_nodes < o_.min_nodes) {
      throw ConfigError("--nnodes=" + std::to_string(o_.min_nodes) + ":" +
                        std::to_string(o_.max_nodes) + ": need 0 < MIN <= MAX");
    }
    if (o_.local_addr.empty()) throw ConfigError("the local address must not be empty");
    if (o_.prefix.empty() || o_.prefix.back() != '/') o_.prefix += '/';
    if (o_.prefix.front() != '/') o_.prefix.insert(0, "/");
    Setup(interrupt);
    lease_.Start([this](const std::atomic<bool>& stop) { LeaseLoop(stop); });
  }

  ~EtcdRendezvous() override {
    watcher_.Stop();
    lease_.Stop();
    worker_server_.reset();
  }

  [[nodiscard]] std::string Backend() const override { return "etcd"; }
  [[nodiscard]] const std::string& RunId() const override { return o_.run_id; }

  RendezvousInfo NextRendezvous(int local_restart_count) override {
    Unwatch();
    SetRankLease("");
    deadline_ = SteadyClock::now() + o_.timeout;
    RendezvousInfo info;
    info.restart_count = local_restart_count;
    std::string version;
    while (true) {
      CheckInterrupt();
      if (SteadyClock::now() > deadline_) throw TimeoutError();
      Log(LogLevel::kInfo, "Attempting to join next rendezvous");
      try {
        std::tie(version, info.rank, info.world_size) = InitPhase();
        break;
      } catch (const RetryNow& r) {
        Log(LogLevel::kDebug, r.why);
      } catch (const RetryLater& r) {
        Log(LogLevel::kDebug, r.why);
        detail::SleepFor(milliseconds(1000), [this] { CheckInterrupt(); });
      } catch (const EtcdError& e) {
        if (e.Code() == code::kTransport && SteadyClock::now() > deadline_) throw Lost(e);
        Log(LogLevel::kInfo,
            std::string("Rendezvous attempt failed, will retry. Reason: ") + e.what());
        detail::SleepFor(milliseconds(1000), [this] { CheckInterrupt(); });
      }
    }
    my_version_ = version;
    info.round = std::stoi(version);
    my_world_ = info.world_size;
    my_rank_ = info.rank;
    Bootstrap(info);
    Watch();
    return info;
  }

  void Watch() override {
    if (watcher_.Active() || my_version_.empty()) return;
    const auto gen = events_.Reset();
    watcher_.Start([this, gen](const std::atomic<bool>& stop) { WatchLoop(stop, gen); });
  }

  FailureDecision OnFailure(bool can_restart, int exit_code) override {
    if (!can_restart) Close(exit_code);
    return {can_restart, -1, exit_code};
  }

  BarrierOutcome ExitBarrier(milliseconds timeout) override {
    if (!round_store_) return {};
    Watch();
    detail::ExitBarrierParams p;
    p.world_size = my_world_;
    p.node_rank = my_rank_;
    p.timeout = timeout;
    p.hosting = worker_server_ != nullptr;
    p.log = o_.log;
    // A pending node is alive while its keep-alive lease (/rdzv/v_<version>/rank_<r>, TTL
    // kLegacyKeepAliveTtl, renewed by its LeaseLoop) still exists: a node that died or left
    // stops renewing it, so the store host does not wait for it forever.
    p.live = [this](const std::vector<int>& pending) { return LiveRanks(pending); };
    return detail::ExitBarrier(
        *round_store_, p, [this] { CheckInterrupt(); }, [this] { return events_.Take(); });
  }

  std::vector<int> LiveRanks(const std::vector<int>& pending) {
    std::vector<int> live;
    for (int r : pending) {
      try {
        (void)client_.Get(Path("/rdzv/v_" + my_version_ + "/rank_" + std::to_string(r)));
        live.push_back(r);
      } catch (const EtcdError& e) {
        if (e.Code() != code::kKeyNotFound) live.push_back(r);  // unknown: keep waiting
      }
    }
    return live;
  }

  void Shutdown() override {
    Unwatch();
    if (!closed_by_me_) Close(std::nullopt);
    if (round_store_) {
      detail::Depart(*round_store_, my_world_, false, o_.read_timeout, o_.log);
    }
    worker_server_.reset();
  }

  void Abandon(int /*exit_code*/) override {
    Unwatch();
    SetRankLease("");  // its keep-alive key lapses; a re-joining node destroys the round
  }

 private:
  [[nodiscard]] std::string Path(const std::string& p) const {
    return o_.prefix + "run_" + o_.run_id + p;
  }
  [[nodiscard]] std::string ActiveKey() const { return Path("/rdzv/active_version"); }

  void Log(LogLevel level, const std::string& m) const {
    detail::Log(o_.log, level, "etcd rendezvous '" + o_.run_id + "': " + m);
  }

  RendezvousConnectionError Lost(const EtcdError& e) const {
    if (code::IsFatal(e.Code())) return RendezvousConnectionError(e.what());
    return Lost(static_cast<const std::exception&>(e));
  }

  RendezvousConnectionError Lost(const std::exception& e) const {
    return RendezvousConnectionError(
        "lost etcd at " + FormatEndpoint(o_.endpoint) + " (" + e.what() +
        "), which holds the legacy etcd rendezvous; check that etcd runs there with "
        "--enable-v2=true and that this node can reach it (--rdzv-endpoint)");
  }

  [[nodiscard]] RendezvousTimeoutError TimeoutError() const {
    return RendezvousTimeoutError(
        "the legacy etcd rendezvous '" + o_.run_id +
        "' did not complete within --rdzv-conf "
        "timeout=" +
        std::to_string(o_.timeout.count() / 1000) +
        " s; start the missing nodes (--nnodes MIN) or raise timeout=SECONDS");
  }

  void CreateDir(const std::string& key, std::optional<std::int64_t> ttl = std::nullopt) {
    EtcdWrite w;
    w.dir = true;
    w.prev_exist = false;
    w.ttl = ttl;
    try {
      client_.Put(key, "", w);
    } catch (const EtcdError& e) {
      if (e.Code() != code::kNodeExist) throw;
    }
  }

  void Setup(const Interrupt& interrupt) {
    const auto deadline = SteadyClock::now() + o_.timeout;
    bool told = false;
    while (true) {
      try {
        if (o_.prefix != "/") CreateDir(o_.prefix.substr(0, o_.prefix.size() - 1));
        CreateDir(Path(""), detail::kLegacyRunIdTtl);
        CreateDir(Path("/rdzv"));
        EtcdWrite w;
        w.prev_exist = false;
        try {
          client_.Put(Path("/rdzv/version_counter"), "0", w);
        } catch (const EtcdError& e) {
          if (e.Code() != code::kNodeExist) throw;
        }
        return;
      } catch (const EtcdError& e) {
        if (e.Code() != code::kTransport || SteadyClock::now() >= deadline) throw Lost(e);
        if (!told) {
          detail::Log(o_.log, LogLevel::kWarning,
                      "etcd at " + FormatEndpoint(o_.endpoint) + " does not answer (" + e.what() +
                          "); retrying until --rdzv-conf timeout");
          told = true;
        }
      }
      detail::SleepFor(milliseconds(500), interrupt);
    }
  }

  Read GetState() {
    Read r;
    try {
      r.res = client_.Get(ActiveKey());
    } catch (const EtcdError& e) {
      if (e.Code() == code::kKeyNotFound) throw RetryLater{"no active rendezvous version"};
      throw;
    }
    r.state = detail::ParseLegacyState(r.res.node.value.value_or(""));
    return r;
  }

  // test_and_set on the state read; nullopt when another node changed it first.
  std::optional<EtcdResult> Cas(const EtcdResult& read, const LegacyState& next,
                                std::optional<std::int64_t> ttl) {
    EtcdWrite w;
    w.prev_value = read.node.value.value_or("");
    w.ttl = ttl;
    try {
      return client_.Put(ActiveKey(), detail::DumpLegacyState(next), w);
    } catch (const EtcdError& e) {
      if (e.Code() == code::kTestFailed) return std::nullopt;
      throw;
    }
  }

  // try_wait_for_state_change: a watch of the state key (in slices, interruptible).
  Read WaitStateChange(std::int64_t index, std::optional<milliseconds> timeout = std::nullopt) {
    const auto now = SteadyClock::now();
    auto overall = std::chrono::duration_cast<milliseconds>(deadline_ - now) + milliseconds(1000);
    overall = std::max(overall, milliseconds(1000));
    const auto end = now + (timeout ? std::min(*timeout, overall) : overall);
    WatchUntil(ActiveKey(), false, index, end);
    if (SteadyClock::now() > deadline_) throw TimeoutError();
    return GetState();
  }

  void WatchUntil(const std::string& key, bool recursive, std::int64_t index,
                  SteadyClock::time_point end) {
    while (true) {
      CheckInterrupt();
      const auto left = std::chrono::duration_cast<milliseconds>(end - SteadyClock::now());
      if (left <= milliseconds(0)) return;
      try {
        if (client_.Watch(key, recursive, index, std::min(left, milliseconds(1000)))) return;
      } catch (const EtcdError& e) {
        if (e.Code() == code::kEventIndexCleared) return;
        throw;
      }
    }
  }

  // ---- the phases (etcd_rendezvous.py, method by method) ------------------------------------
  std::tuple<std::string, int, int> InitPhase() {
    Read r;
    try {
      r = TryCreate();
      Log(LogLevel::kInfo, "New rendezvous state created: " + DumpLegacyState(r.state));
    } catch (const EtcdError& e) {
      if (e.Code() != code::kNodeExist) throw;
      r = GetState();
      Log(LogLevel::kInfo, "Observed existing rendezvous state: " + DumpLegacyState(r.state));
    }
    if (r.state.status == "closed") {
      throw RendezvousClosedError("the legacy etcd rendezvous '" + o_.run_id +
                                      "' is closed (the job ended); use a new --rdzv-id",
                                  r.state.tzrun_exit_code);
    }
    if (r.state.status == "joinable") return JoinPhase(r.state.version);
    if (r.state.status == "final") {
      HandleExisting(r.state.version);
      throw RetryNow{"Previously existing rendezvous state changed. Will re-try joining."};
    }
    WaitStateChange(r.res.etcd_index + 1);
    throw RetryLater{"transitional rendezvous state " + r.state.status};
  }

  Read TryCreate() {
    LegacyState setup;
    setup.status = "setup";
    EtcdWrite w;
    w.prev_exist = false;
    w.ttl = detail::kLegacySetupTtl;
    const auto active = client_.Put(ActiveKey(), DumpLegacyState(setup), w);
    std::string version;
    try {
      const auto counter = client_.Get(Path("/rdzv/version_counter"));
      version = std::to_string(std::stoll(counter.node.value.value_or("0")) + 1);
      EtcdWrite u;
      u.prev_exist = true;
      u.prev_index = counter.node.modified_index;
      client_.Put(counter.node.key, version, u);
    } catch (const EtcdError& e) {
      if (e.Code() != code::kKeyNotFound && e.Code() != code::kTestFailed) throw;
      throw RendezvousError("Unexpected state of the legacy etcd rendezvous '" + o_.run_id +
                            "' (its version counter changed while this node held the setup "
                            "state); restart the job with a new --rdzv-id");
    }
    CreateDir(Path("/rdzv/v_" + version));
    LegacyState joinable;
    joinable.status = "joinable";
    joinable.version = version;
    auto res = Cas(active, joinable, std::nullopt);
    if (!res) throw RetryLater{"the setup state changed under us"};
    return {*res, joinable};
  }

  std::tuple<std::string, int, int> JoinPhase(const std::string& expected) {
    EtcdResult active;
    int rank = -1;
    while (true) {
      CasDelay();
      const Read r = GetState();
      LegacyWrite w = detail::LegacyJoin(r.state, expected, o_.min_nodes, o_.max_nodes);
      ThrowRetry(w);
      if (auto res = Cas(r.res, w.next, w.ttl)) {
        active = *res;
        rank = w.rank;
        break;
      }
      Log(LogLevel::kInfo, "Join rendezvous CAS unsuccessful, retrying");
    }
    const auto state = detail::ParseLegacyState(active.node.value.value_or(""));
    Log(LogLevel::kInfo, "Joined rendezvous version " + expected + " as rank " +
                             std::to_string(rank) + ". Full state: " + DumpLegacyState(state));
    if (rank == o_.min_nodes - 1 && state.status == "joinable") {
      HandleLastCall(expected, SteadyClock::now() + o_.last_call_timeout);
    }
    WaitFor("frozen", "joinable", expected);
    return ConfirmPhase(expected, rank);
  }

  static void ThrowRetry(const LegacyWrite& w) {
    if (w.step == LegacyStep::kRetryImmediately) throw RetryNow{w.why};
    if (w.step == LegacyStep::kRetryLater) throw RetryLater{w.why};
  }

  // wait_for_peers / wait_for_final: until <target, expected> while <pending, expected>.
  Read WaitFor(const char* target, const char* pending, const std::string& expected) {
    Read r = GetState();
    while (true) {
      if (r.state.status == target && r.state.version == expected) return r;
      if (r.state.status != pending || r.state.version != expected) {
        throw RetryLater{"Rendezvous state transition no longer possible. Must re-enter."};
      }
      r = WaitStateChange(r.res.etcd_index + 1);
    }
  }

  std::tuple<std::string, int, int> ConfirmPhase(const std::string& expected, int rank) {
    const std::string lease_key = Path("/rdzv/v_" + expected + "/rank_" + std::to_string(rank));
    while (true) {
      CasDelay();
      const Read r = GetState();
      LegacyWrite w = detail::LegacyConfirm(r.state, expected, lease_key);
      ThrowRetry(w);
      EtcdWrite k;
      k.ttl = detail::kLegacyKeepAliveTtl;
      client_.Put(lease_key, "", k);
      if (Cas(r.res, w.next, w.ttl)) {
        SetRankLease(lease_key);
        break;
      }
      Log(LogLevel::kInfo, "Confirm membership CAS unsuccessful, retrying");
    }
    const Read fin = WaitFor("final", "frozen", expected);
    Log(LogLevel::kInfo, "Rendezvous version " + expected +
                             " is complete. Final state: " + DumpLegacyState(fin.state));
    return {expected, rank, static_cast<int>(fin.state.participants.size())};
  }

  void HandleExisting(const std::string& expected) {
    while (true) {
      CasDelay();
      const Read r = GetState();
      LegacyWrite w = detail::LegacyAnnounceWaiting(r.state, expected);
      ThrowRetry(w);
      if (Cas(r.res, w.next, std::nullopt)) break;
    }
    Log(LogLevel::kWarning,
        "a complete round (version " + expected +
            ") is running; this node waits until its nodes restart to admit it (they see it "
            "waiting), or until a participant's keep-alive lapses");
    WaitForFree(expected);
  }

  void WaitForFree(const std::string& expected) {
    Read r = GetState();
    while (r.state.status == "final" && r.state.version == expected) {
      std::set<std::string> alive;
      for (const auto& n : client_.Get(Path("/rdzv/v_" + expected)).node.nodes) {
        alive.insert(n.key);
      }
      if (auto dead = detail::LegacyExpiredKeepAlive(r.state, alive)) {
        Log(LogLevel::kInfo,
            "Keep-alive key " + *dead + " is not renewed; destroying version " + expected);
        try {
          client_.Delete(ActiveKey(), false, r.res.node.value.value_or(""));
        } catch (const EtcdError& e) {
          if (e.Code() != code::kTestFailed && e.Code() != code::kKeyNotFound) throw;
        }
        return;
      }
      const auto end =
          SteadyClock::now() +
          std::max(std::chrono::duration_cast<milliseconds>(deadline_ - SteadyClock::now()),
                   milliseconds(0)) +
          milliseconds(1000);
      WatchUntil(Path("/rdzv"), true, r.res.etcd_index + 1, end);
      if (SteadyClock::now() > deadline_) throw TimeoutError();
      r = GetState();
    }
  }

  void HandleLastCall(const std::string& expected, SteadyClock::time_point lc_deadline) {
    Read r = GetState();
    while (true) {
      if (r.state.status == "frozen" && r.state.version == expected) return;
      if (r.state.status != "joinable" || r.state.version != expected) {
        throw RetryLater{"Rendezvous state transition no longer possible. Must re-enter."};
      }
      if (SteadyClock::now() >= lc_deadline) {
        LegacyWrite w = detail::LegacyFreeze(r.state, expected);
        if (Cas(r.res, w.next, w.ttl)) return;
        CasDelay();
        r = GetState();
        continue;
      }
      // Keep the joinable state alive (ttl) while the last call lasts.
      if (auto res = Cas(r.res, r.state, detail::kLegacyJoinableTtl)) {
        const auto wait = std::min<milliseconds>(
            milliseconds(detail::kLegacyJoinableTtl * 500),
            std::chrono::duration_cast<milliseconds>(lc_deadline - SteadyClock::now()) +
                milliseconds(1000));
        r = WaitStateChange(res->etcd_index + 1, wait);
      } else {
        CasDelay();
        r = GetState();
      }
    }
  }

  void Close(std::optional<int> exit_code) {
    try {
      while (true) {
        const Read r = GetState();
        LegacyWrite w = detail::LegacyClose(r.state, exit_code);
        if (w.step != LegacyStep::kWrite || Cas(r.res, w.next, std::nullopt)) break;
        CasDelay();
      }
      closed_by_me_ = true;
      Log(LogLevel::kInfo, "closed the rendezvous");
    } catch (const std::exception& e) {
      Log(LogLevel::kWarning, std::string("failed to close the rendezvous: ") + e.what());
    } catch (const RetryLater& r) {
      Log(LogLevel::kWarning, "failed to close the rendezvous: " + r.why);
    }
  }

  // ---- the workers' store (RendezvousStoreInfo.build) --------------------------------------
  void Bootstrap(RendezvousInfo& info) {
    const std::string kv = Path("/rdzv/v_" + my_version_ + "/kv");
    try {
      CreateDir(kv);
    } catch (const EtcdError& e) {
      throw Lost(e);
    }
    round_store_ = detail::MakeEtcdStore(client_, o_.read_timeout, kv);
    info.store = round_store_;
    try {
      worker_server_.reset();
      if (info.rank == 0) {
        worker_server_ = detail::HostStore("", 0, o_.log);
        info.master_addr = o_.local_addr;
        info.master_port = worker_server_->Port();
        round_store_->Set("MASTER_ADDR", info.master_addr);
        round_store_->Set("MASTER_PORT", std::to_string(info.master_port));
      } else {
        WaitKeys(
            *round_store_, {"MASTER_ADDR", "MASTER_PORT"}, o_.timeout, [this] { CheckInterrupt(); },
            "waiting for rank 0 to publish the workers' store");
        info.master_addr = round_store_->Get("MASTER_ADDR");
        info.master_port = std::stoi(round_store_->Get("MASTER_PORT"));
      }
    } catch (const store::BindError& e) {
      throw RendezvousConnectionError(std::string("cannot host the workers' store: ") + e.what() +
                                      "; check that this host can open listening TCP sockets");
    } catch (const store::StoreError& e) {
      throw Lost(e);
    }
  }

  // ---- keep-alive leases (setup_lease_renewal) -----------------------------------------------
  void SetRankLease(const std::string& key) {
    std::lock_guard lock(lease_mu_);
    rank_lease_ = key;
    next_rank_refresh_ = SteadyClock::now() + milliseconds(detail::kLegacyKeepAliveTtl * 500);
  }

  void LeaseLoop(const std::atomic<bool>& stop) {
    auto next_run = SteadyClock::now() + std::chrono::seconds(detail::kLegacyRunIdTtl / 2);
    while (!stop) {
      std::this_thread::sleep_for(milliseconds(100));
      const auto now = SteadyClock::now();
      if (now >= next_run) {
        Refresh(Path(""), detail::kLegacyRunIdTtl);
        next_run = now + std::chrono::seconds(detail::kLegacyRunIdTtl / 2);
      }
      std::string key;
      {
        std::lock_guard lock(lease_mu_);
        if (rank_lease_.empty() || now < next_rank_refresh_) continue;
        key = rank_lease_;
        next_rank_refresh_ = now + milliseconds(detail::kLegacyKeepAliveTtl * 500);
      }
      if (!Refresh(key, detail::kLegacyKeepAliveTtl)) {
        std::lock_guard lock(lease_mu_);
        if (rank_lease_ == key) rank_lease_.clear();
      }
    }
  }

  bool Refresh(const std::string& key, std::int64_t ttl) {
    EtcdWrite w;
    w.refresh = true;
    w.prev_exist = true;
    w.ttl = ttl;
    try {
      client_.Put(key, "", w);
      return true;
    } catch (const EtcdError& e) {
      Log(LogLevel::kDebug, "could not renew " + key + ": " + e.what());
      return e.Code() != code::kKeyNotFound;
    }
  }

  void WatchLoop(const std::atomic<bool>& stop, std::uint64_t gen) {
    bool membership = false;
    bool closed = false;
    while (!stop) {
      try {
        std::optional<LegacyState> s;
        try {
          s = detail::ParseLegacyState(client_.Get(ActiveKey()).node.value.value_or(""));
        } catch (const EtcdError& e) {
          if (e.Code() != code::kKeyNotFound) throw;
        }
        if (auto ev = detail::LegacyWatchEvent(s, my_version_, o_.run_id, closed, membership)) {
          events_.Push(std::move(*ev), gen);
        }
      } catch (const EtcdError& e) {
        if (e.Code() == code::kTransport) {
          WatchEvent ev;
          ev.kind = WatchEvent::Kind::kStoreLost;
          ev.detail = Lost(e).what();
          events_.Push(std::move(ev), gen);
          return;
        }
      } catch (const RendezvousStateError& e) {
        Log(LogLevel::kWarning, e.what());
      }
      for (auto t = milliseconds(0); t < o_.poll_interval && !stop; t += milliseconds(100)) {
        std::this_thread::sleep_for(std::min(milliseconds(100), o_.poll_interval - t));
      }
    }
  }

  EtcdOptions o_;
  detail::EtcdClient client_;
  detail::Worker lease_;
  std::mutex lease_mu_;
  std::string rank_lease_;
  SteadyClock::time_point next_rank_refresh_{};
  SteadyClock::time_point deadline_{};
  std::string my_version_;
  int my_world_ = 0;
  int my_rank_ = 0;
  bool closed_by_me_ = false;
  std::shared_ptr<store::Store> round_store_;
  std::unique_ptr<store::Server> worker_server_;
};

}  // namespace

std::unique_ptr<Handler> MakeEtcdRendezvous(EtcdOptions options, const Interrupt& interrupt) {
  return std::make_unique<EtcdRendezvous>(std::move(options), interrupt);
}

}  // namespace tzrun::rendezvous
