// tzrun agent internals: the health check's pure core (port value, verdict, HTTP framing).
//
// torchrun 2.11 reads TORCHELASTIC_HEALTH_CHECK_PORT and builds a HealthCheckServer with the
// agent's last-progress callback and a 60 s timeout, but that server is a stub that starts
// nothing (torch/distributed/elastic/agent/server/health_check_server.py,
// local_elastic_agent.py _setup_healthcheck). tzrun serves it for real (health_server.hpp):
// any GET (or HEAD) answers
//   200 {"status": "ok", ...}        while the agent loop made progress in the last 60 s,
//   503 {"status": "stuck", ...}     when it has not,
//   503 {"status": "stopping", ...}  once the agent is stopping (signal, end of job),
// with the agent state, the last progress time (unix seconds) and the restart count.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tzrun::agent {

/// torchrun's HealthCheckServer timeout (local_elastic_agent.py: timeout=60).
inline constexpr double kHealthTimeoutSeconds = 60.0;

enum class AgentPhase : int { kStarting, kRendezvous, kRunning, kStopping };

/// "starting", "rendezvous", "running", "stopping".
std::string_view PhaseName(AgentPhase p);

struct HealthSnapshot {
  AgentPhase phase = AgentPhase::kStarting;
  double last_progress = 0;  ///< unix seconds of the agent loop's last turn
  int restart_count = 0;
};

struct HealthReply {
  int status = 200;  ///< 200 or 503
  std::string body;  ///< one JSON object
};

/// The verdict at `now` (unix seconds) for an agent in `s`.
HealthReply HealthAnswer(const HealthSnapshot& s, double now,
                         double timeout_s = kHealthTimeoutSeconds);

/// TORCHELASTIC_HEALTH_CHECK_PORT's value as a port (0 = any free port). Throws AgentError
/// (exit 2) naming the variable and the value when it is not an integer in 0..65535 (torchrun
/// logs it and starts without a health check).
int ParseHealthPort(std::string_view value);

/// The method of an HTTP request head ("GET / HTTP/1.1\r\n..."), nullopt when the head has no
/// complete request line yet.
std::optional<std::string> RequestMethod(std::string_view head);

/// A complete HTTP/1.1 response (Connection: close). GET and HEAD get `reply` (HEAD without the
/// body); any other method 405 with an Allow header.
std::string HttpResponse(std::string_view method, const HealthReply& reply);

}  // namespace tzrun::agent
