// What the agent records about its attempts: the per-attempt rank outcomes, the failure
// report of the root cause and the --summary-json file (see report.hpp for the formats).
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "agent_impl.hpp"

namespace tzrun::agent {
namespace {

double UnixSeconds(SysClock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

RankOutcome OutcomeOf(const Worker& w, int restarts) {
  RankOutcome r;
  r.local_rank = w.local_rank;
  r.global_rank = w.global_rank;
  r.pid = w.pid;
  r.restarts = restarts;
  r.start_time = UnixSeconds(w.start_time);
  r.end_time = UnixSeconds(w.reaped ? w.end_time : SysClock::now());
  if (w.reaped && WIFSIGNALED(w.wait_status)) {
    r.signal = WTERMSIG(w.wait_status);
    r.exit_code = 128 + r.signal;
  } else if (w.reaped && WIFEXITED(w.wait_status)) {
    r.exit_code = WEXITSTATUS(w.wait_status);
  }
  if (r.exit_code != 0) {
    if (auto info = ReadErrorFile(w.error_file)) r.error_message = info->message;
    r.stderr_tail = w.stderr_tail;
  }
  r.stopped_by_tzrun = w.stopped_by_tzrun && !w.hang;  // a hung rank is the cause, not a victim
  r.hang = w.hang;
  return r;
}

}  // namespace

void Agent::CaptureTails() {
  // After DrainTees(): every pipe has been read to its end.
  if (!stdio_) return;
  for (auto& w : workers_) {
    if (w.reaped && w.wait_status != 0) w.stderr_tail = stdio_->StderrTailOf(w.local_rank);
  }
  for (auto& f : failures_) {
    for (const auto& w : workers_) {
      if (w.local_rank == f.local_rank) f.stderr_tail = w.stderr_tail;
    }
  }
}

void Agent::WarnMutedFailures() {
  for (const auto& f : failures_) {
    if (f.muted && !f.stopped_by_tzrun) log_->warn("{}", FormatMutedFailure(f, true));
  }
}

void Agent::RecordAttempt() {
  std::vector<RankOutcome> ranks;
  for (const auto& w : workers_) ranks.push_back(OutcomeOf(w, attempt_));
  attempts_.push_back(std::move(ranks));
  root_global_rank_.reset();
  if (!failures_.empty()) {
    root_global_rank_ = static_cast<std::size_t>(failures_[SelectRootCause(failures_)].global_rank);
  }
}

void Agent::ReportFailure() {
  if (failures_.empty()) return;
  const auto root = SelectRootCause(failures_);
  const std::string& entrypoint = cfg_.training_script;
  log_->error("{}", FormatFailureLogMessage(failures_[root], entrypoint));
  if (hostname_.empty()) hostname_ = LocalFqdn();
  std::string text = FormatFailureReport(entrypoint, failures_, root, hostname_);
  if (budget_.local_restarts > 0 || budget_.membership_restarts > 0) {
    text += "tzrun: this node restarted its worker group " +
            std::to_string(budget_.local_restarts) +
            " time(s) after failures (--max-restarts=" + std::to_string(budget_.max_restarts) +
            ") and " + std::to_string(budget_.membership_restarts) +
            " time(s) for membership changes (--max-membership-restarts=" +
            std::to_string(budget_.max_membership_restarts) + ")\n";
  }
  if (!no_restart_reason_.empty()) text += "tzrun: not restarted: " + no_restart_reason_ + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  auto it = base_env_.find("TORCHELASTIC_ERROR_FILE");
  if (it != base_env_.end() && !it->second.empty()) {
    try {
      if (!CopyRootErrorFile(failures_[root], it->second)) {
        log_->info("no error file from the root-cause worker to copy to {}", it->second);
      }
    } catch (const ReportError& e) {
      log_->error("{}", e.what());
    }
  }
}

void Agent::WriteSummary(int code, const std::string& outcome) {
  RunSummary s;
  s.run_id = run_id_.empty() ? cfg_.rdzv_id : run_id_;
  s.outcome = outcome;
  s.exit_code = code;
  s.restarts = attempts_.empty() ? 0 : static_cast<int>(attempts_.size()) - 1;
  s.failure_restarts = budget_.local_restarts;
  s.membership_restarts = budget_.membership_restarts;
  s.no_restart_reason = no_restart_reason_;
  s.world_size = world_size_ > 0 ? world_size_ : cfg_.nproc_per_node;
  s.start_time = UnixSeconds(start_time_);
  s.end_time = UnixSeconds(SysClock::now());
  s.attempts = attempts_;
  if (!attempts_.empty()) s.ranks = attempts_.back();
  s.root_cause_rank = outcome == "failed" ? root_global_rank_ : std::nullopt;
  s.hostname = hostname_;
  try {
    WriteSummaryJson(*cfg_.summary_json, s);
  } catch (const std::exception& e) {
    log_->error("{}", e.what());
  }
}

}  // namespace tzrun::agent
