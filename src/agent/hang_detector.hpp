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
