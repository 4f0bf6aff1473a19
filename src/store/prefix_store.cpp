// PrefixStore (see tzrun/store/store.hpp); mirrors c10d PrefixStore.cpp.
#include <utility>

#include "tzrun/store/store.hpp"

namespace tzrun::store {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
    : prefix_(std::move(prefix)), inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("PrefixStore(\"" + prefix_ + "\"): inner store is null");
}

std::string PrefixStore::JoinKey(std::string_view key) const {
  std::string out;
  out.reserve(prefix_.size() + 1 + key.size());
  out.append(prefix_).push_back('/');
  out.append(key);
  return out;
}

std::vector<std::string> PrefixStore::JoinKeys(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(JoinKey(k));
  return out;
}

void PrefixStore::Set(std::string_view key, std::string_view value) {
  inner_->Set(JoinKey(key), value);
}
std::string PrefixStore::Get(std::string_view key, Duration timeout) {
  return inner_->Get(JoinKey(key), timeout);
}
std::int64_t PrefixStore::Add(std::string_view key, std::int64_t delta) {
  return inner_->Add(JoinKey(key), delta);
}
std::string PrefixStore::CompareSet(std::string_view key, std::string_view expected,
                                    std::string_view desired) {
  return inner_->CompareSet(JoinKey(key), expected, desired);
}
bool PrefixStore::Check(const std::vector<std::string>& keys) {
  return inner_->Check(JoinKeys(keys));
}
void PrefixStore::Wait(const std::vector<std::string>& keys, Duration timeout) {
  inner_->Wait(JoinKeys(keys), timeout);
}
std::int64_t PrefixStore::NumKeys() {
  return inner_->NumKeys();
}
bool PrefixStore::DeleteKey(std::string_view key) {
  return inner_->DeleteKey(JoinKey(key));
}
void PrefixStore::Append(std::string_view key, std::string_view value) {
  inner_->Append(JoinKey(key), value);
}
std::vector<std::string> PrefixStore::MultiGet(const std::vector<std::string>& keys,
                                               Duration timeout) {
  return inner_->MultiGet(JoinKeys(keys), timeout);
}
void PrefixStore::MultiSet(const std::vector<std::string>& keys,
                           const std::vector<std::string>& values) {
  inner_->MultiSet(JoinKeys(keys), values);
}
void PrefixStore::QueuePush(std::string_view key, std::string_view value) {
  inner_->QueuePush(JoinKey(key), value);
}
std::string PrefixStore::QueuePop(std::string_view key, Duration timeout) {
  return inner_->QueuePop(JoinKey(key), timeout);
}
std::optional<std::string> PrefixStore::TryQueuePop(std::string_view key) {
  return inner_->TryQueuePop(JoinKey(key));
}
std::int64_t PrefixStore::QueueLen(std::string_view key) {
  return inner_->QueueLen(JoinKey(key));
}
std::vector<std::string> PrefixStore::ListKeys() {
  const std::string p = prefix_ + "/";
  std::vector<std::string> out;
  for (auto& k : inner_->ListKeys()) {
    if (k.compare(0, p.size(), p) == 0) out.push_back(k.substr(p.size()));
  }
  return out;
}
void PrefixStore::Barrier(std::string_view key, std::int64_t world_size, Duration timeout) {
  inner_->Barrier(JoinKey(key), world_size, timeout);
}
Duration PrefixStore::Timeout() const {
  return inner_->Timeout();
}
void PrefixStore::SetTimeout(Duration timeout) {
  inner_->SetTimeout(timeout);
}
std::unique_ptr<Store> PrefixStore::Clone() const {
  return std::make_unique<PrefixStore>(prefix_, std::shared_ptr<Store>(inner_->Clone()));
}

}  // namespace tzrun::store
