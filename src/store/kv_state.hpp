// src/store/kv_state.hpp — the store's key/value semantics as a pure state machine (private).
//
// KvState holds the key/value map, the queues and the WAIT/BARRIER registry, and applies one
// decoded request (tzrun/store/codec.hpp Request) at a time. It does no I/O: each operation
// appends to an Effects the replies for the requesting client, the clients whose pending
// WAIT/BARRIER completed (each is owed one STOP_WAITING), or a protocol error (the caller
// closes the requester). The epoll reactor in server.cpp owns the sockets and delivers them.
//
// Semantics follow PyTorch's libuv backend (torch/csrc/distributed/c10d/
// TCPStoreLibUvBackend.cpp), minus two bugs (docs/design.md, docs/store.md "Where tzrun
// differs"): COMPARE_SET wakes waiters only when it stored a value, and QUEUE_PUSH wakes
// exactly one waiter and removes the registrations it consumed. GET/MULTI_GET of a missing
// key reply an empty value; waits never time out here (the client cancels with CANCEL_WAIT).
//
// Performance: values are kept in their wire form (u64 length + bytes) in shared buffers, so
// a GET reply shares the stored buffer instead of copying it, and a SET/ADD rewrites the old
// buffer in place when no queued reply still holds it.
//
// Thread-safety: none; one thread (the server's I/O thread) owns a KvState.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tzrun/store/codec.hpp"

namespace tzrun::store::detail {

/// A pre-serialised reply shared between queued writes (and, for values, with the map).
using Buffer = std::shared_ptr<const std::string>;

/// One reply in wire form: a shared buffer, or up to kInline bytes stored in place (ADD,
/// PING, GETNUMKEYS replies need no allocation).
struct Reply {
  static constexpr std::size_t kInline = 16;
  Buffer shared;
  std::uint32_t size = 0;
  char bytes[kInline];

  [[nodiscard]] const char* Data() const noexcept { return shared ? shared->data() : bytes; }
  [[nodiscard]] std::string_view View() const noexcept { return {Data(), size}; }
  /// Shares `buffer` (no copy).
  static Reply Share(Buffer buffer) noexcept;
  /// Copies `bytes` in place when it fits, else into a new shared buffer.
  static Reply Copy(std::string_view bytes);
  /// Like copy(), moving a large string into the shared buffer instead of copying it.
  static Reply Take(std::string&& bytes);
};

/// The STOP_WAITING reply (WAIT, BARRIER and every wake-up), one shared buffer.
const Buffer& StopWaitingBuffer();

struct Waiter;

/// The waiters registered on one key, in arrival order. QUEUE_PUSH consumes entries from
/// `head`; a dropped waiter's entries stay behind as dead ones until more than half the
/// list is dead, then one pass compacts it, so a disconnect or CANCEL_WAIT costs O(1)
/// amortized instead of a scan of everyone waiting on the key (100k waiters disconnecting
/// one by one was O(n^2)).
struct WaitList {
  struct Entry {
    std::shared_ptr<Waiter> waiter;
    std::uint32_t reg = 0;  // waiter->regs[reg] is this entry's registration
  };
  std::vector<Entry> entries;
  std::size_t head = 0;  // entries before it were consumed by QUEUE_PUSH
  std::size_t dead = 0;  // entries at or after head whose waiter was dropped
};

/// A client of the state (the server's connection derives from it). It owns the client's
/// pending WAIT/BARRIER registrations; call KvState::drop_client before destroying it.
struct KvClient {
  std::vector<std::shared_ptr<Waiter>> waits;
};

/// What one request produced. Operations append; the caller clears it between requests.
struct Effects {
  std::vector<Reply> replies;    ///< to the requester, in order
  std::vector<KvClient*> woken;  ///< each gets one STOP_WAITING, after the replies
  std::string error;             ///< non-empty: protocol violation, close the requester
  void Clear() noexcept {
    replies.clear();
    woken.clear();
    error.clear();
  }
};

class KvState {
 public:
  /// Applies `r` (fields as documented on Request; may be moved from) for client `from`.
  void Apply(KvClient& from, Request& r, Effects& out);

  // One operation per opcode, as apply() dispatches them (same signature throughout).
  void Set(KvClient& from, Request& r, Effects& out);         ///< stores, wakes the key
  void CompareSet(KvClient& from, Request& r, Effects& out);  ///< docs/store.md table
  void Get(KvClient& from, Request& r, Effects& out);         ///< value or empty
  void Add(KvClient& from, Request& r, Effects& out);         ///< i64 sum; wakes the key
  void Check(KvClient& from, Request& r, Effects& out);       ///< kReady iff all present
  void Wait(KvClient& from, Request& r, Effects& out);        ///< STOP_WAITING now or later
  void GetNumKeys(KvClient& from, Request& r, Effects& out);  ///< kv entries (no queues)
  void DeleteKey(KvClient& from, Request& r, Effects& out);   ///< i64 0/1, no wake-up
  void Append(KvClient& from, Request& r, Effects& out);      ///< creates if missing; wakes
  void MultiGet(KvClient& from, Request& r, Effects& out);    ///< one Bytes per key
  void MultiSet(KvClient& from, Request& r, Effects& out);    ///< set() per pair, in order
  void CancelWait(KvClient& from, Request& r, Effects& out);  ///< drops waits, kWaitCanceled
  void Ping(KvClient& from, Request& r, Effects& out);        ///< echoes the u32 nonce
  void QueuePush(KvClient& from, Request& r, Effects& out);   ///< wakes exactly one waiter
  void QueuePop(KvClient& from, Request& r, Effects& out);    ///< i64 len_before [+ Bytes]
  void QueueLen(KvClient& from, Request& r, Effects& out);    ///< i64
  void ListKeys(KvClient& from, Request& r, Effects& out);    ///< kv keys (no queues)
  void Barrier(KvClient& from, Request& r, Effects& out);     ///< ADD 1, release at n

  /// Forgets `client`'s pending waits (CANCEL_WAIT, end of file, closed connection).
  void DropClient(KvClient& client);

  [[nodiscard]] std::size_t Keys() const noexcept { return kv_.size(); }        ///< GETNUMKEYS
  [[nodiscard]] std::size_t Queues() const noexcept { return queues_.size(); }  ///< non-empty
  [[nodiscard]] std::size_t Waiters() const noexcept { return waiter_count_; }  ///< requests
  /// Wait-list entries held, dead ones not yet compacted included (O(keys); for tests).
  [[nodiscard]] std::size_t WaitEntries() const noexcept;

 private:
  using Slot = std::shared_ptr<std::string>;  // a value in wire form

  [[nodiscard]] bool Present(const std::string& key) const;
  Slot& StoreValue(const std::string& key, std::string_view value);
  std::optional<std::int64_t> CounterAdd(const char* op, const std::string& key, std::int64_t delta,
                                         Effects& out);
  void Wake(const std::string& key, Effects& out);
  void WakeOne(const std::string& key, Effects& out);
  void Complete(const std::shared_ptr<Waiter>& w, Effects& out);
  void RegisterWaiter(KvClient& client, std::vector<std::string> missing);
  void NoteDead(const std::string& key);

  std::unordered_map<std::string, Slot> kv_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;  // non-empty queues only
  std::unordered_map<std::string, WaitList> waiters_;
  std::size_t waiter_count_ = 0;
};

/// A key or value for log messages: printable ASCII kept, other bytes as \xNN, quoted, long
/// ones shortened to 80 characters plus "...".
std::string Printable(std::string_view key);

}  // namespace tzrun::store::detail
