// tzrun/store/store.hpp — the c10d Store interface and PrefixStore.
//
// Mirrors torch/csrc/distributed/c10d/Store.hpp (set/get/add/compareSet/check/wait/...) and
// PrefixStore.cpp: a PrefixStore sends `prefix + "/" + key` to the store it wraps, so
// PrefixStore("default_pg", client) talks to the same wire keys as
// torch.distributed.PrefixStore("default_pg", TCPStore(...)). Nesting composes.
//
// Keys and values are arbitrary bytes held in std::string. Timeouts are milliseconds;
// Duration::zero() (kNoTimeout) waits forever. Blocking calls that run out of time throw
// TimeoutError naming the keys and the duration; connection failures throw ConnectionError.
//
// Thread-safety: implementations in this library are safe to call from several threads
// (calls on one connection are serialised, as in c10d).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/store/errors.hpp"

namespace tzrun::store {

using Duration = std::chrono::milliseconds;

class Store {
 public:
  static constexpr Duration kDefaultTimeout = std::chrono::seconds(300);  ///< c10d's default
  static constexpr Duration kNoTimeout = Duration::zero();                ///< wait forever

  virtual ~Store() = default;

  virtual void Set(std::string_view key, std::string_view value) = 0;
  /// Blocks until `key` exists (WAIT), then returns its value (GET).
  std::string Get(std::string_view key) { return Get(key, Timeout()); }
  virtual std::string Get(std::string_view key, Duration timeout) = 0;
  /// Adds `delta` to the decimal counter at `key` (missing = 0) and returns the new value.
  /// add(key, 0) reads a counter without blocking.
  virtual std::int64_t Add(std::string_view key, std::int64_t delta) = 0;
  /// Atomic compare-and-set with c10d semantics: returns the value now stored. Success iff the
  /// result == desired. A missing key matches only an empty `expected`; for a missing key and a
  /// non-empty `expected` nothing is stored and `expected` is returned.
  virtual std::string CompareSet(std::string_view key, std::string_view expected,
                                 std::string_view desired) = 0;
  /// True iff every key exists (a non-empty queue counts); never blocks.
  virtual bool Check(const std::vector<std::string>& keys) = 0;
  /// Blocks until every key exists.
  void Wait(const std::vector<std::string>& keys) { Wait(keys, Timeout()); }
  virtual void Wait(const std::vector<std::string>& keys, Duration timeout) = 0;
  /// Number of keys on the server (all of them: no prefix filtering, like c10d).
  virtual std::int64_t NumKeys() = 0;
  /// True iff the key existed.
  virtual bool DeleteKey(std::string_view key) = 0;
  /// Appends to the value (creating it if missing).
  virtual void Append(std::string_view key, std::string_view value) = 0;
  /// Blocks until all keys exist, then returns their values in order.
  std::vector<std::string> MultiGet(const std::vector<std::string>& keys) {
    return MultiGet(keys, Timeout());
  }
  virtual std::vector<std::string> MultiGet(const std::vector<std::string>& keys,
                                            Duration timeout) = 0;
  /// keys.size() must equal values.size() (std::invalid_argument otherwise).
  virtual void MultiSet(const std::vector<std::string>& keys,
                        const std::vector<std::string>& values) = 0;
  virtual void QueuePush(std::string_view key, std::string_view value) = 0;
  /// Blocks until the queue has an element and pops it.
  std::string QueuePop(std::string_view key) { return QueuePop(key, Timeout()); }
  virtual std::string QueuePop(std::string_view key, Duration timeout) = 0;
  /// Pops without blocking; nullopt when the queue is empty.
  virtual std::optional<std::string> TryQueuePop(std::string_view key) = 0;
  virtual std::int64_t QueueLen(std::string_view key) = 0;
  /// Keys visible through this store (its prefix stripped), unspecified order.
  virtual std::vector<std::string> ListKeys() = 0;
  /// Server-side barrier (BARRIER opcode, PyTorch 2.12+ semantics): counts arrivals at `key`
  /// and returns once `world_size` arrivals happened.
  void Barrier(std::string_view key, std::int64_t world_size) {
    Barrier(key, world_size, Timeout());
  }
  virtual void Barrier(std::string_view key, std::int64_t world_size, Duration timeout) = 0;

  /// Default timeout of the blocking calls above.
  [[nodiscard]] virtual Duration Timeout() const = 0;
  virtual void SetTimeout(Duration timeout) = 0;
  /// An independent store of the same kind (a new connection for Client).
  [[nodiscard]] virtual std::unique_ptr<Store> Clone() const = 0;
};

/// Wraps another store and namespaces every key as `prefix + "/" + key` (c10d PrefixStore).
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> inner);

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
  /// The inner store's keys that start with `prefix + "/"`, with that part removed.
  std::vector<std::string> ListKeys() override;
  void Barrier(std::string_view key, std::int64_t world_size, Duration timeout) override;
  [[nodiscard]] Duration Timeout() const override;
  void SetTimeout(Duration timeout) override;
  [[nodiscard]] std::unique_ptr<Store> Clone() const override;

  [[nodiscard]] const std::string& Prefix() const noexcept { return prefix_; }
  [[nodiscard]] const std::shared_ptr<Store>& Underlying() const noexcept { return inner_; }
  /// prefix + "/" + key.
  [[nodiscard]] std::string JoinKey(std::string_view key) const;

 private:
  std::vector<std::string> JoinKeys(const std::vector<std::string>& keys) const;
  std::string prefix_;
  std::shared_ptr<Store> inner_;
};

}  // namespace tzrun::store
