// PrefixStore (see tzrun/store/store.hpp); mirrors c10d PrefixStore.cpp.
#include <utility>

#include "tzrun/store/store.hpp"

namespace tzrun::store {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
    : prefix_(std::move(prefix)), inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("PrefixStore(\"" + prefix_ + "\"): inner store is null");
}

std::string PrefixStore::join_key(std::string_view key) const {
  std::string out;
  out.reserve(prefix_.size() + 1 + key.size());
  out.append(prefix_).push_back('/');
  out.append(key);
  return out;
}

std::vector<std::string> PrefixStore::join_keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(join_key(k));
  return out;
}

void PrefixStore::set(std::string_view key, std::string_view value) {
  inner_->set(join_key(key), value);
}
std::string PrefixStore::get(std::string_view key, Duration timeout) {
  return inner_->get(join_key(key), timeout);
}
std::int64_t PrefixStore::add(std::string_view key, std::int64_t delta) {
  return inner_->add(join_key(key), delta);
}
std::string PrefixStore::compare_set(std::string_view key, std::string_view expected,
                                     std::string_view desired) {
  return inner_->compare_set(join_key(key), expected, desired);
}
bool PrefixStore::check(const std::vector<std::string>& keys) {
  return inner_->check(join_keys(keys));
}
void PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  inner_->wait(join_keys(keys), timeout);
}
std::int64_t PrefixStore::num_keys() {
  return inner_->num_keys();
}
bool PrefixStore::delete_key(std::string_view key) {
  return inner_->delete_key(join_key(key));
}
void PrefixStore::append(std::string_view key, std::string_view value) {
  inner_->append(join_key(key), value);
}
std::vector<std::string> PrefixStore::multi_get(const std::vector<std::string>& keys,
                                                Duration timeout) {
  return inner_->multi_get(join_keys(keys), timeout);
}
void PrefixStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<std::string>& values) {
  inner_->multi_set(join_keys(keys), values);
}
void PrefixStore::queue_push(std::string_view key, std::string_view value) {
  inner_->queue_push(join_key(key), value);
}
std::string PrefixStore::queue_pop(std::string_view key, Duration timeout) {
  return inner_->queue_pop(join_key(key), timeout);
}
std::optional<std::string> PrefixStore::try_queue_pop(std::string_view key) {
  return inner_->try_queue_pop(join_key(key));
}
std::int64_t PrefixStore::queue_len(std::string_view key) {
  return inner_->queue_len(join_key(key));
}
std::vector<std::string> PrefixStore::list_keys() {
  const std::string p = prefix_ + "/";
  std::vector<std::string> out;
  for (auto& k : inner_->list_keys()) {
    if (k.compare(0, p.size(), p) == 0) out.push_back(k.substr(p.size()));
  }
  return out;
}
void PrefixStore::barrier(std::string_view key, std::int64_t world_size, Duration timeout) {
  inner_->barrier(join_key(key), world_size, timeout);
}
Duration PrefixStore::timeout() const {
  return inner_->timeout();
}
void PrefixStore::set_timeout(Duration timeout) {
  inner_->set_timeout(timeout);
}
std::unique_ptr<Store> PrefixStore::clone() const {
  return std::make_unique<PrefixStore>(prefix_, std::shared_ptr<Store>(inner_->clone()));
}

}  // namespace tzrun::store
