// The failure report of tzrec_train's boundary (failure.hpp).
#include "failure.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tzrec {

bool IsRetryableExit(int exit_code) {
  return exit_code != 2 && exit_code != 3;
}

FailureText DescribeFailure(const std::string& who, const std::string& label,
                            const std::string& message, int exit_code, int origin_rank, int my_rank,
                            std::int64_t unix_time) {
  const std::string prefix = label.empty() ? "" : label + ": ";
  const bool elsewhere = origin_rank >= 0 && my_rank >= 0 && origin_rank != my_rank;
  FailureText out;
  const std::string full = who + ": " + prefix + message;
  if (elsewhere) {
    const std::string origin = std::to_string(origin_rank);
    out.console = who + ": " + prefix + "the same error as rank " + origin +
                  " (printed there; exit " + std::to_string(exit_code) + ")\n";
  } else {
    out.console = full + "\n";
  }
  nlohmann::json extra = {{"timestamp", std::to_string(unix_time)}};
  if (!IsRetryableExit(exit_code)) extra["retryable"] = "false";
  const nlohmann::json file = {
      {"message",
       {{"message",
         elsewhere ? full + " (raised on rank " + std::to_string(origin_rank) + ")" : full},
        {"extraInfo", extra}}}};
  out.error_json = file.dump() + "\n";
  return out;
}

void WriteStderr(const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string WriteErrorFile(const std::string& path, const std::string& json) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create '" + tmp + "': " + std::strerror(errno);
  std::size_t done = 0;
  while (done < json.size()) {
    const ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "cannot write '" + tmp + "': " + why;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + path + "': " + why;
  }
  return "";
}

}  // namespace tzrec
