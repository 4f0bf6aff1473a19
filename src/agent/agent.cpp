// The agent's lifecycle and job loop (see agent_impl.hpp for the structure and
// include/tzrun/agent/agent.hpp for the behaviour and the upstream files it follows).
#include "tzrun/agent/agent.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "agent_error.hpp"
#include "agent_impl.hpp"
#include "agent_logger.hpp"
#include "dry_run.hpp"
#include "local_addr.hpp"
#include "numa_sysfs.hpp"
#include "rendezvous_options.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/factory.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/store/errors.hpp"
#include "tzrun/store/spdlog_sink.hpp"

namespace tzrun::agent {
namespace {

void PrintError(const char* what) {
  std::fprintf(stderr, "tzrun: error: %s\n", what);
}

/// The summary's outcome for an error: a rendezvous closed by a node that failed for good
/// is that job's failure, every other error is an infrastructure error.
std::string ErrorOutcome(const tzrun::Error& e) {
  const auto* closed = dynamic_cast<const rendezvous::RendezvousClosedError*>(&e);
  return closed != nullptr && closed->CloserExitCode() ? "failed" : "infrastructure_error";
}

}  // namespace

Agent::Agent(LaunchConfig cfg) : cfg_(std::move(cfg)), log_(MakeLogger(cfg_.log_level)) {}

Agent::~Agent() {
  stdio_.reset();
}

int Agent::Run() {
  int code = ExitCode::kSuccess;
  std::string outcome = "infrastructure_error";
  try {
    if (cfg_.dry_run) return DryRun(cfg_);
    code = RunJob();
    outcome = code == 0 ? "succeeded" : stop_signal_ != 0 ? "signaled" : "failed";
  } catch (const Interrupted&) {
    code = 128 + stop_signal_;
    outcome = "signaled";
    RecordAgentFailed("SignalException: Process " + std::to_string(::getpid()) +
                      " got signal: " + std::to_string(stop_signal_));
  } catch (const rendezvous::RendezvousGracefulExit& e) {
    log_->warn("{}", e.what());
    code = ExitCode::kSuccess;
    outcome = "succeeded";
    RecordAgentEvent("SUCCEEDED");
  } catch (const store::StoreError& e) {
    // The store's errors are infrastructure errors (they may derive from tzrun::Error).
    PrintError(e.what());
    code = exit_code::kInfrastructure;
    RecordAgentFailed(e.what());
  } catch (const tzrun::Error& e) {
    PrintError(e.what());
    RecordAgentFailed(e.what());
    code = e.ExitCode();
    outcome = ErrorOutcome(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun: error: internal error: %s\n", e.what());
    code = exit_code::kInternal;
  }
  Cleanup(code);
  if (cfg_.summary_json) WriteSummary(code, outcome);
  EndByWatchdogSignal();  // an expired file timer's signal, as torchrun ends
  return code;
}

void Agent::Cleanup(int code) {
  // Whatever happened, nothing of ours may outlive the agent.
  StampHealth(true);
  if (!workers_.empty()) {
    try {
      StopGroup(SIGTERM);
      DrainTees();
    } catch (const std::exception& e) {
      log_->error("cleanup after an error failed: {}", e.what());
    }
  }
  stdio_.reset();
  if (flash_) {  // the workers are gone: persist what is staged, and a newer flash checkpoint
    if (flash_persister_) flash_persister_->Stop();
    const auto warn = [this](const std::string& m) { log_->warn("{}", m); };
    for (const auto& dir : flash_->PersistStaged(warn)) {
      log_->info("flash checkpoint persisted to {}", dir);
    }
    if (auto dir = flash_->PersistNewest(warn)) {
      log_->warn("flash checkpoint persisted to {} (newer than the last disk checkpoint)", *dir);
    }
    flash_->Remove();
  }
  if (!progress_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(progress_dir_, ec);
  }
  StopWatchdogs();
  StopObservers();
  if (rdzv_ && !rdzv_done_) {
    // A signal (or an unexpected error): leave without closing the rendezvous for the
    // others (torchrun's launch_agent does not shut the handler down on signals).
    rdzv_done_ = true;
    rdzv_->Abandon(code);
  }
  rdzv_.reset();
  if (pid_t g = guardian_.Close(); g > 0) {
    int status = 0;
    while (::waitpid(g, &status, 0) < 0 && errno == EINTR) {
    }
  }
  signals_.reset();
}

void Agent::InterruptCheck() {
  WaitEvents(0, nullptr);
  if (stop_signal_ != 0) throw Interrupted{};
}

void Agent::CreateRendezvous() {
  std::string local_addr = cfg_.local_addr.value_or("");
  if (IsDynamic(cfg_) && local_addr.empty()) {
    hostname_ = LocalFqdn();
    std::string why;
    local_addr = AdvertisedAddress(hostname_, NameResolves(hostname_), cfg_.max_nodes == 1,
                                   FirstInterfaceAddress(), &why);
    if (!why.empty()) log_->warn("{}", why);
  }
  rdzv_ =
      rendezvous::MakeHandler(HandlerParams(cfg_, local_addr),
                              store::SpdlogSink(log_, "rendezvous"), [this] { InterruptCheck(); });
  if (IsDynamic(cfg_)) {
    log_->info("{} rendezvous '{}' for {}..{} node(s) via {} {}", cfg_.rdzv_backend, run_id_,
               cfg_.min_nodes, cfg_.max_nodes, cfg_.rdzv_backend == "c10d" ? "store" : "etcd",
               cfg_.rdzv_backend == "c10d" ? rendezvous::DynamicStoreEndpoint(*rdzv_)
                                           : cfg_.rdzv_endpoint);
  }
}

void Agent::FailJob(int code) {
  // The other nodes stop too, as when a node without restarts left fails (dynamic: the
  // rendezvous is closed carrying `code`; static: a job-wide "fail" decision).
  if (!rdzv_ || rdzv_done_) return;
  try {
    (void)rdzv_->OnFailure(false, code);
  } catch (const rendezvous::RendezvousError& e) {
    log_->error("{}", e.what());
  }
}

int Agent::FinishJob(int code) {
  // End of job (success or final failure): close the rendezvous and let the others finish
  // with the store before it goes away (rendezvous::Handler::shutdown).
  workers_.clear();
  if (rdzv_ && !rdzv_done_) {
    rdzv_done_ = true;
    rdzv_->Shutdown();
  }
  return code;
}

void Agent::FindProgram() {
  // Everything that can be checked before spawning is checked here.
  auto argv0 = BuildWorkerArgv(cfg_, 0, base_env_);
  if (!cfg_.no_python && ClassifyEntrypoint(cfg_) == EntrypointKind::kDirect) {
    const auto& s = cfg_.training_script;
    if (s.find('/') != std::string::npos) {
      program_ = s;
    } else {
      struct stat st {};
      program_ = ::stat(s.c_str(), &st) == 0 ? "./" + s : ResolveProgram(s, base_env_);
    }
  } else {
    program_ = ResolveProgram(argv0.front(), base_env_);
  }
}

void Agent::OpenLogDir() {
  log_dir_ = LogDir::Create(cfg_.log_dir, run_id_);
  if (log_dir_->Disabled()) return;
  // torchrun logs this at INFO; say it louder when some worker output goes only to files, or
  // to filtered_*.log files (--duplicate-*-filters) the user would otherwise not find.
  bool to_files = !cfg_.duplicate_stdout_filters.empty() || !cfg_.duplicate_stderr_filters.empty();
  for (int lr = 0; lr < cfg_.nproc_per_node; ++lr) {
    const auto only_file = static_cast<unsigned>(cfg_.redirects.ForRank(lr)) &
                           ~static_cast<unsigned>(cfg_.tee.ForRank(lr));
    to_files = to_files || only_file != 0U;
  }
  WarnUntailedFilters();
  if (to_files && !cfg_.log_dir) {
    log_->warn("worker logs are written under {}", log_dir_->RunDir());
  } else {
    log_->info("log directory: {}", log_dir_->RunDir());
  }
}

void Agent::WarnUntailedFilters() const {
  // torchrun copies only tee'd streams of shown ranks into filtered_*.log; say so when the
  // filters can copy nothing (torchrun writes the empty file silently).
  for (int stream = 1; stream <= 2; ++stream) {
    const auto& filters =
        stream == 1 ? cfg_.duplicate_stdout_filters : cfg_.duplicate_stderr_filters;
    if (filters.empty()) continue;
    const unsigned bit = stream == 1 ? 1U : 2U;
    bool any = false;
    for (int lr = 0; lr < cfg_.nproc_per_node; ++lr) {
      const bool shown = cfg_.local_ranks_filter.empty() || cfg_.local_ranks_filter.contains(lr);
      any = any || (shown && (static_cast<unsigned>(cfg_.tee.ForRank(lr)) & bit) != 0U);
    }
    if (!any) {
      const char* name = stream == 1 ? "stdout" : "stderr";
      log_->warn(
          "--duplicate-{}-filters copies only tee'd output, but no shown local rank tees its {}: "
          "filtered_{}.log stays empty (add -t/--tee {})",
          name, name, name, stream == 1 ? 1 : 2);
    }
  }
}

void Agent::PrepareJob() {
  ValidateTopology(cfg_);
  base_env_ = base::EnvironMap();
  if (NeedsOmpDefault(cfg_, base_env_)) {
    for (const auto& line : OmpBannerLines()) log_->warn("{}", line);
    base_env_["OMP_NUM_THREADS"] = "1";
  }
  run_id_ = cfg_.rdzv_id;
  if (run_id_.empty() || (cfg_.standalone && run_id_ == "none")) {
    if (run_id_.empty()) log_->warn("empty --rdzv-id: using a random run id");
    run_id_ = base::Uuid4();
  }
  cfg_.rdzv_id = run_id_;
  FindProgram();
  if (const auto mode = ParseNumaMode(cfg_.numa_binding)) {
    // Planned before anything starts: a rank without a GPU fails the job here, not mid-way.
    numa_cpus_ = PlanNumaBinding(*mode, cfg_.nproc_per_node, base_env_);
    for (std::size_t lr = 0; lr < numa_cpus_.size(); ++lr) {
      log_->info("--numa-binding={}: local rank {} runs on CPUs {}", cfg_.numa_binding, lr,
                 CpuListText(numa_cpus_[lr]));
    }
  }
  // torchrun uses --start-method only for function entrypoints (--run-path): spawn starts a
  // fresh interpreter, as tzrun always does; fork/forkserver would inherit the launcher's
  // interpreter, which a C++ launcher does not have.
  if (cfg_.run_path && cfg_.start_method != "spawn") {
    log_->warn(
        "--start-method={} with --run-path: tzrun starts every worker as a fresh Python "
        "interpreter, which is what spawn does; the script sees the same sys.argv, __name__, "
        "sys.path and environment, but not modules pre-imported by a launcher (use "
        "--start-method=spawn to silence this)",
        cfg_.start_method);
  }
  for (pid_t c : detail::ListChildren(::getpid())) preexisting_children_.insert(c);
  signals_.emplace(cfg_.signals_to_handle, cfg_.forward_signals, *log_);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log_->warn(
        "PR_SET_CHILD_SUBREAPER failed ({}): orphaned grandchildren of workers may "
        "escape cleanup",
        base::ErrnoText(errno));
  }
  // Progress files feed --hang-timeout and the step metrics of --metrics-port.
  if (cfg_.hang_timeout > 0 || cfg_.metrics_port >= 0) OpenProgressDir();
  if (cfg_.flash_checkpoint) {
    flash_.emplace(detail::FlashDir::Create());
    guardian_.AddCleanupDir(flash_->Path());  // removed even when tzrun itself is SIGKILLed
    log_->info("flash checkpoints: {} (TZRUN_FLASH_DIR)", flash_->Path());
  }
  guardian_.Start();  // before any thread exists (the stores start some)
  if (flash_) {
    flash_persister_ = std::make_unique<detail::FlashPersister>(
        *flash_, [this](const std::string& m) { log_->info("{}", m); },
        [this](const std::string& m) { log_->warn("{}", m); });
  }
  StartWatchdogs();  // file timer, health check (timer_agent.cpp)
  StartObservers();  // --event-log, --metrics-port: after the guardian, it starts a thread
  devnull_ = UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const auto loglevel = base_env_.find("LOGLEVEL");
  events_.emplace(cfg_.event_log_handler, loglevel != base_env_.end() ? loglevel->second : "");
  if (events_->Enabled() && hostname_.empty()) hostname_ = LocalFqdn();
  CreateRendezvous();
  OpenLogDir();
  console_ = std::make_unique<ConsoleSink>(STDOUT_FILENO, STDERR_FILENO, ColorMode::kAuto);
  auto it = base_env_.find("TORCH_ELASTIC_WORKER_IDENTICAL");
  identical_ranks_ = it != base_env_.end() && it->second == "1";
  // torchrun reads rdzv_conf "timeout" only for the static (and etcd) rendezvous; under c10d
  // the key is ignored, whatever its value (torch/distributed/elastic/rendezvous/
  // static_tcp_rendezvous.py, c10d_rendezvous_backend.py).
  if (!IsDynamic(cfg_)) {
    if (auto t = rendezvous::ConfSeconds(cfg_.rdzv_conf, "timeout")) rdzv_timeout_ = *t;
  }
}

void Agent::NextRound(int local_restarts, rendezvous::RendezvousInfo& info,
                      rendezvous::AssignedRanks& ranks) {
  using Ms = std::chrono::duration<double, std::milli>;
  auto t0 = std::chrono::steady_clock::now();
  info = rdzv_->NextRendezvous(local_restarts);
  RecordAgentEvent("RENDEZVOUS", Ms(std::chrono::steady_clock::now() - t0).count());
  ObserveRendezvous(info,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  t0 = std::chrono::steady_clock::now();
  ranks = identical_ranks_
              ? rendezvous::IdenticalRanks(info.rank, info.world_size, cfg_.nproc_per_node)
              : rendezvous::AssignWorkerRanks(*info.store, info.rank, info.world_size, cfg_.role,
                                              cfg_.nproc_per_node, rdzv_timeout_,
                                              [this] { InterruptCheck(); });
  RecordAgentEvent("ASSIGN_WORKER_RANKS", Ms(std::chrono::steady_clock::now() - t0).count());
  event_group_rank_ = info.rank;
  event_group_world_size_ = info.world_size;
}

AttemptOutcome Agent::RunAttempt(const rendezvous::RendezvousInfo& info,
                                 const rendezvous::AssignedRanks& ranks, int restart_count) {
  pending_event_.reset();
  attempt_ = restart_count;
  attempt_hung_ = false;
  rank_rates_.clear();
  StartWorkers(info, ranks, restart_count);
  {
    nlohmann::json pids = nlohmann::json::array();
    for (const auto& w : workers_) pids.push_back(w.pid);
    Emit("workers_started", {{"attempt", attempt_}, {"world_size", world_size_}, {"pids", pids}});
  }
  rdzv_->Watch();
  AttemptOutcome outcome;
  outcome.result = Monitor();
  StopGroup(stop_signal_ != 0 ? stop_signal_ : SIGTERM);
  DrainTees();
  CaptureTails();
  stdio_.reset();
  RecordAttempt();
  final_workers_ = workers_;
  final_failed_ = !failures_.empty();
  NoteEmptyErrorTraits();
  outcome.stop_signal = stop_signal_;
  outcome.peer_event = pending_event_;
  if (!failures_.empty()) {
    outcome.root = LocalRootCause();
    outcome.local_exit_code = outcome.root->exit_code;
  }
  ObserveAttemptEnd(outcome);
  return outcome;
}

RootCause Agent::LocalRootCause() const {
  const WorkerFailure& f = failures_[SelectRootCause(failures_)];
  RootCause r;
  r.global_rank = f.global_rank;
  r.local_rank = f.local_rank;
  r.exit_code = TzrunExitCode(f);
  if (auto info = ReadErrorFile(f.error_file)) {
    r.marked_not_retryable = info->not_retryable;
    r.error_message = info->message;
  }
  return r;
}

void Agent::Say(const Action& a) {
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
      PrintError(a.message.c_str());
      break;
  }
}

Action Agent::DecideNext(AttemptOutcome& outcome, const RestartBudget& budget) {
  // The workers stay listed (their rendezvous events polled) only while a failed group's
  // fate is being decided with the other nodes.
  if (EffectiveResult(outcome) != AttemptResult::kFailed) workers_.clear();
  while (true) {
    Action a = Decide(outcome, budget, cfg_.role, cfg_.exit_barrier_timeout);
    Say(a);
    if (!a.no_restart_reason.empty()) no_restart_reason_ = a.no_restart_reason;
    if (a.kind == Action::Kind::kWaitExitBarrier) {
      outcome.barrier = rdzv_->ExitBarrier(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::duration<double>(std::min(cfg_.exit_barrier_timeout, 1e9))));
    } else if (a.kind == Action::Kind::kAskRendezvous) {
      try {
        outcome.verdict = rdzv_->OnFailure(a.can_restart, outcome.local_exit_code);
      } catch (const rendezvous::RendezvousError& e) {
        log_->error("{}", e.what());
        outcome.verdict = rendezvous::FailureDecision{false, -1, outcome.local_exit_code};
      }
    } else {
      return a;
    }
  }
}

int Agent::RunJob() {
  PrepareJob();
  budget_.remaining = budget_.max_restarts = cfg_.max_restarts;
  budget_.max_membership_restarts = cfg_.max_membership_restarts;
  budget_.no_restart_exit_codes = cfg_.no_restart_exit_codes;
  while (true) {
    InterruptCheck();  // a signal that arrived meanwhile: do not rendezvous / spawn at all
    rendezvous::RendezvousInfo info;
    rendezvous::AssignedRanks ranks;
    NextRound(budget_.local_restarts, info, ranks);
    AttemptOutcome outcome = RunAttempt(info, ranks, budget_.local_restarts);
    const Action a = DecideNext(outcome, budget_);
    switch (a.kind) {
      case Action::Kind::kRestart:
        WarnMutedFailures();  // the final attempt's are in the failure report
        budget_ = a.spend_restart ? Spend(budget_) : SpendMembership(budget_);
        ObserveRestart(a.spend_restart);
        continue;
      case Action::Kind::kLeaveSignaled:
        RecordAgentFailed("SignalException: Process " + std::to_string(::getpid()) +
                          " got signal: " + std::to_string(a.exit_code - 128));
        Emit("job_finished", {{"exit_code", a.exit_code}});
        workers_.clear();
        return a.exit_code;
      case Action::Kind::kStoreLost:
        throw AgentError(a.message, exit_code::kInfrastructure);
      case Action::Kind::kFinish:
        RecordFinalEvents(final_failed_);
        if (a.report_failure) ReportFailure();
        if (a.fail_job) FailJob(a.exit_code);
        Emit("job_finished", {{"exit_code", a.exit_code}});
        return FinishJob(a.exit_code);
      case Action::Kind::kWaitExitBarrier:
      case Action::Kind::kAskRendezvous:
        break;  // handled by decide_next
    }
  }
}

void Agent::StartWorkers(const rendezvous::RendezvousInfo& info,
                         const rendezvous::AssignedRanks& ranks, int restart_count) {
  // torchrun's restart_count = spec.max_restarts - remaining_restarts: this agent's own
  // failure restarts, not the round's (local_elastic_agent.py _start_workers).
  const int attempt = restart_count;
  workers_.clear();
  failures_.clear();
  stdio_.reset();
  master_addr_ = info.master_addr;
  master_port_ = info.master_port;
  world_size_ = ranks.global_world_size;
  log_dir_->ResetAttempt(attempt, cfg_.nproc_per_node);
  const char* tmpl_env = std::getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
  const std::string tmpl = tmpl_env != nullptr ? tmpl_env : "";
  const int n = cfg_.nproc_per_node;
  log_->info(
      "[{}] Rendezvous complete for workers. Result:\n  restart_count={}\n  master_addr={}\n"
      "  master_port={}\n  group_rank={}\n  group_world_size={}\n  global_ranks=[{}..{}]\n"
      "  global_world_size={}",
      cfg_.role, attempt, master_addr_, master_port_, info.rank, info.world_size,
      ranks.base_global_rank, ranks.base_global_rank + n - 1, ranks.global_world_size);
  stdio_.emplace(*console_, devnull_.Get(), *log_);
  if (!log_dir_->Disabled()) {  // the CLI refuses the filters with --log-dir=/dev/null
    const std::string dir = log_dir_->AttemptDir(attempt);
    if (!cfg_.duplicate_stdout_filters.empty()) {
      stdio_->OpenFiltered(1, dir + "/filtered_stdout.log", cfg_.duplicate_stdout_filters);
    }
    if (!cfg_.duplicate_stderr_filters.empty()) {
      stdio_->OpenFiltered(2, dir + "/filtered_stderr.log", cfg_.duplicate_stderr_filters);
    }
  }
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
    StartWorker(spec, tmpl);
  }
}

void Agent::StartWorker(const WorkerSpec& spec, const std::string& prefix_template) {
  const int lr = spec.local_rank;
  const int attempt = spec.restart_count;
  Worker w;
  w.local_rank = lr;
  w.global_rank = spec.global_rank;
  w.role_rank = spec.role_rank;
  w.role_world_size = spec.role_world_size;
  w.error_file = log_dir_->ErrorFile(attempt, lr);

  detail::SpawnRequest req;
  req.env = BuildWorkerEnv(cfg_, spec, base_env_, master_addr_, master_port_, w.error_file);
  if (flash_) req.env["TZRUN_FLASH_DIR"] = flash_->Path();
  if (!progress_dir_.empty()) {
    req.env["TZRUN_PROGRESS_FILE"] = ProgressFile(lr);
    ::unlink(ProgressFile(lr).c_str());  // a new attempt's rank has not reported yet
    if (progress_.size() <= static_cast<std::size_t>(lr)) progress_.resize(lr + 1);
    progress_[lr] = {};
  }
  req.argv = BuildWorkerArgv(cfg_, lr, req.env);
  req.program = program_;
  req.child_mask = signals_->ChildMask();
  req.reset_to_default = signals_->ResetToDefault();
  if (!numa_cpus_.empty()) {
    const auto& cpus = numa_cpus_.at(static_cast<std::size_t>(lr));
    req.cpus.assign(cpus.begin(), cpus.end());
  }

  // stdout / stderr routing (torchrun §5.2).
  WorkerStdioSpec io;
  io.local_rank = lr;
  io.shown = cfg_.local_ranks_filter.empty() || cfg_.local_ranks_filter.contains(lr);
  w.muted = !io.shown;
  if (!log_dir_->Disabled()) {
    io.redirects = cfg_.redirects.ForRank(lr);
    io.tee = cfg_.tee.ForRank(lr);
    io.stdout_path = log_dir_->StdoutPath(attempt, lr);
    io.stderr_path = log_dir_->StderrPath(attempt, lr);
  }
  io.prefix = MakePrefix(prefix_template, cfg_.role, lr, w.global_rank);
  {
    const ChildFds child = stdio_->OpenWorker(io);  // closed once the worker has its copies
    req.stdout_fd = child.Fd(1);
    req.stderr_fd = child.Fd(2);
    w.start_time = SysClock::now();
    w.pid = detail::Spawn(req);
  }
  guardian_.Add(w.pid);
  log_->info("started worker local_rank {} (pid {}) attempt {}", lr, w.pid, attempt);
  RecordWorkerEvent(w, "START", nullptr);
  workers_.push_back(std::move(w));
}

int Run(const LaunchConfig& cfg) {
  Agent agent(cfg);
  return agent.Run();
}

}  // namespace tzrun::agent
