// The agent's side of --hang-timeout (src/agent/hang_detector.hpp): the progress directory, the
// reading of the workers' reports and the stop of a hung group.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "agent_error.hpp"
#include "agent_impl.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

constexpr std::chrono::milliseconds kReadEvery{1000};
constexpr std::size_t kBacktracedRanks = 2;  // backtraces per detection (each up to 12 s)

std::string TempRoot() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

}  // namespace

void Agent::OpenProgressDir() {
  std::string tmpl = TempRoot() + "/tzrun-progress-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw AgentError("--hang-timeout: cannot create the progress directory '" + tmpl +
                         "': " + base::ErrnoText(errno) + "; set TMPDIR to a writable directory",
                     exit_code::kInfrastructure);
  }
  progress_dir_ = tmpl;
  guardian_.AddCleanupDir(progress_dir_);  // gone even when tzrun itself is SIGKILLed
}

std::string Agent::ProgressFile(int local_rank) const {
  return progress_dir_ + "/rank_" + std::to_string(local_rank);
}

bool Agent::WatchHangs(int& timeout_ms) {
  if (progress_dir_.empty() || workers_.empty()) return false;
  const auto now = detail::ProgressClock::now();
  if (now < next_progress_read_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_progress_read_ - now);
    timeout_ms = timeout_ms < 0 ? static_cast<int>(left.count() + 1)
                                : std::min(timeout_ms, static_cast<int>(left.count() + 1));
    return false;
  }
  next_progress_read_ = now + kReadEvery;
  timeout_ms = timeout_ms < 0 ? static_cast<int>(kReadEvery.count())
                              : std::min(timeout_ms, static_cast<int>(kReadEvery.count()));
  std::vector<detail::RankProgress> live;
  std::vector<std::size_t> index;  // live[i] is workers_[index[i]]
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const Worker& w = workers_[i];
    auto& p = progress_[static_cast<std::size_t>(w.local_rank)];
    const std::string line = detail::ReadProgressLine(ProgressFile(w.local_rank));
    if (!line.empty() && (!p.line || *p.line != line)) {
      p.line = line;
      p.last_change = now;
      NoteProgress(w.local_rank, line, now);  // --metrics-port step rate
    }
    if (w.reaped) continue;
    live.push_back(p);
    index.push_back(i);
  }
  if (cfg_.hang_timeout <= 0) return false;  // read for --metrics-port only
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(cfg_.hang_timeout * 1000));
  const auto by_quiet = detail::StalledRanks(live, now, timeout);
  if (by_quiet.empty()) return false;
  std::vector<detail::StallFacts> facts;
  for (std::size_t s : by_quiet) {
    facts.push_back({detail::IsStopped(workers_[index[s]].pid), detail::ReportStep(*live[s].line)});
  }
  const auto stalled = detail::OrderByLikelyCause(by_quiet, facts);  // the likely cause first
  // Named at once (the line a user and the tests wait for), before the diagnostics: a backtrace
  // tool (gdb above all) can take its whole timeout; it runs for up to two ranks concurrently.
  std::vector<std::string> reports;
  for (std::size_t k = 0; k < stalled.size(); ++k) {
    const std::size_t s = stalled[k];
    Worker& w = workers_[index[s]];
    const double quiet_s = std::chrono::duration<double>(now - live[s].last_change).count();
    const std::string last = detail::DescribeReport(*live[s].line);
    const Worker& first = workers_[index[stalled[0]]];
    const std::string action =
        k == 0 ? "killing it and stopping the group (restarted if --max-restarts allows)"
               : "killing it too (it went quiet with rank " + std::to_string(first.global_rank) +
                     ", the likely cause)";
    log_->error(
        "hang detected: rank {} (local_rank {}, pid {}) made no progress for {:.0f} s "
        "(--hang-timeout {:g}); last report: {}; {}",
        w.global_rank, w.local_rank, w.pid, quiet_s, cfg_.hang_timeout, last, action);
    reports.push_back(fmt::format("no progress for {:.0f} s (--hang-timeout {:g}); last report: {}",
                                  quiet_s, cfg_.hang_timeout, last) +
                      "\nthreads: " + detail::ThreadStates(w.pid));
    w.hang_order = static_cast<int>(k);
    ++hang_detections_;
    attempt_hung_ = true;
    Emit("hang_detected", {{"local_rank", w.local_rank},
                           {"global_rank", w.global_rank},
                           {"pid", w.pid},
                           {"quiet_s", quiet_s},
                           {"last_report", last},
                           {"likely_cause", k == 0}});
  }
  KillHungRanks(stalled, index, reports);
  StopGroup(SIGTERM);
  return true;
}

void Agent::KillHungRanks(const std::vector<std::size_t>& stalled,
                          const std::vector<std::size_t>& index,
                          const std::vector<std::string>& reports) {
  std::vector<std::future<std::string>> traces;
  for (std::size_t k = 0; k < stalled.size() && k < kBacktracedRanks; ++k) {
    const pid_t pid = workers_[index[stalled[k]]].pid;
    traces.push_back(
        std::async(std::launch::async, [pid] { return detail::ThreadBacktraces(pid); }));
  }
  for (std::size_t k = 0; k < stalled.size(); ++k) {
    Worker& w = workers_[index[stalled[k]]];
    const std::string bt = k < traces.size() ? traces[k].get() : "";
    w.hang = reports[k] + (bt.empty() ? "" : "\n" + bt);
    // On the console now: the failure report that also carries it is printed only if the job
    // finally fails, and a restart that succeeds would leave no trace of why the rank hung.
    std::string indented = *w.hang;
    for (std::size_t at = 0; (at = indented.find('\n', at)) != std::string::npos; at += 3) {
      indented.replace(at, 1, "\n  ");
    }
    log_->error("hang report of rank {} (local_rank {}, pid {}):\n  {}", w.global_rank,
                w.local_rank, w.pid, indented);
    ::killpg(w.pid, SIGKILL);
  }
  // Reaped before the group's SIGTERM, so the stop sequence does not name them again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto hung_alive = [&] {
    for (std::size_t s : stalled) {
      if (!workers_[index[s]].reaped) return true;
    }
    return false;
  };
  while (hung_alive() && std::chrono::steady_clock::now() < deadline) {
    ReapAll();
    if (hung_alive()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace tzrun::agent
