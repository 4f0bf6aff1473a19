// The store server's accept path (see accept_loop.hpp).
#include "accept_loop.hpp"

#include <asio/post.hpp>
#include <cerrno>
#include <utility>

#include "listener.hpp"

namespace tzrun::store::detail {
namespace {

constexpr int kAcceptBatch = 512;  // accepts per turn, then let other handlers run
constexpr auto kRetryDelay = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::seconds(10);

}  // namespace

AcceptLoop::AcceptLoop(asio::io_context& io, asio::ip::tcp::acceptor& acceptor, Hooks hooks)
    : io_(io), acceptor_(acceptor), hooks_(std::move(hooks)), retry_(io) {}

void AcceptLoop::Between() {
  if (failing_ || stopped_ || !acceptor_.is_open()) return;
  if (AcceptSome() == Status::kFailing) RetryLater();
}

void AcceptLoop::Stop() {
  stopped_ = true;
  retry_.cancel();
}

void AcceptLoop::Arm() {
  if (armed_) return;
  armed_ = true;
  acceptor_.async_wait(asio::ip::tcp::acceptor::wait_read, [this](const asio::error_code& ec) {
    armed_ = false;
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      hooks_.log(LogLevel::kError,
                 "waiting for connections failed: " + ec.message() + "; retrying");
      RetryLater();
      return;
    }
    Ready();
  });
}

void AcceptLoop::RetryLater() {
  retry_.expires_after(kRetryDelay);
  retry_.async_wait([this](const asio::error_code& ec) {
    if (!ec && !stopped_) Ready();
  });
}

void AcceptLoop::Ready() {
  if (stopped_ || !acceptor_.is_open()) return;
  switch (AcceptSome()) {
    case Status::kDrained:
      Arm();
      return;
    case Status::kFailing:
      RetryLater();
      return;
    case Status::kBatchDone:
      asio::post(io_, [this] { Ready(); });
      return;
  }
}

// accept4() until EAGAIN (kDrained), kAcceptBatch connections (kBatchDone) or an error that
// needs a pause (kFailing).
AcceptLoop::Status AcceptLoop::AcceptSome() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = ::accept4(acceptor_.native_handle(), reinterpret_cast<sockaddr*>(&ss), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      hooks_.accepted(fd, ss);
      continue;
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (failing_) {
        failing_ = false;
        hooks_.log(LogLevel::kInfo, "accepting connections again after " +
                                        std::to_string(fail_streak_) + " failed accept() calls");
        fail_streak_ = 0;
      }
      return Status::kDrained;
    }
    NoteFailure(err);
    return Status::kFailing;
  }
  return Status::kBatchDone;
}

void AcceptLoop::NoteFailure(int err) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  ++fail_streak_;
  const auto now = std::chrono::steady_clock::now();
  if (!failing_ || now - last_log_ >= kLogInterval) {
    hooks_.log(LogLevel::kWarning, AcceptFailureText(endpoint_, err, hooks_.open_connections()));
    last_log_ = now;
  }
  failing_ = true;
}

}  // namespace tzrun::store::detail
