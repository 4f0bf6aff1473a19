// tzrun/launch_config.hpp — the resolved launch configuration.
//
// LaunchConfig is what the CLI layer (src/cli) produces from argv + PET_* env
// and what the agent (src/agent) consumes. It mirrors torchrun 2.11's argparse
// destinations (torch/distributed/run.py) one field per option, with values
// already type-converted and validated. Times are in seconds.
//
// Thread-safety: a plain value type; copy freely.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tzrun {

/// Which worker streams go to files (torchrun's `Std`): 0 none, 1 stdout, 2 stderr, 3 both.
enum class Std : std::uint8_t { kNone = 0, kOut = 1, kErr = 2, kAll = 3 };

/// A `-r/--redirects` or `-t/--tee` value: one setting for all local ranks, or a
/// per-local-rank map (`0:1,1:2`); ranks missing from a map get kNone.
/// Unlike torchrun, map keys may have several digits (local ranks >= 10).
struct StdSpec {
  Std all = Std::kNone;
  std::map<int, Std> per_rank;  // non-empty => map form
  [[nodiscard]] Std ForRank(int local_rank) const {
    if (per_rank.empty()) return all;
    auto it = per_rank.find(local_rank);
    return it == per_rank.end() ? Std::kNone : it->second;
  }
};

/// Process exit codes of tzrun itself (documented in docs/launcher.md).
/// Worker failures exit with the root-cause worker's own code (128+N for signal N).
struct ExitCode {
  static constexpr int kSuccess = 0;
  static constexpr int kUsage = 2;             ///< bad flag/value, missing script, ...
  static constexpr int kInfrastructure = 125;  ///< store/rendezvous/spawn infrastructure failed
  static constexpr int kNotExecutable = 126;   ///< worker program exists but cannot be executed
  static constexpr int kNotFound = 127;        ///< worker program not found
};

struct LaunchConfig {
  // --- nodes / rendezvous (torchrun §1.2) ---
  int min_nodes = 1;  ///< --nnodes MIN[:MAX]
  int max_nodes = 1;
  std::string nproc_per_node_spec = "1";  ///< as given: int | cpu | gpu | auto
  int nproc_per_node = 1;                 ///< resolved count (> 0)
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;  ///< "" => derived (static: master_addr:master_port)
  std::string rdzv_id = "none";
  std::map<std::string, std::string> rdzv_conf;  ///< parsed k=v pairs (strings)
  bool standalone = false;
  int max_restarts = 0;
  /// --monitor-interval: the c10d watcher's longest wait between two reads of the rendezvous
  /// state (torchrun's monitor tick); worker exits are seen at once.
  double monitor_interval = 0.1;
  std::string start_method = "spawn";      ///< matters only with --run-path (fork: a warning)
  std::string event_log_handler = "null";  ///< console: events on stderr (agent/events.hpp)
  std::string role = "default";
  bool module = false;     ///< -m: python -m <script>
  bool no_python = false;  ///< exec the script directly
  bool run_path = false;   ///< runpy.run_path bootstrap (EntrypointKind::kRunPath)
  std::optional<std::string> log_dir;
  StdSpec redirects;
  StdSpec tee;
  std::set<int> local_ranks_filter;  ///< empty => all ranks shown
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool master_port_explicit = false;  ///< given on the CLI or via PET_MASTER_PORT
  std::optional<std::string> local_addr;
  std::optional<std::string> logs_specs;
  /// --numa-binding: "" (none), "node", "socket", "exclusive" or "core-complex" (torch's
  /// AffinityMode; src/agent/numa_binding.hpp).
  std::string numa_binding;
  std::vector<std::string> signals_to_handle = {"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"};
  /// tzrun extension --forward-signals: signals passed on to every worker's process group while
  /// the job goes on (e.g. SIGUSR1 to checkpoint before preemption); one listed here is not a
  /// stop signal even when --signals-to-handle names it too. Default: none (torchrun's).
  std::vector<std::string> forward_signals;
  double shutdown_timeout = 30.0;  ///< grace between SIGTERM and SIGKILL (s)
  bool virtual_local_rank = false;
  std::vector<std::string> duplicate_stdout_filters;
  std::vector<std::string> duplicate_stderr_filters;

  // --- the worker program ---
  std::string training_script;
  std::vector<std::string> training_script_args;

  // --- tzrun extensions ---
  std::optional<std::string> summary_json;  ///< --summary-json PATH
  bool dry_run = false;                     ///< print config + worker envs, spawn nothing
  /// --flash-checkpoint: a memory-backed directory per run for the workers' flash checkpoints
  /// (TZRUN_FLASH_DIR; src/agent/flash_dir.hpp). One-node jobs only.
  bool flash_checkpoint = false;
  /// --hang-timeout S: stop and restart the group when a rank reports no progress for S s
  /// (TZRUN_PROGRESS_FILE; src/agent/hang_detector.hpp). 0: off.
  double hang_timeout = 0.0;
  /// --metrics-port P: Prometheus metrics on 0.0.0.0:P/metrics (0: a free port; -1: off;
  /// src/agent/metrics.hpp). --event-log FILE: JSON lines per state change ("": off;
  /// src/agent/event_log.hpp).
  int metrics_port = -1;
  std::string event_log;
  std::string log_level = "warning";  ///< tzrun's own log level (LOGLEVEL env as torchrun)
  std::string platform = "auto";      ///< --platform auto|dlc|kubeflow|slurm|none (env detection)
  /// --exit-barrier-timeout S: torchrun's LocalElasticAgent(exit_barrier_timeout=300), which
  /// torchrun's CLI cannot set; the store host waits on past it for live nodes (see
  /// src/rendezvous/exit_barrier.hpp).
  double exit_barrier_timeout = 300.0;
  /// --straggler-warning S: warn about a local worker still running S s after every other local
  /// worker exited 0 (0: never). --straggler-timeout S: stop it then, the group fails (0: never).
  double straggler_warning = 60.0;
  double straggler_timeout = 0.0;
  /// --max-membership-restarts: restarts of a running worker group for membership changes
  /// (nodes joining or leaving a c10d job) this agent performs before it stops the job with
  /// exit 125; -1: unbounded (torchrun's behaviour, which has no bound).
  int max_membership_restarts = 10;
  /// --no-restart-exit-codes: root-cause exit codes (tzrun's: 128+N for signal N) that are
  /// never retried, whatever --max-restarts allows. Default: none (only a worker's error file
  /// with extraInfo.retryable == "false" stops retries).
  std::set<int> no_restart_exit_codes;
};

}  // namespace tzrun
