// torch's EtcdStore over etcd v2 (see etcd_store.hpp; upstream:
// torch/distributed/elastic/rendezvous/etcd_store.py).
#include "etcd_store.hpp"

#include <algorithm>
#include <random>
#include <thread>

namespace tzrun::rendezvous::detail {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void Collect(const EtcdNode& n, std::map<std::string, std::string>& out) {
  if (n.value) out[n.key] = *n.value;
  for (const auto& c : n.nodes) Collect(c, out);
}

std::string Decode(const std::string& etcd_key, const std::string& b64) {
  auto v = Base64Decode(b64);
  if (!v) {
    throw RendezvousStateError("etcd key " + etcd_key + " holds '" + b64.substr(0, 64) +
                               "', not base64 as torch's EtcdStore writes; is another program "
                               "using this rendezvous prefix?");
  }
  return *v;
}

}  // namespace

void CasDelay() {
  // etcd_store.py cas_delay(): a random sleep of up to 100 ms before retrying a CAS.
  thread_local std::mt19937 rng(std::random_device{}());
  std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(0, 100)(rng)));
}

EtcdKvStore::EtcdKvStore(EtcdClient client, std::string prefix, milliseconds timeout)
    : client_(std::move(client)), prefix_(std::move(prefix)), timeout_(timeout) {
  if (prefix_.empty() || prefix_.back() != '/') prefix_ += '/';
}

std::string EtcdKvStore::EtcdKey(std::string_view key) const {
  return prefix_ + Base64Encode(key);
}

void EtcdKvStore::Set(std::string_view key, std::string_view value) {
  client_.Put(EtcdKey(key), Base64Encode(value));
}

std::string EtcdKvStore::Get(std::string_view key) {
  const std::string k = EtcdKey(key);
  auto kvs = TryWaitGet({k}, timeout_);
  if (!kvs) {
    throw RendezvousTimeoutError("key '" + std::string(key) + "' not found in the etcd store " +
                                 prefix_ + " at " + client_.Endpoint() + " within " +
                                 std::to_string(timeout_.count()) + " ms");
  }
  return kvs->at(k);
}

std::int64_t EtcdKvStore::Add(std::string_view key, std::int64_t delta) {
  const std::string k = EtcdKey(key);
  try {
    EtcdWrite create;
    create.prev_exist = false;
    auto r = client_.Put(k, Base64Encode(std::to_string(delta)), create);
    return std::stoll(Decode(k, r.node.value.value_or("")));
  } catch (const EtcdError& e) {
    if (e.Code() != etcd_code::kNodeExist) throw;
  }
  while (true) {
    const auto cur = client_.Get(k);
    const std::string old = cur.node.value.value_or("");
    const std::int64_t next = std::stoll(Decode(k, old)) + delta;
    EtcdWrite cas;
    cas.prev_value = old;
    try {
      auto r = client_.Put(k, Base64Encode(std::to_string(next)), cas);
      return std::stoll(Decode(k, r.node.value.value_or("")));
    } catch (const EtcdError& e) {
      if (e.Code() != etcd_code::kTestFailed) throw;
    }
    CasDelay();
  }
}

bool EtcdKvStore::Check(const std::vector<std::string>& keys) {
  std::vector<std::string> ks;
  for (const auto& k : keys) ks.push_back(EtcdKey(k));
  return TryWaitGet(ks, milliseconds(0)).has_value();
}

void EtcdKvStore::Wait(const std::vector<std::string>& keys, std::optional<milliseconds> timeout) {
  std::vector<std::string> ks;
  for (const auto& k : keys) ks.push_back(EtcdKey(k));
  if (!TryWaitGet(ks, timeout.value_or(timeout_))) {
    throw RendezvousTimeoutError("timeout while waiting for " + std::to_string(keys.size()) +
                                 " key(s) in the etcd store " + prefix_ + " at " +
                                 client_.Endpoint());
  }
}

std::optional<std::map<std::string, std::string>> EtcdKvStore::TryWaitGet(
    const std::vector<std::string>& etcd_keys, milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  const std::string dir = prefix_.substr(0, prefix_.size() - 1);
  while (true) {
    std::int64_t index = 0;
    try {
      const auto all = client_.Get(dir, /*recursive=*/true);
      std::map<std::string, std::string> present;
      Collect(all.node, present);
      std::map<std::string, std::string> wanted;
      for (const auto& k : etcd_keys) {
        if (auto it = present.find(k); it != present.end()) wanted[k] = Decode(k, it->second);
      }
      if (wanted.size() == etcd_keys.size()) return wanted;
      index = all.etcd_index + 1;
    } catch (const EtcdError& e) {
      if (e.Code() != etcd_code::kKeyNotFound) throw;
      index = e.Index() + 1;  // watch from here: a key created meanwhile is not missed
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return std::nullopt;
    try {
      client_.Watch(dir, /*recursive=*/true, index, left);
    } catch (const EtcdError& e) {
      if (e.Code() != etcd_code::kEventIndexCleared && e.Code() != etcd_code::kKeyNotFound) throw;
    }
  }
}

}  // namespace tzrun::rendezvous::detail
