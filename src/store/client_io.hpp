// src/store/client_io.hpp — the blocking socket layer under tzrun::store::Client (private):
// deadlines, send/receive with poll(), connect with retries' building blocks, and Op, the
// per-operation guard that holds the connection mutex and maps I/O failures to the public
// errors (tzrun/store/errors.hpp).
//
// Thread-safety: free functions are reentrant; an Op holds the connection's mutex for its
// lifetime, so operations on one connection are serialised.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/store/codec.hpp"
#include "tzrun/store/errors.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::store::detail {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

inline constexpr std::size_t kRecvChunk = 1 << 20;

/// A deadline `d` from now; TimePoint::max() (none) when d <= 0.
TimePoint DeadlineAfter(Duration d);
/// poll() timeout in ms until `deadline` (-1 = infinite), clamped to int.
int PollTimeout(TimePoint deadline);
/// "250ms".
std::string MsText(Duration d);
/// "['a', 'b']", the first 8 keys then "... (N keys)".
std::string QuoteKeys(const std::vector<std::string>& keys);

/// A network failure that the connect loop may retry.
struct RetryableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// The deadline of an I/O call passed.
struct IoTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// The peer closed or reset the connection, or another socket error.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Sends all of `data` on non-blocking `fd`. Throws IoTimeout / IoError.
void SendAll(int fd, std::string_view data, TimePoint deadline);
/// Waits until fd is readable. False on timeout; throws IoError.
bool WaitReadable(int fd, TimePoint deadline);
/// Receives exactly n bytes. Throws IoTimeout / IoError (EOF included).
void RecvExact(int fd, char* out, std::size_t n, TimePoint deadline);
/// Opens a TCP connection (non-blocking, TCP_NODELAY) to host:port before `deadline`.
/// Throws RetryableError.
int ConnectOnce(const std::string& host, std::uint16_t port, TimePoint deadline);
/// The wire bytes of one request.
std::string RequestBytes(QueryType type, std::vector<std::string> keys,
                         std::vector<std::string> values = {}, std::int64_t number = 0);

/// Jittered exponential backoff: each delay is uniform in [0.5, 1.5] x the interval, which
/// grows by `multiplier` up to `max`.
class Backoff {
 public:
  Backoff(Duration initial, double multiplier, Duration max)
      : interval_(initial), multiplier_(multiplier), max_(max), rng_(std::random_device{}()) {}
  Duration Next() {
    const double base = static_cast<double>(interval_.count());
    std::uniform_real_distribution<double> dist(base * 0.5, base * 1.5);
    const auto delay = Duration(static_cast<Duration::rep>(dist(rng_)));
    const auto grown = Duration(static_cast<Duration::rep>(base * multiplier_));
    interval_ = std::min(std::max(grown, Duration(1)), max_);
    return delay;
  }

 private:
  Duration interval_;
  double multiplier_;
  Duration max_;
  std::mt19937_64 rng_;
};

/// One operation on a connection: holds its mutex, refuses a broken connection, and turns
/// IoTimeout / IoError into TimeoutError / ConnectionError, marking the connection broken.
class Op {
 public:
  Op(std::mutex& mu, int fd, std::atomic<bool>& broken, std::string& broken_reason,
     std::string where, Duration reply_timeout)
      : lock_(mu),
        fd_(fd),
        broken_(broken),
        broken_reason_(broken_reason),
        where_(std::move(where)),
        reply_timeout_(reply_timeout) {
    if (broken_.load()) {
      throw ConnectionError("the connection to the store at " + where_ + " is broken (" +
                            broken_reason_ +
                            "); the client does not reconnect: create a new client");
    }
  }

  // Runs `body`, translating internal errors. `what` describes the operation for messages.
  template <typename F>
  auto Run(const std::string& what, F&& body) -> decltype(body(*this)) {
    try {
      return body(*this);
    } catch (const IoTimeout& e) {
      Fail(what + ": " + e.what());
      throw TimeoutError("store at " + where_ + ": no reply to " + what + " within " +
                         MsText(reply_timeout_) + "; the connection is now closed");
    } catch (const IoError& e) {
      Fail(what + ": " + e.what());
      throw ConnectionError("store at " + where_ + ": " + what + " failed: " + e.what() +
                            " (the server closes connections on protocol errors or size limits "
                            "and logs why; the client does not reconnect)");
    }
  }

  void Send(std::string_view bytes) { SendAll(fd_, bytes, DeadlineAfter(reply_timeout_)); }
  void Recv(char* out, std::size_t n) { RecvExact(fd_, out, n, DeadlineAfter(reply_timeout_)); }
  std::uint8_t RecvU8() {
    char c;
    Recv(&c, 1);
    return static_cast<std::uint8_t>(c);
  }
  std::int64_t RecvI64() {
    std::uint8_t b[8];
    Recv(reinterpret_cast<char*>(b), 8);
    return GetI64(b);
  }
  std::uint32_t RecvU32() {
    std::uint8_t b[4];
    Recv(reinterpret_cast<char*>(b), 4);
    return GetU32(b);
  }
  std::string RecvBytes() {
    const auto len = static_cast<std::uint64_t>(RecvI64());
    std::string out;
    // Grow as data arrives: a corrupt length never triggers a giant allocation up front.
    while (out.size() < len) {
      const std::size_t chunk =
          static_cast<std::size_t>(std::min<std::uint64_t>(len - out.size(), kRecvChunk));
      const std::size_t old = out.size();
      out.resize(old + chunk);
      Recv(out.data() + old, chunk);
    }
    return out;
  }
  // Waits for the deferred reply of WAIT/BARRIER. Returns false on timeout (after CANCEL_WAIT
  // resolved the race); true when STOP_WAITING arrived (possibly crossing the cancel).
  bool AwaitStopWaiting(Duration timeout, const std::string& what) {
    const TimePoint deadline = DeadlineAfter(timeout);
    if (WaitReadable(fd_, deadline)) {
      ExpectStopWaiting(RecvU8(), what);
      return true;
    }
    std::string cancel;
    PutU8(cancel, static_cast<std::uint8_t>(QueryType::kCancelWait));
    Send(cancel);
    std::uint8_t b = RecvU8();
    if (b == static_cast<std::uint8_t>(WaitResponseType::kWaitCanceled)) return false;
    ExpectStopWaiting(b, what);  // the wake-up crossed our cancel on the wire
    b = RecvU8();
    if (b != static_cast<std::uint8_t>(WaitResponseType::kWaitCanceled)) {
      throw IoError("unexpected reply " + std::to_string(b) + " to CANCEL_WAIT after " + what);
    }
    return true;
  }

 private:
  static void ExpectStopWaiting(std::uint8_t b, const std::string& what) {
    if (b != static_cast<std::uint8_t>(WaitResponseType::kStopWaiting)) {
      throw IoError("unexpected reply " + std::to_string(b) + " to " + what);
    }
  }
  void Fail(const std::string& reason) {
    if (!broken_.exchange(true)) broken_reason_ = reason;
  }

  std::unique_lock<std::mutex> lock_;
  int fd_;
  std::atomic<bool>& broken_;
  std::string& broken_reason_;
  std::string where_;
  Duration reply_timeout_;
};

}  // namespace tzrun::store::detail
