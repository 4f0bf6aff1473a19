// tzrun agent internals: stragglers — a local worker still running long after every other
// local worker of its group exited 0 (tzrun addition; torchrun waits silently).
//
// Once exactly one local worker is still running and every other one exited 0, the agent
// measures how long ago the last of those exited: past --straggler-warning seconds (default
// 60, 0: never) it warns once per attempt naming the worker (local rank, pid, how long); past
// --straggler-timeout seconds (default 0: never) it stops the worker (SIGTERM, then SIGKILL
// after --shutdown-timeout) and the worker group counts as failed, with the worker as its
// root cause (killed by SIGTERM), so --max-restarts applies as to any failure.
//
// Pure functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tzrun::agent {

/// One local worker as the straggler check sees it.
struct RankRun {
  bool running = true;
  bool succeeded = false;  ///< exited 0 (when not running)
  std::chrono::system_clock::time_point end{};
};

struct StragglerLimits {
  double warn_after_s = 60;  ///< --straggler-warning; 0: never warn
  double stop_after_s = 0;   ///< --straggler-timeout; 0: never stop
};

struct StragglerCheck {
  std::optional<std::size_t> straggler;  ///< index of the only worker still running
  double behind_s = 0;                   ///< seconds since the last other worker exited 0
  bool warn = false;                     ///< warn now (not warned yet, past warn_after_s)
  bool stop = false;                     ///< stop it now (past stop_after_s)
  int wake_in_ms = -1;                   ///< poll timeout until the next deadline; -1: none
};

/// Looks at the group at `now`; `warned`: the warning was given already this attempt.
[[nodiscard]] StragglerCheck CheckStraggler(const std::vector<RankRun>& ranks,
                                            std::chrono::system_clock::time_point now,
                                            const StragglerLimits& limits, bool warned);

/// The warning, or (stop_after_s > 0) the error when the worker is stopped.
[[nodiscard]] std::string StragglerMessage(int local_rank, pid_t pid, double behind_s,
                                           double running_s, double stop_after_s);

}  // namespace tzrun::agent
