// The agent (see include/tzrun/agent/agent.hpp for the behaviour and the upstream files
// it follows).
//
// Structure: one thread, one poll() loop. Exits arrive as SIGCHLD and handled signals as
// siginfo records on a signalfd (both blocked), tee'd worker output on pipes, news from
// other nodes on the rendezvous watcher's eventfd. Nothing is polled on a timer except
// while a group is being stopped (descendants that are not our children cannot be waited
// for, so group emptiness is re-checked every 50 ms). Blocking rendezvous calls check the
// signalfd between their (<= 1 s) slices through interrupt_check().
#include "tzrun/agent/agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "logs.hpp"
#include "process.hpp"
#include "report.hpp"
#include "tzrun/agent/worker_env.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/factory.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/rendezvous/ranks.hpp"

extern char** environ;  // NOLINT

namespace tzrun::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;
using std::chrono::milliseconds;

/// An error that ends the run with a specific exit code (message already says what to do).
class AgentError : public std::runtime_error {
 public:
  AgentError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] int exit_code() const noexcept { return code_; }

 private:
  int code_;
};

/// Thrown out of a blocking rendezvous wait when a handled signal arrived.
struct Interrupted {};

store::LogSink make_store_log(std::shared_ptr<spdlog::logger> log, std::string what) {
  return
      [log = std::move(log), what = std::move(what)](store::LogLevel level, std::string_view msg) {
        switch (level) {
          case store::LogLevel::kError:
            log->error("{}: {}", what, msg);
            break;
          case store::LogLevel::kWarning:
            log->warn("{}: {}", what, msg);
            break;
          case store::LogLevel::kInfo:
            log->info("{}: {}", what, msg);
            break;
          default:
            log->debug("{}: {}", what, msg);
            break;
        }
      };
}

using base::errno_text;

double unix_seconds(SysClock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

using base::environ_map;

using base::uuid4;

std::shared_ptr<spdlog::logger> make_logger(const std::string& level) {
  auto existing = spdlog::get("tzrun.agent");
  if (existing) return existing;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("tzrun.agent", sink);
  // glog-like, as torchrun's own log lines: "W1129 18:01:12.922000 5745 tzrun/agent] ..."
  logger->set_pattern("%L%m%d %H:%M:%S.%f %P tzrun/agent] %v");
  std::string lv;
  for (char c : level) lv += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  spdlog::level::level_enum l = spdlog::level::warn;
  if (lv == "debug" || lv == "trace" || lv == "notset") l = spdlog::level::debug;
  if (lv == "info") l = spdlog::level::info;
  if (lv == "error") l = spdlog::level::err;
  if (lv == "critical" || lv == "fatal") l = spdlog::level::critical;
  if (lv == "off") l = spdlog::level::off;
  logger->set_level(l);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

bool has_bit(Std s, Std bit) {
  return (static_cast<unsigned>(s) & static_cast<unsigned>(bit)) != 0U;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// ---------------------------------------------------------------------------------------
// Signals: handled signals and SIGCHLD are blocked and read from a signalfd.

class SignalState {
 public:
  SignalState(const std::vector<std::string>& names, spdlog::logger& log) {
    ::sigprocmask(SIG_BLOCK, nullptr, &orig_mask_);
    sigemptyset(&blocked_);
    sigaddset(&blocked_, SIGCHLD);
    for (const auto& name : names) {
      int sig = detail::signal_from_name(name);
      if (sig < 0) {
        log.warn(
            "Unknown signal name '{}' in --signals-to-handle; skipping it (use names "
            "like SIGTERM,SIGUSR1)",
            name);
        continue;
      }
      if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) {
        log.warn("{} in --signals-to-handle cannot be handled; skipping it", name);
        continue;
      }
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) {
        // nohup & co: keep ignoring it (and so do the workers, which inherit SIG_IGN).
        log.info("{} was ignored when tzrun started (e.g. nohup); leaving it ignored", name);
        continue;
      }
      if (std::find(handled_.begin(), handled_.end(), sig) == handled_.end()) {
        handled_.push_back(sig);
        sigaddset(&blocked_, sig);
      }
    }
    ::sigprocmask(SIG_BLOCK, &blocked_, nullptr);
    fd_ = ::signalfd(-1, &blocked_, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd_ < 0) {
      int err = errno;
      ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
      throw AgentError(
          "cannot create a signalfd: " + errno_text(err) + "; tzrun needs Linux signalfd(2)",
          ExitCode::kInfrastructure);
    }
    // The console may be a closed pipe; never die of SIGPIPE (workers get it back).
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ::sigaction(SIGPIPE, &ign, &old_pipe_);
    // Workers start with SIGPIPE and SIGXFSZ at SIG_DFL, as Python's Popen(restore_signals=True)
    // gives torchrun's workers.
    reset_ = {SIGPIPE, SIGXFSZ};
  }
  SignalState(const SignalState&) = delete;
  SignalState& operator=(const SignalState&) = delete;
  ~SignalState() {
    // Discard what is pending (a late SIGCHLD or a repeated SIGTERM) so unblocking does not
    // kill us after the decision was made, then restore the mask and SIGPIPE.
    signalfd_siginfo si{};
    while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    }
    ::close(fd_);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
  }

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] bool handled(int sig) const {
    return std::find(handled_.begin(), handled_.end(), sig) != handled_.end();
  }
  [[nodiscard]] const sigset_t& child_mask() const noexcept { return orig_mask_; }
  [[nodiscard]] const std::vector<int>& reset_to_default() const noexcept { return reset_; }

 private:
  sigset_t orig_mask_{};
  sigset_t blocked_{};
  int fd_ = -1;
  std::vector<int> handled_;
  std::vector<int> reset_;
  struct sigaction old_pipe_ {};
};

// ---------------------------------------------------------------------------------------

struct Worker {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = -1;  // == its process group id (setsid)
  bool reaped = false;
  bool group_done = false;  // process group observed empty after the leader was reaped
  int wait_status = 0;
  SysClock::time_point start_time{};
  SysClock::time_point end_time{};
  std::string error_file;
};

struct TeeStream {
  int fd = -1;  // read end of the worker's pipe
  std::unique_ptr<TeeRouter> router;
};

enum class AttemptResult { kSucceeded, kFailed, kSignaled, kPeerEvent };

class Agent {
 public:
  explicit Agent(LaunchConfig cfg) : cfg_(std::move(cfg)), log_(make_logger(cfg_.log_level)) {}
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  ~Agent() {
    close_attempt_files();
    close_fd(devnull_);
  }

  int run();

 private:
  int run_job();
  void validate_topology() const;
  void create_rendezvous();
  void interrupt_check();
  void start_workers(const rendezvous::RendezvousInfo& info,
                     const rendezvous::AssignedRanks& ranks);
  int finish_job(int code);
  AttemptResult monitor();
  void stop_group(int sig);
  void wait_events(int timeout_ms, bool* escalate);
  void reap_all();
  bool all_gone();
  void signal_targets(int sig, bool log_each);
  void signal_strays(int sig);
  [[nodiscard]] std::vector<pid_t> stray_children() const;
  void pump_tee(std::size_t index);
  void drain_tees();
  void close_attempt_files();
  void record_attempt();
  void report_failure();
  void write_summary(int code, const std::string& outcome);
  int dry_run();

  LaunchConfig cfg_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::string, std::string> base_env_;
  std::string run_id_;
  std::string program_;  // resolved path of argv[0]
  std::string master_addr_;
  int master_port_ = 0;
  int world_size_ = 0;  // WORLD_SIZE of the current attempt
  std::optional<SignalState> signals_;
  detail::Guardian guardian_;
  std::unique_ptr<rendezvous::Handler> rdzv_;
  std::optional<rendezvous::WatchEvent> pending_event_;  // from the rendezvous watcher
  bool rdzv_done_ = false;                               // shutdown()/abandon() already called
  std::optional<LogDir> log_dir_;
  std::unique_ptr<ConsoleSink> console_;
  int devnull_ = -1;
  std::set<pid_t> preexisting_children_;   // children tzrun inherited (exec from a shell)
  std::map<pid_t, int> signalled_strays_;  // re-parented descendant -> last signal sent

  // Current attempt.
  int attempt_ = 0;
  std::vector<Worker> workers_;
  std::vector<WorkerFailure> failures_;
  std::vector<TeeStream> tees_;
  std::vector<int> file_fds_;  // tee'd log files, closed after draining
  int stop_signal_ = 0;        // handled signal received from outside

  // Summary bookkeeping.
  SysClock::time_point start_time_ = SysClock::now();
  std::vector<std::vector<RankOutcome>> attempts_;
  std::optional<std::size_t> root_global_rank_;
  std::string hostname_;
};

int Agent::run() {
  int code = ExitCode::kSuccess;
  std::string outcome = "infrastructure_error";
  try {
    if (cfg_.dry_run) return dry_run();
    code = run_job();
    outcome = code == 0 ? "succeeded" : stop_signal_ != 0 ? "signaled" : "failed";
  } catch (const Interrupted&) {
    code = 128 + stop_signal_;
    outcome = "signaled";
  } catch (const rendezvous::RendezvousGracefulExit& e) {
    log_->warn("{}", e.what());
    code = ExitCode::kSuccess;
    outcome = "succeeded";
  } catch (const rendezvous::ConfigError& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = ExitCode::kUsage;
  } catch (const rendezvous::RendezvousClosedError& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = e.exit_code().value_or(ExitCode::kInfrastructure);
    outcome = e.exit_code() ? "failed" : outcome;
  } catch (const WorkerSetupError& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = e.exit_code();
  } catch (const detail::SpawnError& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = e.exit_code();
  } catch (const AgentError& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
    code = ExitCode::kInfrastructure;
  }
  // Whatever happened, nothing of ours may outlive the agent.
  if (!workers_.empty()) {
    try {
      stop_group(SIGTERM);
      drain_tees();
    } catch (const std::exception& e) {
      log_->error("cleanup after an error failed: {}", e.what());
    }
  }
  close_attempt_files();
  if (rdzv_ && !rdzv_done_) {
    // A signal (or an unexpected error): leave without closing the rendezvous for the
    // others (torchrun's launch_agent does not shut the handler down on signals).
    rdzv_done_ = true;
    rdzv_->abandon(code);
  }
  rdzv_.reset();
  if (pid_t g = guardian_.close(); g > 0) {
    int status = 0;
    while (::waitpid(g, &status, 0) < 0 && errno == EINTR) {
    }
  }
  signals_.reset();
  if (cfg_.summary_json) write_summary(code, outcome);
  return code;
}

void Agent::validate_topology() const {
  if (cfg_.nproc_per_node < 1) {
    throw AgentError("--nproc-per-node resolved to " + std::to_string(cfg_.nproc_per_node) +
                         "; pass a positive number of workers",
                     ExitCode::kUsage);
  }
  const bool dynamic = cfg_.standalone || cfg_.rdzv_backend != "static";
  if (!dynamic && (cfg_.node_rank < 0 || cfg_.node_rank >= cfg_.max_nodes)) {
    throw AgentError("--node-rank=" + std::to_string(cfg_.node_rank) + " must be < --nnodes (" +
                         std::to_string(cfg_.max_nodes) +
                         ") for the static rendezvous; give each node a distinct rank in 0.." +
                         std::to_string(cfg_.max_nodes - 1),
                     ExitCode::kUsage);
  }
}

void Agent::interrupt_check() {
  wait_events(0, nullptr);
  if (stop_signal_ != 0) throw Interrupted{};
}

void Agent::create_rendezvous() {
  const bool dynamic = cfg_.standalone || cfg_.rdzv_backend != "static";
  std::string local_addr = cfg_.local_addr.value_or("");
  if (dynamic && local_addr.empty()) local_addr = hostname_ = local_fqdn();
  try {
    rdzv_ = rendezvous::make_handler(cfg_, local_addr, make_store_log(log_, "rendezvous"),
                                     [this] { interrupt_check(); });
  } catch (const rendezvous::ConfigError&) {
    throw;
  } catch (const rendezvous::RendezvousError& e) {
    throw AgentError(e.what(), ExitCode::kInfrastructure);
  }
  if (dynamic) {
    log_->info("c10d rendezvous '{}' for {}..{} node(s) via store {}", run_id_, cfg_.min_nodes,
               cfg_.max_nodes, rendezvous::dynamic_store_endpoint(*rdzv_));
  }
}

int Agent::finish_job(int code) {
  // End of job (success or final failure): close the rendezvous and let the others finish
  // with the store before it goes away (rendezvous::Handler::shutdown).
  workers_.clear();
  if (rdzv_ && !rdzv_done_) {
    rdzv_done_ = true;
    rdzv_->shutdown();
  }
  return code;
}

int Agent::run_job() {
  validate_topology();
  base_env_ = environ_map();
  if (needs_omp_default(cfg_, base_env_)) {
    for (const auto& line : omp_banner_lines()) log_->warn("{}", line);
    base_env_["OMP_NUM_THREADS"] = "1";
  }
  run_id_ = cfg_.rdzv_id;
  if (run_id_.empty() || (cfg_.standalone && run_id_ == "none")) {
    if (run_id_.empty()) log_->warn("empty --rdzv-id: using a random run id");
    run_id_ = uuid4();
  }
  cfg_.rdzv_id = run_id_;

  // Everything that can be checked before spawning is checked here.
  {
    auto argv0 = build_worker_argv(cfg_, 0, base_env_);
    if (!cfg_.no_python && classify_entrypoint(cfg_) == EntrypointKind::kDirect) {
      const auto& s = cfg_.training_script;
      if (s.find('/') != std::string::npos) {
        program_ = s;
      } else {
        struct stat st {};
        program_ = ::stat(s.c_str(), &st) == 0 ? "./" + s : resolve_program(s, base_env_);
      }
    } else {
      program_ = resolve_program(argv0.front(), base_env_);
    }
  }

  if (cfg_.numa_binding) {
    log_->warn("--numa-binding={} is not supported by tzrun yet; workers run unbound",
               *cfg_.numa_binding);
  }
  for (pid_t c : detail::list_children(::getpid())) preexisting_children_.insert(c);
  signals_.emplace(cfg_.signals_to_handle, *log_);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log_->warn(
        "PR_SET_CHILD_SUBREAPER failed ({}): orphaned grandchildren of workers may "
        "escape cleanup",
        errno_text(errno));
  }
  guardian_.start();  // before any thread exists (the stores start some)
  devnull_ = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  create_rendezvous();
  log_dir_ = LogDir::create(cfg_.log_dir, run_id_);
  if (!log_dir_->disabled()) {
    // torchrun logs this at INFO; say it louder when some worker output goes only to files.
    bool to_files = false;
    for (int lr = 0; lr < cfg_.nproc_per_node; ++lr) {
      const auto only_file = static_cast<unsigned>(cfg_.redirects.for_rank(lr)) &
                             ~static_cast<unsigned>(cfg_.tee.for_rank(lr));
      to_files = to_files || only_file != 0U;
    }
    if (to_files && !cfg_.log_dir) {
      log_->warn("worker logs are written under {}", log_dir_->run_dir());
    } else {
      log_->info("log directory: {}", log_dir_->run_dir());
    }
  }
  console_ = std::make_unique<ConsoleSink>(STDOUT_FILENO, STDERR_FILENO, ColorMode::kAuto);
  const bool identical = [&] {
    auto it = base_env_.find("TORCH_ELASTIC_WORKER_IDENTICAL");
    return it != base_env_.end() && it->second == "1";
  }();
  const auto rdzv_timeout = [&] {
    if (auto t = rendezvous::conf_seconds(cfg_.rdzv_conf, "timeout")) return *t;
    return std::chrono::milliseconds(std::chrono::seconds(900));
  }();

  int remaining = cfg_.max_restarts;
  int local_restarts = 0;  // failure restarts of this agent (TORCHELASTIC_RESTART_COUNT)
  auto spend_restart = [&] {
    remaining = std::max(0, remaining - 1);
    ++local_restarts;
  };
  while (true) {
    interrupt_check();  // a signal that arrived meanwhile: do not rendezvous / spawn at all
    rendezvous::RendezvousInfo info;
    rendezvous::AssignedRanks ranks;
    try {
      info = rdzv_->next_rendezvous(local_restarts);
      ranks = identical
                  ? rendezvous::identical_ranks(info.rank, info.world_size, cfg_.nproc_per_node)
                  : rendezvous::assign_worker_ranks(*info.store, info.rank, info.world_size,
                                                    cfg_.role, cfg_.nproc_per_node, rdzv_timeout,
                                                    [this] { interrupt_check(); });
    } catch (const rendezvous::RendezvousGracefulExit&) {
      throw;
    } catch (const rendezvous::RendezvousClosedError&) {
      throw;
    } catch (const rendezvous::RendezvousError& e) {
      throw AgentError(e.what(), ExitCode::kInfrastructure);
    }
    pending_event_.reset();
    attempt_ = info.restart_count;
    start_workers(info, ranks);
    rdzv_->watch();
    AttemptResult result = monitor();
    stop_group(stop_signal_ != 0 ? stop_signal_ : SIGTERM);
    drain_tees();
    close_attempt_files();
    record_attempt();
    // Another node's news that arrived as the last local worker finished is not lost: the
    // job is not done until every node is.
    if (result == AttemptResult::kSucceeded && pending_event_) result = AttemptResult::kPeerEvent;
    // A handled signal that arrived while a failed group was being stopped ends the run.
    if (result != AttemptResult::kSucceeded && stop_signal_ != 0) {
      result = AttemptResult::kSignaled;
    }
    if (result == AttemptResult::kSignaled) {
      workers_.clear();
      return 128 + stop_signal_;
    }
    if (result == AttemptResult::kSucceeded) {
      workers_.clear();
      log_->info(
          "[{}] worker group successfully finished. Waiting 300 seconds for other agents "
          "to finish.",
          cfg_.role);
      const auto b = rdzv_->exit_barrier(std::chrono::seconds(300));
      using BK = rendezvous::BarrierOutcome::Kind;
      switch (b.kind) {
        case BK::kDone:
          return finish_job(ExitCode::kSuccess);
        case BK::kTimedOut:
          log_->error("Error waiting on exit barrier: {}; reporting success anyway", b.detail);
          return finish_job(ExitCode::kSuccess);
        case BK::kRestart:
          log_->warn("[{}] {} after this node finished; will restart worker group", cfg_.role,
                     b.detail);
          if (b.counts_as_failure_restart) spend_restart();
          continue;
        case BK::kJobFailed:
          std::fprintf(stderr, "tzrun: error: %s\n", b.detail.c_str());
          return finish_job(b.exit_code);
        case BK::kStoreLost:
          throw AgentError(b.detail, ExitCode::kInfrastructure);
      }
    }
    if (result == AttemptResult::kPeerEvent) {
      const auto ev = *pending_event_;
      pending_event_.reset();
      workers_.clear();
      using WK = rendezvous::WatchEvent::Kind;
      switch (ev.kind) {
        case WK::kMembershipChanged:
          log_->warn("[{}] {}; will restart worker group", cfg_.role, ev.detail);
          continue;
        case WK::kRestartRequested:
          log_->warn("[{}] {}. {}/{} attempts left; will restart worker group", cfg_.role,
                     ev.detail, remaining, cfg_.max_restarts);
          spend_restart();
          continue;
        case WK::kJobFailed:
          std::fprintf(stderr, "tzrun: error: %s\n", ev.detail.c_str());
          return finish_job(ev.exit_code);
        case WK::kStoreLost:
          throw AgentError(ev.detail, ExitCode::kInfrastructure);
      }
    }
    // kFailed: this node's workers failed.
    const auto root = select_root_cause(failures_);
    const int local_code = tzrun_exit_code(failures_[root]);
    rendezvous::FailureDecision decision;
    try {
      decision = rdzv_->on_failure(remaining > 0, local_code);
    } catch (const rendezvous::RendezvousError& e) {
      log_->error("{}", e.what());
      decision = {false, -1, local_code};
    }
    if (decision.restart) {
      log_->warn("[{}] Worker group FAILED. {}/{} attempts left; will restart worker group",
                 cfg_.role, remaining, cfg_.max_restarts);
      spend_restart();
      continue;
    }
    report_failure();
    workers_.clear();
    return finish_job(local_code);
  }
}

void Agent::start_workers(const rendezvous::RendezvousInfo& info,
                          const rendezvous::AssignedRanks& ranks) {
  const int attempt = info.restart_count;
  workers_.clear();
  failures_.clear();
  tees_.clear();
  file_fds_.clear();
  master_addr_ = info.master_addr;
  master_port_ = info.master_port;
  world_size_ = ranks.global_world_size;
  log_dir_->reset_attempt(attempt, cfg_.nproc_per_node);
  const char* tmpl_env = std::getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
  const std::string tmpl = tmpl_env != nullptr ? tmpl_env : "";
  const int n = cfg_.nproc_per_node;
  log_->info(
      "[{}] Rendezvous complete for workers. Result:\n  restart_count={}\n  master_addr={}\n"
      "  master_port={}\n  group_rank={}\n  group_world_size={}\n  global_ranks=[{}..{}]\n"
      "  global_world_size={}",
      cfg_.role, attempt, master_addr_, master_port_, info.rank, info.world_size,
      ranks.base_global_rank, ranks.base_global_rank + n - 1, ranks.global_world_size);

  for (int lr = 0; lr < n; ++lr) {
    WorkerSpec spec;
    spec.local_rank = lr;
    spec.global_rank = ranks.base_global_rank + lr;
    spec.role_rank = ranks.base_role_rank + lr;
    spec.group_rank = info.rank;
    spec.group_world_size = info.world_size;
    spec.world_size = ranks.global_world_size;
    spec.role_world_size = ranks.role_world_size;
    spec.local_world_size = n;
    spec.restart_count = attempt;
    Worker w;
    w.local_rank = lr;
    w.global_rank = spec.global_rank;
    w.error_file = log_dir_->error_file(attempt, lr);

    detail::SpawnRequest req;
    req.env = build_worker_env(cfg_, spec, base_env_, master_addr_, master_port_, w.error_file);
    req.argv = build_worker_argv(cfg_, lr, req.env);
    req.program = program_;
    req.child_mask = signals_->child_mask();
    req.reset_to_default = signals_->reset_to_default();

    // stdout / stderr routing (torchrun §5.2).
    const bool shown = cfg_.local_ranks_filter.empty() || cfg_.local_ranks_filter.contains(lr);
    std::array<int, 2> child_fds{-1, -1};
    std::vector<int> close_after_spawn;
    for (int stream = 1; stream <= 2; ++stream) {
      const Std bit = stream == 1 ? Std::kOut : Std::kErr;
      bool tee = has_bit(cfg_.tee.for_rank(lr), bit);
      bool redirect = tee || has_bit(cfg_.redirects.for_rank(lr), bit);
      if (log_dir_->disabled()) tee = redirect = false;
      int& child_fd = child_fds[static_cast<std::size_t>(stream - 1)];
      if (!redirect) {
        child_fd = shown ? -1 : devnull_;
        continue;
      }
      const std::string path =
          stream == 1 ? log_dir_->stdout_path(attempt, lr) : log_dir_->stderr_path(attempt, lr);
      int file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (file_fd < 0) {
        int err = errno;
        for (int fd : close_after_spawn) ::close(fd);
        throw AgentError("cannot open worker log file '" + path + "': " + errno_text(err) +
                             "; check --log-dir permissions and free space",
                         ExitCode::kInfrastructure);
      }
      if (tee && shown) {
        std::array<int, 2> p{-1, -1};
        if (::pipe2(p.data(), O_CLOEXEC) != 0) {
          int err = errno;
          ::close(file_fd);
          for (int fd : close_after_spawn) ::close(fd);
          throw AgentError("cannot create a pipe for worker output: " + errno_text(err) +
                               "; raise the open-file limit (ulimit -n)",
                           ExitCode::kInfrastructure);
        }
        ::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_NONBLOCK);
        TeeStream t;
        t.fd = p[0];
        t.router = std::make_unique<TeeRouter>(
            *console_, make_prefix(tmpl, cfg_.role, lr, w.global_rank), stream, file_fd, true, lr);
        tees_.push_back(std::move(t));
        file_fds_.push_back(file_fd);
        child_fd = p[1];
        close_after_spawn.push_back(p[1]);
      } else {
        child_fd = file_fd;
        close_after_spawn.push_back(file_fd);
      }
    }
    req.stdout_fd = child_fds[0];
    req.stderr_fd = child_fds[1];

    w.start_time = SysClock::now();
    try {
      w.pid = detail::spawn(req);
    } catch (...) {
      for (int fd : close_after_spawn) ::close(fd);
      throw;
    }
    for (int fd : close_after_spawn) ::close(fd);
    guardian_.add(w.pid);
    log_->info("started worker local_rank {} (pid {}) attempt {}", lr, w.pid, attempt);
    workers_.push_back(std::move(w));
  }
}

AttemptResult Agent::monitor() {
  while (true) {
    if (stop_signal_ != 0) return AttemptResult::kSignaled;
    if (!failures_.empty()) return AttemptResult::kFailed;
    if (std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.reaped; })) {
      return AttemptResult::kSucceeded;
    }
    if (pending_event_) return AttemptResult::kPeerEvent;
    wait_events(-1, nullptr);
  }
}

void Agent::wait_events(int timeout_ms, bool* escalate) {
  std::vector<pollfd> fds;
  fds.push_back({signals_->fd(), POLLIN, 0});
  for (const auto& t : tees_) fds.push_back({t.fd, static_cast<short>(t.fd >= 0 ? POLLIN : 0), 0});
  // Rendezvous watcher events (other nodes failed / joined / left, store lost): only
  // looked at while workers run; the first one is kept for monitor().
  const int event_fd = rdzv_ && !workers_.empty() && !pending_event_ ? rdzv_->event_fd() : -1;
  fds.push_back({event_fd, static_cast<short>(event_fd >= 0 ? POLLIN : 0), 0});
  int rc = ::poll(fds.data(), fds.size(), timeout_ms);
  if (rc < 0) {
    if (errno == EINTR) return;
    throw AgentError("poll() failed: " + errno_text(errno), ExitCode::kInfrastructure);
  }
  if ((fds[0].revents & POLLIN) != 0) {
    signalfd_siginfo si{};
    bool child = false;
    while (::read(signals_->fd(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) {
        child = true;
      } else if (signals_->handled(sig)) {
        if (stop_signal_ == 0) {
          stop_signal_ = sig;
          log_->warn("Received {} death signal, shutting down workers", signal_name(sig));
        } else if (escalate != nullptr) {
          log_->warn("Received {} again while shutting down: killing the workers now",
                     signal_name(sig));
          *escalate = true;
        }
      }
    }
    if (child) reap_all();
  }
  for (std::size_t i = 1; i + 1 < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) pump_tee(i - 1);
  }
  if (event_fd >= 0 && (fds.back().revents & POLLIN) != 0) pending_event_ = rdzv_->take_event();
}

void Agent::reap_all() {
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    if (pid == guardian_.pid()) {
      log_->warn(
          "the guardian process {} exited unexpectedly: workers may outlive a "
          "SIGKILLed tzrun",
          pid);
      guardian_.close();
      continue;
    }
    auto it = std::find_if(workers_.begin(), workers_.end(),
                           [pid](const Worker& w) { return w.pid == pid; });
    if (it == workers_.end()) {
      log_->debug("reaped orphaned descendant {}", pid);
      continue;
    }
    it->reaped = true;
    it->wait_status = status;
    it->end_time = SysClock::now();
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) {
      log_->info("worker local_rank {} (pid {}) exited 0", it->local_rank, pid);
      continue;
    }
    WorkerFailure f;
    f.local_rank = it->local_rank;
    f.global_rank = it->global_rank;
    f.pid = pid;
    f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    f.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    f.error_file = it->error_file;
    f.time = it->end_time;
    log_->info("worker local_rank {} (pid {}) failed: {}", it->local_rank, pid,
               f.signal != 0 ? "killed by " + signal_name(f.signal)
                             : "exit code " + std::to_string(f.exit_code));
    failures_.push_back(std::move(f));
  }
}

std::vector<pid_t> Agent::stray_children() const {
  std::vector<pid_t> out;
  for (pid_t c : detail::list_children(::getpid())) {
    if (c == guardian_.pid() || preexisting_children_.contains(c)) continue;
    if (std::any_of(workers_.begin(), workers_.end(),
                    [c](const Worker& w) { return w.pid == c; })) {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

bool Agent::all_gone() {
  for (auto& w : workers_) {
    if (!w.reaped) return false;
    if (!w.group_done) {
      if (detail::group_alive(w.pid)) return false;
      w.group_done = true;
      guardian_.remove(w.pid);
    }
  }
  return stray_children().empty();
}

void Agent::signal_targets(int sig, bool log_each) {
  for (auto& w : workers_) {
    if (w.group_done) continue;
    if (!w.reaped && log_each) {
      log_->warn("Sending process {} closing signal {}", w.pid, signal_name(sig));
    }
    if (::killpg(w.pid, sig) != 0 && w.reaped && errno == ESRCH) {
      w.group_done = true;
      guardian_.remove(w.pid);
    }
  }
  signal_strays(sig);
}

void Agent::signal_strays(int sig) {
  // Descendants re-parented to us (we are a child subreaper), e.g. daemonized grandchildren
  // that left the worker's process group; new ones appear whenever their parent dies.
  for (pid_t c : stray_children()) {
    auto [it, inserted] = signalled_strays_.try_emplace(c, sig);
    if (!inserted && it->second == sig) continue;
    it->second = sig;
    log_->debug("sending {} to re-parented descendant {}", signal_name(sig), c);
    ::kill(c, sig);
  }
}

void Agent::stop_group(int sig) {
  reap_all();
  signalled_strays_.clear();
  if (all_gone()) return;
  signal_targets(sig, true);
  int forwarded = sig;
  bool escalate = false;
  const auto grace = std::chrono::duration_cast<milliseconds>(
      std::chrono::duration<double>(std::max(0.0, cfg_.shutdown_timeout)));
  const auto deadline = SteadyClock::now() + grace;
  while (!all_gone() && !escalate) {
    const auto now = SteadyClock::now();
    if (now >= deadline) break;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count();
    wait_events(static_cast<int>(std::min<long long>(50, left + 1)), &escalate);
    if (stop_signal_ != 0 && stop_signal_ != forwarded) {  // e.g. Ctrl-C during a restart
      forwarded = stop_signal_;
      signal_targets(forwarded, true);
    } else {
      signal_strays(forwarded);
    }
  }
  if (all_gone()) return;
  for (const auto& w : workers_) {
    if (!w.reaped) {
      log_->warn("Unable to shutdown process {} via {}, forcefully exiting via SIGKILL", w.pid,
                 signal_name(sig));
    }
  }
  const auto hard_deadline = SteadyClock::now() + std::chrono::seconds(10);
  auto next_kill = SteadyClock::now();
  while (!all_gone()) {
    const auto now = SteadyClock::now();
    if (now >= hard_deadline) {
      log_->error(
          "some worker processes did not die within 10 s of SIGKILL (stuck in the "
          "kernel, e.g. uninterruptible I/O); giving up on them");
      return;
    }
    if (now >= next_kill) {  // re-sent: a dying parent may re-parent more descendants to us
      signal_targets(SIGKILL, false);
      next_kill = now + milliseconds(200);
    }
    wait_events(20, nullptr);
  }
}

void Agent::pump_tee(std::size_t index) {
  auto& t = tees_[index];
  if (t.fd < 0) return;
  std::array<char, 65536> buf{};
  while (true) {
    ssize_t n = ::read(t.fd, buf.data(), buf.size());
    if (n > 0) {
      t.router->feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: this stream is finished.
    t.router->finish();
    if (!t.router->file_error().empty()) log_->error("{}", t.router->file_error());
    close_fd(t.fd);
    return;
  }
}

void Agent::drain_tees() {
  // All writers are dead by now (or stuck): read what is left, waiting at most 2 s for EOF.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
  while (std::any_of(tees_.begin(), tees_.end(), [](const TeeStream& t) { return t.fd >= 0; })) {
    if (SteadyClock::now() >= deadline) break;
    wait_events(50, nullptr);
  }
  for (auto& t : tees_) {
    if (t.fd >= 0) {
      pump_tee(static_cast<std::size_t>(&t - tees_.data()));
      if (t.fd >= 0) {
        t.router->finish();
        close_fd(t.fd);
      }
    }
  }
}

void Agent::close_attempt_files() {
  for (auto& t : tees_) close_fd(t.fd);
  tees_.clear();
  for (int& fd : file_fds_) close_fd(fd);
  file_fds_.clear();
}

void Agent::record_attempt() {
  std::vector<RankOutcome> ranks;
  for (const auto& w : workers_) {
    RankOutcome r;
    r.local_rank = w.local_rank;
    r.global_rank = w.global_rank;
    r.pid = w.pid;
    r.restarts = attempt_;
    r.start_time = unix_seconds(w.start_time);
    r.end_time = unix_seconds(w.reaped ? w.end_time : SysClock::now());
    if (w.reaped && WIFSIGNALED(w.wait_status)) {
      r.signal = WTERMSIG(w.wait_status);
      r.exit_code = 128 + r.signal;
    } else if (w.reaped && WIFEXITED(w.wait_status)) {
      r.exit_code = WEXITSTATUS(w.wait_status);
    }
    if (r.exit_code != 0) {
      if (auto info = read_error_file(w.error_file)) r.error_message = info->message;
    }
    ranks.push_back(std::move(r));
  }
  attempts_.push_back(std::move(ranks));
  root_global_rank_.reset();
  if (!failures_.empty()) {
    root_global_rank_ =
        static_cast<std::size_t>(failures_[select_root_cause(failures_)].global_rank);
  }
}

void Agent::report_failure() {
  if (failures_.empty()) return;
  const auto root = select_root_cause(failures_);
  const std::string& entrypoint = cfg_.training_script;
  log_->error("{}", format_failure_log_message(failures_[root], entrypoint));
  if (hostname_.empty()) hostname_ = local_fqdn();
  const std::string text = format_failure_report(entrypoint, failures_, root, hostname_);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  auto it = base_env_.find("TORCHELASTIC_ERROR_FILE");
  if (it != base_env_.end() && !it->second.empty()) {
    try {
      if (!copy_root_error_file(failures_[root], it->second)) {
        log_->info("no error file from the root-cause worker to copy to {}", it->second);
      }
    } catch (const ReportError& e) {
      log_->error("{}", e.what());
    }
  }
}

void Agent::write_summary(int code, const std::string& outcome) {
  RunSummary s;
  s.run_id = run_id_.empty() ? cfg_.rdzv_id : run_id_;
  s.outcome = outcome;
  s.exit_code = code;
  s.restarts = attempts_.empty() ? 0 : static_cast<int>(attempts_.size()) - 1;
  s.world_size = world_size_ > 0 ? world_size_ : cfg_.nproc_per_node;
  s.start_time = unix_seconds(start_time_);
  s.end_time = unix_seconds(SysClock::now());
  s.attempts = attempts_;
  if (!attempts_.empty()) s.ranks = attempts_.back();
  s.root_cause_rank = outcome == "failed" ? root_global_rank_ : std::nullopt;
  s.hostname = hostname_;
  try {
    write_summary_json(*cfg_.summary_json, s);
  } catch (const std::exception& e) {
    log_->error("{}", e.what());
  }
}

int Agent::dry_run() {
  validate_topology();
  const auto agent_env = environ_map();
  base_env_ = agent_env;
  if (needs_omp_default(cfg_, base_env_)) base_env_["OMP_NUM_THREADS"] = "1";
  if (cfg_.rdzv_id.empty() || (cfg_.standalone && cfg_.rdzv_id == "none")) {
    cfg_.rdzv_id = "<random uuid>";
  }
  const bool dynamic = cfg_.standalone || cfg_.rdzv_backend != "static";
  std::string addr = dynamic ? cfg_.local_addr.value_or("<this host's FQDN>") : cfg_.master_addr;
  int port = dynamic ? 0 : cfg_.master_port;
  if (!dynamic && !cfg_.rdzv_endpoint.empty()) {  // static: an explicit endpoint wins
    const auto ep = rendezvous::parse_endpoint(cfg_.rdzv_endpoint, -1);
    addr = ep.host;
    port = ep.port;
  }
  std::printf("tzrun dry run: %d worker(s), run id %s, store on %s:%s\n", cfg_.nproc_per_node,
              cfg_.rdzv_id.c_str(), addr.c_str(),
              dynamic ? "<free port>" : std::to_string(port).c_str());
  // Multi-node: static ranks assume the same --nproc-per-node on every node; c10d ranks are
  // only known after the rendezvous (shown as node rank 0 of MIN nodes).
  const int group_rank = dynamic ? 0 : cfg_.node_rank;
  const int group_world = dynamic ? cfg_.min_nodes : cfg_.max_nodes;
  if (group_world > 1) {
    std::printf("multi-node: ranks shown for node rank %d of %d%s\n", group_rank, group_world,
                dynamic ? " (c10d assigns node ranks at the rendezvous)"
                        : " (assuming the same --nproc-per-node on every node)");
  }
  const auto ranks = rendezvous::identical_ranks(group_rank, group_world, cfg_.nproc_per_node);
  // Build every worker first, so an error for rank N is reported before anything is printed.
  std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>> workers;
  for (int lr = 0; lr < cfg_.nproc_per_node; ++lr) {
    WorkerSpec spec{lr,
                    ranks.base_global_rank + lr,
                    ranks.base_role_rank + lr,
                    group_rank,
                    group_world,
                    ranks.global_world_size,
                    ranks.role_world_size,
                    cfg_.nproc_per_node,
                    0};
    auto env = build_worker_env(cfg_, spec, base_env_, addr, port,
                                "<log dir>/attempt_0/" + std::to_string(lr) + "/error.json");
    if (dynamic) env["MASTER_PORT"] = "<free port>";
    auto argv = build_worker_argv(cfg_, lr, env);
    workers.emplace_back(std::move(argv), std::move(env));
  }
  std::printf("resolved configuration:\n");
  std::printf("  nnodes=%d:%d node_rank=%d nproc_per_node=%d (%s)\n", cfg_.min_nodes,
              cfg_.max_nodes, cfg_.node_rank, cfg_.nproc_per_node,
              cfg_.nproc_per_node_spec.c_str());
  std::printf("  rdzv_backend=%s rdzv_endpoint=%s rdzv_id=%s\n",
              dynamic ? "c10d" : cfg_.rdzv_backend.c_str(),
              cfg_.rdzv_endpoint.empty() ? "<derived>" : cfg_.rdzv_endpoint.c_str(),
              cfg_.rdzv_id.c_str());
  std::printf("  max_restarts=%d shutdown_timeout=%gs log_dir=%s\n", cfg_.max_restarts,
              cfg_.shutdown_timeout, cfg_.log_dir.value_or("<temporary>").c_str());
  std::string sigs;
  for (const auto& sname : cfg_.signals_to_handle) sigs += (sigs.empty() ? "" : ",") + sname;
  std::printf("  signals_to_handle=%s\n", sigs.c_str());
  // Every variable torchrun sets is shown, even when it equals the agent's own value
  // (e.g. a platform RANK that happens to match); other inherited variables are not.
  static const std::set<std::string> kTorchrunKeys = {"RANK",
                                                      "LOCAL_RANK",
                                                      "GROUP_RANK",
                                                      "ROLE_RANK",
                                                      "ROLE_NAME",
                                                      "LOCAL_WORLD_SIZE",
                                                      "WORLD_SIZE",
                                                      "GROUP_WORLD_SIZE",
                                                      "ROLE_WORLD_SIZE",
                                                      "MASTER_ADDR",
                                                      "MASTER_PORT",
                                                      "TORCHELASTIC_RESTART_COUNT",
                                                      "TORCHELASTIC_MAX_RESTARTS",
                                                      "TORCHELASTIC_RUN_ID",
                                                      "TORCHELASTIC_USE_AGENT_STORE",
                                                      "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                      "TORCHELASTIC_ERROR_FILE",
                                                      "TORCHELASTIC_SIGNALS_TO_HANDLE"};
  for (std::size_t lr = 0; lr < workers.size(); ++lr) {
    const auto& [argv, env] = workers[lr];
    std::printf("[local_rank %zu] argv:", lr);
    for (const auto& a : argv) std::printf(" %s", a.c_str());
    std::printf("\n");
    for (const auto& [k, v] : env) {
      auto it = agent_env.find(k);
      if (kTorchrunKeys.contains(k) || it == agent_env.end() || it->second != v) {
        std::printf("  %s=%s\n", k.c_str(), v.c_str());
      }
    }
  }
  return ExitCode::kSuccess;
}

}  // namespace

int run(const LaunchConfig& cfg) {
  Agent agent(cfg);
  return agent.run();
}

}  // namespace tzrun::agent
