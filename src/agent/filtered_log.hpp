// tzrun agent internals: --duplicate-stdout-filters / --duplicate-stderr-filters.
//
// Follows torchrun 2.11's PContext (torch/distributed/elastic/multiprocessing/api.py) and
// TailLog (.../tail_log.py): when a filter list is non-empty, every attempt opens (truncates)
// <run_dir>/attempt_<N>/filtered_stdout.log (filtered_stderr.log for stderr), and every line of
// a *tee'd* stream of a rank shown on the console (-t, after --local-ranks-filter) that contains
// any of the filters as a substring is copied there with its console prefix ("[default0]:").
// The file is shared by all local ranks of the attempt. Matching is torchrun's: `needle in line`
// where the line still has its '\n', so an empty filter matches every line.
//
// Differences (deliberate): a last line without '\n' is written with one (as on tzrun's
// console); a line over TeeRouter::kMaxLine bytes is matched chunk by chunk.
// Thread-safety: one FilteredLog per attempt and stream, used from the agent's thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tzrun::agent {

/// Whether `line` contains any of `filters` (an empty filter matches every line).
[[nodiscard]] bool MatchesAnyFilter(const std::vector<std::string>& filters,
                                    std::string_view line) noexcept;

/// The file of one attempt's filtered copy of one stream.
class FilteredLog {
 public:
  /// Creates or truncates `path` (as torchrun's open(path, "w")). Throws AgentError (125)
  /// naming the path and the OS error.
  FilteredLog(std::string path, std::vector<std::string> filters);
  FilteredLog(const FilteredLog&) = delete;
  FilteredLog& operator=(const FilteredLog&) = delete;
  ~FilteredLog();

  /// Offers one console line (without its '\n'; `had_newline`: it ended with one). A matching
  /// line is written as prefix + line + '\n' in one write(2). A write error stops the file
  /// and is kept in WriteError().
  void Offer(std::string_view prefix, std::string_view line, bool had_newline);
  /// Empty unless a write failed (the agent logs it once).
  [[nodiscard]] const std::string& WriteError() const noexcept { return error_; }
  [[nodiscard]] const std::string& Path() const noexcept { return path_; }

 private:
  std::string path_;
  std::vector<std::string> filters_;
  int fd_ = -1;
  std::string error_;
};

}  // namespace tzrun::agent
