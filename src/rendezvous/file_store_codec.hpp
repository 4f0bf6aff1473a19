// tzrun rendezvous internals: the on-disk format and key semantics of torch's c10d FileStore
// (torch/csrc/distributed/c10d/FileStore.cpp), as pure functions over bytes and a key map.
//
// The file is a log of records appended under an exclusive flock: each record is the key then
// the value, each as a 4-byte length (native = little-endian on every platform torch ships)
// followed by that many bytes. A reader replays the records from where it stopped into its map:
// a key starting with "-" deletes the key after the "-", any other key sets its value (the last
// record wins). User keys carry the prefix "/" ("/<key>"); FileStore's own counters do not:
// "refcount/" (+1 per FileStore object opened on the file, -1 when it is destroyed) and
// "cleanup/" (+1 per destroyed object). add() writes the decimal sum; compare_set() writes the
// desired value when the key is missing and `expected` is empty, or holds exactly `expected`.
//
// Thread-safety: pure functions; FileStoreKeys is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tzrun::rendezvous::detail {

inline constexpr std::string_view kFileStoreUserPrefix = "/";
inline constexpr std::string_view kFileStoreDeletePrefix = "-";
inline constexpr std::string_view kFileStoreRefCountKey = "refcount/";
inline constexpr std::string_view kFileStoreCleanupKey = "cleanup/";

/// FileStore's view of the file: every live key (with its "/" prefix, or a counter) -> value.
using FileStoreKeys = std::map<std::string, std::string, std::less<>>;

/// One record: length-prefixed key then length-prefixed value. Throws std::length_error for a
/// key or value of 4 GiB or more.
[[nodiscard]] std::string EncodeFileRecord(std::string_view key, std::string_view value);

/// A malformed log (a record past the end of what was written, bytes that are no record).
struct FileLogError {
  std::size_t offset = 0;  ///< where the bad record starts, relative to `bytes`
  std::string what;
};

/// Replays the complete records of `bytes` into `keys` (deletes included). Returns the bytes
/// consumed, which is bytes.size() unless the log ends inside a record: then the error says
/// where (nothing of that record is applied).
struct ReplayResult {
  std::size_t consumed = 0;
  std::optional<FileLogError> error;
};
[[nodiscard]] ReplayResult ReplayFileRecords(std::string_view bytes, FileStoreKeys& keys);

/// "/" + key.
[[nodiscard]] std::string FileUserKey(std::string_view key);

/// add(): the new value of `raw_key` (a user key with its "/" or a counter) after adding
/// `delta` to its decimal value (missing or empty = 0). nullopt when the stored value is not a
/// number (torch's std::stoll throws there).
[[nodiscard]] std::optional<std::int64_t> FileAddResult(const FileStoreKeys& keys,
                                                        std::string_view raw_key,
                                                        std::int64_t delta);

/// compare_set(): whether to append `desired` for `raw_key`, and what the call returns.
struct CompareSetOutcome {
  bool write = false;
  std::string result;
};
[[nodiscard]] CompareSetOutcome FileCompareSet(const FileStoreKeys& keys, std::string_view raw_key,
                                               std::string_view expected, std::string_view desired);

/// Whether the destructor of the last FileStore removes the file: refcount reached 0 and a
/// world size `num_workers` >= 0 was given and that many objects were destroyed.
[[nodiscard]] bool FileStoreRemovesFile(std::int64_t refcount, std::int64_t cleanups,
                                        int num_workers);

}  // namespace tzrun::rendezvous::detail
