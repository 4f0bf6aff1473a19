// tzrun rendezvous internals: where the dynamic rendezvous keeps its shared state — torchrun's
// RendezvousBackend (get_state / set_state with a fencing token) plus the wait for the next
// change. Two kinds:
//   c10d    (c10d_rendezvous_backend.py): one key of the rendezvous TCP store, base64 of
//           torchrun's pickle (torch_state.hpp), compare_set on the previous value; the writer
//           also sets a notify key named after the value it replaced, which wakes tzrun's
//           waiters (torchrun's agents poll).
//   etcd-v2 (etcd_rendezvous_backend.py): the etcd key /torch/elastic/rendezvous/<run_id>,
//           base64 of torchrun's pickle (torch_state.hpp), written with ttl 7200 s and
//           prevIndex=<the modifiedIndex read> (prevExist=false when there is none); waiters
//           watch the key from modifiedIndex + 1. Its round store is torch's EtcdStore under
//           /torch/elastic/store (etcd_store.hpp) behind EtcdStoreAdapter.
// Errors reaching etcd or the store are store::StoreError (ConnectionError / TimeoutError).
//
// Thread-safety: one channel per thread (Clone() for another thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "etcd_client.hpp"
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous::detail {

class StateChannel {
 public:
  struct Read {
    RendezvousState state;
    std::string token;     ///< fencing token of `state` ("" = no state stored yet)
    bool written = false;  ///< CompareSet: our state was stored
  };
  virtual ~StateChannel() = default;
  virtual Read Get() = 0;
  /// Stores `next` iff the stored state still has `token`; returns what is stored now.
  virtual Read CompareSet(const std::string& token, const RendezvousState& next) = 0;
  /// Waits up to `slice` for a state newer than `token` (`next_version`: c10d's notify key);
  /// false when none came in time.
  virtual bool WaitChange(const std::string& token, std::int64_t next_version,
                          std::chrono::milliseconds slice) = 0;
  [[nodiscard]] virtual std::unique_ptr<StateChannel> Clone() const = 0;
  /// Bounds each request from now on (a leaving agent shortens it).
  virtual void SetTimeout(std::chrono::milliseconds timeout) = 0;
};

/// C10dRendezvousBackend._NULL_SENTINEL: the value of the state key before the first state; the
/// agent writes it with compare_set(key, "", it) on connecting, as torchrun's backend does, so
/// that a read never blocks.
inline constexpr std::string_view kC10dNullState = "Y2FuaW1hZGFt";

/// The c10d channel on `store` (the rendezvous store client), state under `key` (initialized
/// with kC10dNullState).
std::unique_ptr<StateChannel> MakeStoreChannel(std::shared_ptr<store::Store> store,
                                               std::string key);

/// The etcd-v2 channel for `run_id` on `client`.
std::unique_ptr<StateChannel> MakeEtcdChannel(const EtcdClient& client, const std::string& run_id);

/// torch's EtcdStore (prefix /torch/elastic/store) as a store::Store: Set, Get, Add, Check,
/// Wait, MultiGet, MultiSet, DeleteKey; the other calls throw store::StoreError (torch's
/// EtcdStore has none of them either).
/// `prefix`: the legacy etcd backend's <run path>/rdzv/v_<version>/kv.
std::shared_ptr<store::Store> MakeEtcdStore(const EtcdClient& client,
                                            std::chrono::milliseconds timeout,
                                            const std::string& prefix = "/torch/elastic/store");

}  // namespace tzrun::rendezvous::detail
