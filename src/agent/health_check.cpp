// The health check's pure core (see health_check.hpp).
#include "health_check.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

#include "agent_error.hpp"

namespace tzrun::agent {

std::string_view PhaseName(AgentPhase p) {
  switch (p) {
    case AgentPhase::kStarting:
      return "starting";
    case AgentPhase::kRendezvous:
      return "rendezvous";
    case AgentPhase::kRunning:
      return "running";
    case AgentPhase::kStopping:
      return "stopping";
  }
  return "unknown";
}

HealthReply HealthAnswer(const HealthSnapshot& s, double now, double timeout_s) {
  const double since = now - s.last_progress;
  const char* status = s.phase == AgentPhase::kStopping ? "stopping"
                       : since > timeout_s              ? "stuck"
                                                        : "ok";
  nlohmann::ordered_json j;
  j["status"] = status;
  j["state"] = PhaseName(s.phase);
  j["last_progress_time"] = s.last_progress;
  j["seconds_since_progress"] = since;
  j["timeout_s"] = timeout_s;
  j["restart_count"] = s.restart_count;
  return HealthReply{std::string_view(status) == "ok" ? 200 : 503, j.dump()};
}

int ParseHealthPort(std::string_view value) {
  int port = -1;
  const auto* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, port);
  if (value.empty() || ec != std::errc() || ptr != end || port < 0 || port > 65535) {
    throw AgentError("TORCHELASTIC_HEALTH_CHECK_PORT='" + std::string(value) +
                         "' is not a port number (0..65535; 0 picks a free port); set it to the "
                         "port the health check should listen on, or unset it",
                     exit_code::kUsage);
  }
  return port;
}

std::optional<std::string> RequestMethod(std::string_view head) {
  const auto eol = head.find("\r\n");
  if (eol == std::string_view::npos) return std::nullopt;
  const auto line = head.substr(0, eol);
  return std::string(line.substr(0, line.find(' ')));
}

std::string HttpResponse(std::string_view method, const HealthReply& reply) {
  const bool head = method == "HEAD";
  int status = reply.status;
  std::string body = reply.body + "\n";
  std::string extra;
  if (method != "GET" && !head) {
    status = 405;
    body = "{\"error\": \"only GET and HEAD are served\"}\n";
    extra = "Allow: GET, HEAD\r\n";
  }
  const char* reason = status == 200   ? "OK"
                       : status == 503 ? "Service Unavailable"
                                       : "Method Not Allowed";
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n" + extra +
      "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n";
  if (!head) out += body;
  return out;
}

}  // namespace tzrun::agent
