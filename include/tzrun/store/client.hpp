// tzrun/store/client.hpp — blocking c10d TCPStore client.
//
// Behaves like torch/csrc/distributed/c10d/TCPStore.cpp with is_master=False:
//  * connect: retries "not listening yet"/reset/refused with exponential backoff and jitter
//    (500 ms x1.5 up to 60 s, +-50%, c10d's ExponentialBackoffWithJitter) until the connect
//    deadline, then VALIDATE(magic) + PING(pid) and checks the echo; a failure anywhere in that
//    sequence retries the whole sequence (PR #129261);
//  * keys: every user key goes on the wire as key_prefix + key, key_prefix "/" by default
//    (TCPStore::keyPrefix_), so keys are shared with Python/libtorch peers. Use
//    key_prefix "" (or WithKeyPrefix("")) for raw wire keys such as TCPStore's "init/";
//  * get = WAIT then GET; wait timeouts send CANCEL_WAIT and handle the STOP_WAITING that may
//    cross it on the wire; the server never times out waits.
// Unlike c10d, every reply is awaited for at most the store timeout (a silent server gives a
// TimeoutError instead of a hang), and a wait whose key arrived just as it timed out succeeds.
//
// Errors: TimeoutError (connect deadline, wait/get/barrier/queue_pop timeouts: names the keys
// and the duration), ConnectionError (reset/EOF/bad reply). After a ConnectionError, or a
// timeout in the middle of a reply, the connection is broken for good: the client never
// reconnects (like c10d); make a new Client or clone().
//
// Thread-safety: all operations are serialised by a mutex per connection; a blocking wait
// holds it (as in c10d), so use clone() for concurrent blocking calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tzrun/store/log.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::store {

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 29500;
  Duration timeout = Store::kDefaultTimeout;  ///< default for blocking calls; zero = forever
  std::optional<Duration> connect_timeout;    ///< connect deadline; default: `timeout`
  std::string key_prefix = "/";               ///< prepended to every key ("" = raw)
  Duration initial_backoff = std::chrono::milliseconds(500);
  double backoff_multiplier = 1.5;
  Duration max_backoff = std::chrono::seconds(60);
  LogSink log;  ///< "not listening yet" lines (at most every 30 s) and similar; may be empty
};

class Client final : public Store {
 public:
  /// Connects (blocking, see above). Throws TimeoutError or ConnectionError.
  explicit Client(ClientOptions options);
  ~Client() override;
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  using Store::Barrier;
  using Store::Get;
  using Store::MultiGet;
  using Store::QueuePop;
  using Store::Wait;
  void Set(std::string_view key, std::string_view value) override;
  std::string Get(std::string_view key, Duration timeout) override;
  std::int64_t Add(std::string_view key, std::int64_t delta) override;
  std::string CompareSet(std::string_view key, std::string_view expected,
                         std::string_view desired) override;
  bool Check(const std::vector<std::string>& keys) override;
  void Wait(const std::vector<std::string>& keys, Duration timeout) override;
  std::int64_t NumKeys() override;
  bool DeleteKey(std::string_view key) override;
  void Append(std::string_view key, std::string_view value) override;
  std::vector<std::string> MultiGet(const std::vector<std::string>& keys,
                                    Duration timeout) override;
  void MultiSet(const std::vector<std::string>& keys,
                const std::vector<std::string>& values) override;
  void QueuePush(std::string_view key, std::string_view value) override;
  std::string QueuePop(std::string_view key, Duration timeout) override;
  std::optional<std::string> TryQueuePop(std::string_view key) override;
  std::int64_t QueueLen(std::string_view key) override;
  /// Keys starting with key_prefix, with it stripped (so "init/" is hidden by default).
  std::vector<std::string> ListKeys() override;
  void Barrier(std::string_view key, std::int64_t world_size, Duration timeout) override;
  [[nodiscard]] Duration Timeout() const override;
  void SetTimeout(Duration timeout) override;
  /// A new connection with the same options (c10d TCPStore::clone()).
  [[nodiscard]] std::unique_ptr<Store> Clone() const override;

  /// A Client sharing this connection (and its mutex) but using another key prefix,
  /// e.g. WithKeyPrefix("") to touch the raw "init/" counter.
  [[nodiscard]] Client WithKeyPrefix(std::string key_prefix) const;
  [[nodiscard]] const ClientOptions& Options() const noexcept { return options_; }
  /// False once the connection broke (every later call throws ConnectionError).
  [[nodiscard]] bool Connected() const noexcept;

 private:
  struct Connection;
  Client(ClientOptions options, std::shared_ptr<Connection> connection);

  ClientOptions options_;
  std::shared_ptr<Connection> conn_;
};

}  // namespace tzrun::store
