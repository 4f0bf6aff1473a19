// tzrun agent internals: --metrics-port P, the agent's Prometheus endpoint (tzrun addition;
// torchrun exports nothing a platform can scrape).
//
// GET /metrics (or /) on 0.0.0.0:P answers the Prometheus text exposition format, version
// 0.0.4 (Content-Type: text/plain; version=0.0.4), rendered by the agent's thread at most
// every kMetricsRefreshMs and on every state change, served by a thread of its own (a scrape
// never waits for the agent loop). Series (all prefixed tzrun_; docs/fault-tolerance.md):
//   worker_state{local_rank,global_rank,state}  1 for the worker's current state
//   workers{state}                              local workers per state
//   restarts_total{cause}                       group restarts: failure, hang, membership
//   rendezvous_rounds_total, rendezvous_duration_seconds_total, rendezvous_last_duration_seconds
//   worker_last_step{...}, worker_step_rate{...}, worker_last_progress_age_seconds{...}
//                                               from the progress reports (progress files)
//   hang_detections_total                       ranks found stalled by --hang-timeout
//   flash_checkpoint_age_seconds, flash_checkpoint_bytes, flash_checkpoint_step
//                                               the newest flash checkpoint (--flash-checkpoint)
//
// RenderMetrics is pure (tests/unit/agent/test_metrics.cpp). Thread-safety: MetricsServer's
// Publish() from the agent thread; its server thread reads the text under a mutex.
#pragma once

#include <spdlog/fwd.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tzrun::agent {

/// One local worker in the metrics.
struct RankMetrics {
  int local_rank = 0;
  int global_rank = 0;
  std::string state;  ///< running, succeeded, failed
  std::optional<std::int64_t> last_step;
  std::optional<double> step_rate;       ///< steps per second
  std::optional<double> progress_age_s;  ///< seconds since the last progress
};

struct MetricsSnapshot {
  std::vector<RankMetrics> ranks;
  std::map<std::string, long> restarts;  ///< by cause
  long rendezvous_rounds = 0;
  double rendezvous_seconds_total = 0;
  double rendezvous_last_seconds = 0;
  long hang_detections = 0;
  std::optional<double> flash_age_s;
  std::optional<std::int64_t> flash_bytes;
  std::optional<std::int64_t> flash_step;
};

/// The exposition text (format 0.0.4): HELP and TYPE for every family, then its samples.
[[nodiscard]] std::string RenderMetrics(const MetricsSnapshot& s);

class MetricsServer {
 public:
  /// Listens on 0.0.0.0:`port` (0: a free port). Throws AgentError (125) naming the port and
  /// the flag when it cannot listen.
  MetricsServer(int port, spdlog::logger& log);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer();

  /// Replaces the text served from now on.
  void Publish(std::string text);
  [[nodiscard]] int Port() const noexcept { return port_; }

 private:
  void Serve();
  void Answer(int conn);

  spdlog::logger& log_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::string text_;
  std::thread thread_;
};

}  // namespace tzrun::agent
