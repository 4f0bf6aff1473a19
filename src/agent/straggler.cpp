#include "straggler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace tzrun::agent {
namespace {

std::string Secs(double s) {
  std::ostringstream out;
  out << (s >= 10 ? std::round(s) : std::round(s * 10) / 10);
  return out.str() + " s";
}

/// Milliseconds from `behind_s` to `limit_s` (at least 1), -1 when there is no such limit.
long long MsUntil(double limit_s, double behind_s) {
  if (limit_s <= 0 || behind_s >= limit_s) return -1;
  return static_cast<long long>(std::ceil((limit_s - behind_s) * 1000.0)) + 1;
}

}  // namespace

StragglerCheck CheckStraggler(const std::vector<RankRun>& ranks,
                              std::chrono::system_clock::time_point now,
                              const StragglerLimits& limits, bool warned) {
  StragglerCheck c;
  if (ranks.size() < 2) return c;
  std::chrono::system_clock::time_point last_end{};
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].running) {
      if (c.straggler) return StragglerCheck{};  // more than one still running
      c.straggler = i;
    } else if (!ranks[i].succeeded) {
      return StragglerCheck{};  // a failure is the failure path's business
    } else {
      last_end = std::max(last_end, ranks[i].end);
    }
  }
  if (!c.straggler) return c;
  c.behind_s = std::max(0.0, std::chrono::duration<double>(now - last_end).count());
  c.stop = limits.stop_after_s > 0 && c.behind_s >= limits.stop_after_s;
  c.warn = !c.stop && !warned && limits.warn_after_s > 0 && c.behind_s >= limits.warn_after_s;
  const long long warn_in = warned || c.warn ? -1 : MsUntil(limits.warn_after_s, c.behind_s);
  const long long stop_in = c.stop ? -1 : MsUntil(limits.stop_after_s, c.behind_s);
  long long wake = warn_in < 0 ? stop_in : stop_in < 0 ? warn_in : std::min(warn_in, stop_in);
  c.wake_in_ms = static_cast<int>(std::min<long long>(wake, std::numeric_limits<int>::max()));
  return c;
}

std::string StragglerMessage(int local_rank, pid_t pid, double behind_s, double running_s,
                             double stop_after_s) {
  std::string m = "worker local_rank " + std::to_string(local_rank) + " (pid " +
                  std::to_string(pid) + ") is still running " + Secs(behind_s) +
                  " after every other local worker exited 0 (running " + Secs(running_s) +
                  " in all)";
  if (stop_after_s > 0) {
    std::ostringstream limit;
    limit << stop_after_s;
    return m + ": stopping it (--straggler-timeout=" + limit.str() +
           "); the worker group counts as failed";
  }
  return m +
         "; still waiting for it (--straggler-timeout S stops such a worker, "
         "--straggler-warning S moves this warning)";
}

}  // namespace tzrun::agent
