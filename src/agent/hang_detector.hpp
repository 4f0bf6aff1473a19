// tzrun agent internals: progress reports and hang detection (--hang-timeout S).
//
// Protocol (docs/fault-tolerance.md): with --hang-timeout, each worker gets TZRUN_PROGRESS_FILE,
// a path in a private directory of the agent; the worker reports by replacing the file's content
// with one line "<step> <phase> <unix time>" (write a temporary file in the same directory and
// rename it over, so the agent never reads half a line; examples/progress_helper.py does it for
// PyTorch scripts, tzrec_train at most twice a second). phase is train, eval, checkpoint or any
// other word. The agent reads the files about once a second; a report whose line changed is
// progress.
//
// Decision (StalledRanks, pure): among the ranks that have reported at least once, a rank whose
// last progress is S seconds old while a peer progressed within S is stalled; when no reporting
// rank progressed within S, every reporting rank is (the whole group stopped). Ranks that never
// reported are never stalled (a script without progress reports is not watched). Once a rank is
// stalled, every reporting rank quiet for S minus kStallGrace (at most S/2) is named with it, the
// longest quiet first: ranks of a group that stopped together cross S up to a report interval
// (0.5 s for tzrec_train) plus a read interval (1 s) apart. The agent
// SIGKILLs the stalled ranks, stops the others, and restarts the group within --max-restarts, as
// for a failure, naming each stalled rank with its last step, phase and the state of its threads.
//
// Thread-safety: plain functions and a value type, used from the agent's supervision thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tzrun::agent::detail {

using ProgressClock = std::chrono::steady_clock;

/// What the agent knows of one local rank's progress.
struct RankProgress {
  std::optional<std::string> line;        ///< the last report ("<step> <phase> <time>"), if any
  ProgressClock::time_point last_change;  ///< when `line` last changed
};

/// How much earlier than the timeout a rank that went quiet with a stalled one counts as stalled.
inline constexpr std::chrono::milliseconds kStallGrace{2000};

/// The indices of the stalled ranks at `now` (rule above), the longest quiet first; empty when
/// none.
std::vector<std::size_t> StalledRanks(const std::vector<RankProgress>& ranks,
                                      ProgressClock::time_point now,
                                      std::chrono::milliseconds timeout);

/// What ranks the stalled ranks by how likely each caused the stall.
struct StallFacts {
  bool stopped = false;  ///< its main thread is stopped (state T or t: SIGSTOP, a debugger)
  std::optional<long long> step;  ///< its last reported step, if the report parses
};

/// The stalled ranks (StalledRanks' order: the longest quiet first) reordered by how likely each
/// caused the stall, the most likely first: a stopped rank before a running or waiting one, then
/// the lowest last reported step (its peers got further and wait on it in a collective), then
/// StalledRanks' order. `facts[i]` describes `stalled[i]`. The first is named as the root cause.
std::vector<std::size_t> OrderByLikelyCause(const std::vector<std::size_t>& stalled,
                                            const std::vector<StallFacts>& facts);

/// The step of a report line ("<step> <phase> <time>"), if it parses.
std::optional<long long> ReportStep(const std::string& line);

/// Whether the main thread of `pid` is stopped (/proc/<pid>/stat state T or t); false when the
/// process is gone.
bool IsStopped(pid_t pid);

/// "step 120, phase train" from a report line ("<step> <phase> <time>"); the raw line when it
/// does not parse.
std::string DescribeReport(const std::string& line);

/// Reads a progress file's line ("" when absent or empty; trailing newline dropped).
std::string ReadProgressLine(const std::string& path);

/// The state of every thread of `pid` from /proc/<pid>/task/*/stat: "tid 123 (name) T, ...".
std::string ThreadStates(pid_t pid);

/// Each thread's stack of `pid` for the hang report, headed by the tool's name: `eu-stack -p PID`
/// (elfutils: ELF symbols, ~0.05 s for a libtorch process) when installed, else
/// `gdb -batch -nx -p PID -ex "thread apply all bt"` (gdb reads libtorch's symbol tables: 10 s and
/// more), each under `timeout -k 2 <timeout_s>` (gdb defers SIGTERM while it reads symbols; the
/// SIGKILL 2 s later bounds it). At most `max_bytes` of stack lines. "" when neither tool is
/// installed or the one found printed no frame. Blocks for the tool's run; thread-safe.
std::string ThreadBacktraces(pid_t pid, int timeout_s = 10, std::size_t max_bytes = 8192);
/// Pure: the thread headers ("TID n:" of eu-stack, "Thread n (...)" of gdb) and frame lines ("#k")
/// of a backtrace tool's output, in order; banners, warnings and blank lines dropped.
std::string KeepStackLines(const std::string& out);

}  // namespace tzrun::agent::detail
