// tzrun agent internals: --event-log-handler (torchrun 2.11's torch/distributed/elastic/events:
// __init__.py record(), api.py Event.serialize(), handlers.py; the events themselves come from
// elastic/agent/server/api.py SimpleElasticAgent and launcher/api.py launch_agent).
//
// Handlers: "console" writes each event as one line of JSON on stderr (a logging.StreamHandler
// with no formatter); "null" and "dynamic_rendezvous" (a NullHandler in torchrun) write nothing.
// As torchrun's events logger, console events are shown only at LOGLEVEL INFO or lower
// (LOGLEVEL unset: INFO). torchrun's rendezvous events (RdzvEvent) always go to the
// "dynamic_rendezvous" NullHandler, so they are never written, in tzrun either.
//
// Events (name "torchelastic.worker.status.<STATE>", "timestamp" always 0, as in torchrun):
//   AGENT  RENDEZVOUS / ASSIGN_WORKER_RANKS  each round, with duration_ms; group_rank and
//                                            group_world_size are the previous round's (null
//                                            before the first)
//   WORKER START                             each worker spawned (worker_id: its pid)
//   WORKER SUCCEEDED / FAILED / TERMINATED   each worker of the final attempt, when the job
//                                            ends normally; TERMINATED: stopped by the agent
//   AGENT  SUCCEEDED                         the agent finished (even if workers failed)
//   AGENT  FAILED                            the agent ended on a signal or an error (raw_error:
//                                            tzrun's message; torchrun puts a Python traceback)
// Serialization is Python's json.dumps: ", " and ": " separators, ASCII only, floats as repr.
//
// Thread-safety: none; used from the agent's thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tzrun::agent {

/// What the agent knows when an event happens (Agent fills it, SerializeEvent formats it).
struct AgentEventInfo {
  std::string state;    ///< "RENDEZVOUS", "START", "SUCCEEDED", ...
  bool worker = false;  ///< source WORKER (else AGENT); the worker_* fields apply
  std::string run_id;
  std::string role;
  std::string hostname;  ///< socket.getfqdn()
  std::string rdzv_backend;
  std::string entry_point;  ///< basename of the program, or "run_script_path" (--run-path)
  std::optional<int> group_rank;
  std::optional<int> group_world_size;
  long total_run_time = 0;  ///< whole seconds, set at the end of the job (as torchrun)
  int agent_restarts = 0;   ///< failure restarts spent
  std::optional<double> duration_ms;
  std::optional<std::string> raw_error;  ///< already JSON text, or a plain message
  // worker events only
  int global_rank = 0;
  int local_rank = 0;
  int role_rank = 0;
  int role_world_size = 0;
  std::optional<long> worker_id;   ///< pid
  std::optional<int> exit_code;    ///< failed workers: exit code, or -signal (Python's)
  std::optional<long> worker_pid;  ///< failed workers only
};

/// Python json.dumps of a string (ensure_ascii).
[[nodiscard]] std::string PyJsonString(std::string_view s);
/// Python json.dumps of a float (repr: shortest round trip, "5.0" for integral values).
[[nodiscard]] std::string PyJsonFloat(double v);
/// Python json.dumps(json.loads(text)) for JSON `text` (an error file's content);
/// {"message": "<NONE>"} when text is empty or not JSON (torchrun's _EMPTY_ERROR_DATA).
[[nodiscard]] std::string PyJsonReserialize(const std::string& text);
/// One event as torchrun's Event.serialize() writes it.
[[nodiscard]] std::string SerializeEvent(const AgentEventInfo& e);

/// Where events go. `handler`: the --event-log-handler value; `loglevel`: LOGLEVEL ("" unset).
class EventLog {
 public:
  EventLog(const std::string& handler, const std::string& loglevel);
  [[nodiscard]] bool Enabled() const noexcept { return enabled_; }
  /// Writes the event's line on stderr (one write(2)) when enabled.
  void Record(const AgentEventInfo& e) const;

 private:
  bool enabled_ = false;
};

}  // namespace tzrun::agent
