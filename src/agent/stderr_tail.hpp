// tzrun agent internals: the bounded tail of a worker's stderr that the failure report
// and the --summary-json file show for a failed rank.
//
// torchrun 2.11 has no equivalent: its ChildFailedError report
// (torch/distributed/elastic/multiprocessing/errors/__init__.py) only shows what a worker
// wrote to its TORCHELASTIC_ERROR_FILE. tzrun adds the last lines of stderr (tzrun
// extension, see docs/launcher.md "Failure reports").
//
// Bounds: at most kTailLines lines and at most kTailBytes bytes, whichever is smaller.
// Where the tail comes from (worker_stdio.hpp decides):
//   * a pipe tzrun reads (tee'd stderr, or a rank muted by --local-ranks-filter whose
//     stderr is not redirected): a StderrTail ring buffer fed with every byte;
//   * a log file only (-r 2 without -t 2): the end of that file, read once (ReadFileTail);
//   * the agent's console, written by the worker directly: not captured (the lines are
//     already on the console above the report).
//
// Thread-safety: none (one StderrTail per stream, fed from the agent's thread).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tzrun::agent {

inline constexpr std::size_t kTailLines = 20;
inline constexpr std::size_t kTailBytes = 4096;

/// The last lines of `data` within the bounds: at most `max_lines` lines and `max_bytes`
/// bytes, whole lines only (a line longer than max_bytes keeps its last max_bytes bytes,
/// cut on a UTF-8 boundary). When `cut_at_start` is true, data[0] is not known to start a
/// line, so the first (partial) line is dropped unless it is the only one. A trailing
/// '\n' is dropped, '\r' before '\n' too; empty result = nothing but blank lines.
std::string TailLines(std::string_view data, bool cut_at_start, std::size_t max_lines = kTailLines,
                      std::size_t max_bytes = kTailBytes);

/// Keeps the last kTailBytes (plus one line's start) of a byte stream.
class StderrTail {
 public:
  void Feed(std::string_view bytes);
  /// TailLines() of what was kept.
  [[nodiscard]] std::string Text() const;

 private:
  std::string buf_;
  bool cut_ = false;  // bytes were dropped from the front of buf_
};

/// TailLines() of the last kTailBytes (+1, to know whether a line starts there) of the
/// file at `path`; nullopt when it cannot be opened.
std::optional<std::string> ReadFileTail(const std::string& path);

}  // namespace tzrun::agent
