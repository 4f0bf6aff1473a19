// Key/value semantics of the store, without I/O (see kv_state.hpp).
#include "kv_state.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>

namespace tzrun::store::detail {

// One key a waiter is registered on, and where its entry is in that key's WaitList
// (kConsumed once the entry was woken, consumed or compacted away).
struct Registration {
  std::string key;
  std::size_t index = 0;
};
constexpr std::size_t kConsumed = static_cast<std::size_t>(-1);

// One pending WAIT or BARRIER request.
struct Waiter {
  KvClient* client = nullptr;      // set while registered (drop_client clears it before a close)
  std::size_t pending = 0;         // registrations not yet woken
  std::vector<Registration> regs;  // one per key it waits on
};

namespace {

// Drops the dead entries (and the consumed prefix) of `list`, keeping its waiters' indices.
void Compact(WaitList& list) {
  std::size_t out = 0;
  for (std::size_t i = list.head; i < list.entries.size(); ++i) {
    WaitList::Entry& e = list.entries[i];
    Registration& reg = e.waiter->regs[e.reg];
    if (e.waiter->client == nullptr) {
      reg.index = kConsumed;
      continue;
    }
    reg.index = out;
    if (out != i) list.entries[out] = std::move(e);
    ++out;
  }
  list.entries.resize(out);
  list.head = 0;
  list.dead = 0;
}

Buffer MakeStatic(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}
const Buffer& WaitCanceledBuffer() {
  static const Buffer kB = MakeStatic(EncodeWaitReply(WaitResponseType::kWaitCanceled));
  return kB;
}
const Buffer& EmptyValueBuffer() {
  static const Buffer kB = MakeStatic(EncodeBytesReply({}));
  return kB;
}
const Buffer& CheckBuffer(bool ready) {
  static const Buffer kR = MakeStatic(EncodeCheckReply(CheckResponseType::kReady));
  static const Buffer kN = MakeStatic(EncodeCheckReply(CheckResponseType::kNotReady));
  return ready ? kR : kN;
}

std::string_view ValueOf(const std::string& wire) {
  return std::string_view(wire).substr(8);
}

std::shared_ptr<std::string> MakeValue(std::string_view v) {
  auto s = std::make_shared<std::string>();
  s->reserve(8 + v.size());
  PutBytes(*s, v);
  return s;
}

// Stores `value` in wire form into `slot`, rewriting the old buffer in place when no queued
// reply still shares it and it is not much larger than needed (no allocation per SET/ADD).
void AssignValue(std::shared_ptr<std::string>& slot, std::string_view value) {
  const std::size_t need = 8 + value.size();
  if (slot && slot.use_count() == 1 && slot->capacity() >= need &&
      slot->capacity() <= 2 * need + 64) {
    slot->clear();
    PutBytes(*slot, value);
    return;
  }
  slot = MakeValue(value);
}

// APPEND onto a stored value, growing it in place when no queued reply shares the buffer.
void AppendValue(std::shared_ptr<std::string>& slot, std::string_view add) {
  if (!slot) {
    slot = MakeValue(add);
  } else if (slot.use_count() == 1) {
    slot->append(add);
    std::string header;
    PutU64(header, slot->size() - 8);
    slot->replace(0, 8, header);
  } else {
    auto grown = std::make_shared<std::string>();
    const auto old = ValueOf(*slot);
    grown->reserve(8 + old.size() + add.size());
    PutU64(*grown, old.size() + add.size());
    grown->append(old);
    grown->append(add);
    slot = std::move(grown);
  }
}

}  // namespace

Reply Reply::Share(Buffer buffer) noexcept {
  Reply r;
  r.size = static_cast<std::uint32_t>(buffer->size());
  r.shared = std::move(buffer);
  return r;
}

Reply Reply::Copy(std::string_view bytes) {
  if (bytes.size() > kInline) return Share(std::make_shared<const std::string>(bytes));
  Reply r;
  r.size = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(r.bytes, bytes.data(), bytes.size());
  return r;
}

Reply Reply::Take(std::string&& bytes) {
  if (bytes.size() > kInline) return Share(std::make_shared<const std::string>(std::move(bytes)));
  return Copy(bytes);
}

const Buffer& StopWaitingBuffer() {
  static const Buffer kB = MakeStatic(EncodeWaitReply(WaitResponseType::kStopWaiting));
  return kB;
}

std::string Printable(std::string_view key) {
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

void KvState::Apply(KvClient& from, Request& r, Effects& out) {
  using Op = void (KvState::*)(KvClient&, Request&, Effects&);
  static constexpr Op kOps[] = {
      nullptr,  // VALIDATE: the parser checked the magic
      &KvState::Set,
      &KvState::CompareSet,
      &KvState::Get,
      &KvState::Add,
      &KvState::Check,
      &KvState::Wait,
      &KvState::GetNumKeys,
      &KvState::DeleteKey,
      &KvState::Append,
      &KvState::MultiGet,
      &KvState::MultiSet,
      &KvState::CancelWait,
      &KvState::Ping,
      &KvState::QueuePush,
      &KvState::QueuePop,
      &KvState::QueueLen,
      &KvState::ListKeys,
      &KvState::Barrier,
  };
  static_assert(std::size(kOps) == kMaxQueryType + 1);
  const auto index = static_cast<std::size_t>(r.type);
  if (index < std::size(kOps) && kOps[index] != nullptr) (this->*kOps[index])(from, r, out);
}

// ---------------------------------------------------------------------------------------------
// Values

void KvState::Set(KvClient& /*from*/, Request& r, Effects& out) {
  StoreValue(r.keys[0], r.values[0]);
  Wake(r.keys[0], out);
}

void KvState::CompareSet(KvClient& /*from*/, Request& r, Effects& out) {
  const std::string& key = r.keys[0];
  const std::string& expected = r.values[0];
  const std::string& desired = r.values[1];
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (expected.empty()) {
      out.replies.push_back(Reply::Share(StoreValue(key, desired)));
      Wake(key, out);
    } else {
      out.replies.push_back(Reply::Take(EncodeBytesReply(expected)));  // "lying" row
    }
  } else if (ValueOf(*it->second) == expected) {
    AssignValue(it->second, desired);
    out.replies.push_back(Reply::Share(it->second));
    Wake(key, out);
  } else {
    out.replies.push_back(Reply::Share(it->second));
  }
}

void KvState::Get(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = kv_.find(r.keys[0]);
  out.replies.push_back(Reply::Share(it == kv_.end() ? EmptyValueBuffer() : it->second));
}

void KvState::Add(KvClient& /*from*/, Request& r, Effects& out) {
  const auto result = CounterAdd("ADD", r.keys[0], r.number, out);
  if (!result) return;
  out.replies.push_back(Reply::Take(EncodeI64Reply(*result)));
  Wake(r.keys[0], out);
}

void KvState::Check(KvClient& /*from*/, Request& r, Effects& out) {
  const bool ready =
      std::all_of(r.keys.begin(), r.keys.end(), [&](const auto& k) { return Present(k); });
  out.replies.push_back(Reply::Share(CheckBuffer(ready)));
}

void KvState::GetNumKeys(KvClient& /*from*/, Request& /*r*/, Effects& out) {
  out.replies.push_back(Reply::Take(EncodeI64Reply(static_cast<std::int64_t>(kv_.size()))));
}

void KvState::DeleteKey(KvClient& /*from*/, Request& r, Effects& out) {
  const auto erased = kv_.erase(r.keys[0]);
  out.replies.push_back(Reply::Take(EncodeI64Reply(static_cast<std::int64_t>(erased))));
}

void KvState::Append(KvClient& /*from*/, Request& r, Effects& out) {
  AppendValue(kv_[r.keys[0]], r.values[0]);
  Wake(r.keys[0], out);
}

void KvState::MultiGet(KvClient& /*from*/, Request& r, Effects& out) {
  for (const auto& k : r.keys) {
    auto it = kv_.find(k);
    out.replies.push_back(Reply::Share(it == kv_.end() ? EmptyValueBuffer() : it->second));
  }
}

void KvState::MultiSet(KvClient& /*from*/, Request& r, Effects& out) {
  for (std::size_t i = 0; i < r.keys.size(); ++i) {
    StoreValue(r.keys[i], r.values[i]);
    Wake(r.keys[i], out);
  }
}

void KvState::Ping(KvClient& /*from*/, Request& r, Effects& out) {
  out.replies.push_back(Reply::Take(EncodeU32Reply(static_cast<std::uint32_t>(r.number))));
}

void KvState::ListKeys(KvClient& /*from*/, Request& /*r*/, Effects& out) {
  std::vector<std::string_view> keys;
  keys.reserve(kv_.size());
  for (const auto& [k, v] : kv_) keys.emplace_back(k);
  out.replies.push_back(Reply::Take(EncodeListKeysReply(keys)));
}

bool KvState::Present(const std::string& key) const {
  if (kv_.count(key) != 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

KvState::Slot& KvState::StoreValue(const std::string& key, std::string_view value) {
  auto& slot = kv_[key];
  AssignValue(slot, value);
  return slot;
}

// Parses kv[key] as an ADD counter and adds `delta`. nullopt (and out.error) when the stored
// value is not numeric or the sum overflows.
std::optional<std::int64_t> KvState::CounterAdd(const char* op, const std::string& key,
                                                std::int64_t delta, Effects& out) {
  std::int64_t current = 0;
  auto [it, inserted] = kv_.try_emplace(key);
  if (!inserted) {
    const auto parsed = ParseCounter(ValueOf(*it->second));
    if (!parsed) {
      out.error = std::string(op) + " on key " + Printable(key) + " whose value " +
                  Printable(ValueOf(*it->second)) +
                  " is not a decimal integer (do not mix set() and add() on one key)";
      return std::nullopt;
    }
    current = *parsed;
  }
  std::int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result)) {  // never for a new key (current 0)
    out.error = std::string(op) + " on key " + Printable(key) + " overflows int64 (" +
                std::to_string(current) + " + " + std::to_string(delta) + ")";
    return std::nullopt;
  }
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, result).ptr;
  AssignValue(it->second, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Queues

void KvState::QueuePush(KvClient& /*from*/, Request& r, Effects& out) {
  queues_[r.keys[0]].push_back(std::move(r.values[0]));
  WakeOne(r.keys[0], out);
}

void KvState::QueuePop(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = queues_.find(r.keys[0]);
  if (it == queues_.end() || it->second.empty()) {
    out.replies.push_back(Reply::Take(EncodeI64Reply(0)));
    return;
  }
  const auto len = static_cast<std::int64_t>(it->second.size());
  out.replies.push_back(Reply::Take(EncodeQueuePopReply(len, it->second.front())));
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
}

void KvState::QueueLen(KvClient& /*from*/, Request& r, Effects& out) {
  auto it = queues_.find(r.keys[0]);
  const auto len = it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size());
  out.replies.push_back(Reply::Take(EncodeI64Reply(len)));
}

// ---------------------------------------------------------------------------------------------
// Waits

void KvState::Wait(KvClient& from, Request& r, Effects& out) {
  std::vector<std::string> missing;
  for (auto& k : r.keys) {
    if (!Present(k)) missing.push_back(std::move(k));
  }
  if (missing.empty()) {
    out.replies.push_back(Reply::Share(StopWaitingBuffer()));
  } else {
    RegisterWaiter(from, std::move(missing));
  }
}

void KvState::CancelWait(KvClient& from, Request& /*r*/, Effects& out) {
  DropClient(from);
  out.replies.push_back(Reply::Share(WaitCanceledBuffer()));
}

void KvState::Barrier(KvClient& from, Request& r, Effects& out) {
  const std::string& key = r.keys[0];
  const auto count = CounterAdd("BARRIER", key, 1, out);
  if (!count) return;
  if (*count >= r.number) {
    Wake(key, out);
    out.replies.push_back(Reply::Share(StopWaitingBuffer()));
  } else {
    RegisterWaiter(from, {key});
  }
}

void KvState::Complete(const std::shared_ptr<Waiter>& w, Effects& out) {
  KvClient& c = *w->client;
  auto it = std::find(c.waits.begin(), c.waits.end(), w);
  if (it != c.waits.end()) c.waits.erase(it);
  w->client = nullptr;
  --waiter_count_;
  out.woken.push_back(&c);
}

// Wake(key): every waiter registered on key loses one pending registration; those reaching
// zero get STOP_WAITING. The key's list is cleared.
void KvState::Wake(const std::string& key, Effects& out) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  WaitList list = std::move(it->second);
  waiters_.erase(it);
  for (std::size_t i = list.head; i < list.entries.size(); ++i) {
    const auto& w = list.entries[i].waiter;
    w->regs[list.entries[i].reg].index = kConsumed;
    if (w->client != nullptr && w->pending > 0 && --w->pending == 0) Complete(w, out);
  }
}

// QUEUE_PUSH: release exactly one waiter. Walk the list in arrival order, consuming one
// registration per entry, until a waiter completes (upstream's wakeupOneWaitingClient minus
// its counter-underflow bug: consumed entries are removed).
void KvState::WakeOne(const std::string& key, Effects& out) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  WaitList& list = it->second;
  while (list.head < list.entries.size()) {
    const WaitList::Entry e = list.entries[list.head++];
    e.waiter->regs[e.reg].index = kConsumed;
    if (e.waiter->client == nullptr) {
      --list.dead;
      continue;
    }
    if (e.waiter->pending > 0 && --e.waiter->pending == 0) {
      Complete(e.waiter, out);
      break;
    }
  }
  if (list.head == list.entries.size()) {
    waiters_.erase(it);
  } else if (list.head * 2 > list.entries.size()) {
    Compact(list);
  }
}

void KvState::RegisterWaiter(KvClient& client, std::vector<std::string> missing) {
  auto w = std::make_shared<Waiter>();
  w->client = &client;
  w->pending = missing.size();
  w->regs.reserve(missing.size());
  for (auto& k : missing) {
    WaitList& list = waiters_[k];
    list.entries.push_back({w, static_cast<std::uint32_t>(w->regs.size())});
    w->regs.push_back({std::move(k), list.entries.size() - 1});
  }
  client.waits.push_back(std::move(w));
  ++waiter_count_;
}

// One entry of `key`'s list became dead: compact the list once more than half of it is.
void KvState::NoteDead(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  WaitList& list = it->second;
  ++list.dead;
  if (list.dead * 2 <= list.entries.size() - list.head) return;
  Compact(list);
  if (list.entries.empty()) waiters_.erase(it);
}

std::size_t KvState::WaitEntries() const noexcept {
  std::size_t n = 0;
  for (const auto& [key, list] : waiters_) n += list.entries.size() - list.head;
  return n;
}

void KvState::DropClient(KvClient& client) {
  for (auto& w : client.waits) {
    w->client = nullptr;
    --waiter_count_;
    for (const Registration& reg : w->regs) {
      if (reg.index != kConsumed) NoteDead(reg.key);  // may compact (and consume) later regs
    }
  }
  client.waits.clear();
}

}  // namespace tzrun::store::detail
