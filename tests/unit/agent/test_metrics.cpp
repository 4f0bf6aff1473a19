// --metrics-port's exposition text (src/agent/metrics.hpp) and --event-log's lines
// (src/agent/event_log.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "event_log.hpp"
#include "metrics.hpp"

namespace tzrun::agent {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(Metrics, EveryFamilyHasHelpAndTypeAndTheSamplesCarryRankLabels) {
  MetricsSnapshot s;
  s.ranks.push_back({0, 4, "running", 120, 9.5, 0.25});
  s.ranks.push_back({1, 5, "failed", std::nullopt, std::nullopt, std::nullopt});
  s.restarts["hang"] = 2;
  s.rendezvous_rounds = 3;
  s.rendezvous_seconds_total = 1.5;
  s.rendezvous_last_seconds = 0.5;
  s.hang_detections = 2;
  const std::string t = RenderMetrics(s);
  EXPECT_TRUE(Has(t, "# TYPE tzrun_restarts_total counter")) << t;
  EXPECT_TRUE(Has(t, "tzrun_restarts_total{cause=\"hang\"} 2")) << t;
  EXPECT_TRUE(Has(t, "tzrun_restarts_total{cause=\"failure\"} 0")) << t;
  EXPECT_TRUE(Has(t, "tzrun_worker_state{local_rank=\"0\",global_rank=\"4\",state=\"running\"} 1"));
  EXPECT_TRUE(Has(t, "tzrun_worker_state{local_rank=\"1\",global_rank=\"5\",state=\"running\"} 0"));
  EXPECT_TRUE(Has(t, "tzrun_workers{state=\"failed\"} 1")) << t;
  EXPECT_TRUE(Has(t, "tzrun_worker_last_step{local_rank=\"0\",global_rank=\"4\"} 120")) << t;
  EXPECT_TRUE(Has(t, "tzrun_worker_step_rate{local_rank=\"0\",global_rank=\"4\"} 9.5")) << t;
  // A rank without reports has no step samples (absent, not 0).
  EXPECT_EQ(t.find("tzrun_worker_last_step{local_rank=\"1\""), std::string::npos) << t;
  EXPECT_TRUE(Has(t, "tzrun_rendezvous_rounds_total 3")) << t;
  EXPECT_TRUE(Has(t, "tzrun_hang_detections_total 2")) << t;
  EXPECT_EQ(t.find("flash_checkpoint"), std::string::npos) << t;  // no flash checkpoints
  s.flash_step = 40;
  s.flash_bytes = 1024;
  s.flash_age_s = 2.5;
  const std::string f = RenderMetrics(s);
  EXPECT_TRUE(Has(f, "tzrun_flash_checkpoint_step 40")) << f;
  EXPECT_TRUE(Has(f, "tzrun_flash_checkpoint_bytes 1024")) << f;
  EXPECT_TRUE(Has(f, "tzrun_flash_checkpoint_age_seconds 2.5")) << f;
}

TEST(EventLog, OneJsonObjectPerLineWithTimeAndEventFirst) {
  const std::string path = testing::TempDir() + "/events_" + std::to_string(::getpid()) + ".jsonl";
  {
    JsonEventLog log(path);
    log.Write("restart", {{"cause", "hang"}});
    log.Write("job_finished", {{"exit_code", 0}});
  }
  std::ifstream in(path);
  std::string a;
  std::string b;
  ASSERT_TRUE(std::getline(in, a) && std::getline(in, b));
  EXPECT_EQ(a.rfind("{\"time\":", 0), 0U) << a;
  const auto ja = nlohmann::json::parse(a);
  EXPECT_EQ(ja["event"], "restart");
  EXPECT_EQ(ja["cause"], "hang");
  EXPECT_EQ(nlohmann::json::parse(b)["exit_code"], 0);
  ::unlink(path.c_str());
}

TEST(EventLog, AnUnopenableFileThrowsNamingIt) {
  try {
    JsonEventLog log("/nonexistent-dir/e.jsonl");
    FAIL() << "no throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--event-log /nonexistent-dir/e.jsonl"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tzrun::agent
