// The file timer's named pipe and kills (see timer_server.hpp; upstream: torch/distributed/
// elastic/timer/file_based_local_timer.py).
#include "timer_server.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <set>
#include <utility>

#include "agent_error.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

bool Running(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

std::string TimerPipePath(const std::string& env_path,
                          const std::function<const char*(const char*)>& getenv) {
  if (!env_path.empty()) return env_path;
  std::string dir = "/tmp";
  for (const char* name : {"TMPDIR", "TEMP", "TMP"}) {
    const char* v = getenv(name);
    if (v != nullptr && *v != '\0') {
      dir = v;
      break;
    }
  }
  return dir + "/watchdog_timer_" + base::Uuid4();
}

TimerServer::TimerServer(std::string path, spdlog::logger& log)
    : path_(std::move(path)), log_(log) {
  auto fail = [this](const std::string& what) {
    const std::string err = base::ErrnoText(errno);
    if (read_fd_ >= 0) ::close(read_fd_);
    throw AgentError("file timer (TORCHELASTIC_ENABLE_FILE_TIMER=1): cannot " + what + " '" +
                         path_ + "': " + err + "; set TORCHELASTIC_TIMER_FILE to a writable path",
                     exit_code::kInfrastructure);
  };
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) fail("remove the old file at");
  if (::mkfifo(path_.c_str(), 0600) != 0) fail("create the named pipe");
  read_fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (read_fd_ < 0) fail("open the named pipe");
  write_fd_ = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (write_fd_ < 0) fail("open the named pipe for writing");
  log_.info("file timer server listening on {}", path_);
}

TimerServer::~TimerServer() {
  ::close(write_fd_);
  ::close(read_fd_);
  ::unlink(path_.c_str());
}

void TimerServer::Read() {
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial_.append(buf, static_cast<std::size_t>(n));
  }
  std::vector<TimerRequest> requests;
  std::size_t start = 0;
  for (std::size_t nl = partial_.find('\n'); nl != std::string::npos;
       nl = partial_.find('\n', start)) {
    const std::string line = partial_.substr(start, nl - start);
    start = nl + 1;
    if (base::Strip(line).empty()) continue;
    std::string why;
    if (auto r = ParseTimerRequest(line, &why)) {
      log_.debug("file timer request: pid {} scope '{}' expiration {} signal {}", r->pid,
                 r->scope_id, r->expiration_time, r->signal);
      requests.push_back(std::move(*r));
    } else {
      log_.warn("file timer: ignoring a malformed request on {} ({}): {}", path_, why, line);
    }
  }
  partial_.erase(0, start);
  table_.Apply(requests);
}

std::vector<TimerReap> TimerServer::Reap(double now) {
  std::vector<TimerReap> done;
  std::set<pid_t> reaped;
  for (auto& r : table_.Expired(now)) {
    const std::string scopes = base::QuotedList(r.scopes);
    reaped.insert(r.pid);
    if (r.signal <= 0) {
      log_.info("file timer: pid {} timer(s) {} expired without a signal: not killed", r.pid,
                scopes);
    } else if (::kill(r.pid, r.signal) != 0) {
      if (errno == ESRCH) {  // gone already: nothing reaped (upstream counts it as a kill)
        log_.info("file timer: pid {} timer(s) {} expired, the process is gone", r.pid, scopes);
      } else {
        log_.error("file timer: cannot kill pid {} with signal {}: {}; retrying", r.pid, r.signal,
                   base::ErrnoText(errno));
        reaped.erase(r.pid);
      }
      continue;
    } else {
      log_.error("file timer: pid {} timer(s) {} expired: killed it with signal {}", r.pid, scopes,
                 r.signal);
    }
    done.push_back(std::move(r));
  }
  table_.Clear(reaped, Running);
  return done;
}

int TimerServer::MsToNextExpiry(double now) const {
  auto next = table_.NextExpiry();
  if (!next) return -1;
  const double ms = std::ceil((*next - now) * 1000.0);
  if (ms <= 0) return 100;  // only a failed kill stays overdue: retried as upstream (0.1 s)
  return ms > 3.6e6 ? 3600000 : static_cast<int>(ms);
}

}  // namespace tzrun::agent
