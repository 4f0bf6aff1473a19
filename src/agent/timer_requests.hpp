// tzrun agent internals: the file-based watchdog timer's pure core (requests and expiry).
//
// Follows torchrun 2.11's FileTimerServer (torch/distributed/elastic/timer/
// file_based_local_timer.py): a worker's FileTimerClient writes one JSON line per request
// to the agent's named pipe,
//   {"version": 1, "pid": <worker pid>, "scope_id": "<scope>",
//    "expiration_time": <unix seconds, float>, "signal": <signal number>}
// A negative expiration_time releases the (pid, scope_id) timer; any other value acquires
// (or replaces) it. Timers whose expiration_time <= now have expired; per pid the one to act
// on is the earliest expired timer with a signal > 0 (none: the pid is not killed). Every
// timer of an acted-on pid is then dropped, as are timers of pids no longer running.
// The I/O side (the pipe, kill(2)) is timer_server.hpp.
//
// Thread-safety: plain values; a TimerTable is used by one thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tzrun::agent {

/// One FileTimerRequest as torchrun's FileTimerClient writes it.
struct TimerRequest {
  pid_t pid = 0;
  std::string scope_id;
  double expiration_time = 0;  ///< unix seconds; < 0 releases the timer
  int signal = 0;              ///< <= 0: never kill

  bool operator==(const TimerRequest&) const = default;
};

/// Parses one request line (without its newline). Returns nullopt and sets `*why` (what is
/// wrong with the line) when it is not a JSON object with an integer "pid", a string
/// "scope_id", a number "expiration_time" and an integer "signal" (torchrun's json.loads
/// and key lookups would raise on such a line; "version" is not checked, as upstream).
std::optional<TimerRequest> ParseTimerRequest(std::string_view line, std::string* why);

/// What the watchdog does about one pid whose timers expired.
struct TimerReap {
  pid_t pid = 0;
  int signal = 0;                   ///< 0: expired, but no timer asked for a signal
  std::vector<std::string> scopes;  ///< every expired scope of that pid, earliest first
};

class TimerTable {
 public:
  /// Applies requests in order: acquire (or replace) or release (negative expiration).
  void Apply(const std::vector<TimerRequest>& requests);
  /// The pids with timers expired at `now` (unix seconds), in pid order.
  [[nodiscard]] std::vector<TimerReap> Expired(double now) const;
  /// Drops every timer of `pids` and of pids for which `running(pid)` is false.
  template <class Running>
  void Clear(const std::set<pid_t>& pids, Running running) {
    for (auto it = timers_.begin(); it != timers_.end();) {
      const pid_t p = it->first.first;
      it = pids.contains(p) || !running(p) ? timers_.erase(it) : std::next(it);
    }
  }
  /// The earliest expiration time of any timer, nullopt when there is none.
  [[nodiscard]] std::optional<double> NextExpiry() const;
  [[nodiscard]] std::size_t Size() const noexcept { return timers_.size(); }
  void Reset() { timers_.clear(); }

 private:
  std::map<std::pair<pid_t, std::string>, TimerRequest> timers_;
};

}  // namespace tzrun::agent
