// tzrun/agent/report.hpp — worker error files, the failure report and the run summary.
//
// Upstream: torch/distributed/elastic/multiprocessing/errors/__init__.py (ProcessFailure,
// ChildFailedError.format_msg, record) and .../errors/error_handler.py (error file JSON,
// dump_error_file), PyTorch 2.11.
//
// --summary-json schema (tzrun extension; "schema_version": 1). Times are unix seconds
// (floating point), durations seconds. Fields are only ever added, never renamed.
//   {
//     "schema_version": 1,
//     "tool": "tzrun",
//     "run_id": string,                 // rendezvous run id
//     "hostname": string,               // agent host (FQDN as torchrun reports it); may be ""
//     "outcome": "succeeded" | "failed" | "signaled" | "infrastructure_error",
//     "exit_code": int,                 // tzrun's own exit status
//     "restarts": int,                  // group restarts performed (the next two summed)
//     "failure_restarts": int,          // after failures (this node's last
//                                       //   TORCHELASTIC_RESTART_COUNT; --max-restarts)
//     "membership_restarts": int,       // for membership changes (--max-membership-restarts)
//     "no_restart_reason": string|null, // why a failure was not retried although restarts
//                                       //   were left (not retryable), or why membership
//                                       //   restarts stopped; null otherwise
//     "world_size": int,                // WORLD_SIZE of the last attempt
//     "start_time": number, "end_time": number, "duration_s": number,
//     "root_cause_rank": int | null,    // GLOBAL rank of the root-cause worker (last attempt)
//     "root_cause": rank object | null, // that worker's entry of "ranks"
//     "ranks": [rank object, ...],      // last attempt, ordered as given
//     "attempts": [[rank object, ...], ...]  // every attempt in order (attempt i = restart i)
//   }
//   rank object: {
//     "local_rank": int, "global_rank": int, "pid": int,
//     "exit_code": int,           // WEXITSTATUS, or 128+signal when killed by a signal
//     "signal": int,              // 0 unless killed by a signal
//     "signal_name": string|null, // e.g. "SIGKILL"
//     "state": "succeeded" | "failed" | "signaled" | "stopped",
//                                 // "stopped": tzrun itself stopped it (see stopped_by_tzrun)
//                                 // and it exited non-zero
//     "restarts": int,            // TORCHELASTIC_RESTART_COUNT of that attempt
//     "start_time": number, "end_time": number, "duration_s": number,
//     "error_message": string,    // from the worker's error file, "" if none
//     "stopped_by_tzrun": bool,   // tzrun sent it SIGTERM/SIGKILL (or the shutdown signal it
//                                 // received) because another rank failed, a peer node
//                                 // changed or tzrun shut down, before it exited
//     "stderr_tail": string|null  // non-zero exit only: its last stderr lines (at most 20
//                                 // lines / 4096 bytes, '\n'-separated, no trailing '\n');
//                                 // null when succeeded or when its stderr went straight to
//                                 // the console (not captured, see stderr_tail.hpp)
//   }
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/error.hpp"

namespace tzrun::agent {

/// Raised when a report artefact (summary JSON, copied error file) cannot be written.
/// Exit code 125 (infrastructure); the agent logs it and keeps its exit status.
class ReportError : public tzrun::Error {
 public:
  explicit ReportError(const std::string& what)
      : Error(what, ::tzrun::exit_code::kInfrastructure) {}
};

/// What a worker left in its TORCHELASTIC_ERROR_FILE.
struct ErrorFileInfo {
  std::string message;              ///< "<ExceptionType>: <str(e)>" or the plain message
  std::string traceback;            ///< extraInfo.py_callstack ("" if absent)
  std::optional<double> timestamp;  ///< unix seconds when the worker recorded the error
  /// extraInfo.retryable is "false" (or JSON false): the worker says a restart cannot help
  /// (tzrun extension, written by tzrec_train; the agent does not restart then).
  bool not_retryable = false;
};

/// Reads a torchelastic error file. Accepted forms (error_handler.py):
///   {"message": {"message": "...", "extraInfo": {"py_callstack": "...", "timestamp": "...",
///                                                "retryable": "false"}}}   (retryable optional)
///   {"message": "<plain string>", "timestamp": N}   (timestamp optional)
/// Returns nullopt when `path` is empty, missing or an empty file. A file that is not
/// valid JSON or has neither shape yields an ErrorFileInfo whose message says so (never
/// throws). Thread-safe.
std::optional<ErrorFileInfo> ReadErrorFile(const std::string& path);

/// One failed (or agent-terminated) worker of an attempt.
struct WorkerFailure {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = 0;
  int exit_code = 0;       ///< >= 0: WEXITSTATUS (ignored when signal != 0)
  int signal = 0;          ///< signal number if the worker was killed by one, else 0
  std::string error_file;  ///< its TORCHELASTIC_ERROR_FILE ("" if none)
  std::chrono::system_clock::time_point time;  ///< when the agent observed the exit
  bool stopped_by_tzrun = false;               ///< tzrun signalled it to stop before it exited
  bool muted = false;  ///< its console output was hidden by --local-ranks-filter
  std::optional<std::string> stderr_tail =
      std::nullopt;  ///< last stderr lines; nullopt: not captured
  /// --hang-timeout killed it: why (its last report, how long ago, its threads).
  std::optional<std::string> hang = std::nullopt;
  /// Among the ranks --hang-timeout killed together: 0 for the likely cause, 1 for the next...
  /// (hang_detector.hpp OrderByLikelyCause); -1 when not hung.
  int hang_order = -1;
};

/// "SIGKILL" for 9 etc. (Python's signal.Signals(n).name); "<N/A>" if unknown.
std::string SignalName(int sig);

/// The exit status tzrun returns for this failure: 128+signal, else the exit code.
int TzrunExitCode(const WorkerFailure& f) noexcept;

/// torchrun's root-cause rule (ChildFailedError.get_first_failure): the failure with the
/// smallest timestamp, where the timestamp is the error file's if it has one, else the
/// observation time; ties go to the earliest element. Failures stopped by tzrun are only
/// chosen when every failure was (tzrun: a rank tzrun stopped is never the root cause of
/// the failure that made tzrun stop it). When --hang-timeout killed ranks, the one with the
/// lowest hang_order (the likely cause of the stall) is the root cause. Precondition: non-empty.
std::size_t SelectRootCause(const std::vector<WorkerFailure>& failures);

/// torchrun's ChildFailedError message, byte-for-byte in torchrun's layout, e.g.
///   ============================================================
///   train.py FAILED
///   ------------------------------------------------------------
///   Failures:
///     <NO_OTHER_FAILURES>            (or the other failures' blocks)
///   ------------------------------------------------------------
///   Root Cause (first observed failure):
///   [0]:
///     time      : 2025-01-01_12:00:00
///     host      : node1.example.com
///     rank      : 1 (local_rank: 1)
///     exitcode  : -9 (pid: 1234)
///     error_file: <N/A>
///     traceback : Signal 9 (SIGKILL) received by PID 1234
///   ============================================================
/// Block index = position among the reported failures; border width = min(60, longest
/// line/title). time = error-file timestamp or observation time, local time, whole seconds.
/// tzrun extensions (torchrun's layout otherwise):
///  * a failure with no error-file content and a non-empty stderr_tail gets, after its
///    traceback line, "  stderr    : last <n> line(s):" and the lines indented by 4;
///  * failures stopped by tzrun are not blocks (unless the root cause is one of them, i.e.
///    all were); after the closing border one line lists them:
///    "tzrun: stopped by tzrun after the failure (not failures themselves): rank 0
///     (local_rank: 0, pid: 1235, exitcode: -15), ..." (one line).
/// Then one tzrun line naming the root cause and tzrun's exit code:
///   "tzrun: root cause is rank 1 (local_rank: 1, pid: 1234), killed by signal 9 (SIGKILL);
///    exit code 137" (one line), and for every reported failure muted by
/// --local-ranks-filter the line of FormatMutedFailure(f, false).
/// The result ends with '\n'. Precondition: root_index < failures.size().
std::string FormatFailureReport(std::string_view entrypoint,
                                const std::vector<WorkerFailure>& failures, std::size_t root_index,
                                std::string_view hostname);

/// The console note for a failed rank whose output --local-ranks-filter hid:
///   "rank 1 (local_rank: 1, pid: 1234) failed (exitcode: 1) with its output hidden by
///    --local-ranks-filter; <where its stderr is>"
/// where the last part is "see its entry in the report above" (with_tail false, tail
/// non-empty), "its last stderr lines:\n  <line>\n  <line>..." (with_tail true),
/// "it wrote nothing to stderr" or "its stderr was not captured". No trailing '\n'.
std::string FormatMutedFailure(const WorkerFailure& f, bool with_tail);

/// torchrun's ERROR log message for the root cause (without the log-line header):
/// "failed (exitcode: <c>) local_rank: <l> (pid: <p>) of binary: <entrypoint>"
/// (<c> is negative for signals, as in torchrun).
std::string FormatFailureLogMessage(const WorkerFailure& f, std::string_view entrypoint);

/// The host name as Python's socket.getfqdn() reports it (first dotted name of the
/// reverse lookup, else the lookup's canonical name, else gethostname()). May block on
/// DNS; call once.
std::string LocalFqdn();

/// torchrun's `@record` behaviour for the agent itself: when the agent has
/// TORCHELASTIC_ERROR_FILE set (`dest_path`), copy the root-cause worker's error JSON
/// there, adding message.errorCode = <exit code, negative for signals> when non-zero and
/// the message is an object. Returns false (nothing written) when dest_path is empty or
/// the worker left no readable JSON error file. An existing dest file is replaced
/// atomically. Throws ReportError if dest_path cannot be written.
bool CopyRootErrorFile(const WorkerFailure& root, const std::string& dest_path);

/// Per-worker outcome for the run summary (see schema above).
struct RankOutcome {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = 0;
  int exit_code = 0;  ///< WEXITSTATUS, or 128+signal when signal != 0
  int signal = 0;
  int restarts = 0;  ///< restart count of the attempt this worker belonged to
  double start_time = 0;
  double end_time = 0;
  std::string error_message;
  bool stopped_by_tzrun = false;
  std::optional<std::string> stderr_tail = std::nullopt;  ///< only for non-zero exits (see schema)
  std::optional<std::string> hang = std::nullopt;  ///< --hang-timeout killed it: why (see schema)
};

struct RunSummary {
  std::string run_id;
  std::string outcome;  ///< "succeeded" | "failed" | "signaled" | "infrastructure_error"
  int exit_code = 0;
  int restarts = 0;
  int failure_restarts = 0;
  int membership_restarts = 0;
  std::string no_restart_reason;  ///< "" => null
  int world_size = 0;
  double start_time = 0;
  double end_time = 0;
  std::vector<RankOutcome> ranks;                  ///< last attempt
  std::vector<std::vector<RankOutcome>> attempts;  ///< all attempts, in order
  std::optional<std::size_t> root_cause_rank;      ///< GLOBAL rank of the root cause
  std::string hostname;                            ///< optional
};

/// The summary as JSON text (schema above, pretty-printed, trailing '\n').
std::string SummaryToJson(const RunSummary& s);

/// Writes SummaryToJson(s) to `path` atomically: a temp file in the same directory,
/// fsync, rename over `path`, fsync of the directory. On any failure the temp file is
/// removed, an existing `path` is left untouched and ReportError is thrown.
void WriteSummaryJson(const std::string& path, const RunSummary& s);

}  // namespace tzrun::agent
