// tzrun agent internals: the stdout/stderr plumbing of one worker group attempt — log
// files, tee pipes and the descriptors each worker gets as fd 1 and fd 2.
//
// Routing per worker stream (torchrun's -r/--redirects, -t/--tee and --local-ranks-filter,
// torch/distributed/elastic/multiprocessing/api.py DefaultLogsSpecs / TailLog):
//   not redirected          → the agent's console (or /dev/null when filtered out)
//   redirected              → the log file only
//   tee'd and shown         → a pipe the agent reads: every byte to the file, whole
//                             prefixed lines to the console (TeeRouter, logs.hpp)
//   tee'd but filtered out  → the log file only
//   stderr of a filtered-out rank that is not redirected → a pipe the agent reads into a
//                             StderrTail only (stdout still goes to /dev/null)
//
// Every stderr tzrun reads (a pipe) also feeds a StderrTail; a stderr written to a log
// file only is tailed from the file; a stderr on the console is not captured
// (StderrTailOf(), stderr_tail.hpp).
//
// Ownership (RAII): AttemptStdio owns the read ends of the tee pipes and the tee'd log
// files until it is destroyed; ChildFds owns the ends given to one worker and closes them
// when it goes out of scope (after spawn: the worker holds its own copies).
//
// Thread-safety: none; used from the agent's supervision thread.
#pragma once

#include <spdlog/fwd.h>  // spdlog::logger, declared only

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filtered_log.hpp"
#include "logs.hpp"
#include "stderr_tail.hpp"
#include "tzrun/launch_config.hpp"

namespace tzrun::agent {

/// A file descriptor closed on destruction (move-only).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  [[nodiscard]] int Get() const noexcept { return fd_; }
  int Release() noexcept;
  void Reset() noexcept;

 private:
  int fd_ = -1;
};

/// How one worker's output is routed.
struct WorkerStdioSpec {
  int local_rank = 0;
  bool shown = true;           ///< --local-ranks-filter admits this rank (else /dev/null)
  Std redirects = Std::kNone;  ///< -r for this rank; Std::kNone when logging is disabled
  Std tee = Std::kNone;        ///< -t for this rank (implies redirect); kNone when disabled
  std::string stdout_path;     ///< log file of stdout (used when redirected)
  std::string stderr_path;     ///< log file of stderr (used when redirected)
  std::string prefix;          ///< console prefix of tee'd lines (make_prefix)
};

/// The descriptors one worker starts with; closed when this goes out of scope.
class ChildFds {
 public:
  /// fd for the worker's stdout (1) or stderr (2); -1 means "inherit the agent's".
  [[nodiscard]] int Fd(int stream) const noexcept { return fds_[Index(stream)]; }

 private:
  friend class AttemptStdio;
  static std::size_t Index(int stream) noexcept { return stream == 1 ? 0 : 1; }
  std::array<int, 2> fds_{-1, -1};
  std::vector<UniqueFd> owned_;  // ends that belong to the child only
};

/// Every tee'd stream and log file of one attempt.
class AttemptStdio {
 public:
  /// `console` receives tee'd lines, `devnull` is an open /dev/null (filtered-out ranks),
  /// `log` gets file-write errors. All three must outlive this object.
  AttemptStdio(ConsoleSink& console, int devnull, spdlog::logger& log)
      : console_(console), devnull_(devnull), log_(log) {}

  /// --duplicate-*-filters: creates (truncates) `path`, the attempt's filtered copy of stream
  /// 1 or 2; call before OpenWorker(). Every tee'd, shown stream opened afterwards copies its
  /// matching lines there (filtered_log.hpp). Throws AgentError (125) when it cannot be opened.
  void OpenFiltered(int stream, const std::string& path, const std::vector<std::string>& filters);

  /// Opens the log files and tee pipes of one worker. Throws AgentError (125) when a log
  /// file cannot be opened or a pipe cannot be created (what is open for this worker is
  /// closed again).
  [[nodiscard]] ChildFds OpenWorker(const WorkerStdioSpec& spec);

  /// Number of tee'd streams; stream i reads from fd(i) (-1 once finished).
  [[nodiscard]] std::size_t Streams() const noexcept { return tees_.size(); }
  [[nodiscard]] int Fd(std::size_t i) const noexcept { return tees_[i].fd.Get(); }
  [[nodiscard]] bool AnyOpen() const noexcept;

  /// Reads what stream i has without blocking; at EOF flushes its last partial line,
  /// logs a file-write error and closes the read end.
  void Pump(std::size_t i);
  /// Pumps every open stream once more, then flushes and closes those still open (their
  /// writers are stuck).
  void FinishAll();

  /// The last lines of local rank `local_rank`'s stderr (stderr_tail.hpp bounds): from its
  /// pipe's StderrTail or the end of its stderr log file; nullopt when its stderr went to
  /// the console (not captured) or the file cannot be read. Call after FinishAll().
  [[nodiscard]] std::optional<std::string> StderrTailOf(int local_rank) const;

 private:
  struct Tee {
    UniqueFd fd;                        // read end of the worker's pipe
    std::unique_ptr<TeeRouter> router;  // null: tail only (muted rank's stderr)
    std::unique_ptr<StderrTail> tail;   // stderr streams only
  };
  struct TailSource {
    int tee = -1;      // index into tees_, or -1
    std::string file;  // stderr log file when not read through a pipe
  };
  void LogFilteredErrors();
  void OpenStream(const WorkerStdioSpec& spec, int stream, ChildFds& child);
  void OpenPipe(const WorkerStdioSpec& spec, int stream, int file_fd, ChildFds& child);

  ConsoleSink& console_;
  int devnull_;
  spdlog::logger& log_;
  std::vector<Tee> tees_;
  std::array<std::unique_ptr<FilteredLog>, 2> filtered_;  // stdout, stderr (or null)
  std::vector<UniqueFd> files_;      // tee'd log files (TeeRouter does not own them)
  std::map<int, TailSource> tails_;  // local rank -> where its stderr tail comes from
};

}  // namespace tzrun::agent
