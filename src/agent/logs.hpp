// tzrun/agent/logs.hpp — worker log directories, tee routing and the console sink.
//
// Follows torchrun 2.11's DefaultLogsSpecs and TailLog
// (torch/distributed/elastic/multiprocessing/api.py, .../tail_log.py) and the prefix
// template handling of torch/distributed/elastic/agent/server/local_elastic_agent.py.
//
// Differences from torchrun (deliberate improvements):
//  * tee'd output is routed from a pipe as it arrives (no 0.1 s file polling); the file
//    still receives every byte, the console gets whole prefixed lines;
//  * a last line without '\n' is terminated with '\n' on the console so the next
//    prefix never lands in the middle of it;
//  * lines are written with one write(2) each, so lines of different ranks never
//    interleave mid-line.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/error.hpp"

namespace tzrun::agent {

class FilteredLog;  // filtered_log.hpp

/// Raised when the log directory cannot be created or reset (message names the path,
/// the OS error and what to do). Exit code 125 (infrastructure).
class LogDirError : public tzrun::Error {
 public:
  explicit LogDirError(const std::string& what)
      : Error(what, ::tzrun::exit_code::kInfrastructure) {}
};

/// torchrun's DefaultLogsSpecs layout:
///   <base>/<run_id>_<8 random chars>/attempt_<N>/<local_rank>/{stdout.log,stderr.log,error.json}
/// where <base> is --log-dir (created if missing) or, when not given, a fresh
/// mkdtemp("<TMPDIR or /tmp>/torchelastic_XXXXXXXX"). The run directory is created once
/// per agent (in create()) and is absolute. Nothing is ever cleaned up.
///
/// With base "/dev/null" logging is disabled: no directory is created, every path
/// accessor returns "/dev/null" and ErrorFile() returns "" (torchrun exports an empty
/// TORCHELASTIC_ERROR_FILE). torchrun then effectively ignores -r/-t: worker streams stay
/// on the agent's console, unprefixed — the agent implements that.
///
/// Thread-safety: immutable after create(); const methods may be called concurrently,
/// ResetAttempt() touches the file system and must not race with itself.
class LogDir {
 public:
  static constexpr std::string_view kDevNull = "/dev/null";

  /// `base`: --log-dir (nullopt or "" => temp dir); `run_id`: rdzv run id ('/' are
  /// replaced by '_'). Throws LogDirError when base is a file or a directory cannot be
  /// created.
  static LogDir Create(const std::optional<std::string>& base, const std::string& run_id);

  [[nodiscard]] bool Disabled() const noexcept { return disabled_; }
  /// The absolute run directory (or "/dev/null").
  [[nodiscard]] const std::string& RunDir() const noexcept { return run_dir_; }
  /// <run_dir>/attempt_<attempt> (path only, nothing is created).
  [[nodiscard]] std::string AttemptDir(int attempt) const;
  /// <run_dir>/attempt_<attempt>/<local_rank> (path only).
  [[nodiscard]] std::string RankDir(int attempt, int local_rank) const;
  [[nodiscard]] std::string StdoutPath(int attempt, int local_rank) const;
  [[nodiscard]] std::string StderrPath(int attempt, int local_rank) const;
  /// Value for the worker's TORCHELASTIC_ERROR_FILE ("" when disabled). The file itself
  /// only exists if the worker writes it.
  [[nodiscard]] std::string ErrorFile(int attempt, int local_rank) const;

  /// Prepares attempt <attempt> for `local_world_size` workers exactly like torchrun's
  /// reify(): removes attempt_<attempt> recursively (a repeated attempt number wipes the
  /// old logs), recreates it and creates one directory per local rank 0..n-1.
  /// No-op when disabled. Throws LogDirError on file-system errors.
  void ResetAttempt(int attempt, int local_world_size) const;

 private:
  LogDir() = default;
  bool disabled_ = false;
  std::string run_dir_;
};

/// Whether ConsoleSink colours rank prefixes.
enum class ColorMode { kAuto, kAlways, kNever };

/// Writes prefixed lines to the agent's stdout/stderr.
///
/// Each call formats into one buffer and issues one write(2) (looping only on partial
/// writes) under a mutex shared by both streams, so lines never interleave mid-line,
/// even for lines longer than PIPE_BUF. Colour (ColorMode::kAuto): the prefix is coloured
/// with a per-local-rank colour only when the fd is a terminal and NO_COLOR is unset or
/// empty (https://no-color.org); decided once at construction.
/// Write errors (EPIPE, EBADF, ...) drop the line silently and are counted; the process
/// should ignore SIGPIPE so a closed console pipe does not kill the agent.
///
/// Thread-safety: all methods are thread-safe.
class ConsoleSink {
 public:
  explicit ConsoleSink(int out_fd = 1, int err_fd = 2, ColorMode mode = ColorMode::kAuto);

  /// Writes prefix + line + '\n' to out_fd (stream 1) or err_fd (stream 2).
  /// `line` must not contain the trailing '\n'.
  void WriteLine(int stream, std::string_view prefix, std::string_view line, int local_rank);
  /// Like write_line for several lines at once, still one write(2) for the whole batch.
  void WriteLines(int stream, std::string_view prefix, const std::vector<std::string_view>& lines,
                  int local_rank);

  [[nodiscard]] bool Colored(int stream) const noexcept {
    return stream == 2 ? err_color_ : out_color_;
  }
  /// Number of lines that could not be written (console closed or broken).
  [[nodiscard]] std::size_t DroppedLines() const;

 private:
  void AppendPrefix(std::string& buf, bool color, std::string_view prefix, int local_rank) const;
  void WriteAll(int fd, std::string_view data, std::size_t nlines);

  int out_fd_;
  int err_fd_;
  bool out_color_;
  bool err_color_;
  mutable std::mutex mu_;
  std::size_t dropped_ = 0;
};

/// Routes one tee'd (worker, stream) pipe: every byte fed goes to `file_fd` (if >= 0) and
/// every complete line goes to the console with `prefix` (if `to_console`).
/// A last line without '\n' is emitted by finish(). Lines longer than kMaxLine bytes
/// without a newline are emitted in kMaxLine chunks (cut on a UTF-8 boundary), each as its
/// own console line. The file receives the exact bytes; TeeRouter never closes file_fd.
/// If writing the file fails (e.g. ENOSPC), file writing stops, the console keeps going
/// and FileError() says what happened (the agent should log it once).
///
/// Thread-safety: one TeeRouter per stream, fed from one thread at a time.
class TeeRouter {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  TeeRouter(ConsoleSink& sink, std::string prefix, int stream, int file_fd, bool to_console,
            int local_rank);

  void Feed(std::string_view bytes);
  /// Emits a pending partial line. Idempotent; feeding after finish() starts a new line.
  void Finish();

  /// Empty unless writing the file failed.
  [[nodiscard]] const std::string& FileError() const noexcept { return file_error_; }

  /// --duplicate-*-filters: every console line is also offered to `filtered` (not owned,
  /// must outlive this router; nullptr: none).
  void DuplicateTo(FilteredLog* filtered) noexcept { filtered_ = filtered; }

 private:
  void WriteFile(std::string_view bytes);
  void EmitLines(const std::vector<std::string_view>& lines, bool had_newline);

  ConsoleSink& sink_;
  std::string prefix_;
  int stream_;
  int file_fd_;
  bool to_console_;
  int local_rank_;
  std::string pending_;  // bytes of the current incomplete line
  std::string file_error_;
  FilteredLog* filtered_ = nullptr;
};

/// The console prefix for one worker. Empty `tmpl` => torchrun's default
/// "[<role><local_rank>]:" (e.g. "[default0]:"). Otherwise `tmpl` (from env
/// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE) is expanded with Python string.Template
/// safe_substitute semantics: $name / ${name} for role_name, local_rank and rank (global),
/// "$$" => "$", unknown names and stray '$' are left verbatim.
std::string MakePrefix(const std::string& tmpl, const std::string& role, int local_rank,
                       int global_rank);

}  // namespace tzrun::agent
