// tzrun rendezvous internals: torch's EtcdStore semantics over etcd's v2 keys API
// (torch/distributed/elastic/rendezvous/etcd_store.py): the key-value store torchrun's `etcd`
// and `etcd-v2` backends hand to the agents.
//
// Layout (shared with torch's EtcdStore, so both read each other's keys): every key is
// <prefix>/<base64(key)>, every value base64(value); Add keeps base64 of the decimal number.
//   Set:   PUT the key.
//   Get:   Wait for the key, then return its value (RendezvousTimeoutError after the timeout;
//          torch raises LookupError).
//   Add:   create with prevExist=false as base64(str(delta)); if it exists, compare-and-swap
//          (prevValue) the incremented number until it succeeds.
//   Check: all keys present now. Wait: all keys present, watching the prefix for changes
//          (waitIndex = X-Etcd-Index + 1) until the timeout.
// Difference: the prefix is read recursively (a base64 key containing '/' makes etcd nest it
// in a directory, which torch's non-recursive read never finds).
//
// Thread-safety: like EtcdClient, safe from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd_client.hpp"

namespace tzrun::rendezvous::detail {

/// etcd_store.py cas_delay(): a random sleep of up to 100 ms before retrying a CAS.
void CasDelay();

class EtcdKvStore {
 public:
  EtcdKvStore(EtcdClient client, std::string prefix, std::chrono::milliseconds timeout);

  void Set(std::string_view key, std::string_view value);
  std::string Get(std::string_view key);
  std::int64_t Add(std::string_view key, std::int64_t delta);
  bool Check(const std::vector<std::string>& keys);
  void Wait(const std::vector<std::string>& keys,
            std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// The etcd key of `key` (<prefix>/<base64(key)>).
  [[nodiscard]] std::string EtcdKey(std::string_view key) const;

 private:
  /// etcd key -> decoded value of every wanted key, once all are present; nullopt on timeout.
  std::optional<std::map<std::string, std::string>> TryWaitGet(
      const std::vector<std::string>& etcd_keys, std::chrono::milliseconds timeout);

  EtcdClient client_;
  std::string prefix_;  // ends with '/'
  std::chrono::milliseconds timeout_;
};

}  // namespace tzrun::rendezvous::detail
