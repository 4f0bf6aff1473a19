#include "filtered_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {

bool MatchesAnyFilter(const std::vector<std::string>& filters, std::string_view line) noexcept {
  return std::any_of(filters.begin(), filters.end(), [line](const std::string& needle) {
    return line.find(needle) != std::string_view::npos;
  });
}

FilteredLog::FilteredLog(std::string path, std::vector<std::string> filters)
    : path_(std::move(path)), filters_(std::move(filters)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    throw AgentError("cannot open the filtered log file '" + path_ + "': " + base::ErrnoText(err) +
                         "; check --log-dir permissions and free space",
                     exit_code::kInfrastructure);
  }
}

FilteredLog::~FilteredLog() {
  if (fd_ >= 0) ::close(fd_);
}

void FilteredLog::Offer(std::string_view prefix, std::string_view line, bool had_newline) {
  if (fd_ < 0) return;
  std::string buf;
  buf.reserve(prefix.size() + line.size() + 1);
  buf.append(line);
  if (had_newline) buf += '\n';
  if (!MatchesAnyFilter(filters_, buf)) return;
  if (!had_newline) buf += '\n';
  buf.insert(0, prefix);
  std::string_view rest = buf;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n >= 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    error_ = "writing the filtered log file '" + path_ + "' failed: " + base::ErrnoText(errno) +
             "; further matching lines are not copied — free disk space or choose another "
             "--log-dir";
    ::close(fd_);
    fd_ = -1;
    return;
  }
}

}  // namespace tzrun::agent
