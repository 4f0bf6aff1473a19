// tzrun/store/codec.hpp — incremental request parser and reply/request encoders for the c10d
// TCPStore wire protocol (no I/O; pure functions and a small state machine).
//
// Wire format (torch/csrc/distributed/c10d/TCPStore.cpp + Utils.hpp, little-endian):
//   u8 opcode, then per opcode (see QueryType): Str/Bytes = u64 length + raw bytes,
//   counts are u64 (MULTI_SET: i64), deltas/world sizes i64, magic/nonce u32.
// There is no length envelope, so a request's end is only known by parsing it, and an
// unknown opcode cannot be skipped: the stream is dead (the server closes the connection).
//
// Thread-safety: RequestParser is a value type with no shared state; use one per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tzrun/store/protocol.hpp"

namespace tzrun::store {

/// One decoded request. Field use per opcode (all others stay empty/zero):
///   VALIDATE: number=magic   PING: number=nonce
///   SET/APPEND/QUEUE_PUSH: keys[0], values[0]       COMPARE_SET: keys[0], values={expected,
///   desired} GET/DELETE_KEY/QUEUE_POP/QUEUE_LEN: keys[0]     ADD: keys[0], number=delta BARRIER:
///   keys[0], number=world_size             CHECK/WAIT/MULTI_GET: keys (n of them) MULTI_SET:
///   keys[i] -> values[i]                 GETNUMKEYS/CANCEL_WAIT/LIST_KEYS: nothing
struct Request {
  QueryType type = QueryType::kValidate;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::int64_t number = 0;

  friend bool operator==(const Request&, const Request&) = default;
};

/// Incremental, resumable parser: feed it whatever bytes arrived, in any split; it returns one
/// request at a time. Memory use is bounded by the bytes actually fed (a length prefix alone
/// never allocates) and by Limits; lengths/counts over the caps are rejected as soon as their
/// prefix is complete, e.g. a 2^63 key length fails after its 8 bytes arrive.
///
/// Connection rules (ParserOptions::expect_validate, default on): the first request must be
/// VALIDATE carrying kValidationMagic, and VALIDATE is invalid afterwards (as in the libuv
/// backend once a client is validated). Any violation is an error, after which the parser
/// stays failed.
class RequestParser {
 public:
  struct Options {
    Limits limits;
    bool expect_validate = true;
  };
  enum class Status : std::uint8_t {
    kNeedMore,  ///< all input consumed, request incomplete
    kRequest,   ///< a request is complete: take it with TakeRequest()
    kError,     ///< protocol violation: error() says what, with which value
  };
  struct Result {
    Status status;
    std::size_t consumed;  ///< bytes of the input used (the rest belongs to later requests)
  };

  RequestParser() : RequestParser(Options{}) {}
  explicit RequestParser(Options options) : options_(options) {}

  /// Consumes a prefix of `data`; stops right after one complete request.
  Result Feed(std::span<const std::uint8_t> data);
  Result Feed(std::string_view data) {
    return Feed(std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
  }
  /// Moves out the request completed by the last feed() that returned kRequest.
  Request TakeRequest() { return std::move(request_); }

  [[nodiscard]] const std::string& Error() const noexcept { return error_; }
  /// True when a request has been started but not completed (bytes are buffered).
  [[nodiscard]] bool MidRequest() const noexcept { return want_ != Want::kOpcode; }
  [[nodiscard]] bool Validated() const noexcept { return validated_; }
  /// Bytes buffered for the request in progress (keys/values so far), for memory accounting.
  [[nodiscard]] std::size_t BufferedBytes() const noexcept { return buffered_; }

 private:
  enum class Want : std::uint8_t { kOpcode, kU32, kI64, kCount, kLength, kBlob, kDone };
  Status Fail(std::string message);
  bool PlanNext();        // sets want_ for the next field of request_; false on error
  bool ScalarComplete();  // handles a finished scalar; false on error
  void BeginBlob(bool is_key);

  Options options_;
  Want want_ = Want::kOpcode;
  bool validated_ = false;
  bool failed_ = false;
  bool blob_is_key_ = false;
  std::uint8_t scratch_len_ = 0;
  std::uint8_t scratch_[8] = {};
  std::uint64_t blob_remaining_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t step_ = 0;  // index of the next logical field of the current request
  std::size_t buffered_ = 0;
  std::string* blob_ = nullptr;
  Request request_;
  std::string error_;
};

// ---- little-endian primitives (append to `out`) ----
void PutU8(std::string& out, std::uint8_t v);
void PutU32(std::string& out, std::uint32_t v);
void PutU64(std::string& out, std::uint64_t v);
inline void PutI64(std::string& out, std::int64_t v) {
  PutU64(out, static_cast<std::uint64_t>(v));
}
/// Str/Bytes: u64 length then the raw bytes.
void PutBytes(std::string& out, std::string_view bytes);
std::uint32_t GetU32(const std::uint8_t* p) noexcept;
std::uint64_t GetU64(const std::uint8_t* p) noexcept;
inline std::int64_t GetI64(const std::uint8_t* p) noexcept {
  return static_cast<std::int64_t>(GetU64(p));
}

/// Exact wire bytes of `request` as a c10d client sends them (used by Client and tests).
std::string EncodeRequest(const Request& request);

// ---- reply encoders (server side) ----
std::string EncodeBytesReply(std::string_view value);   ///< GET, COMPARE_SET
std::string EncodeI64Reply(std::int64_t value);         ///< ADD, GETNUMKEYS, ...
std::string EncodeU32Reply(std::uint32_t value);        ///< PING
std::string EncodeCheckReply(CheckResponseType value);  ///< CHECK
std::string EncodeWaitReply(WaitResponseType value);    ///< WAIT, BARRIER, CANCEL_WAIT
std::string EncodeQueuePopReply(std::int64_t len_before,
                                std::optional<std::string_view> value);      ///< QUEUE_POP
std::string EncodeListKeysReply(const std::vector<std::string_view>& keys);  ///< LIST_KEYS

/// Parses an ADD counter the way std::stoll does (base 10, leading whitespace skipped,
/// optional sign, trailing junk ignored). nullopt when empty/non-numeric or out of range.
std::optional<std::int64_t> ParseCounter(std::string_view text) noexcept;

}  // namespace tzrun::store
