// tzrun agent internals: the health check's HTTP server (a thread of its own, so that it
// answers "stuck" when the agent loop stops making progress). The verdict and framing are
// health_check.hpp; the agent stamps progress from its poll loop (timer_agent.cpp).
//
// Thread-safety: Stamp() from the agent thread, the server thread reads the stamps
// (atomics); construction and destruction on the agent thread.
#pragma once

#include <spdlog/fwd.h>  // spdlog::logger, declared only

#include <atomic>
#include <thread>

#include "health_check.hpp"

namespace tzrun::agent {

class HealthServer {
 public:
  /// Listens on 0.0.0.0:`port` (0: a free port) and starts serving. Throws AgentError (125)
  /// naming the port when it cannot listen.
  HealthServer(int port, spdlog::logger& log);
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;
  /// Stops the thread and closes the socket.
  ~HealthServer();

  /// The agent loop is alive now, in `phase`.
  void Stamp(AgentPhase phase, int restart_count);
  [[nodiscard]] int Port() const noexcept { return port_; }

 private:
  void Serve();
  void Answer(int conn);

  spdlog::logger& log_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  int port_ = 0;
  std::atomic<int> phase_{static_cast<int>(AgentPhase::kStarting)};
  std::atomic<double> last_progress_{0};
  std::atomic<int> restart_count_{0};
  std::thread thread_;
};

}  // namespace tzrun::agent
