// tzrun agent internals: --event-log FILE, one JSON object per line for every state change of
// the agent (tzrun addition; torchrun's --event-log-handler events are events.hpp).
//
// Each line: {"time": <unix seconds>, "event": "<name>", ...fields}. Events (fields in
// docs/fault-tolerance.md): rendezvous (round, duration_s, group_rank, group_world_size,
// world_size), workers_started (attempt, pids), workers_stopped (attempt, result, workers:
// [{local_rank, global_rank, exit_code, signal}]), failure (root cause global_rank,
// local_rank, exit_code, message), hang_detected (local_rank, global_rank, pid, last_report,
// quiet_s), restart (cause: failure, hang or membership; restarts_left), job_finished
// (exit_code). The file is opened for appending (several runs can share one) and every line
// is flushed as it is written, so `tail -f` sees it at once.
//
// Thread-safety: one thread (the agent's).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace tzrun::agent {

class JsonEventLog {
 public:
  /// Opens `path` for appending; throws AgentError (125) naming it when it cannot.
  explicit JsonEventLog(const std::string& path);
  JsonEventLog(const JsonEventLog&) = delete;
  JsonEventLog& operator=(const JsonEventLog&) = delete;
  ~JsonEventLog();

  /// Writes one line: `fields` (an object) with "time" and "event" added first.
  void Write(const std::string& event, const nlohmann::json& fields);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;  // a write failed: warned once, then quiet
};

}  // namespace tzrun::agent
