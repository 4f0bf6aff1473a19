// src/store/accept_loop.hpp — the store server's accept path (private).
//
// acceptor.async_wait + a loop of accept4(SOCK_NONBLOCK|SOCK_CLOEXEC) until EAGAIN, at most
// kAcceptBatch per turn. The reactor also calls Between() every few connection events: in a
// connect storm the kernel's accept queue (somaxconn) is the bottleneck, and every connect it
// drops (TcpExt ListenOverflows) waits out a 1 s SYN retransmission, so pending connections
// are taken in before more requests are handled (tools/bench/store --scale: 19k clients went
// from ~9k dropped connects to none). EMFILE/ENFILE/... are logged (at most every 10 s) and
// retried on a 100 ms timer while the existing connections are served.
//
// Thread-safety: runs on the server's I/O thread; Errors() may be read from any thread.
#pragma once

#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "tzrun/store/log.hpp"

namespace tzrun::store::detail {

class AcceptLoop {
 public:
  struct Hooks {
    /// Takes ownership of an accepted, non-blocking socket.
    std::function<void(int fd, const sockaddr_storage& peer)> accepted;
    std::function<void(LogLevel, const std::string&)> log;
    std::function<std::size_t()> open_connections;  // for the EMFILE warning
  };

  /// The owner binds `acceptor` (listener.hpp) before Start() and closes it after Stop().
  AcceptLoop(asio::io_context& io, asio::ip::tcp::acceptor& acceptor, Hooks hooks);

  /// Starts waiting for connections on the listening `acceptor` (`endpoint` names it in logs).
  void Start(std::string endpoint) {
    endpoint_ = std::move(endpoint);
    Arm();
  }
  /// One accept pass between connection events (nothing while accept() is failing).
  void Between();
  /// Stops for good (before the owner closes the acceptor).
  void Stop();
  /// accept() calls that failed with a resource error (EMFILE, ENFILE, ENOBUFS, ...).
  [[nodiscard]] std::size_t Errors() const noexcept {
    return errors_.load(std::memory_order_relaxed);
  }

 private:
  enum class Status : std::uint8_t { kDrained, kBatchDone, kFailing };

  void Arm();
  void RetryLater();
  void Ready();
  Status AcceptSome();
  void NoteFailure(int err);

  asio::io_context& io_;
  asio::ip::tcp::acceptor& acceptor_;
  std::string endpoint_;
  Hooks hooks_;
  asio::steady_timer retry_;
  bool stopped_ = false;
  bool armed_ = false;  // an async_wait is pending
  bool failing_ = false;
  std::size_t fail_streak_ = 0;
  std::chrono::steady_clock::time_point last_log_{};
  std::atomic<std::size_t> errors_{0};
};

}  // namespace tzrun::store::detail
