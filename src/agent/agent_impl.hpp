// tzrun agent internals: the Agent object behind tzrun::agent::run (include/tzrun/agent/
// agent.hpp has the behaviour and the upstream files it follows).
//
// Structure: one thread, one poll() loop. Exits arrive as SIGCHLD and handled signals as
// siginfo records on a signalfd (both blocked), tee'd worker output on pipes, news from
// other nodes on the rendezvous watcher's eventfd. Nothing is polled on a timer except
// while a group is being stopped (descendants that are not our children cannot be waited
// for, so group emptiness is re-checked every 50 ms). Blocking rendezvous calls check the
// signalfd between their (<= 1 s) slices through InterruptCheck().
//
// Member definitions: agent.cpp (run, the job loop, starting workers), supervise.cpp
// (monitoring, reaping, stopping a group), attempt_record.cpp (failure report, summary),
// timer_agent.cpp (file timer and health check, served from the same poll loop).
//
// Thread-safety: not thread-safe; one Agent per process at a time (see agent.hpp).
#pragma once

#include <spdlog/fwd.h>  // spdlog::logger, declared only
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "event_log.hpp"
#include "events.hpp"
#include "flash_dir.hpp"
#include "hang_detector.hpp"
#include "health_server.hpp"
#include "logs.hpp"
#include "metrics.hpp"
#include "numa_binding.hpp"
#include "process.hpp"
#include "report.hpp"
#include "restart_policy.hpp"
#include "signals.hpp"
#include "timer_server.hpp"
#include "tzrun/agent/worker_env.hpp"
#include "tzrun/launch_config.hpp"
#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "worker_stdio.hpp"

namespace tzrun::agent {

using SysClock = std::chrono::system_clock;

struct Worker {
  int local_rank = 0;
  int global_rank = 0;
  int role_rank = 0;
  int role_world_size = 0;
  pid_t pid = -1;  // == its process group id (setsid)
  bool reaped = false;
  bool group_done = false;  // process group observed empty after the leader was reaped
  int wait_status = 0;
  SysClock::time_point start_time{};
  SysClock::time_point end_time{};
  std::string error_file;
  bool muted = false;                      // --local-ranks-filter hides its output
  bool stopped_by_tzrun = false;           // StopGroup() signalled it before it was reaped
  std::optional<std::string> stderr_tail;  // failed workers only, captured by CaptureTails()
  std::optional<std::string> hang;         // --hang-timeout killed it (hang_agent.cpp)
  int hang_order =
      -1;  // among the ranks killed for one hang: 0 = the likely cause (hang_agent.cpp)
};

class Agent {
 public:
  explicit Agent(LaunchConfig cfg);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  ~Agent();

  int Run();

 private:
  // agent.cpp
  int RunJob();
  void PrepareJob();
  void FindProgram();
  void OpenLogDir();
  void WarnUntailedFilters() const;
  void CreateRendezvous();
  void InterruptCheck();
  void NextRound(int local_restarts, rendezvous::RendezvousInfo& info,
                 rendezvous::AssignedRanks& ranks);
  AttemptOutcome RunAttempt(const rendezvous::RendezvousInfo& info,
                            const rendezvous::AssignedRanks& ranks, int restart_count);
  [[nodiscard]] RootCause LocalRootCause() const;
  Action DecideNext(AttemptOutcome& outcome, const RestartBudget& budget);
  void Say(const Action& a);
  void StartWorkers(const rendezvous::RendezvousInfo& info, const rendezvous::AssignedRanks& ranks,
                    int restart_count);
  void StartWorker(const WorkerSpec& spec, const std::string& prefix_template);
  void FailJob(int code);
  int FinishJob(int code);
  void Cleanup(int code);
  // supervise.cpp
  AttemptResult Monitor();
  /// Straggler warning / --straggler-timeout (straggler.hpp); true: it was stopped, the
  /// group failed. `timeout_ms`: poll timeout until its next deadline (-1: none).
  bool WatchStraggler(bool& warned, int& timeout_ms);
  bool WatchHangs(int& timeout_ms);  // --hang-timeout (hang_agent.cpp)
  // Backtraces (up to two ranks at once), the console report, SIGKILL and reap of the stalled
  // ranks (indices into `index`, which maps them to workers_), the likely cause first.
  void KillHungRanks(const std::vector<std::size_t>& stalled, const std::vector<std::size_t>& index,
                     const std::vector<std::string>& reports);
  void OpenProgressDir();
  [[nodiscard]] std::string ProgressFile(int local_rank) const;
  // observe_agent.cpp (--metrics-port metrics.hpp, --event-log event_log.hpp)
  void StartObservers();
  void StopObservers();
  void Emit(const std::string& event, const nlohmann::json& fields);
  void NoteProgress(int local_rank, const std::string& line,
                    std::chrono::steady_clock::time_point now);
  [[nodiscard]] MetricsSnapshot CollectMetrics() const;
  void RefreshMetrics(bool force);
  void ObserveRendezvous(const rendezvous::RendezvousInfo& info, double seconds);
  void ObserveAttemptEnd(const AttemptOutcome& outcome);
  void ObserveRestart(bool failure_restart);
  void StopGroup(int sig);
  void KillGroup(int sig);
  void WaitEvents(int timeout_ms, bool* escalate);
  void ReadSignals(bool* escalate);
  void ReapAll();
  void RecordExit(Worker& w, int status);
  bool AllGone();
  void SignalTargets(int sig, bool log_each);
  void SignalStrays(int sig);
  [[nodiscard]] std::vector<pid_t> StrayChildren() const;
  void DrainTees();
  // timer_agent.cpp (file timer, health check)
  void StartWatchdogs();
  void StopWatchdogs();
  [[nodiscard]] int LoopTimeoutMs(int timeout_ms) const;
  void StampHealth(bool stopping);
  void ServeTimers(bool readable);
  void EndByWatchdogSignal() const;
  // agent_events.cpp (--event-log-handler, events.hpp)
  [[nodiscard]] AgentEventInfo EventBase(const std::string& state) const;
  void RecordAgentEvent(const std::string& state, std::optional<double> duration_ms = std::nullopt,
                        std::optional<std::string> raw_error = std::nullopt);
  void RecordWorkerEvent(const Worker& w, const std::string& state, const WorkerFailure* failure);
  void RecordFinalEvents(bool group_failed);
  void NoteEmptyErrorTraits();
  void RecordAgentFailed(const std::string& why);
  [[nodiscard]] long ElapsedRunSeconds() const;
  // attempt_record.cpp
  void CaptureTails();
  void RecordAttempt();
  void ReportFailure();
  void WarnMutedFailures();
  void WriteSummary(int code, const std::string& outcome);

  LaunchConfig cfg_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::string, std::string> base_env_;
  std::string run_id_;
  std::string program_;            // resolved path of argv[0]
  std::vector<CpuSet> numa_cpus_;  // --numa-binding: CPUs by local rank (empty: no binding)
  std::string master_addr_;
  int master_port_ = 0;
  int world_size_ = 0;            // WORLD_SIZE of the current attempt
  bool identical_ranks_ = false;  // TORCH_ELASTIC_WORKER_IDENTICAL=1
  std::chrono::milliseconds rdzv_timeout_{std::chrono::seconds(900)};
  std::optional<SignalState> signals_;
  detail::Guardian guardian_;
  std::unique_ptr<rendezvous::Handler> rdzv_;
  std::optional<rendezvous::WatchEvent> pending_event_;  // from the rendezvous watcher
  bool rdzv_done_ = false;                               // shutdown()/abandon() already called
  std::optional<LogDir> log_dir_;
  std::string progress_dir_;                    // --hang-timeout: the workers' TZRUN_PROGRESS_FILEs
  std::vector<detail::RankProgress> progress_;  // by local rank, reset per attempt
  std::chrono::steady_clock::time_point next_progress_read_{};
  // --metrics-port / --event-log (observe_agent.cpp).
  static constexpr int kMetricsRefreshMs = 500;
  struct RankRate {
    std::int64_t base_step = 0;
    std::optional<std::chrono::steady_clock::time_point> base_time;
    std::optional<double> rate;
  };
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<JsonEventLog> event_log_;
  std::chrono::steady_clock::time_point next_metrics_refresh_{};
  std::map<int, RankRate> rank_rates_;  // by local rank, for worker_step_rate
  std::map<std::string, long> restarts_by_cause_;
  long rendezvous_rounds_ = 0;
  double rendezvous_seconds_total_ = 0;
  double rendezvous_last_seconds_ = 0;
  long hang_detections_ = 0;
  bool attempt_hung_ = false;              // --hang-timeout stopped the current attempt
  std::optional<detail::FlashDir> flash_;  // --flash-checkpoint (flash_dir.hpp)
  std::unique_ptr<detail::FlashPersister> flash_persister_;  // its background copies to disk
  std::unique_ptr<ConsoleSink> console_;
  UniqueFd devnull_;
  std::set<pid_t> preexisting_children_;   // children tzrun inherited (exec from a shell)
  std::map<pid_t, int> signalled_strays_;  // re-parented descendant -> last signal sent

  // Current attempt.
  int attempt_ = 0;  // TORCHELASTIC_RESTART_COUNT: this agent's failure restarts (torchrun)
  std::vector<Worker> workers_;
  std::vector<WorkerFailure> failures_;
  std::optional<AttemptStdio> stdio_;  // log files and tee pipes; reset closes them
  int stop_signal_ = 0;                // handled signal received from outside

  // File timer (TORCHELASTIC_ENABLE_FILE_TIMER) and health check (..._HEALTH_CHECK_PORT).
  std::unique_ptr<TimerServer> timer_;
  std::unique_ptr<HealthServer> health_;
  int watchdog_signal_ = 0;  // an expired timer's signal tzrun ends with (not a handled one)

  // --event-log-handler (agent_events.cpp).
  std::optional<EventLog> events_;
  std::chrono::steady_clock::time_point run_started_ = std::chrono::steady_clock::now();
  std::optional<int> event_group_rank_;  // the previous round's (torchrun's worker group)
  std::optional<int> event_group_world_size_;
  long event_total_run_time_ = 0;
  std::vector<Worker> final_workers_;  // the last attempt's workers, for the final events
  bool final_failed_ = false;          // that attempt failed
  bool empty_error_traits_ = false;    // torchrun's shared _EMPTY_ERROR_DATA got errorTraits

  // Summary bookkeeping.
  SysClock::time_point start_time_ = SysClock::now();
  std::vector<std::vector<RankOutcome>> attempts_;
  RestartBudget budget_;           // restarts performed / left (RunJob)
  std::string no_restart_reason_;  // why a restart the budget allowed was refused
  std::optional<std::size_t> root_global_rank_;
  std::string hostname_;
};

}  // namespace tzrun::agent
