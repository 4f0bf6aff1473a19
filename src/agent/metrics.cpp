// The Prometheus text and its HTTP server (metrics.hpp).
#include "metrics.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <utility>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

void Family(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP tzrun_{} {}\n# TYPE tzrun_{} {}\n", name, help, name, type);
}

std::string RankLabels(const RankMetrics& r) {
  return fmt::format("local_rank=\"{}\",global_rank=\"{}\"", r.local_rank, r.global_rank);
}

template <typename Get>
void PerRank(std::string& out, const MetricsSnapshot& s, const char* name, const char* type,
             const char* help, Get get) {
  Family(out, name, type, help);
  for (const auto& r : s.ranks) {
    if (const auto v = get(r)) out += fmt::format("tzrun_{}{{{}}} {}\n", name, RankLabels(r), *v);
  }
}

}  // namespace

std::string RenderMetrics(const MetricsSnapshot& s) {
  std::string out;
  static const char* const kStates[] = {"running", "succeeded", "failed"};
  Family(out, "worker_state", "gauge", "1 for the current state of each local worker.");
  for (const auto& r : s.ranks) {
    for (const char* st : kStates) {
      out += fmt::format("tzrun_worker_state{{{},state=\"{}\"}} {}\n", RankLabels(r), st,
                         r.state == st ? 1 : 0);
    }
  }
  Family(out, "workers", "gauge", "Local workers per state.");
  for (const char* st : kStates) {
    long n = 0;
    for (const auto& r : s.ranks) n += r.state == st ? 1 : 0;
    out += fmt::format("tzrun_workers{{state=\"{}\"}} {}\n", st, n);
  }
  Family(out, "restarts_total", "counter", "Worker group restarts by cause.");
  for (const char* cause : {"failure", "hang", "membership"}) {
    const auto it = s.restarts.find(cause);
    out += fmt::format("tzrun_restarts_total{{cause=\"{}\"}} {}\n", cause,
                       it == s.restarts.end() ? 0 : it->second);
  }
  Family(out, "rendezvous_rounds_total", "counter", "Rendezvous rounds completed.");
  out += fmt::format("tzrun_rendezvous_rounds_total {}\n", s.rendezvous_rounds);
  Family(out, "rendezvous_duration_seconds_total", "counter",
         "Seconds spent in completed rendezvous rounds.");
  out += fmt::format("tzrun_rendezvous_duration_seconds_total {}\n", s.rendezvous_seconds_total);
  Family(out, "rendezvous_last_duration_seconds", "gauge",
         "Duration of the last rendezvous round.");
  out += fmt::format("tzrun_rendezvous_last_duration_seconds {}\n", s.rendezvous_last_seconds);
  PerRank(out, s, "worker_last_step", "gauge", "Last step a worker reported.",
          [](const RankMetrics& r) { return r.last_step; });
  PerRank(out, s, "worker_step_rate", "gauge", "Steps per second a worker advances.",
          [](const RankMetrics& r) { return r.step_rate; });
  PerRank(out, s, "worker_last_progress_age_seconds", "gauge",
          "Seconds since a worker's last progress report changed.",
          [](const RankMetrics& r) { return r.progress_age_s; });
  Family(out, "hang_detections_total", "counter", "Ranks found stalled by --hang-timeout.");
  out += fmt::format("tzrun_hang_detections_total {}\n", s.hang_detections);
  if (s.flash_step) {
    Family(out, "flash_checkpoint_step", "gauge", "Step of the newest flash checkpoint.");
    out += fmt::format("tzrun_flash_checkpoint_step {}\n", *s.flash_step);
    Family(out, "flash_checkpoint_age_seconds", "gauge", "Age of the newest flash checkpoint.");
    out += fmt::format("tzrun_flash_checkpoint_age_seconds {}\n", s.flash_age_s.value_or(0));
    Family(out, "flash_checkpoint_bytes", "gauge", "Size of the newest flash checkpoint.");
    out += fmt::format("tzrun_flash_checkpoint_bytes {}\n", s.flash_bytes.value_or(0));
  }
  return out;
}

MetricsServer::MetricsServer(int port, spdlog::logger& log) : log_(log) {
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
    throw AgentError("--metrics-port " + std::to_string(port) + ": cannot listen on that port: " +
                         err + "; pick a free port, or 0 for any free port",
                     exit_code::kInfrastructure);
  }
  port_ = ntohs(addr.sin_port);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Serve(); });
  log_.log(port == 0 ? spdlog::level::warn : spdlog::level::info,
           "Prometheus metrics served on http://0.0.0.0:{}/metrics", port_);
}

MetricsServer::~MetricsServer() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
}

void MetricsServer::Publish(std::string text) {
  const std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
}

void MetricsServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log_.error("--metrics-port: poll failed: {}; no longer serving", base::ErrnoText(errno));
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Answer(conn);
    ::close(conn);
  }
}

void MetricsServer::Answer(int conn) {
  std::string head;  // one request per connection, 2 s to send its head
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
  const auto sp1 = head.find(' ');
  const auto sp2 = sp1 == std::string::npos ? sp1 : head.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return;
  const std::string method = head.substr(0, sp1);
  std::string path = head.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  std::string status = "200 OK";
  std::string body;
  std::string type = "text/plain; version=0.0.4; charset=utf-8";
  if (method != "GET" && method != "HEAD") {
    status = "405 Method Not Allowed";
    body = "use GET /metrics\n";
    type = "text/plain";
  } else if (path != "/metrics" && path != "/") {
    status = "404 Not Found";
    body = "tzrun serves its metrics at /metrics\n";
    type = "text/plain";
  } else {
    const std::lock_guard<std::mutex> lock(mu_);
    body = text_;
  }
  std::string out = fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
      status, type, body.size(), status[0] == '4' && method != "GET" ? "Allow: GET, HEAD\r\n" : "");
  if (method != "HEAD") out += body;
  std::size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(conn, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(conn, SHUT_WR);
}

}  // namespace tzrun::agent
