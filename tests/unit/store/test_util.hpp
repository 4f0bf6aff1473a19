// Helpers shared by the store tests: raw sockets speaking bytes, log capture, polling.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tzrun/store/codec.hpp"
#include "tzrun/store/log.hpp"
#include "tzrun/store/protocol.hpp"

namespace tzrun::store::testing {

/// Polls `pred` every 5 ms until it holds or `limit` passes (generous limits: loaded CI box).
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

/// Thread-safe capture of a LogSink's messages.
class LogCapture {
 public:
  LogSink Sink() {
    return [this](LogLevel level, std::string_view message) {
      std::lock_guard lock(mu_);
      lines_.push_back({level, std::string(message)});
    };
  }
  bool Contains(std::string_view needle) const {
    std::lock_guard lock(mu_);
    for (const auto& l : lines_) {
      if (l.second.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  std::string Dump() const {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& l : lines_) out += l.second + "\n";
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

/// A blocking TCP connection to 127.0.0.1:port that sends/receives raw protocol bytes.
class RawConn {
 public:
  explicit RawConn(std::uint16_t port, bool validate = true) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (validate) {
      std::string hello;
      PutU8(hello, 0);
      PutU32(hello, kValidationMagic);
      Send(hello);
    }
  }
  ~RawConn() { Close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  RawConn(RawConn&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  [[nodiscard]] bool Ok() const { return fd_ >= 0; }
  int Fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  bool Send(const Request& r) { return Send(EncodeRequest(r)); }
  /// Reads exactly n bytes within `limit`; returns fewer on EOF/error/timeout.
  std::string Recv(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::string out;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (out.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (r <= 0) break;
      out.append(buf, static_cast<std::size_t>(r));
    }
    return out;
  }
  /// True if nothing arrives within `limit` (the connection stays open and silent).
  bool SilentFor(std::chrono::milliseconds limit) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(limit.count())) == 0;
  }
  /// True when the server closed the connection (EOF or reset) within `limit`.
  bool ClosedByPeer(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return true;
      }
    }
    return false;
  }

 private:
  int fd_ = -1;
};

inline Request Req(QueryType type, std::vector<std::string> keys = {},
                   std::vector<std::string> values = {}, std::int64_t number = 0) {
  Request r;
  r.type = type;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.number = number;
  return r;
}

inline std::string U8s(std::uint8_t v) {
  return std::string(1, static_cast<char>(v));
}
inline std::string I64s(std::int64_t v) {
  std::string s;
  PutI64(s, v);
  return s;
}

}  // namespace tzrun::store::testing
