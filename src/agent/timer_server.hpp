// tzrun agent internals: the file-based watchdog timer's server side (the named pipe and
// the kills), driven from the agent's poll loop.
//
// Follows torchrun 2.11 (torch/distributed/elastic/agent/server/local_elastic_agent.py,
// _setup_local_watchdog; torch/distributed/elastic/timer/file_based_local_timer.py,
// FileTimerServer): enabled by TORCHELASTIC_ENABLE_FILE_TIMER=1; the pipe is
// TORCHELASTIC_TIMER_FILE or <tempdir>/watchdog_timer_<uuid4>; an existing file at that path
// is removed and a FIFO created; the workers get TORCHELASTIC_TIMER_FILE. An expired timer
// kills its pid with the requested signal (timer_requests.hpp has the decision).
// Differences: requests are read the moment they arrive (upstream: a thread polling every
// 0.1 s) and expiry is acted on at its deadline; after a kill torchrun's server kills the
// agent itself with the same signal, which the agent does after stopping the rest of the
// group (Agent::ServeTimers, timer_agent.cpp).
//
// Thread-safety: one thread (the agent's).
#pragma once

#include <spdlog/fwd.h>  // spdlog::logger, declared only
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "timer_requests.hpp"

namespace tzrun::agent {

/// The pipe path torchrun would use: `env_path` when set, else <tempdir>/watchdog_timer_<uuid4>
/// with tempdir as Python's tempfile.gettempdir() (TMPDIR, TEMP, TMP, then /tmp).
std::string TimerPipePath(const std::string& env_path,
                          const std::function<const char*(const char*)>& getenv);

class TimerServer {
 public:
  /// Removes whatever is at `path`, creates the FIFO and opens it (non-blocking, with a
  /// writer of our own so that readers see no hang-up between clients). Throws AgentError
  /// (125) naming the path when that fails.
  TimerServer(std::string path, spdlog::logger& log);
  TimerServer(const TimerServer&) = delete;
  TimerServer& operator=(const TimerServer&) = delete;
  /// Closes and removes the FIFO.
  ~TimerServer();

  [[nodiscard]] int Fd() const noexcept { return read_fd_; }
  [[nodiscard]] const std::string& Path() const noexcept { return path_; }
  /// Reads every complete request line available and applies it; bad lines are logged.
  void Read();
  /// Acts on the timers expired at `now` (unix seconds): kills each pid with its signal and
  /// returns the reaps (signal 0: expired without a signal, not killed). A pid already gone
  /// is not returned (torchrun counts it as killed and then kills its own agent).
  std::vector<TimerReap> Reap(double now);
  /// Milliseconds until the next expiry (100 when overdue: a kill to retry), -1 without timers.
  [[nodiscard]] int MsToNextExpiry(double now) const;

 private:
  std::string path_;
  spdlog::logger& log_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::string partial_;
  TimerTable table_;
};

}  // namespace tzrun::agent
