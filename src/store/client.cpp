// Blocking c10d TCPStore client (see tzrun/store/client.hpp). The socket layer (deadlines,
// send/receive, connect, the per-operation guard Op) is in client_io.cpp.
#include "tzrun/store/client.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "client_io.hpp"
#include "tzrun/store/codec.hpp"

namespace tzrun::store {
namespace {

using detail::Clock;
using detail::DeadlineAfter;
using detail::MsText;
using detail::Op;
using detail::QuoteKeys;
using detail::RequestBytes;
using detail::TimePoint;

constexpr auto kNotListeningLogInterval = std::chrono::seconds(30);

}  // namespace

struct Client::Connection {
  Connection(std::string h, std::uint16_t p, Duration t)
      : host(std::move(h)), port(p), timeout_ms(t.count()) {}
  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
  std::string Where() const { return host + ":" + std::to_string(port); }

  std::mutex mu;
  int fd = -1;
  std::string host;
  std::uint16_t port;
  std::atomic<Duration::rep> timeout_ms;
  std::atomic<bool> broken{false};
  std::string broken_reason;  // guarded by mu
};

Client::Client(ClientOptions options) : options_(std::move(options)) {
  conn_ = std::make_shared<Connection>(options_.host, options_.port, options_.timeout);
  const Duration connect_timeout = options_.connect_timeout.value_or(options_.timeout);
  const TimePoint deadline = DeadlineAfter(connect_timeout);
  detail::Backoff backoff(options_.initial_backoff, options_.backoff_multiplier,
                          options_.max_backoff);
  TimePoint last_log = Clock::now();
  int attempts = 0;
  while (true) {
    ++attempts;
    std::string error;
    int fd = -1;
    try {
      fd = detail::ConnectOnce(options_.host, options_.port, deadline);
      std::string hello;
      PutU8(hello, static_cast<std::uint8_t>(QueryType::kValidate));
      PutU32(hello, kValidationMagic);
      const auto nonce = static_cast<std::uint32_t>(::getpid());
      PutU8(hello, static_cast<std::uint8_t>(QueryType::kPing));
      PutU32(hello, nonce);
      detail::SendAll(fd, hello, deadline);
      std::uint8_t echo[4];
      detail::RecvExact(fd, reinterpret_cast<char*>(echo), 4, deadline);
      if (GetU32(echo) != nonce) {
        ::close(fd);
        throw ConnectionError("the server at " + conn_->Where() +
                              " answered PING with the wrong nonce: it is not a c10d TCPStore "
                              "(check MASTER_ADDR/MASTER_PORT)");
      }
      conn_->fd = fd;
      return;
    } catch (const detail::RetryableError& e) {
      error = e.what();
    } catch (const detail::IoError& e) {
      error = std::string("handshake failed: ") + e.what();
    } catch (const detail::IoTimeout& e) {
      error = std::string("handshake: ") + e.what();
    }
    if (fd >= 0) ::close(fd);
    const auto now = Clock::now();
    if (now >= deadline) {
      throw TimeoutError("cannot connect to the store at " + conn_->Where() + " within " +
                         MsText(connect_timeout) + " (" + std::to_string(attempts) +
                         " attempts; last error: " + error +
                         "); check that the store is running and reachable at that address "
                         "(MASTER_ADDR/MASTER_PORT, firewalls), or raise the timeout");
    }
    if (options_.log && (attempts == 1 || now - last_log >= kNotListeningLogInterval)) {
      options_.log(LogLevel::kInfo, "store at " + conn_->Where() + " is not reachable yet (" +
                                        error + "); retrying");
      last_log = now;
    }
    auto delay = backoff.Next();
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

Client Client::WithKeyPrefix(std::string key_prefix) const {
  ClientOptions o = options_;
  o.key_prefix = std::move(key_prefix);
  return Client(std::move(o), conn_);
}

std::unique_ptr<Store> Client::Clone() const {
  ClientOptions o = options_;
  o.timeout = Timeout();
  return std::make_unique<Client>(std::move(o));
}

bool Client::Connected() const noexcept {
  return conn_ && !conn_->broken.load();
}

Duration Client::Timeout() const {
  return Duration(conn_->timeout_ms.load());
}
void Client::SetTimeout(Duration timeout) {
  conn_->timeout_ms.store(timeout.count());
}

// Operations. Each runs under the connection mutex through `Op` (client_io.hpp), which turns
// low-level I/O failures into typed errors and marks the connection broken when its state
// became unknown.

#define TZRUN_STORE_OP(var) \
  Op var(conn_->mu, conn_->fd, conn_->broken, conn_->broken_reason, conn_->Where(), this->Timeout())

void Client::Set(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.Run("SET " + k,
         [&](Op& o) { o.Send(RequestBytes(QueryType::kSet, {k}, {std::string(value)})); });
}

std::string Client::Get(std::string_view key, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("GET " + k, [&](Op& o) {
    o.Send(RequestBytes(QueryType::kWait, {k}));
    if (!o.AwaitStopWaiting(timeout, "WAIT")) {
      throw TimeoutError("get timeout after " + MsText(timeout) + " waiting for key '" + k +
                         "' on the store at " + conn_->Where() +
                         " (no process set it; check that every rank reached this point)");
    }
    o.Send(RequestBytes(QueryType::kGet, {k}));
    return o.RecvBytes();
  });
}

std::int64_t Client::Add(std::string_view key, std::int64_t delta) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("ADD " + k, [&](Op& o) {
    o.Send(RequestBytes(QueryType::kAdd, {k}, {}, delta));
    return o.RecvI64();
  });
}

std::string Client::CompareSet(std::string_view key, std::string_view expected,
                               std::string_view desired) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("COMPARE_SET " + k, [&](Op& o) {
    o.Send(
        RequestBytes(QueryType::kCompareSet, {k}, {std::string(expected), std::string(desired)}));
    return o.RecvBytes();
  });
}

bool Client::Check(const std::vector<std::string>& keys) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  return op.Run("CHECK", [&](Op& o) {
    o.Send(RequestBytes(QueryType::kCheck, wire));
    return o.RecvU8() == static_cast<std::uint8_t>(CheckResponseType::kReady);
  });
}

void Client::Wait(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  op.Run("WAIT", [&](Op& o) {
    o.Send(RequestBytes(QueryType::kWait, wire));
    if (!o.AwaitStopWaiting(timeout, "WAIT")) {
      throw TimeoutError("wait timeout after " + MsText(timeout) + ", keys: " + QuoteKeys(wire) +
                         " on the store at " + conn_->Where());
    }
  });
}

std::int64_t Client::NumKeys() {
  TZRUN_STORE_OP(op);
  return op.Run("GETNUMKEYS", [&](Op& o) {
    o.Send(RequestBytes(QueryType::kGetNumKeys, {}));
    return o.RecvI64();
  });
}

bool Client::DeleteKey(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("DELETE_KEY " + k, [&](Op& o) {
    o.Send(RequestBytes(QueryType::kDeleteKey, {k}));
    return o.RecvI64() == 1;
  });
}

void Client::Append(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.Run("APPEND " + k,
         [&](Op& o) { o.Send(RequestBytes(QueryType::kAppend, {k}, {std::string(value)})); });
}

std::vector<std::string> Client::MultiGet(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  return op.Run("MULTI_GET", [&](Op& o) {
    o.Send(RequestBytes(QueryType::kWait, wire));
    if (!o.AwaitStopWaiting(timeout, "WAIT")) {
      throw TimeoutError("multi_get timeout after " + MsText(timeout) +
                         ", keys: " + QuoteKeys(wire) + " on the store at " + conn_->Where());
    }
    o.Send(RequestBytes(QueryType::kMultiGet, wire));
    std::vector<std::string> out;
    out.reserve(wire.size());
    for (std::size_t i = 0; i < wire.size(); ++i) out.push_back(o.RecvBytes());
    return out;
  });
}

void Client::MultiSet(const std::vector<std::string>& keys,
                      const std::vector<std::string>& values) {
  if (keys.size() != values.size()) {
    throw std::invalid_argument("multi_set: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values; pass one value per key");
  }
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(options_.key_prefix + k);
  TZRUN_STORE_OP(op);
  op.Run("MULTI_SET", [&](Op& o) { o.Send(RequestBytes(QueryType::kMultiSet, wire, values)); });
}

void Client::QueuePush(std::string_view key, std::string_view value) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.Run("QUEUE_PUSH " + k,
         [&](Op& o) { o.Send(RequestBytes(QueryType::kQueuePush, {k}, {std::string(value)})); });
}

std::string Client::QueuePop(std::string_view key, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  const TimePoint deadline = DeadlineAfter(timeout);
  TZRUN_STORE_OP(op);
  return op.Run("QUEUE_POP " + k, [&](Op& o) {
    while (true) {
      Duration left = Duration::zero();  // zero = forever
      if (deadline != TimePoint::max()) {
        left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
        if (left <= Duration::zero()) left = Duration(1);
      }
      o.Send(RequestBytes(QueryType::kWait, {k}));
      if (!o.AwaitStopWaiting(left, "WAIT")) {
        throw TimeoutError("queue_pop timeout after " + MsText(timeout) + " on queue '" + k +
                           "' of the store at " + conn_->Where() + " (the queue stayed empty)");
      }
      o.Send(RequestBytes(QueryType::kQueuePop, {k}));
      if (o.RecvI64() > 0) return o.RecvBytes();
      // Another consumer took the element between our wake-up and our pop: wait again.
    }
  });
}

std::optional<std::string> Client::TryQueuePop(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("QUEUE_POP " + k, [&](Op& o) -> std::optional<std::string> {
    o.Send(RequestBytes(QueryType::kQueuePop, {k}));
    if (o.RecvI64() > 0) return o.RecvBytes();
    return std::nullopt;
  });
}

std::int64_t Client::QueueLen(std::string_view key) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  return op.Run("QUEUE_LEN " + k, [&](Op& o) {
    o.Send(RequestBytes(QueryType::kQueueLen, {k}));
    return o.RecvI64();
  });
}

std::vector<std::string> Client::ListKeys() {
  TZRUN_STORE_OP(op);
  auto all = op.Run("LIST_KEYS", [&](Op& o) {
    o.Send(RequestBytes(QueryType::kListKeys, {}));
    const auto n = static_cast<std::uint64_t>(o.RecvI64());
    std::vector<std::string> keys;
    for (std::uint64_t i = 0; i < n; ++i) keys.push_back(o.RecvBytes());
    return keys;
  });
  std::vector<std::string> out;
  const std::string& p = options_.key_prefix;
  for (auto& k : all) {
    if (k.compare(0, p.size(), p) == 0) out.push_back(k.substr(p.size()));
  }
  return out;
}

void Client::Barrier(std::string_view key, std::int64_t world_size, Duration timeout) {
  const std::string k = options_.key_prefix + std::string(key);
  TZRUN_STORE_OP(op);
  op.Run("BARRIER " + k, [&](Op& o) {
    o.Send(RequestBytes(QueryType::kBarrier, {k}, {}, world_size));
    if (!o.AwaitStopWaiting(timeout, "BARRIER")) {
      throw TimeoutError("barrier timeout after " + MsText(timeout) + " on key '" + k +
                         "' (world_size=" + std::to_string(world_size) + ") of the store at " +
                         conn_->Where() + "; not every participant arrived");
    }
  });
}

#undef TZRUN_STORE_OP

}  // namespace tzrun::store
