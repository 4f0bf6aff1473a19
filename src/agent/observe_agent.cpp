// The agent's side of --metrics-port (metrics.hpp) and --event-log (event_log.hpp): the
// counters, the snapshot of the workers, and the events of each state change.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "agent_impl.hpp"

namespace tzrun::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

/// The step of a progress line ("<step> <phase> <time>"), nullopt when it does not parse.
std::optional<std::int64_t> ReportStep(const std::string& line) {
  char* end = nullptr;
  const long long v = std::strtoll(line.c_str(), &end, 10);
  if (end == line.c_str() || (*end != ' ' && *end != '\0')) return std::nullopt;
  return v;
}

std::string WorkerState(const Worker& w) {
  if (!w.reaped) return "running";
  return WIFEXITED(w.wait_status) && WEXITSTATUS(w.wait_status) == 0 ? "succeeded" : "failed";
}

}  // namespace

void Agent::StartObservers() {
  if (!cfg_.event_log.empty()) event_log_ = std::make_unique<JsonEventLog>(cfg_.event_log);
  if (cfg_.metrics_port >= 0) {
    metrics_ = std::make_unique<MetricsServer>(cfg_.metrics_port, *log_);
    RefreshMetrics(true);
  }
}

void Agent::StopObservers() {
  metrics_.reset();
}

void Agent::Emit(const std::string& event, const nlohmann::json& fields) {
  if (event_log_) event_log_->Write(event, fields);
  RefreshMetrics(true);
}

void Agent::NoteProgress(int local_rank, const std::string& line, SteadyClock::time_point now) {
  const auto step = ReportStep(line);
  if (!step) return;
  auto& r = rank_rates_[local_rank];
  if (!r.base_time) {
    r.base_step = *step;
    r.base_time = now;
  } else if (const double dt = std::chrono::duration<double>(now - *r.base_time).count();
             dt >= 2.0) {
    r.rate = static_cast<double>(*step - r.base_step) / dt;
    r.base_step = *step;
    r.base_time = now;
  }
}

MetricsSnapshot Agent::CollectMetrics() const {
  MetricsSnapshot s;
  const auto now = SteadyClock::now();
  for (const auto& w : workers_) {
    RankMetrics r;
    r.local_rank = w.local_rank;
    r.global_rank = w.global_rank;
    r.state = WorkerState(w);
    const auto lr = static_cast<std::size_t>(w.local_rank);
    if (lr < progress_.size() && progress_[lr].line) {
      r.last_step = ReportStep(*progress_[lr].line);
      r.progress_age_s = std::chrono::duration<double>(now - progress_[lr].last_change).count();
      if (const auto it = rank_rates_.find(w.local_rank);
          it != rank_rates_.end() && it->second.rate) {
        r.step_rate = *it->second.rate;
      }
    }
    s.ranks.push_back(std::move(r));
  }
  s.restarts = restarts_by_cause_;
  s.rendezvous_rounds = rendezvous_rounds_;
  s.rendezvous_seconds_total = rendezvous_seconds_total_;
  s.rendezvous_last_seconds = rendezvous_last_seconds_;
  s.hang_detections = hang_detections_;
  if (flash_) {
    namespace fs = std::filesystem;
    if (const auto name = detail::NewestCheckpoint(flash_->Path())) {
      const fs::path dir = fs::path(flash_->Path()) / *name;
      s.flash_step = detail::CheckpointStep(*name);
      std::error_code ec;
      std::int64_t bytes = 0;
      for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
        if (e.is_regular_file(ec)) bytes += static_cast<std::int64_t>(e.file_size(ec));
      }
      s.flash_bytes = bytes;
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0) {
        const double mtime = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
        const double unow =
            std::chrono::duration<double>(SysClock::now().time_since_epoch()).count();
        s.flash_age_s = unow - mtime;
      }
    }
  }
  return s;
}

void Agent::RefreshMetrics(bool force) {
  if (!metrics_) return;
  const auto now = SteadyClock::now();
  if (!force && now < next_metrics_refresh_) return;
  next_metrics_refresh_ = now + std::chrono::milliseconds(kMetricsRefreshMs);
  metrics_->Publish(RenderMetrics(CollectMetrics()));
}

void Agent::ObserveRendezvous(const rendezvous::RendezvousInfo& info, double seconds) {
  ++rendezvous_rounds_;
  rendezvous_seconds_total_ += seconds;
  rendezvous_last_seconds_ = seconds;
  Emit("rendezvous", {{"round", rendezvous_rounds_},
                      {"duration_s", seconds},
                      {"group_rank", info.rank},
                      {"group_world_size", info.world_size}});
}

void Agent::ObserveAttemptEnd(const AttemptOutcome& outcome) {
  static const char* const kResults[] = {"succeeded", "failed", "signaled", "peer_event"};
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& w : workers_) {
    ws.push_back({{"local_rank", w.local_rank},
                  {"global_rank", w.global_rank},
                  {"pid", w.pid},
                  {"state", WorkerState(w)},
                  {"exit_code", WIFEXITED(w.wait_status) ? WEXITSTATUS(w.wait_status) : -1},
                  {"signal", WIFSIGNALED(w.wait_status) ? WTERMSIG(w.wait_status) : 0}});
  }
  const auto r = static_cast<std::size_t>(outcome.result);
  Emit("workers_stopped",
       {{"attempt", attempt_}, {"result", r < 4 ? kResults[r] : "other"}, {"workers", ws}});
  if (outcome.root) {
    Emit("failure", {{"attempt", attempt_},
                     {"global_rank", outcome.root->global_rank},
                     {"local_rank", outcome.root->local_rank},
                     {"exit_code", outcome.root->exit_code},
                     {"hang", attempt_hung_},
                     {"message", outcome.root->error_message}});
  }
}

void Agent::ObserveRestart(bool failure_restart) {
  const std::string cause = !failure_restart ? "membership" : attempt_hung_ ? "hang" : "failure";
  ++restarts_by_cause_[cause];
  Emit("restart", {{"cause", cause}, {"restarts_left", budget_.remaining}});
}

}  // namespace tzrun::agent
