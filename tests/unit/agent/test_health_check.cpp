// Unit tests of the health check's pure core (src/agent/health_check.hpp): the verdict
// (torchrun's 60 s HealthCheckServer timeout, torch/distributed/elastic/agent/server/
// local_elastic_agent.py), the port value and the HTTP framing (RFC 9112 status line,
// Content-Length, HEAD without a body).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agent_error.hpp"
#include "health_check.hpp"

namespace tzrun::agent {
namespace {

nlohmann::json Body(const HealthReply& r) {
  return nlohmann::json::parse(r.body);
}

TEST(HealthCheck, OkWhileTheLoopProgresses) {
  const HealthSnapshot s{AgentPhase::kRunning, 1000.0, 2};
  const auto r = HealthAnswer(s, 1059.5);
  EXPECT_EQ(r.status, 200);
  const auto j = Body(r);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["last_progress_time"], 1000.0);
  EXPECT_DOUBLE_EQ(j["seconds_since_progress"].get<double>(), 59.5);
  EXPECT_EQ(j["timeout_s"], 60.0);
  EXPECT_EQ(j["restart_count"], 2);
}

TEST(HealthCheck, StuckAfterTheTimeoutAndStoppingAtOnce) {
  EXPECT_EQ(HealthAnswer({AgentPhase::kRendezvous, 1000.0, 0}, 1060.0).status, 200);
  const auto stuck = HealthAnswer({AgentPhase::kRendezvous, 1000.0, 0}, 1060.5);
  EXPECT_EQ(stuck.status, 503);
  EXPECT_EQ(Body(stuck)["status"], "stuck");
  EXPECT_EQ(Body(stuck)["state"], "rendezvous");
  const auto stopping = HealthAnswer({AgentPhase::kStopping, 1000.0, 0}, 1000.0);
  EXPECT_EQ(stopping.status, 503);
  EXPECT_EQ(Body(stopping)["status"], "stopping");
  EXPECT_EQ(HealthAnswer({AgentPhase::kRunning, 0.0, 0}, 5.0, 4.0).status, 503);
}

TEST(HealthCheck, PortValues) {
  EXPECT_EQ(ParseHealthPort("8080"), 8080);
  EXPECT_EQ(ParseHealthPort("0"), 0);
  EXPECT_EQ(ParseHealthPort("65535"), 65535);
  for (const char* bad : {"", "abc", "80x", "-1", "65536", " 80"}) {
    try {
      ParseHealthPort(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const AgentError& e) {
      EXPECT_EQ(e.ExitCode(), 2);
      EXPECT_NE(std::string(e.what()).find("TORCHELASTIC_HEALTH_CHECK_PORT='" + std::string(bad)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(HealthCheck, RequestMethod) {
  EXPECT_EQ(RequestMethod("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), "GET");
  EXPECT_EQ(RequestMethod("HEAD / HTTP/1.0\r\n\r\n"), "HEAD");
  EXPECT_FALSE(RequestMethod("GET / HTTP/1.1"));
}

TEST(HealthCheck, HttpResponseFraming) {
  const HealthReply reply{503, R"({"status": "stuck"})"};
  const std::string body = std::string(reply.body) + "\n";
  const std::string get = HttpResponse("GET", reply);
  EXPECT_EQ(get.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0U) << get;
  EXPECT_NE(get.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  EXPECT_EQ(get.substr(get.size() - body.size()), body);
  const std::string head = HttpResponse("HEAD", reply);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");  // headers only
  const std::string post = HttpResponse("POST", reply);
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0U) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_EQ(HttpResponse("GET", {200, "{}"}).rfind("HTTP/1.1 200 OK\r\n", 0), 0U);
}

}  // namespace
}  // namespace tzrun::agent
