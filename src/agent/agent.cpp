// The agent's lifecycle and job loop (see agent_impl.hpp for the structure and
// include/tzrun/agent/agent.hpp for the behaviour and the upstream files it follows).
#include "tzrun/agent/agent.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "agent_error.hpp"
#include "agent_impl.hpp"
#include "agent_logger.hpp"
#include "dry_run.hpp"
#include "rendezvous_options.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/factory.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/store/errors.hpp"
#include "tzrun/store/spdlog_sink.hpp"

namespace tzrun::agent {
namespace {

void print_error(const char* what) {
  std::fprintf(stderr, "tzrun: error: %s\n", what);
}

/// The summary's outcome for an error: a rendezvous closed by a node that failed for good
/// is that job's failure, every other error is an infrastructure error.
std::string error_outcome(const tzrun::Error& e) {
  const auto* closed = dynamic_cast<const rendezvous::RendezvousClosedError*>(&e);
  return closed != nullptr && closed->closer_exit_code() ? "failed" : "infrastructure_error";
}

}  // namespace

Agent::Agent(LaunchConfig cfg) : cfg_(std::move(cfg)), log_(make_logger(cfg_.log_level)) {}

Agent::~Agent() {
  stdio_.reset();
}

int Agent::run() {
  int code = ExitCode::kSuccess;
  std::string outcome = "infrastructure_error";
  try {
    if (cfg_.dry_run) return dry_run(cfg_);
    code = run_job();
    outcome = code == 0 ? "succeeded" : stop_signal_ != 0 ? "signaled" : "failed";
  } catch (const Interrupted&) {
    code = 128 + stop_signal_;
    outcome = "signaled";
  } catch (const rendezvous::RendezvousGracefulExit& e) {
    log_->warn("{}", e.what());
    code = ExitCode::kSuccess;
    outcome = "succeeded";
  } catch (const store::StoreError& e) {
    // The store's errors are infrastructure errors (they may derive from tzrun::Error).
    print_error(e.what());
    code = exit_code::kInfrastructure;
  } catch (const tzrun::Error& e) {
    print_error(e.what());
    code = e.exit_code();
    outcome = error_outcome(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun: error: internal error: %s\n", e.what());
    code = exit_code::kInternal;
  }
  cleanup(code);
  if (cfg_.summary_json) write_summary(code, outcome);
  return code;
}

void Agent::cleanup(int code) {
  // Whatever happened, nothing of ours may outlive the agent.
  if (!workers_.empty()) {
    try {
      stop_group(SIGTERM);
      drain_tees();
    } catch (const std::exception& e) {
      log_->error("cleanup after an error failed: {}", e.what());
    }
  }
  stdio_.reset();
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
}

void Agent::interrupt_check() {
  wait_events(0, nullptr);
  if (stop_signal_ != 0) throw Interrupted{};
}

void Agent::create_rendezvous() {
  std::string local_addr = cfg_.local_addr.value_or("");
  if (is_dynamic(cfg_) && local_addr.empty()) local_addr = hostname_ = local_fqdn();
  rdzv_ = rendezvous::make_handler(handler_params(cfg_, local_addr),
                                   store::spdlog_sink(log_, "rendezvous"),
                                   [this] { interrupt_check(); });
  if (is_dynamic(cfg_)) {
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

void Agent::find_program() {
  // Everything that can be checked before spawning is checked here.
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

void Agent::open_log_dir() {
  log_dir_ = LogDir::create(cfg_.log_dir, run_id_);
  if (log_dir_->disabled()) return;
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

void Agent::prepare_job() {
  validate_topology(cfg_);
  base_env_ = base::environ_map();
  if (needs_omp_default(cfg_, base_env_)) {
    for (const auto& line : omp_banner_lines()) log_->warn("{}", line);
    base_env_["OMP_NUM_THREADS"] = "1";
  }
  run_id_ = cfg_.rdzv_id;
  if (run_id_.empty() || (cfg_.standalone && run_id_ == "none")) {
    if (run_id_.empty()) log_->warn("empty --rdzv-id: using a random run id");
    run_id_ = base::uuid4();
  }
  cfg_.rdzv_id = run_id_;
  find_program();
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
        base::errno_text(errno));
  }
  guardian_.start();  // before any thread exists (the stores start some)
  devnull_ = UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  create_rendezvous();
  open_log_dir();
  console_ = std::make_unique<ConsoleSink>(STDOUT_FILENO, STDERR_FILENO, ColorMode::kAuto);
  auto it = base_env_.find("TORCH_ELASTIC_WORKER_IDENTICAL");
  identical_ranks_ = it != base_env_.end() && it->second == "1";
  if (auto t = rendezvous::conf_seconds(cfg_.rdzv_conf, "timeout")) rdzv_timeout_ = *t;
}

void Agent::next_round(int local_restarts, rendezvous::RendezvousInfo& info,
                       rendezvous::AssignedRanks& ranks) {
  info = rdzv_->next_rendezvous(local_restarts);
  ranks = identical_ranks_
              ? rendezvous::identical_ranks(info.rank, info.world_size, cfg_.nproc_per_node)
              : rendezvous::assign_worker_ranks(*info.store, info.rank, info.world_size, cfg_.role,
                                                cfg_.nproc_per_node, rdzv_timeout_,
                                                [this] { interrupt_check(); });
}

AttemptOutcome Agent::run_attempt(const rendezvous::RendezvousInfo& info,
                                  const rendezvous::AssignedRanks& ranks) {
  pending_event_.reset();
  attempt_ = info.restart_count;
  start_workers(info, ranks);
  rdzv_->watch();
  AttemptOutcome outcome;
  outcome.result = monitor();
  stop_group(stop_signal_ != 0 ? stop_signal_ : SIGTERM);
  drain_tees();
  stdio_.reset();
  record_attempt();
  outcome.stop_signal = stop_signal_;
  outcome.peer_event = pending_event_;
  if (!failures_.empty()) {
    outcome.local_exit_code = tzrun_exit_code(failures_[select_root_cause(failures_)]);
  }
  return outcome;
}

void Agent::say(const Action& a) {
  switch (a.say) {
    case Action::Say::kNothing:
      break;
    case Action::Say::kInfo:
      log_->info("{}", a.message);
      break;
    case Action::Say::kWarning:
      log_->warn("{}", a.message);
      break;
    case Action::Say::kError:
      log_->error("{}", a.message);
      break;
    case Action::Say::kStderrError:
      print_error(a.message.c_str());
      break;
  }
}

Action Agent::decide_next(AttemptOutcome& outcome, const RestartBudget& budget) {
  // The workers stay listed (their rendezvous events polled) only while a failed group's
  // fate is being decided with the other nodes.
  if (effective_result(outcome) != AttemptResult::kFailed) workers_.clear();
  while (true) {
    Action a = decide(outcome, budget, cfg_.role);
    say(a);
    if (a.kind == Action::Kind::kWaitExitBarrier) {
      outcome.barrier = rdzv_->exit_barrier(std::chrono::seconds(300));
    } else if (a.kind == Action::Kind::kAskRendezvous) {
      try {
        outcome.verdict = rdzv_->on_failure(a.can_restart, outcome.local_exit_code);
      } catch (const rendezvous::RendezvousError& e) {
        log_->error("{}", e.what());
        outcome.verdict = rendezvous::FailureDecision{false, -1, outcome.local_exit_code};
      }
    } else {
      return a;
    }
  }
}

int Agent::run_job() {
  prepare_job();
  RestartBudget budget{cfg_.max_restarts, cfg_.max_restarts, 0};
  while (true) {
    interrupt_check();  // a signal that arrived meanwhile: do not rendezvous / spawn at all
    rendezvous::RendezvousInfo info;
    rendezvous::AssignedRanks ranks;
    next_round(budget.local_restarts, info, ranks);
    AttemptOutcome outcome = run_attempt(info, ranks);
    const Action a = decide_next(outcome, budget);
    switch (a.kind) {
      case Action::Kind::kRestart:
        if (a.spend_restart) budget = spend(budget);
        continue;
      case Action::Kind::kLeaveSignaled:
        workers_.clear();
        return a.exit_code;
      case Action::Kind::kStoreLost:
        throw AgentError(a.message, exit_code::kInfrastructure);
      case Action::Kind::kFinish:
        if (a.report_failure) report_failure();
        return finish_job(a.exit_code);
      case Action::Kind::kWaitExitBarrier:
      case Action::Kind::kAskRendezvous:
        break;  // handled by decide_next
    }
  }
}

void Agent::start_workers(const rendezvous::RendezvousInfo& info,
                          const rendezvous::AssignedRanks& ranks) {
  const int attempt = info.restart_count;
  workers_.clear();
  failures_.clear();
  stdio_.reset();
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
  stdio_.emplace(*console_, devnull_.get(), *log_);
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
    start_worker(spec, tmpl);
  }
}

void Agent::start_worker(const WorkerSpec& spec, const std::string& prefix_template) {
  const int lr = spec.local_rank;
  const int attempt = spec.restart_count;
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
  WorkerStdioSpec io;
  io.local_rank = lr;
  io.shown = cfg_.local_ranks_filter.empty() || cfg_.local_ranks_filter.contains(lr);
  if (!log_dir_->disabled()) {
    io.redirects = cfg_.redirects.for_rank(lr);
    io.tee = cfg_.tee.for_rank(lr);
    io.stdout_path = log_dir_->stdout_path(attempt, lr);
    io.stderr_path = log_dir_->stderr_path(attempt, lr);
  }
  io.prefix = make_prefix(prefix_template, cfg_.role, lr, w.global_rank);
  {
    const ChildFds child = stdio_->open_worker(io);  // closed once the worker has its copies
    req.stdout_fd = child.fd(1);
    req.stderr_fd = child.fd(2);
    w.start_time = SysClock::now();
    w.pid = detail::spawn(req);
  }
  guardian_.add(w.pid);
  log_->info("started worker local_rank {} (pid {}) attempt {}", lr, w.pid, attempt);
  workers_.push_back(std::move(w));
}

int run(const LaunchConfig& cfg) {
  Agent agent(cfg);
  return agent.run();
}

}  // namespace tzrun::agent
