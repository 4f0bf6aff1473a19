// Blocking c10d TCPStore client (see tzrun/store/client.hpp).
#include "tzrun/store/client.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include "tzrun/store/codec.hpp"

namespace tzrun::store {
namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

constexpr auto kNotListeningLogInterval = std::chrono::seconds(30);
constexpr std::size_t kRecvChunk = 1 << 20;

// A deadline; TimePoint::max() = none.
TimePoint deadline_after(Duration d) {
  if (d <= Duration::zero()) return TimePoint::max();
  return Clock::now() + d;
}

// poll() timeout in ms until `deadline` (-1 = infinite), clamped to int.
int poll_timeout(TimePoint deadline) {
  if (deadline == TimePoint::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30));
}

std::string ms_text(Duration d) {
  return std::to_string(d.count()) + "ms";
}

std::string quote_keys(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    if (i == 8) {
      out += "... (" + std::to_string(keys.size()) + " keys)";
      break;
    }
    out += "'" + keys[i] + "'";
  }
  return out + "]";
}

// Internal: a network failure that the connect loop may retry.
struct RetryableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Internal: the deadline of an I/O call passed.
struct IoTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Internal: the peer closed or reset the connection, or another socket error.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void send_all(int fd, std::string_view data, TimePoint deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    const int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, poll_timeout(deadline));
      if (r == 0) throw IoTimeout("sending timed out");
      if (r < 0 && errno != EINTR) throw IoError(std::string("poll: ") + std::strerror(errno));
      continue;
    }
    throw IoError(std::string("send failed: ") + std::strerror(err));
  }
}

// Waits until fd is readable. False on timeout.
bool wait_readable(int fd, TimePoint deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, poll_timeout(deadline));
    if (r > 0) return true;
    if (r == 0) {
      if (deadline != TimePoint::max() && Clock::now() >= deadline) return false;
      continue;
    }
    if (errno != EINTR) throw IoError(std::string("poll: ") + std::strerror(errno));
  }
}

void recv_exact(int fd, char* out, std::size_t n, TimePoint deadline) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, out, n, 0);
    if (r > 0) {
      out += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) throw IoError("the server closed the connection");
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!wait_readable(fd, deadline)) throw IoTimeout("no reply before the deadline");
      continue;
    }
    throw IoError(std::string("receive failed: ") + std::strerror(err));
  }
}

class Backoff {
 public:
  Backoff(Duration initial, double multiplier, Duration max)
      : interval_(initial), multiplier_(multiplier), max_(max), rng_(std::random_device{}()) {}
  Duration next() {
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

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Client::Connection {
  Connection(std::string h, std::uint16_t p, Duration t)
      : host(std::move(h)), port(p), timeout_ms(t.count()) {}
  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
  std::string where() const { return host + ":" + std::to_string(port); }

  std::mutex mu;
  int fd = -1;
  std::string host;
  std::uint16_t port;
  std::atomic<Duration::rep> timeout_ms;
  std::atomic<bool> broken{false};
  std::string broken_reason;  // guarded by mu
};

namespace {

// Opens a TCP connection to host:port before `deadline`. Throws RetryableError.
int connect_once(const std::string& host, std::uint16_t port, TimePoint deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (gai != 0) {
    throw RetryableError("cannot resolve '" + host + "': " + ::gai_strerror(gai));
  }
  std::string last = "no addresses";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = std::string("socket(): ") + std::strerror(errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        pollfd p{fd, POLLOUT, 0};
        int r;
        do {
          r = ::poll(&p, 1, poll_timeout(deadline));
        } while (r < 0 && errno == EINTR);
        if (r == 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(list);
      return fd;
    }
    ::close(fd);
    last = std::strerror(err);
  }
  ::freeaddrinfo(list);
  throw RetryableError(last);
}

}  // namespace

Client::Client(ClientOptions options) : options_(std::move(options)) {
  conn_ = std::make_shared<Connection>(options_.host, options_.port, options_.timeout);
  const Duration connect_timeout = options_.connect_timeout.value_or(options_.timeout);
  const TimePoint deadline = deadline_after(connect_timeout);
  Backoff backoff(options_.initial_backoff, options_.backoff_multiplier, options_.max_backoff);
  TimePoint last_log = Clock::now();
  int attempts = 0;
  while (true) {
    ++attempts;
    std::string error;
    int fd = -1;
    try {
      fd = connect_once(options_.host, options_.port, deadline);
      std::string hello;
      put_u8(hello, static_cast<std::uint8_t>(QueryType::kValidate));
      put_u32(hello, kValidationMagic);
      const auto nonce = static_cast<std::uint32_t>(::getpid());
      put_u8(hello, static_cast<std::uint8_t>(QueryType::kPing));
      put_u32(hello, nonce);
      send_all(fd, hello, deadline);
      std::uint8_t echo[4];
      recv_exact(fd, reinterpret_cast<char*>(echo), 4, deadline);
      if (get_u32(echo) != nonce) {
        ::close(fd);
        throw ConnectionError("the server at " + conn_->where() +
                              " answered PING with the wrong nonce: it is not a c10d TCPStore "
                              "(check MASTER_ADDR/MASTER_PORT)");
      }
      conn_->fd = fd;
      return;
    } catch (const RetryableError& e) {
      error = e.what();
    } catch (const IoError& e) {
      error = std::string("handshake failed: ") + e.what();
    } catch (const IoTimeout& e) {
      error = std::string("handshake: ") + e.what();
    }
    if (fd >= 0) ::close(fd);
    const auto now = Clock::now();
    if (now >= deadline) {
      throw TimeoutError("cannot connect to the store at " + conn_->where() + " within " +
                         ms_text(connect_timeout) + " (" + std::to_string(attempts) +
                         " attempts; last error: " + error +
                         "); check that the store is running and reachable at that address "
                         "(MASTER_ADDR/MASTER_PORT, firewalls), or raise the timeout");
    }
    if (options_.log && (attempts == 1 || now - last_log >= kNotListeningLogInterval)) {
      options_.log(LogLevel::kInfo, "store at " + conn_->where() + " is not reachable yet (" +
                                        error + "); retrying");
      last_log = now;
    }
    auto delay = backoff.next();
    if (deadline != TimePoint::max()) {
      delay = std::min(delay, std::chrono::duration_cast<Duration>(deadline - now));
    }
    std::this_thread::sleep_for(std::max(delay, Duration(1)));
  }
}

Client::Client(ClientOptions options, std::shared_ptr<Connection> connection)
    : options_(std::move(options)), conn_(std::move(connection)) {}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Client Client::with_key_prefix(std::string key_prefix) const {
  ClientOptions o = options_;
  o.key_prefix = std::move(key_prefix);
  return Client(std::move(o), conn_);
}

std::unique_ptr<Store> Client::clone() const {
  ClientOptions o = options_;
  o.timeout = timeout();
  return std::make_unique<Client>(std::move(o));
}

bool Client::connected() const noexcept {
  return conn_ && !conn_->broken.load();
}

Duration Client::timeout() const {
  return Duration(conn_->timeout_ms.load());
}
void Client::set_timeout(Duration timeout) {
  conn_->timeout_ms.store(timeout.count());
}

// ---------------------------------------------------------------------------------------------
// Operations. Each runs under the connection mutex through `Op`, which turns low-level I/O
// failures into typed errors and marks the connection broken when its state became unknown.

namespace {

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
  auto run(const std::string& what, F&& body) -> decltype(body(*this)) {
    try {
      return body(*this);
    } catch (const IoTimeout& e) {
      fail(what + ": " + e.what());
      throw TimeoutError("store at " + where_ + ": no reply to " + what + " within " +
                         ms_text(reply_timeout_) + "; the connection is now closed");
    } catch (const IoError& e) {
      fail(what + ": " + e.what());
      throw ConnectionError("store at " + where_ + ": " + what + " failed: " + e.what() +
                            " (the server closes connections on protocol errors or size limits "
                            "and logs why; the client does not reconnect)");
    }
  }

  void send(std::string_view bytes) { send_all(fd_, bytes, deadline_after(reply_timeout_)); }
  void recv(char* out, std::size_t n) { recv_exact(fd_, out, n, deadline_after(reply_timeout_)); }
  std::uint8_t recv_u8() {
    char c;
    recv(&c, 1);
    return static_cast<std::uint8_t>(c);
  }
  std::int64_t recv_i64() {
    std::uint8_t b[8];
    recv(reinterpret_cast<char*>(b), 8);
    return get_i64(b);
  }
  std::uint32_t recv_u32() {
    std::uint8_t b[4];
    recv(reinterpret_cast<char*>(b), 4);
    return get_u32(b);
  }
  std::string recv_bytes() {
    const auto len = static_cast<std::uint64_t>(recv_i64());
    std::string out;
    // Grow as data arrives: a corrupt length never triggers a giant allocation up front.
    while (out.size() < len) {
      const std::size_t chunk =
          static_cast<std::size_t>(std::min<std::uint64_t>(len - out.size(), kRecvChunk));
      const std::size_t old = out.size();
      out.resize(old + chunk);
      recv(out.data() + old, chunk);
    }
    return out;
  }
  // Waits for the deferred reply of WAIT/BARRIER. Returns false on timeout (after CANCEL_WAIT
  // resolved the race); true when STOP_WAITING arrived (possibly crossing the cancel).
  bool await_stop_waiting(Duration timeout, const std::string& what) {
    const TimePoint deadline = deadline_after(timeout);
    if (wait_readable(fd_, deadline)) {
      expect_stop_waiting(recv_u8(), what);
      return true;
    }
    std::string cancel;
    put_u8(cancel, static_cast<std::uint8_t>(QueryType::kCancelWait));
    send(cancel);
    std::uint8_t b = recv_u8();
    if (b == static_cast<std::uint8_t>(WaitResponseType::kWaitCanceled)) return false;
    expect_stop_waiting(b, what);  // the wake-up crossed our cancel on the wire
    b = recv_u8();
    if (b != static_cast<std::uint8_t>(WaitResponseType::kWaitCanceled)) {
      throw IoError("unexpected reply " + std::to_string(b) + " to CANCEL_WAIT after " + what);
    }
    return true;
  }

 private:
  static void expect_stop_waiting(std::uint8_t b, const std::string& what) {
    if (b != static_cast<std::uint8_t>(WaitResponseType::kStopWaiting)) {
      throw IoError("unexpected reply " + std::to_string(b) + " to " + what);
    }
  }
  void fail(const std::string& reason) {
    if (!broken_.exchange(true)) broken_reason_ = reason;
  }

  std::unique_lock<std::mutex> lock_;
  int fd_;
  std::atomic<bool>& broken_;
  std::string& broken_reason_;
  std::string where_;
  Duration reply_timeout_;
};

std::string request_bytes(QueryType type, std::vector<std::string> keys,
                          std::vector<std::string> values = {}, std::int64_t number = 0) {
  Request r;
  r.type = type;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.number = number;
  return encode_request(r);
}

}  // namespace

#define TZRUN_STORE_OP(var) \
  Op var(conn_->mu, conn_->fd, conn_->broken, conn_->broken_reason, conn_->where(), this->timeout())

void Client::set(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.run("SET " + k,
         [&](Op& o) { o.send(request_bytes(QueryType::kSet, {k}, {std::string(value)})); });
}

std::string Client::get(std::string_view key, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("GET " + k, [&](Op& o) {
    o.send(request_bytes(QueryType::kWait, {k}));
    if (!o.await_stop_waiting(timeout, "WAIT")) {
      throw TimeoutError("get timeout after " + ms_text(timeout) + " waiting for key '" + k +
                         "' on the store at " + conn_->where() +
                         " (no process set it; check that every rank reached this point)");
    }
    o.send(request_bytes(QueryType::kGet, {k}));
    return o.recv_bytes();
  });
}

std::int64_t Client::add(std::string_view key, std::int64_t delta) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("ADD " + k, [&](Op& o) {
    o.send(request_bytes(QueryType::kAdd, {k}, {}, delta));
    return o.recv_i64();
  });
}

std::string Client::compare_set(std::string_view key, std::string_view expected,
                                std::string_view desired) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("COMPARE_SET " + k, [&](Op& o) {
    o.send(
        request_bytes(QueryType::kCompareSet, {k}, {std::string(expected), std::string(desired)}));
    return o.recv_bytes();
  });
}

bool Client::check(const std::vector<std::string>& keys) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  return op.run("CHECK", [&](Op& o) {
    o.send(request_bytes(QueryType::kCheck, wire));
    return o.recv_u8() == static_cast<std::uint8_t>(CheckResponseType::kReady);
  });
}

void Client::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  op.run("WAIT", [&](Op& o) {
    o.send(request_bytes(QueryType::kWait, wire));
    if (!o.await_stop_waiting(timeout, "WAIT")) {
      throw TimeoutError("wait timeout after " + ms_text(timeout) + ", keys: " + quote_keys(wire) +
                         " on the store at " + conn_->where());
    }
  });
}

std::int64_t Client::num_keys() {
  TZRUN_STORE_OP(op);
  return op.run("GETNUMKEYS", [&](Op& o) {
    o.send(request_bytes(QueryType::kGetNumKeys, {}));
    return o.recv_i64();
  });
}

bool Client::delete_key(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("DELETE_KEY " + k, [&](Op& o) {
    o.send(request_bytes(QueryType::kDeleteKey, {k}));
    return o.recv_i64() == 1;
  });
}

void Client::append(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.run("APPEND " + k,
         [&](Op& o) { o.send(request_bytes(QueryType::kAppend, {k}, {std::string(value)})); });
}

std::vector<std::string> Client::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  return op.run("MULTI_GET", [&](Op& o) {
    o.send(request_bytes(QueryType::kWait, wire));
    if (!o.await_stop_waiting(timeout, "WAIT")) {
      throw TimeoutError("multi_get timeout after " + ms_text(timeout) +
                         ", keys: " + quote_keys(wire) + " on the store at " + conn_->where());
    }
    o.send(request_bytes(QueryType::kMultiGet, wire));
    std::vector<std::string> out;
    out.reserve(wire.size());
    for (std::size_t i = 0; i < wire.size(); ++i) out.push_back(o.recv_bytes());
    return out;
  });
}

void Client::multi_set(const std::vector<std::string>& keys,
                       const std::vector<std::string>& values) {
  if (keys.size() != values.size()) {
    throw std::invalid_argument("multi_set: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values; pass one value per key");
  }
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  op.run("MULTI_SET", [&](Op& o) { o.send(request_bytes(QueryType::kMultiSet, wire, values)); });
}

void Client::queue_push(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.run("QUEUE_PUSH " + k,
         [&](Op& o) { o.send(request_bytes(QueryType::kQueuePush, {k}, {std::string(value)})); });
}

std::string Client::queue_pop(std::string_view key, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  const TimePoint deadline = deadline_after(timeout);
  TZRUN_STORE_OP(op);
  return op.run("QUEUE_POP " + k, [&](Op& o) {
    while (true) {
      Duration left = Duration::zero();  // zero = forever
      if (deadline != TimePoint::max()) {
        left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
        if (left <= Duration::zero()) left = Duration(1);
      }
      o.send(request_bytes(QueryType::kWait, {k}));
      if (!o.await_stop_waiting(left, "WAIT")) {
        throw TimeoutError("queue_pop timeout after " + ms_text(timeout) + " on queue '" + k +
                           "' of the store at " + conn_->where() + " (the queue stayed empty)");
      }
      o.send(request_bytes(QueryType::kQueuePop, {k}));
      if (o.recv_i64() > 0) return o.recv_bytes();
      // Another consumer took the element between our wake-up and our pop: wait again.
    }
  });
}

std::optional<std::string> Client::try_queue_pop(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("QUEUE_POP " + k, [&](Op& o) -> std::optional<std::string> {
    o.send(request_bytes(QueryType::kQueuePop, {k}));
    if (o.recv_i64() > 0) return o.recv_bytes();
    return std::nullopt;
  });
}

std::int64_t Client::queue_len(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.run("QUEUE_LEN " + k, [&](Op& o) {
    o.send(request_bytes(QueryType::kQueueLen, {k}));
    return o.recv_i64();
  });
}

std::vector<std::string> Client::list_keys() {
  TZRUN_STORE_OP(op);
  auto all = op.run("LIST_KEYS", [&](Op& o) {
    o.send(request_bytes(QueryType::kListKeys, {}));
    const auto n = static_cast<std::uint64_t>(o.recv_i64());
    std::vector<std::string> keys;
    for (std::uint64_t i = 0; i < n; ++i) keys.push_back(o.recv_bytes());
    return keys;
  });
  std::vector<std::string> out;
  const std::string& p = options_.key_prefix;
  for (auto& k : all) {
    if (k.compare(0, p.size(), p) == 0) out.push_back(k.substr(p.size()));
  }
  return out;
}

void Client::barrier(std::string_view key, std::int64_t world_size, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.run("BARRIER " + k, [&](Op& o) {
    o.send(request_bytes(QueryType::kBarrier, {k}, {}, world_size));
    if (!o.await_stop_waiting(timeout, "BARRIER")) {
      throw TimeoutError("barrier timeout after " + ms_text(timeout) + " on key '" + k +
                         "' (world_size=" + std::to_string(world_size) + ") of the store at " +
                         conn_->where() + "; not every participant arrived");
    }
  });
}

#undef TZRUN_STORE_OP

}  // namespace tzrun::store
