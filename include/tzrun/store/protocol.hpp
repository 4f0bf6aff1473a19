// tzrun/store/protocol.hpp — constants and enums of PyTorch's c10d TCPStore wire protocol.
//
// Mirrors torch/csrc/distributed/c10d/TCPStoreBackend.hpp (PyTorch 2.11.0: opcodes 0..17) plus
// BARRIER = 18 (PR #174920, 2.12+). Every request is one opcode byte followed by that opcode's
// fields, little-endian, without an envelope; see docs in codec.hpp for the field layouts.
//
// Thread-safety: constants and plain value types only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tzrun::store {

/// The u32 sent after VALIDATE (opcode 0) as the first message of every connection.
inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;

/// Request opcodes (`c10d::detail::QueryType`).
enum class QueryType : std::uint8_t {
  kValidate = 0,     ///< u32 magic                      -> no reply
  kSet = 1,          ///< Str key, Bytes value           -> no reply
  kCompareSet = 2,   ///< Str key, Bytes expected, desired -> Bytes
  kGet = 3,          ///< Str key                        -> Bytes (empty if missing)
  kAdd = 4,          ///< Str key, i64 delta             -> i64
  kCheck = 5,        ///< u64 n, n x Str                 -> u8 CheckResponseType
  kWait = 6,         ///< u64 n, n x Str                 -> u8 kStopWaiting (deferred)
  kGetNumKeys = 7,   ///< -                              -> i64
  kDeleteKey = 8,    ///< Str key                        -> i64 (0/1)
  kAppend = 9,       ///< Str key, Bytes value           -> no reply
  kMultiGet = 10,    ///< u64 n, n x Str                 -> n x Bytes
  kMultiSet = 11,    ///< i64 n, n x (Str, Bytes)        -> no reply
  kCancelWait = 12,  ///< -                              -> u8 kWaitCanceled
  kPing = 13,        ///< u32 nonce                      -> u32 nonce
  kQueuePush = 14,   ///< Str key, Bytes value           -> no reply
  kQueuePop = 15,    ///< Str key                        -> i64 len_before [+ Bytes]
  kQueueLen = 16,    ///< Str key                        -> i64
  kListKeys = 17,    ///< -                              -> i64 n, n x Str
  kBarrier = 18,     ///< Str key, i64 world_size        -> u8 kStopWaiting (deferred)
};
inline constexpr std::uint8_t kMaxQueryType = 18;

/// Reply of CHECK.
enum class CheckResponseType : std::uint8_t { kReady = 0, kNotReady = 1 };
/// Reply of WAIT / BARRIER (kStopWaiting) and CANCEL_WAIT (kWaitCanceled).
enum class WaitResponseType : std::uint8_t { kStopWaiting = 0, kWaitCanceled = 1 };

/// Upstream-style name of an opcode ("SET", "MULTI_GET", ...); "UNKNOWN" for other values.
std::string_view QueryName(std::uint8_t opcode) noexcept;
inline std::string_view QueryName(QueryType type) noexcept {
  return QueryName(static_cast<std::uint8_t>(type));
}

/// Per-request size caps. Defaults are the libuv backend's (TCPStoreLibUvBackend.cpp:
/// MAX_STRING_LEN, MAX_PAYLOAD_LEN, MAX_KEY_COUNT); a request beyond any cap is a protocol
/// error and closes the connection. A value of 0 is treated as "no cap".
struct Limits {
  static constexpr std::size_t kDefaultMaxKeyBytes = std::size_t{8} * 1024;  ///< per key string
  static constexpr std::size_t kDefaultMaxValueBytes =
      std::size_t{8} * 1024 * 1024;  ///< per value blob
  static constexpr std::size_t kDefaultMaxCount =
      std::size_t{128} * 1024;  ///< keys per CHECK/WAIT/MULTI_*

  std::size_t max_key_bytes = kDefaultMaxKeyBytes;
  std::size_t max_value_bytes = kDefaultMaxValueBytes;
  std::size_t max_count = kDefaultMaxCount;
};

}  // namespace tzrun::store
