// Key/value semantics of the store, without I/O (see kv_state.hpp).
#include "kv_state.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>

namespace tzrun::store::detail {

// One pending WAIT or BARRIER request.
struct Waiter {
  KvClient* client = nullptr;     // set while registered (drop_client purges before a close)
  std::size_t pending = 0;        // registrations not yet woken
  std::vector<std::string> keys;  // keys it was registered on (for purging)
};

namespace {

Buffer make_static(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}
const Buffer& wait_canceled_buffer() {
  static const Buffer b = make_static(encode_wait_reply(WaitResponseType::kWaitCanceled));
  return b;
}
const Buffer& empty_value_buffer() {
  static const Buffer b = make_static(encode_bytes_reply({}));
  return b;
}
const Buffer& check_buffer(bool ready) {
  static const Buffer r = make_static(encode_check_reply(CheckResponseType::kReady));
  static const Buffer n = make_static(encode_check_reply(CheckResponseType::kNotReady));
  return ready ? r : n;
}

std::string_view value_of(const std::string& wire) {
  return std::string_view(wire).substr(8);
}

std::shared_ptr<std::string> make_value(std::string_view v) {
  auto s = std::make_shared<std::string>();
  s->reserve(8 + v.size());
  put_bytes(*s, v);
  return s;
}

// Stores `value` in wire form into `slot`, rewriting the old buffer in place when no queued
// reply still shares it and it is not much larger than needed (no allocation per SET/ADD).
void assign_value(std::shared_ptr<std::string>& slot, std::string_view value) {
  const std::size_t need = 8 + value.size();
  if (slot && slot.use_count() == 1 && slot->capacity() >= need &&
      slot->capacity() <= 2 * need + 64) {
    slot->clear();
    put_bytes(*slot, value);
    return;
  }
  slot = make_value(value);
}

// APPEND onto a stored value, growing it in place when no queued reply shares the buffer.
void append_value(std::shared_ptr<std::string>& slot, std::string_view add) {
  if (!slot) {
    slot = make_value(add);
  } else if (slot.use_count() == 1) {
    slot->append(add);
    std::string header;
    put_u64(header, slot->size() - 8);
    slot->replace(0, 8, header);
  } else {
    auto grown = std::make_shared<std::string>();
    const auto old = value_of(*slot);
    grown->reserve(8 + old.size() + add.size());
    put_u64(*grown, old.size() + add.size());
    grown->append(old);
    grown->append(add);
    slot = std::move(grown);
  }
}

}  // namespace

Reply Reply::share(Buffer buffer) noexcept {
  Reply r;
  r.size = static_cast<std::uint32_t>(buffer->size());
  r.shared = std::move(buffer);
  return r;
}

Reply Reply::copy(std::string_view bytes) {
  if (bytes.size() > kInline) return share(std::make_shared<const std::string>(bytes));
  Reply r;
  r.size = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(r.bytes, bytes.data(), bytes.size());
  return r;
}

Reply Reply::take(std::string&& bytes) {
  if (bytes.size() > kInline) return share(std::make_shared<const std::string>(std::move(bytes)));
  return copy(bytes);
}

const Buffer& stop_waiting_buffer() {
  static const Buffer b = make_static(encode_wait_reply(WaitResponseType::kStopWaiting));
  return b;
}

std::string printable(std::string_view key) {
  std::string out;
  const std::size_t limit = 80;
  for (std::size_t i = 0; i < key.size() && out.size() < limit; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (out.size() >= limit) out += "...";
  return "'" + out + "'";
}

// ---------------------------------------------------------------------------------------------
// Dispatch

void KvState::apply(KvClient& from, Request& r, Effects& out) {
  using Op = void (KvState::*)(KvClient&, Request&, Effects&);
  static constexpr Op kOps[] = {
      nullptr,  // VALIDATE: the parser checked the magic
      &KvState::set,
      &KvState::compare_set,
      &KvState::get,
      &KvState::add,
      &KvState::check,
      &KvState::wait,
      &KvState::get_num_keys,
      &KvState::delete_key,
      &KvState::append,
      &KvState::multi_get,
      &KvState::multi_set,
      &KvState::cancel_wait,
      &KvState::ping,
      &KvState::queue_push,
      &KvState::queue_pop,
      &KvState::queue_len,
      &KvState::list_keys,
      &KvState::barrier,
  };
  static_assert(std::size(kOps) == kMaxQueryType + 1);
  const auto index = static_cast<std::size_t>(r.type);
  if (index < std::size(kOps) && kOps[index] != nullptr) (this->*kOps[index])(from, r, out);
}

// ---------------------------------------------------------------------------------------------
// Values

void KvState::set(KvClient& /*from*/, Request& r, Effects& out) {
  store_value(r.keys[0], r.values[0]);
  wake(r.keys[0], out);
}

void KvState::compare_set(KvClient& /*from*/, Request& r, Effects& out) {
  const std::string& key = r.keys[0];
  const std::string& expected = r.values[0];
  const std::string& desired = r.values[1];
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (expected.empty()) {
      out.replies.push_back(Reply::share(store_value(key, desired)));
      wake(key, out);
    } else {
      out.replies.push_back(Reply::take(encode_bytes_reply(expected)));  // "lying" row
    }
  } else if (value_of(*it->second) == expected) {
    assign_value(it->second, desired);
    out.replies.push_back(Reply::share(it->second));
    wake(key, out);
  } else {
    out.replies.push_back(Reply::share(it->second));
  }
}

void KvState::get(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = kv_.find(r.keys[0]);
  out.replies.push_back(Reply::share(it == kv_.end() ? empty_value_buffer() : it->second));
}

void KvState::add(KvClient& /*from*/, Request& r, Effects& out) {
  const auto result = counter_add("ADD", r.keys[0], r.number, out);
  if (!result) return;
  out.replies.push_back(Reply::take(encode_i64_reply(*result)));
  wake(r.keys[0], out);
}

void KvState::check(KvClient& /*from*/, Request& r, Effects& out) {
  const bool ready =
      std::all_of(r.keys.begin(), r.keys.end(), [&](const auto& k) { return present(k); });
  out.replies.push_back(Reply::share(check_buffer(ready)));
}

void KvState::get_num_keys(KvClient& /*from*/, Request& /*r*/, Effects& out) {
  out.replies.push_back(Reply::take(encode_i64_reply(static_cast<std::int64_t>(kv_.size()))));
}

void KvState::delete_key(KvClient& /*from*/, Request& r, Effects& out) {
  const auto erased = kv_.erase(r.keys[0]);
  out.replies.push_back(Reply::take(encode_i64_reply(static_cast<std::int64_t>(erased))));
}

void KvState::append(KvClient& /*from*/, Request& r, Effects& out) {
  append_value(kv_[r.keys[0]], r.values[0]);
  wake(r.keys[0], out);
}

void KvState::multi_get(KvClient& /*from*/, Request& r, Effects& out) {
  for (const auto& k : r.keys) {
    auto it = kv_.find(k);
    out.replies.push_back(Reply::share(it == kv_.end() ? empty_value_buffer() : it->second));
  }
}

void KvState::multi_set(KvClient& /*from*/, Request& r, Effects& out) {
  for (std::size_t i = 0; i < r.keys.size(); ++i) {
    store_value(r.keys[i], r.values[i]);
    wake(r.keys[i], out);
  }
}

void KvState::ping(KvClient& /*from*/, Request& r, Effects& out) {
  out.replies.push_back(Reply::take(encode_u32_reply(static_cast<std::uint32_t>(r.number))));
}

void KvState::list_keys(KvClient& /*from*/, Request& /*r*/, Effects& out) {
  std::vector<std::string_view> keys;
  keys.reserve(kv_.size());
  for (const auto& [k, v] : kv_) keys.emplace_back(k);
  out.replies.push_back(Reply::take(encode_list_keys_reply(keys)));
}

bool KvState::present(const std::string& key) const {
  if (kv_.count(key) != 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

KvState::Slot& KvState::store_value(const std::string& key, std::string_view value) {
  auto& slot = kv_[key];
  assign_value(slot, value);
  return slot;
}

// Parses kv[key] as an ADD counter and adds `delta`. nullopt (and out.error) when the stored
// value is not numeric or the sum overflows.
std::optional<std::int64_t> KvState::counter_add(const char* op, const std::string& key,
                                                 std::int64_t delta, Effects& out) {
  std::int64_t current = 0;
  auto [it, inserted] = kv_.try_emplace(key);
  if (!inserted) {
    const auto parsed = parse_counter(value_of(*it->second));
    if (!parsed) {
      out.error = std::string(op) + " on key " + printable(key) + " whose value " +
                  printable(value_of(*it->second)) +
                  " is not a decimal integer (do not mix set() and add() on one key)";
      return std::nullopt;
    }
    current = *parsed;
  }
  std::int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result)) {  // never for a new key (current 0)
    out.error = std::string(op) + " on key " + printable(key) + " overflows int64 (" +
                std::to_string(current) + " + " + std::to_string(delta) + ")";
    return std::nullopt;
  }
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, result).ptr;
  assign_value(it->second, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Queues

void KvState::queue_push(KvClient& /*from*/, Request& r, Effects& out) {
  queues_[r.keys[0]].push_back(std::move(r.values[0]));
  wake_one(r.keys[0], out);
}

void KvState::queue_pop(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = queues_.find(r.keys[0]);
  if (it == queues_.end() || it->second.empty()) {
    out.replies.push_back(Reply::take(encode_i64_reply(0)));
    return;
  }
  const auto len = static_cast<std::int64_t>(it->second.size());
  out.replies.push_back(Reply::take(encode_queue_pop_reply(len, it->second.front())));
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
}

void KvState::queue_len(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = queues_.find(r.keys[0]);
  const auto len = it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size());
  out.replies.push_back(Reply::take(encode_i64_reply(len)));
}

// ---------------------------------------------------------------------------------------------
// Waits

void KvState::wait(KvClient& from, Request& r, Effects& out) {
  std::vector<std::string> missing;
  for (auto& k : r.keys) {
    if (!present(k)) missing.push_back(std::move(k));
  }
  if (missing.empty()) {
    out.replies.push_back(Reply::share(stop_waiting_buffer()));
  } else {
    register_waiter(from, std::move(missing));
  }
}

void KvState::cancel_wait(KvClient& from, Request& /*r*/, Effects& out) {
  drop_client(from);
  out.replies.push_back(Reply::share(wait_canceled_buffer()));
}

void KvState::barrier(KvClient& from, Request& r, Effects& out) {
  const std::string& key = r.keys[0];
  const auto count = counter_add("BARRIER", key, 1, out);
  if (!count) return;
  if (*count >= r.number) {
    wake(key, out);
    out.replies.push_back(Reply::share(stop_waiting_buffer()));
  } else {
    register_waiter(from, {key});
  }
}

void KvState::complete(const std::shared_ptr<Waiter>& w, Effects& out) {
  KvClient& c = *w->client;
  auto it = std::find(c.waits.begin(), c.waits.end(), w);
  if (it != c.waits.end()) c.waits.erase(it);
  w->client = nullptr;
  --waiter_count_;
  out.woken.push_back(&c);
}

// Wake(key): every waiter registered on key loses one pending registration; those reaching
// zero get STOP_WAITING. The key's list is cleared.
void KvState::wake(const std::string& key, Effects& out) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  auto list = std::move(it->second);
  waiters_.erase(it);
  for (auto& w : list) {
    if (w->client != nullptr && w->pending > 0 && --w->pending == 0) complete(w, out);
  }
}

// QUEUE_PUSH: release exactly one waiter. Walk the list in arrival order, consuming one
// registration per entry, until a waiter completes (upstream's wakeupOneWaitingClient minus
// its counter-underflow bug: consumed entries are removed).
void KvState::wake_one(const std::string& key, Effects& out) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  auto& list = it->second;
  std::size_t i = 0;
  while (i < list.size()) {
    const std::shared_ptr<Waiter> w = list[i++];
    if (w->client == nullptr || w->pending == 0) continue;
    if (--w->pending == 0) {
      complete(w, out);
      break;
    }
  }
  list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i));
  if (list.empty()) waiters_.erase(it);
}

void KvState::register_waiter(KvClient& client, std::vector<std::string> missing) {
  auto w = std::make_shared<Waiter>();
  w->client = &client;
  w->pending = missing.size();
  for (const auto& k : missing) waiters_[k].push_back(w);
  w->keys = std::move(missing);
  client.waits.push_back(std::move(w));
  ++waiter_count_;
}

void KvState::drop_client(KvClient& client) {
  for (auto& w : client.waits) {
    for (const auto& k : w->keys) {
      auto it = waiters_.find(k);
      if (it == waiters_.end()) continue;
      auto& list = it->second;
      list.erase(std::remove(list.begin(), list.end(), w), list.end());
      if (list.empty()) waiters_.erase(it);
    }
    w->client = nullptr;
    --waiter_count_;
  }
  client.waits.clear();
}

}  // namespace tzrun::store::detail
