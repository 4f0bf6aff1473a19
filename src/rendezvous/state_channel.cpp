// The c10d and etcd-v2 state channels and the etcd store adapter (see state_channel.hpp).
#include "state_channel.hpp"

#include "etcd_http.hpp"
#include "etcd_store.hpp"
#include "torch_state.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;

constexpr std::int64_t kStateTtlSeconds = 7200;  // torchrun's EtcdRendezvousBackend default
constexpr std::string_view kNullSentinel = kC10dNullState;

/// FNV-1a 64 of `s` in hex: names a notify key after a token (stable across processes).
std::string TokenHash(std::string_view s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = kHex[h & 15];
  return out;
}

// ---- c10d --------------------------------------------------------------------------------
class StoreChannel final : public StateChannel {
 public:
  StoreChannel(std::shared_ptr<store::Store> s, std::string key)
      : s_(std::move(s)), key_(std::move(key)) {}

  Read Get() override {
    std::string bits = s_->Get(key_);
    return Decoded(bits, false);
  }

  Read CompareSet(const std::string& token, const RendezvousState& next) override {
    const std::string nb = Base64Encode(EncodeTorchState(next));
    std::string bits = s_->CompareSet(key_, token.empty() ? std::string(kNullSentinel) : token, nb);
    const bool written = bits == nb;
    if (written) s_->Set(NotifyKey(token), "");  // wakes the waiters that hold `token`
    return Decoded(bits, written);
  }

  bool WaitChange(const std::string& token, std::int64_t /*next_version*/,
                  milliseconds slice) override {
    try {
      s_->Wait({NotifyKey(token)}, slice);
      return true;
    } catch (const store::TimeoutError&) {
      return false;
    }
  }

  [[nodiscard]] std::unique_ptr<StateChannel> Clone() const override {
    return std::make_unique<StoreChannel>(std::shared_ptr<store::Store>(s_->Clone()), key_);
  }

  void SetTimeout(milliseconds timeout) override { s_->SetTimeout(timeout); }

 private:
  [[nodiscard]] Read Decoded(const std::string& bits, bool written) const {
    if (bits == kNullSentinel) return {RendezvousState{}, "", written};
    const auto pickle = Base64Decode(bits);
    if (!pickle) {
      throw RendezvousStateError("the c10d rendezvous state under store key '" + key_ +
                                 "' is not base64; another program may use this key: pick "
                                 "another --rdzv-id");
    }
    return {DecodeTorchState(*pickle), bits, written};
  }

  // Torchrun's agents poll; tzrun's also wait on the key a writer sets for the token it
  // replaced (the empty token: the sentinel).
  [[nodiscard]] std::string NotifyKey(const std::string& token) const {
    return key_ + ".notify/" + TokenHash(token.empty() ? kNullSentinel : token);
  }

  std::shared_ptr<store::Store> s_;
  std::string key_;
};

// ---- etcd-v2 -----------------------------------------------------------------------------
[[noreturn]] void Lost(const EtcdError& e) {
  // No v2 API or a TLS failure: not a lost connection the caller may retry, a misconfiguration.
  if (etcd_code::IsFatal(e.Code())) throw RendezvousConnectionError(e.what());
  throw store::ConnectionError(e.what());
}

class EtcdChannel final : public StateChannel {
 public:
  EtcdChannel(EtcdClient client, std::string key)
      : client_(std::move(client)), key_(std::move(key)) {}

  Read Get() override {
    try {
      return Decoded(client_.Get(key_));
    } catch (const EtcdError& e) {
      if (e.Code() != etcd_code::kKeyNotFound) Lost(e);
      seen_index_ = e.Index();
      return {};
    }
  }

  Read CompareSet(const std::string& token, const RendezvousState& next) override {
    EtcdWrite w;
    w.ttl = kStateTtlSeconds;
    if (token.empty()) {
      w.prev_exist = false;
    } else {
      w.prev_index = std::stoll(token);
    }
    try {
      Read r = Decoded(client_.Put(key_, Base64Encode(EncodeTorchState(next)), w));
      r.written = true;
      return r;
    } catch (const EtcdError& e) {
      if (e.Code() != etcd_code::kTestFailed && e.Code() != etcd_code::kNodeExist &&
          e.Code() != etcd_code::kKeyNotFound) {
        Lost(e);
      }
    }
    return Get();
  }

  bool WaitChange(const std::string& token, std::int64_t /*next_version*/,
                  milliseconds slice) override {
    const std::int64_t from = (token.empty() ? seen_index_ : std::stoll(token)) + 1;
    try {
      return client_.Watch(key_, false, from, slice).has_value();
    } catch (const EtcdError& e) {
      if (e.Code() == etcd_code::kEventIndexCleared) return true;  // re-read the state
      Lost(e);
    }
  }

  [[nodiscard]] std::unique_ptr<StateChannel> Clone() const override {
    return std::make_unique<EtcdChannel>(client_, key_);
  }

  void SetTimeout(milliseconds timeout) override { client_ = client_.WithTimeout(timeout); }

 private:
  Read Decoded(const EtcdResult& r) {
    seen_index_ = r.node.modified_index;
    const auto bits = Base64Decode(r.node.value.value_or(""));
    if (!bits) {
      throw RendezvousStateError("the etcd-v2 rendezvous state at " + key_ +
                                 " is not base64; another program may use this key: pick another "
                                 "--rdzv-id or delete the key");
    }
    return {DecodeTorchState(*bits), std::to_string(r.node.modified_index), false};
  }

  EtcdClient client_;
  std::string key_;
  std::int64_t seen_index_ = 0;
};

// ---- torch's EtcdStore as a store::Store --------------------------------------------------
class EtcdStoreAdapter final : public store::Store {
 public:
  EtcdStoreAdapter(const EtcdClient& client, milliseconds timeout, std::string prefix)
      : client_(client),
        prefix_(std::move(prefix)),
        kv_(client, prefix_, timeout),
        timeout_(timeout) {}

  using Store::Barrier;
  using Store::Get;
  using Store::MultiGet;
  using Store::QueuePop;
  using Store::Wait;

  void Set(std::string_view key, std::string_view value) override {
    Guard([&] { kv_.Set(key, value); });
  }
  std::string Get(std::string_view key, store::Duration timeout) override {
    Wait({std::string(key)}, timeout);
    std::string v;
    Guard([&] { v = kv_.Get(key); });
    return v;
  }
  std::int64_t Add(std::string_view key, std::int64_t delta) override {
    std::int64_t v = 0;
    Guard([&] { v = kv_.Add(key, delta); });
    return v;
  }
  bool Check(const std::vector<std::string>& keys) override {
    bool v = false;
    Guard([&] { v = kv_.Check(keys); });
    return v;
  }
  void Wait(const std::vector<std::string>& keys, store::Duration timeout) override {
    Guard([&] {
      kv_.Wait(keys, timeout == store::Store::kNoTimeout ? milliseconds(INT32_MAX) : timeout);
    });
  }
  std::vector<std::string> MultiGet(const std::vector<std::string>& keys,
                                    store::Duration timeout) override {
    Wait(keys, timeout);
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(Get(k, timeout));
    return out;
  }
  void MultiSet(const std::vector<std::string>& keys,
                const std::vector<std::string>& values) override {
    if (keys.size() != values.size()) throw std::invalid_argument("MultiSet: sizes differ");
    for (std::size_t k = 0; k < keys.size(); ++k) Set(keys[k], values[k]);
  }
  std::string CompareSet(std::string_view, std::string_view, std::string_view) override {
    Unsupported("compare_set");
  }
  std::int64_t NumKeys() override { Unsupported("num_keys"); }
  bool DeleteKey(std::string_view) override { Unsupported("delete_key"); }
  void Append(std::string_view, std::string_view) override { Unsupported("append"); }
  void QueuePush(std::string_view, std::string_view) override { Unsupported("queue_push"); }
  std::string QueuePop(std::string_view, store::Duration) override { Unsupported("queue_pop"); }
  std::optional<std::string> TryQueuePop(std::string_view) override { Unsupported("queue_pop"); }
  std::int64_t QueueLen(std::string_view) override { Unsupported("queue_len"); }
  std::vector<std::string> ListKeys() override { Unsupported("list_keys"); }
  void Barrier(std::string_view, std::int64_t, store::Duration) override { Unsupported("barrier"); }
  [[nodiscard]] store::Duration Timeout() const override { return timeout_; }
  void SetTimeout(store::Duration timeout) override {
    timeout_ = timeout;
    kv_ = EtcdKvStore(client_, prefix_, timeout);
  }
  [[nodiscard]] std::unique_ptr<store::Store> Clone() const override {
    return std::make_unique<EtcdStoreAdapter>(client_, timeout_, prefix_);
  }

 private:
  template <typename F>
  void Guard(F f) {
    try {
      f();
    } catch (const RendezvousTimeoutError& e) {
      throw store::TimeoutError(e.what());
    } catch (const EtcdError& e) {
      Lost(e);
    }
  }
  [[noreturn]] static void Unsupported(const char* what) {
    throw store::StoreError(std::string("the etcd store (torch's EtcdStore) has no ") + what);
  }

  EtcdClient client_;
  std::string prefix_;
  EtcdKvStore kv_;
  milliseconds timeout_;
};

}  // namespace

std::unique_ptr<StateChannel> MakeStoreChannel(std::shared_ptr<store::Store> store,
                                               std::string key) {
  return std::make_unique<StoreChannel>(std::move(store), std::move(key));
}

std::unique_ptr<StateChannel> MakeEtcdChannel(const EtcdClient& client, const std::string& run_id) {
  return std::make_unique<EtcdChannel>(client, "/torch/elastic/rendezvous/" + run_id);
}

std::shared_ptr<store::Store> MakeEtcdStore(const EtcdClient& client, milliseconds timeout,
                                            const std::string& prefix) {
  return std::make_shared<EtcdStoreAdapter>(client, timeout, prefix);
}

}  // namespace tzrun::rendezvous::detail
