// The agent's supervision loop: waiting for events, reaping workers, stopping a group
// (see agent_impl.hpp for the structure).
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <utility>
#include <vector>

#include "agent_error.hpp"
#include "agent_impl.hpp"
#include "straggler.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

AttemptResult Agent::Monitor() {
  bool straggler_warned = false;
  while (true) {
    if (stop_signal_ != 0) return AttemptResult::kSignaled;
    if (!failures_.empty()) return AttemptResult::kFailed;
    if (std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.reaped; })) {
      return AttemptResult::kSucceeded;
    }
    if (pending_event_) return AttemptResult::kPeerEvent;
    int timeout_ms = -1;
    if (WatchStraggler(straggler_warned, timeout_ms)) return AttemptResult::kFailed;
    if (WatchHangs(timeout_ms)) return AttemptResult::kFailed;
    WaitEvents(timeout_ms, nullptr);
  }
}

bool Agent::WatchStraggler(bool& warned, int& timeout_ms) {
  std::vector<RankRun> runs;
  for (const auto& w : workers_) {
    const bool ok = WIFEXITED(w.wait_status) && WEXITSTATUS(w.wait_status) == 0;
    runs.push_back(RankRun{!w.reaped, w.reaped && ok, w.end_time});
  }
  const auto now = SysClock::now();
  const auto c =
      CheckStraggler(runs, now, {cfg_.straggler_warning, cfg_.straggler_timeout}, warned);
  timeout_ms = c.wake_in_ms;
  if (!c.straggler || (!c.warn && !c.stop)) return false;
  Worker& w = workers_[*c.straggler];
  const double running_s = std::chrono::duration<double>(now - w.start_time).count();
  if (c.warn) {
    warned = true;
    log_->warn("{}", StragglerMessage(w.local_rank, w.pid, c.behind_s, running_s, 0));
    return false;
  }
  log_->error("{}",
              StragglerMessage(w.local_rank, w.pid, c.behind_s, running_s, cfg_.straggler_timeout));
  const pid_t pid = w.pid;
  StopGroup(SIGTERM);
  if (failures_.empty()) {  // it exited 0 when told to stop: still the group's failure
    WorkerFailure f;
    f.local_rank = w.local_rank;
    f.global_rank = w.global_rank;
    f.pid = pid;
    f.signal = SIGTERM;
    f.error_file = w.error_file;
    f.time = SysClock::now();
    failures_.push_back(std::move(f));
  }
  return true;
}

void Agent::WaitEvents(int timeout_ms, bool* escalate) {
  std::vector<pollfd> fds;
  fds.push_back({signals_->Fd(), POLLIN, 0});
  const std::size_t streams = stdio_ ? stdio_->Streams() : 0;
  for (std::size_t i = 0; i < streams; ++i) {
    const int fd = stdio_->Fd(i);
    fds.push_back({fd, static_cast<short>(fd >= 0 ? POLLIN : 0), 0});
  }
  // Rendezvous watcher events (other nodes failed / joined / left, store lost): only
  // looked at while workers run; the first one is kept for monitor().
  const int event_fd = rdzv_ && !workers_.empty() && !pending_event_ ? rdzv_->EventFd() : -1;
  fds.push_back({event_fd, static_cast<short>(event_fd >= 0 ? POLLIN : 0), 0});
  const int timer_fd = timer_ ? timer_->Fd() : -1;  // file timer requests (timer_agent.cpp)
  fds.push_back({timer_fd, static_cast<short>(timer_fd >= 0 ? POLLIN : 0), 0});
  StampHealth(false);     // the loop is alive (health check, timer_agent.cpp)
  RefreshMetrics(false);  // --metrics-port (observe_agent.cpp), throttled
  int rc = ::poll(fds.data(), fds.size(), LoopTimeoutMs(timeout_ms));
  if (rc < 0) {
    if (errno == EINTR) return;
    throw AgentError("poll() failed: " + base::ErrnoText(errno), exit_code::kInfrastructure);
  }
  if ((fds[0].revents & POLLIN) != 0) ReadSignals(escalate);
  for (std::size_t i = 1; i <= streams; ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) stdio_->Pump(i - 1);
  }
  if (event_fd >= 0 && (fds[streams + 1].revents & POLLIN) != 0) {
    pending_event_ = rdzv_->TakeEvent();
  }
  ServeTimers((fds.back().revents & POLLIN) != 0);
}

void Agent::ReadSignals(bool* escalate) {
  signalfd_siginfo si{};
  bool child = false;
  while (::read(signals_->Fd(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) {
      child = true;
    } else if (signals_->Forwarded(sig)) {
      log_->warn("Received {}: passing it on to the workers (--forward-signals); the job goes on",
                 SignalName(sig));
      SignalTargets(sig, false);
    } else if (signals_->Handled(sig)) {
      if (stop_signal_ == 0) {
        stop_signal_ = sig;
        log_->warn("Received {} death signal, shutting down workers", SignalName(sig));
      } else if (escalate != nullptr) {
        log_->warn("Received {} again while shutting down: killing the workers now",
                   SignalName(sig));
        *escalate = true;
      }
    }
  }
  if (child) ReapAll();
}

void Agent::ReapAll() {
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    if (pid == guardian_.Pid()) {
      log_->warn(
          "the guardian process {} exited unexpectedly: workers may outlive a "
          "SIGKILLed tzrun",
          pid);
      guardian_.Close();
      continue;
    }
    auto it = std::find_if(workers_.begin(), workers_.end(),
                           [pid](const Worker& w) { return w.pid == pid; });
    if (it == workers_.end()) {
      log_->debug("reaped orphaned descendant {}", pid);
      continue;
    }
    RecordExit(*it, status);
  }
}

void Agent::RecordExit(Worker& w, int status) {
  w.reaped = true;
  w.wait_status = status;
  w.end_time = SysClock::now();
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok) {
    log_->info("worker local_rank {} (pid {}) exited 0", w.local_rank, w.pid);
    return;
  }
  WorkerFailure f;
  f.local_rank = w.local_rank;
  f.global_rank = w.global_rank;
  f.pid = w.pid;
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  f.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  f.error_file = w.error_file;
  f.time = w.end_time;
  f.stopped_by_tzrun = w.stopped_by_tzrun && !w.hang;  // a hung rank is the cause, not a victim
  f.muted = w.muted;
  f.hang = w.hang;
  f.hang_order = w.hang_order;
  log_->info("worker local_rank {} (pid {}) failed: {}", w.local_rank, w.pid,
             f.signal != 0 ? "killed by " + SignalName(f.signal)
                           : "exit code " + std::to_string(f.exit_code));
  failures_.push_back(std::move(f));
}

std::vector<pid_t> Agent::StrayChildren() const {
  std::vector<pid_t> out;
  for (pid_t c : detail::ListChildren(::getpid())) {
    if (c == guardian_.Pid() || preexisting_children_.contains(c)) continue;
    if (std::any_of(workers_.begin(), workers_.end(),
                    [c](const Worker& w) { return w.pid == c; })) {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

bool Agent::AllGone() {
  for (auto& w : workers_) {
    if (!w.reaped) return false;
    if (!w.group_done) {
      if (detail::GroupAlive(w.pid)) return false;
      w.group_done = true;
      guardian_.Remove(w.pid);
    }
  }
  return StrayChildren().empty();
}

void Agent::SignalTargets(int sig, bool log_each) {
  for (auto& w : workers_) {
    if (w.group_done) continue;
    if (!w.reaped && log_each) {
      log_->warn("Sending process {} closing signal {}", w.pid, SignalName(sig));
    }
    if (::killpg(w.pid, sig) != 0 && w.reaped && errno == ESRCH) {
      w.group_done = true;
      guardian_.Remove(w.pid);
    }
  }
  SignalStrays(sig);
}

void Agent::SignalStrays(int sig) {
  // Descendants re-parented to us (we are a child subreaper), e.g. daemonized grandchildren
  // that left the worker's process group; new ones appear whenever their parent dies.
  for (pid_t c : StrayChildren()) {
    auto [it, inserted] = signalled_strays_.try_emplace(c, sig);
    if (!inserted && it->second == sig) continue;
    it->second = sig;
    log_->debug("sending {} to re-parented descendant {}", SignalName(sig), c);
    ::kill(c, sig);
  }
}

void Agent::StopGroup(int sig) {
  ReapAll();
  signalled_strays_.clear();
  if (AllGone()) return;
  for (auto& w : workers_) {
    if (!w.reaped) w.stopped_by_tzrun = true;  // whatever it exits with now, tzrun caused it
  }
  SignalTargets(sig, true);
  int forwarded = sig;
  bool escalate = false;
  const auto grace = std::chrono::duration_cast<milliseconds>(
      std::chrono::duration<double>(std::max(0.0, cfg_.shutdown_timeout)));
  const auto deadline = SteadyClock::now() + grace;
  while (!AllGone() && !escalate) {
    const auto now = SteadyClock::now();
    if (now >= deadline) break;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count();
    WaitEvents(static_cast<int>(std::min<long long>(50, left + 1)), &escalate);
    if (stop_signal_ != 0 && stop_signal_ != forwarded) {  // e.g. Ctrl-C during a restart
      forwarded = stop_signal_;
      SignalTargets(forwarded, true);
    } else {
      SignalStrays(forwarded);
    }
  }
  if (AllGone()) return;
  KillGroup(sig);
}

void Agent::KillGroup(int sig) {
  for (const auto& w : workers_) {
    if (!w.reaped) {
      log_->warn("Unable to shutdown process {} via {}, forcefully exiting via SIGKILL", w.pid,
                 SignalName(sig));
    }
  }
  const auto hard_deadline = SteadyClock::now() + std::chrono::seconds(10);
  auto next_kill = SteadyClock::now();
  while (!AllGone()) {
    const auto now = SteadyClock::now();
    if (now >= hard_deadline) {
      log_->error(
          "some worker processes did not die within 10 s of SIGKILL (stuck in the "
          "kernel, e.g. uninterruptible I/O); giving up on them");
      return;
    }
    if (now >= next_kill) {  // re-sent: a dying parent may re-parent more descendants to us
      SignalTargets(SIGKILL, false);
      next_kill = now + milliseconds(200);
    }
    WaitEvents(20, nullptr);
  }
}

void Agent::DrainTees() {
  // All writers are dead by now (or stuck): read what is left, waiting at most 2 s for EOF.
  if (!stdio_) return;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
  while (stdio_->AnyOpen()) {
    if (SteadyClock::now() >= deadline) break;
    WaitEvents(50, nullptr);
  }
  stdio_->FinishAll();
}

}  // namespace tzrun::agent
