// The agent's --event-log-handler events (events.hpp has the list and the upstream files).
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "agent_impl.hpp"
#include "events.hpp"
#include "report.hpp"

namespace tzrun::agent {
namespace {

std::string ReadWhole(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// torchrun 2.11's ProcessFailure adds errorTraits to the shared _EMPTY_ERROR_DATA dict the
// first time a worker exits >= 0 without an error file, and every failure without one
// serializes that same dict afterwards.
constexpr const char* kEmptyErrorWithTraits =
    R"({"message": "<NONE>", "errorTraits": {"category": "system_terminated_error", )"
    R"("retryability": "False"}})";

}  // namespace

void Agent::NoteEmptyErrorTraits() {
  for (const WorkerFailure& f : failures_) {
    if (f.signal == 0 && PyJsonReserialize(ReadWhole(f.error_file)) == R"({"message": "<NONE>"})") {
      empty_error_traits_ = true;
    }
  }
}

AgentEventInfo Agent::EventBase(const std::string& state) const {
  AgentEventInfo e;
  e.state = state;
  e.run_id = run_id_;
  e.role = cfg_.role;
  e.hostname = hostname_;
  e.rdzv_backend = cfg_.rdzv_backend;
  e.entry_point = cfg_.run_path ? "run_script_path" : program_.substr(program_.rfind('/') + 1);
  e.group_rank = event_group_rank_;
  e.group_world_size = event_group_world_size_;
  e.total_run_time = event_total_run_time_;
  e.agent_restarts = budget_.max_restarts - budget_.remaining;
  return e;
}

void Agent::RecordAgentEvent(const std::string& state, std::optional<double> duration_ms,
                             std::optional<std::string> raw_error) {
  if (!events_ || !events_->Enabled()) return;
  AgentEventInfo e = EventBase(state);
  e.duration_ms = duration_ms;
  e.raw_error = std::move(raw_error);
  events_->Record(e);
}

void Agent::RecordWorkerEvent(const Worker& w, const std::string& state,
                              const WorkerFailure* failure) {
  if (!events_ || !events_->Enabled()) return;
  AgentEventInfo e = EventBase(state);
  e.worker = true;
  e.global_rank = w.global_rank;
  e.local_rank = w.local_rank;
  e.role_rank = w.role_rank;
  e.role_world_size = w.role_world_size;
  e.worker_id = w.pid;
  if (failure != nullptr) {
    e.exit_code = failure->signal != 0 ? -failure->signal : failure->exit_code;
    e.worker_pid = failure->pid;
    const std::string text = ReadWhole(failure->error_file);
    e.raw_error = PyJsonReserialize(text);
    if (*e.raw_error == R"({"message": "<NONE>"})" && empty_error_traits_) {
      e.raw_error = kEmptyErrorWithTraits;
    }
  }
  events_->Record(e);
}

void Agent::RecordFinalEvents(bool group_failed) {
  // SimpleElasticAgent.run(): total_run_time is set, then _record_worker_events(); then
  // launch_agent records the agent's SUCCEEDED (the agent ran, whatever the workers did).
  event_total_run_time_ = ElapsedRunSeconds();
  for (const Worker& w : final_workers_) {
    // torchrun 2.11 counts the workers its agent stopped as failures too (exit -15), so
    // TERMINATED is only a worker that had exited 0 before the group failed.
    const auto it = std::find_if(failures_.begin(), failures_.end(), [&w](const WorkerFailure& f) {
      return f.global_rank == w.global_rank;
    });
    const WorkerFailure* f = it == failures_.end() ? nullptr : &*it;
    RecordWorkerEvent(w, f != nullptr ? "FAILED" : group_failed ? "TERMINATED" : "SUCCEEDED", f);
  }
  RecordAgentEvent("SUCCEEDED");
}

void Agent::RecordAgentFailed(const std::string& why) {
  event_total_run_time_ = ElapsedRunSeconds();
  RecordAgentEvent("FAILED", std::nullopt, why);
}

long Agent::ElapsedRunSeconds() const {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now() - run_started_)
                               .count());
}

}  // namespace tzrun::agent
