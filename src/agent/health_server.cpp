// The health check's HTTP server thread (see health_server.hpp).
#include "health_server.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

double UnixNow() {
  using std::chrono::duration;
  return duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

HealthServer::HealthServer(int port, spdlog::logger& log) : log_(log) {
  last_progress_ = UnixNow();
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string err = base::ErrnoText(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw AgentError("health check (TORCHELASTIC_HEALTH_CHECK_PORT=" + std::to_string(port) +
                         "): cannot listen on that port: " + err + "; pick a free port",
                     exit_code::kInfrastructure);
  }
  port_ = ntohs(addr.sin_port);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Serve(); });
  // Port 0 picked a free port: say which, louder.
  log_.log(port == 0 ? spdlog::level::warn : spdlog::level::info,
           "health check served on http://0.0.0.0:{}/ (503 when the agent is stuck for {} s or "
           "stopping)",
           port_, kHealthTimeoutSeconds);
}

HealthServer::~HealthServer() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
}

void HealthServer::Stamp(AgentPhase phase, int restart_count) {
  phase_.store(static_cast<int>(phase));
  restart_count_.store(restart_count);
  last_progress_.store(UnixNow());
}

void HealthServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log_.error("health check: poll failed: {}; no longer serving", base::ErrnoText(errno));
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Answer(conn);
    ::close(conn);
  }
}

void HealthServer::Answer(int conn) {
  // One request per connection; a client gets 2 s to send its request head.
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{conn, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[1024];
    const ssize_t n = ::recv(conn, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<std::size_t>(n));
  }
  const auto method = RequestMethod(head);
  if (!method) return;
  HealthSnapshot s;
  s.phase = static_cast<AgentPhase>(phase_.load());
  s.last_progress = last_progress_.load();
  s.restart_count = restart_count_.load();
  const std::string out = HttpResponse(*method, HealthAnswer(s, UnixNow()));
  std::size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(conn, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(conn, SHUT_WR);
}

}  // namespace tzrun::agent
