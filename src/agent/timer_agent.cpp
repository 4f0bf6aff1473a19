// The agent's file timer and health check (see timer_server.hpp and health_check.hpp for the
// torchrun behaviour they follow; agent_impl.hpp for the loop they hook into).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "agent_impl.hpp"
#include "health_server.hpp"
#include "timer_server.hpp"

namespace tzrun::agent {
namespace {

double UnixNow() {
  using std::chrono::duration;
  return duration<double>(SysClock::now().time_since_epoch()).count();
}

/// How often the loop turns (and stamps progress) when a health check is served.
constexpr int kHealthTickMs = 1000;

}  // namespace

void Agent::StartWatchdogs() {
  auto get = [this](const char* name) -> std::string {
    auto it = base_env_.find(name);
    return it == base_env_.end() ? std::string() : it->second;
  };
  const std::string enable = get("TORCHELASTIC_ENABLE_FILE_TIMER");
  if (enable == "1") {
    const std::string path = TimerPipePath(get("TORCHELASTIC_TIMER_FILE"), [this](const char* n) {
      auto it = base_env_.find(n);
      return it == base_env_.end() ? nullptr : it->second.c_str();
    });
    timer_ = std::make_unique<TimerServer>(path, *log_);
    base_env_["TORCHELASTIC_TIMER_FILE"] = path;
  } else if (!enable.empty() && enable != "0") {
    log_->warn(
        "TORCHELASTIC_ENABLE_FILE_TIMER={}: no file timer (it is enabled by 1 only, as "
        "in torchrun)",
        enable);
  }
  if (base_env_.contains("TORCHELASTIC_HEALTH_CHECK_PORT")) {
    const int port = ParseHealthPort(get("TORCHELASTIC_HEALTH_CHECK_PORT"));
    health_ = std::make_unique<HealthServer>(port, *log_);
  }
}

void Agent::StopWatchdogs() {
  timer_.reset();
  health_.reset();
}

int Agent::LoopTimeoutMs(int timeout_ms) const {
  auto cap = [&timeout_ms](int ms) {
    if (ms >= 0) timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
  };
  if (timer_) cap(timer_->MsToNextExpiry(UnixNow()));
  if (health_) cap(kHealthTickMs);
  if (metrics_) cap(kMetricsRefreshMs);
  return timeout_ms;
}

void Agent::StampHealth(bool stopping) {
  if (!health_) return;
  const AgentPhase phase = stopping || stop_signal_ != 0 ? AgentPhase::kStopping
                           : workers_.empty()            ? AgentPhase::kRendezvous
                                                         : AgentPhase::kRunning;
  health_->Stamp(phase, attempt_);
}

void Agent::ServeTimers(bool readable) {
  StampHealth(false);
  if (!timer_) return;
  if (readable) timer_->Read();
  for (const auto& reap : timer_->Reap(UnixNow())) {
    if (reap.signal <= 0 || stop_signal_ != 0) continue;
    // torchrun's FileTimerServer kills its own agent with the same signal after a kill; here
    // the rest of the group is stopped first (a handled signal ends tzrun as that signal
    // from outside would, any other one kills tzrun once it has cleaned up).
    stop_signal_ = reap.signal;
    if (!signals_->Handled(reap.signal)) watchdog_signal_ = reap.signal;
    log_->error(
        "file timer of pid {} expired: stopping the workers and ending tzrun with {}, as "
        "torchrun's watchdog does",
        reap.pid, SignalName(reap.signal));
  }
}

void Agent::EndByWatchdogSignal() const {
  if (watchdog_signal_ == 0) return;
  log_->flush();
  std::fflush(nullptr);
  ::signal(watchdog_signal_, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, watchdog_signal_);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::kill(::getpid(), watchdog_signal_);
}

}  // namespace tzrun::agent
