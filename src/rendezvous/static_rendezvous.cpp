// The static backend (see include/tzrun/rendezvous/static_rendezvous.hpp).
#include "tzrun/rendezvous/static_rendezvous.hpp"

#include <nlohmann/json.hpp>
#include <thread>

#include "common.hpp"
#include "exit_barrier.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using detail::milliseconds;
using store::LogLevel;

std::string EncodeDecision(const FailureDecision& d, bool signalled = false) {
  nlohmann::json j{{"restart", d.restart}, {"node", d.node}, {"exit_code", d.exit_code}};
  if (signalled) j["signalled"] = true;
  return j.dump();
}

bool DecisionSignalled(const std::string& text) {
  try {
    return nlohmann::json::parse(text).value("signalled", false);
  } catch (const std::exception&) {
    return false;
  }
}

FailureDecision DecodeDecision(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    return {j.at("restart").get<bool>(), j.at("node").get<int>(), j.at("exit_code").get<int>()};
  } catch (const std::exception& e) {
    throw RendezvousStateError("undecodable restart decision '" + text + "' (" + e.what() +
                               "); every node must run the same tzrun version with the same "
                               "--rdzv-id");
  }
}

class StaticRendezvous final : public detail::WatchingHandler {
 public:
  explicit StaticRendezvous(StaticOptions o) : o_(std::move(o)) {
    if (o_.nnodes < 1) throw ConfigError("--nnodes must be >= 1 for the static backend");
    if (o_.node_rank < 0 || o_.node_rank >= o_.nnodes) {
      throw ConfigError("--node-rank=" + std::to_string(o_.node_rank) + " is outside 0.." +
                        std::to_string(o_.nnodes - 1) +
                        "; give each node a distinct rank below --nnodes");
    }
    if (o_.master_port <= 0 || o_.master_port > 65535) {
      throw ConfigError("--master-port=" + std::to_string(o_.master_port) +
                        ": the static backend needs a TCP port in 1..65535");
    }
  }
  ~StaticRendezvous() override {
    watcher_.Stop();
    if (server_) server_->Stop();
  }

  [[nodiscard]] std::string Backend() const override { return "static"; }
  [[nodiscard]] const std::string& RunId() const override { return o_.run_id; }

  RendezvousInfo NextRendezvous(int /*local_restart_count*/) override {
    Unwatch();
    if (!client_) ConnectStore();
    ++attempt_;
    const std::string prefix =
        attempt_ == 0 ? o_.run_id : o_.run_id + "." + std::to_string(attempt_);
    round_prefix_ = prefix;
    round_store_ = std::make_shared<store::PrefixStore>(prefix, client_);
    if (attempt_ > 0) CleanWorkerKeys();
    RendezvousInfo info;
    info.store = round_store_;
    info.rank = o_.node_rank;
    info.world_size = o_.nnodes;
    info.round = attempt_;
    info.restart_count = attempt_;
    info.master_addr = o_.master_addr;
    info.master_port = o_.master_port;
    return info;
  }

  void Watch() override {
    // One node has nobody to hear from: no watcher (and no thread to wind down at exit).
    if (watcher_.Active() || !client_ || attempt_ < 0 || o_.nnodes == 1) return;
    const std::string key = RestartKey();
    auto proto = client_;
    const auto gen = events_.Reset();
    watcher_.Start([this, key, proto, gen, round = round_prefix_](const std::atomic<bool>& stop) {
      try {
        std::shared_ptr<store::Store> conn = proto->Clone();
        auto ctl = std::make_shared<store::PrefixStore>(o_.run_id, conn);
        // The heartbeat the store host's exit barrier reads (exit_barrier.hpp).
        store::PrefixStore beat(round, conn);
        auto next_beat = detail::SteadyClock::now();
        while (!stop) {
          if (detail::SteadyClock::now() >= next_beat) {
            beat.Add(detail::HeartbeatKey(o_.node_rank), 1);
            next_beat = detail::SteadyClock::now() + o_.poll_interval;
          }
          try {
            ctl->Wait({key}, std::min(o_.poll_interval, milliseconds(100)));
          } catch (const store::TimeoutError&) {
            continue;
          }
          const std::string text = ctl->Get(key);
          const auto d = DecodeDecision(text);
          if (d.node == o_.node_rank) return;  // our own decision: the agent knows
          WatchEvent ev;
          ev.from_node = d.node;
          ev.exit_code = d.exit_code;
          if (d.restart) {
            ev.kind = WatchEvent::Kind::kRestartRequested;
            ev.detail = "the workers of node " + std::to_string(d.node) + " failed (exit code " +
                        std::to_string(d.exit_code) + "): restarting the whole job";
          } else if (DecisionSignalled(text)) {
            ev.kind = WatchEvent::Kind::kJobFailed;
            ev.detail = "the agent of node " + std::to_string(d.node) +
                        " was stopped by a signal (exit code " + std::to_string(d.exit_code) +
                        "): the static backend cannot continue without it, stopping this node "
                        "too";
          } else {
            ev.kind = WatchEvent::Kind::kJobFailed;
            ev.detail = "node " + std::to_string(d.node) + " failed for good (exit code " +
                        std::to_string(d.exit_code) + "): stopping this node too";
          }
          events_.Push(std::move(ev), gen);
          return;
        }
      } catch (const std::exception& e) {
        if (stop) return;
        WatchEvent ev;
        ev.kind = WatchEvent::Kind::kStoreLost;
        ev.detail = "lost the connection to the static rendezvous store at " + Where() + " (" +
                    e.what() + "); node 0 (which hosts it) probably exited or crashed";
        events_.Push(std::move(ev), gen);
      }
    });
  }

  FailureDecision OnFailure(bool can_restart, int exit_code) override {
    Unwatch();
    if (!client_ || attempt_ < 0) return {can_restart, o_.node_rank, exit_code};
    FailureDecision mine{can_restart, o_.node_rank, exit_code};
    try {
      store::PrefixStore ctl(o_.run_id, client_);
      const std::string mine_text = EncodeDecision(mine);
      const std::string cur = ctl.CompareSet(RestartKey(), "", mine_text);
      if (cur == mine_text) return mine;
      auto d = DecodeDecision(cur);
      detail::Log(o_.log, LogLevel::kInfo,
                  "node " + std::to_string(d.node) + " already decided the outcome of attempt " +
                      std::to_string(attempt_) + "; following it");
      return d;
    } catch (const store::StoreError& e) {
      throw RendezvousConnectionError(
          "cannot tell the other nodes about this node's failure: "
          "the rendezvous store at " +
          Where() + " failed (" + e.what() + ")");
    }
  }

  BarrierOutcome ExitBarrier(milliseconds timeout) override {
    if (!round_store_) return {};
    Watch();
    detail::ExitBarrierParams p;
    p.world_size = o_.nnodes;
    p.node_rank = o_.node_rank;
    p.timeout = timeout;
    p.hosting = server_ != nullptr;
    p.log = o_.log;
    detail::PeerLiveness liveness(o_.peer_stale_after);
    p.live = [this, &liveness](const std::vector<int>& pending) {
      std::vector<int> live;
      const auto now = detail::SteadyClock::now();
      for (int r : pending) {
        liveness.Observe(r, round_store_->Add(detail::HeartbeatKey(r), 0), now);
        if (liveness.Alive(r, now)) live.push_back(r);
      }
      return live;
    };
    return detail::ExitBarrier(*round_store_, p, InterruptFn(), [this] { return events_.Take(); });
  }

  void Shutdown() override {
    Unwatch();
    if (round_store_) {
      detail::Depart(*round_store_, o_.nnodes, server_ != nullptr, o_.close_timeout, o_.log);
    }
    if (server_) server_->Stop();
  }

  void Abandon(int exit_code) override {
    Unwatch();
    if (!client_ || attempt_ < 0) return;
    try {
      store::PrefixStore ctl(o_.run_id, client_);
      ctl.CompareSet(RestartKey(), "",
                     EncodeDecision({false, o_.node_rank, exit_code}, /*signalled=*/true));
    } catch (const std::exception& e) {
      detail::Log(o_.log, LogLevel::kDebug,
                  std::string("could not tell the other nodes about the signal: ") + e.what());
    }
  }

 private:
  [[nodiscard]] std::string RestartKey() const {
    return "tzrun/restart/" + std::to_string(attempt_);
  }
  [[nodiscard]] std::string Where() const {
    return FormatEndpoint({o_.master_addr, o_.master_port});
  }
  Interrupt InterruptFn() const {
    return [this] { CheckInterrupt(); };
  }

  // Restart barrier: every node arrives once it stopped its workers; node 0 then deletes
  // every key that is not an agent key of this run (the previous workers' keys, the raw
  // TCPStore "init/" counter) and releases everybody.
  void CleanWorkerKeys() {
    const Interrupt intr = InterruptFn();
    try {
      round_store_->Add("tzrun/stopped", 1);
      if (o_.node_rank == 0) {
        const auto deadline = detail::SteadyClock::now() + o_.timeout;
        while (round_store_->Add("tzrun/stopped", 0) < o_.nnodes) {
          CheckInterrupt();
          if (detail::SteadyClock::now() >= deadline) {
            throw RendezvousTimeoutError(
                "restart " + std::to_string(attempt_) + ": not every node came back within " +
                base::DurationText(o_.timeout) + " (" +
                std::to_string(round_store_->Add("tzrun/stopped", 0)) + " of " +
                std::to_string(o_.nnodes) +
                "); a node probably died: the static backend cannot continue without it");
          }
          std::this_thread::sleep_for(milliseconds(10));
        }
        store::Client raw_mut = client_->WithKeyPrefix("");  // shares the connection
        const std::string ours = "/" + o_.run_id;
        std::size_t deleted = 0;
        for (const auto& key : raw_mut.ListKeys()) {
          const bool agent_key = key.size() > ours.size() &&
                                 key.compare(0, ours.size(), ours) == 0 &&
                                 (key[ours.size()] == '/' || key[ours.size()] == '.');
          if (agent_key) continue;
          deleted += raw_mut.DeleteKey(key) ? 1 : 0;
        }
        detail::Log(o_.log, LogLevel::kInfo,
                    "restart " + std::to_string(attempt_) + ": removed " + std::to_string(deleted) +
                        " key(s) of the previous workers from the store");
        round_store_->Set("tzrun/clean", "1");
      }
      WaitKeys(*round_store_, {"tzrun/clean"}, o_.timeout, intr,
               "restart " + std::to_string(attempt_) +
                   " (waiting for every node to stop its "
                   "workers)");
    } catch (const store::StoreError& e) {
      throw RendezvousConnectionError("restart " + std::to_string(attempt_) +
                                      ": the static rendezvous store at " + Where() + " failed (" +
                                      e.what() + ")");
    }
  }

  void ConnectStore() {
    std::string host = o_.master_addr;
    if (o_.node_rank == 0) {
      try {
        server_ = detail::HostStore(o_.bind_host, o_.master_port, o_.log);
      } catch (const store::BindError& e) {
        if (o_.port_fallback && o_.nnodes == 1) {
          server_ = detail::HostStore(o_.bind_host, 0, o_.log);
          detail::Log(o_.log, LogLevel::kWarning,
                      "port " + std::to_string(o_.master_port) +
                          " is in use (another job?); this single-node job hosts its store on "
                          "free port " +
                          std::to_string(server_->Port()) +
                          " instead (MASTER_PORT); pass --master-port=PORT to choose one");
          o_.master_port = server_->Port();
        } else {
          throw RendezvousConnectionError(
              std::string("cannot host the c10d store for the workers: ") + e.what() +
              "; another job (torchrun/tzrun) is probably using port " +
              std::to_string(o_.master_port) +
              ": pass a free one with --master-port=PORT, or use --standalone to pick a free "
              "port automatically");
        }
      }
      host = o_.bind_host.empty() ? "127.0.0.1" : o_.bind_host;
      detail::Log(o_.log, LogLevel::kInfo,
                  "hosting the static rendezvous / workers' store on " + server_->Endpoint());
    }
    client_ =
        detail::Connect(host, o_.master_port, o_.timeout, o_.read_timeout, InterruptFn(), o_.log,
                        "static rendezvous (node " + std::to_string(o_.node_rank) + ")");
  }

  StaticOptions o_;
  std::unique_ptr<store::Server> server_;
  std::shared_ptr<store::Client> client_;
  std::shared_ptr<store::Store> round_store_;
  std::string round_prefix_;
  int attempt_ = -1;
};

}  // namespace

std::unique_ptr<Handler> MakeStaticRendezvous(StaticOptions options) {
  return std::make_unique<StaticRendezvous>(std::move(options));
}

}  // namespace tzrun::rendezvous
