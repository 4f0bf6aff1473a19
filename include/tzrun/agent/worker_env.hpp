// tzrun/agent/worker_env.hpp — what each worker process gets: environment and argv.
//
// Pure functions (no I/O except the documented filesystem probes in
// build_worker_argv / resolve_program), unit-tested against the values real torchrun
// 2.11 exports. Upstream: torch/distributed/elastic/agent/server/local_elastic_agent.py
// (`_start_workers`, `_set_local_rank_env`), torch/distributed/run.py (`config_from_args`:
// OMP_NUM_THREADS, worker command), torch/distributed/elastic/utils/api.py (`macros.substitute`).
//
// Thread-safety: all functions are reentrant; they only read their arguments.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/error.hpp"
#include "tzrun/launch_config.hpp"

namespace tzrun::agent {

/// Ranks and sizes of one worker in one attempt (torchrun's `Worker` + `WorkerGroup`).
struct WorkerSpec {
  int local_rank = 0;
  int global_rank = 0;
  int role_rank = 0;
  int group_rank = 0;        ///< node rank
  int group_world_size = 1;  ///< number of nodes
  int world_size = 1;
  int role_world_size = 1;
  int local_world_size = 1;
  int restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT of this attempt
};

/// A worker cannot be configured or started (bad CUDA_VISIBLE_DEVICES for
/// --virtual-local-rank, missing script, program not found / not executable).
/// ExitCode() is the tzrun exit status to use (ExitCode::kUsage / kNotFound / ...).
class WorkerSetupError : public tzrun::Error {
 public:
  using Error::Error;
};

/// OMP_NUM_THREADS default torchrun applies: returns true (and the value "1") when the
/// agent env has no OMP_NUM_THREADS and nproc_per_node > 1. The caller then prints
/// OmpBannerLines() as a warning and passes the value to workers.
[[nodiscard]] bool NeedsOmpDefault(const LaunchConfig& cfg,
                                   const std::map<std::string, std::string>& base_env);

/// torchrun's warning text, one string per line (first line empty, framing lines of 41 '*'),
/// exactly as run.py logs it.
[[nodiscard]] std::vector<std::string> OmpBannerLines();

/// Full environment of one worker: `base_env` (the agent's, after the OMP default was
/// applied by the caller) plus torchrun's overrides: RANK, LOCAL_RANK, GROUP_RANK,
/// ROLE_RANK, ROLE_NAME, LOCAL_WORLD_SIZE, WORLD_SIZE, GROUP_WORLD_SIZE, ROLE_WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS,
/// TORCHELASTIC_RUN_ID (cfg.rdzv_id), TORCHELASTIC_USE_AGENT_STORE=True,
/// TORCH_NCCL_ASYNC_ERROR_HANDLING (base value or "1"), TORCHELASTIC_ERROR_FILE (may be
/// ""), TORCHELASTIC_SIGNALS_TO_HANDLE (cfg.signals_to_handle joined by ","), and under
/// cfg.virtual_local_rank LOCAL_RANK=0 + CUDA_VISIBLE_DEVICES = the local_rank-th entry
/// of the base list (or the local rank itself when unset). Inherited platform values
/// (RANK, WORLD_SIZE, LOCAL_RANK, ...) are overwritten.
/// Throws WorkerSetupError (kUsage) when --virtual-local-rank needs more entries than
/// CUDA_VISIBLE_DEVICES has.
[[nodiscard]] std::map<std::string, std::string> BuildWorkerEnv(
    const LaunchConfig& cfg, const WorkerSpec& spec,
    const std::map<std::string, std::string>& base_env, const std::string& master_addr,
    int master_port, const std::string& error_file);

/// Python string.Template.safe_substitute(local_rank=...) as torchrun applies it to every
/// worker argument: `$local_rank` / `${local_rank}` -> the rank, `$$` -> `$`, anything else
/// left verbatim.
[[nodiscard]] std::string SubstituteLocalRank(std::string_view arg, int local_rank);

/// How the script is started (decided once per run by ClassifyEntrypoint()).
enum class EntrypointKind {
  kPython,  ///< <python> -u [-m] script args
  kDirect,  ///< script args (--no-python, or an executable non-Python file)
  /// --run-path: <python> -u -c <kRunPathBootstrap> script args. torchrun 2.11 runs
  /// run.py's run_script_path(script, *args) as a function entrypoint in a child of the
  /// launcher: sys.argv = [script, *args]; runpy.run_path(script, run_name="__main__"),
  /// wrapped in errors.record (an uncaught exception is written to TORCHELASTIC_ERROR_FILE).
  /// The bootstrap does the same in a fresh interpreter, with sys.path[0] set to the
  /// interpreter's directory (in torchrun it is the launcher's, the `torchrun` script's bin
  /// directory), not the script's directory.
  kRunPath,
};

/// The `python -c` program of EntrypointKind::kRunPath (argv after it: script, args...).
extern const char* const kRunPathBootstrap;

/// Decides the kind: --run-path → kRunPath (it takes precedence over --no-python and -m, as
/// in torchrun); --no-python → kDirect; -m → kPython; otherwise a
/// file that does not end in ".py", has an execute bit and is either an ELF binary or a
/// `#!` script whose interpreter line does not mention "python" → kDirect; else kPython.
[[nodiscard]] EntrypointKind ClassifyEntrypoint(const LaunchConfig& cfg);

/// Worker argv. kPython: [PYTHON_EXEC from `env`, or "python3", "-u", ("-m"), script,
/// args...]; kRunPath: [that python, "-u", "-c", kRunPathBootstrap, script, args...];
/// kDirect: [script, args...]. `${local_rank}` substitution applies to everything
/// after argv[0] (torchrun's rule). argv[0] is as given (not PATH-resolved; see
/// resolve_program). Throws WorkerSetupError(kUsage) when the (non -m) Python script does
/// not exist (what `python script.py` would exit with, but before anything is spawned).
[[nodiscard]] std::vector<std::string> BuildWorkerArgv(
    const LaunchConfig& cfg, int local_rank, const std::map<std::string, std::string>& env);

/// execvp-style lookup of argv[0] in env["PATH"] (default "/usr/local/bin:/usr/bin:/bin"
/// when unset). A name with a '/' is returned as is if it exists. Throws
/// WorkerSetupError(kNotFound, 127) when nothing is found, (kNotExecutable, 126) when
/// only non-executable candidates exist.
[[nodiscard]] std::string ResolveProgram(const std::string& name,
                                         const std::map<std::string, std::string>& env);

}  // namespace tzrun::agent
