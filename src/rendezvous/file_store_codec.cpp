// torch's FileStore format and key semantics (see file_store_codec.hpp).
#include "file_store_codec.hpp"

#include <cctype>
#include <limits>
#include <stdexcept>

namespace tzrun::rendezvous::detail {
namespace {

constexpr std::size_t kLengthBytes = 4;

void PutLength(std::string& out, std::size_t n) {
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("a FileStore key or value holds at most 4 GiB - 1 bytes");
  }
  for (std::size_t i = 0; i < kLengthBytes; ++i) {
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  }
}

std::uint32_t GetLength(std::string_view bytes, std::size_t at) {
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < kLengthBytes; ++i) {
    n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return n;
}

// One length-prefixed field at `at`; nullopt when `bytes` ends first.
std::optional<std::string_view> Field(std::string_view bytes, std::size_t& at) {
  if (bytes.size() - at < kLengthBytes) return std::nullopt;
  const std::uint32_t n = GetLength(bytes, at);
  if (bytes.size() - at - kLengthBytes < n) return std::nullopt;
  const std::string_view field = bytes.substr(at + kLengthBytes, n);
  at += kLengthBytes + n;
  return field;
}

// std::stoll as FileStore::addHelper calls it: leading blanks, a sign, digits; what follows the
// digits is ignored. nullopt where stoll throws (no digits, out of range).
std::optional<std::int64_t> StoLl(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  const std::size_t first = i;
  std::uint64_t v = 0;
  const std::uint64_t limit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1 : 0);
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (v > limit) return std::nullopt;
  }
  if (i == first) return std::nullopt;
  if (negative)
    return v == limit ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(v);
  return static_cast<std::int64_t>(v);
}

}  // namespace

std::string EncodeFileRecord(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(2 * kLengthBytes + key.size() + value.size());
  PutLength(out, key.size());
  out.append(key);
  PutLength(out, value.size());
  out.append(value);
  return out;
}

ReplayResult ReplayFileRecords(std::string_view bytes, FileStoreKeys& keys) {
  ReplayResult r;
  while (r.consumed < bytes.size()) {
    std::size_t at = r.consumed;
    const auto key = Field(bytes, at);
    const auto value = key ? Field(bytes, at) : std::nullopt;
    if (!key || !value) {
      r.error = FileLogError{r.consumed, std::string("the log ends inside a record (") +
                                             std::to_string(bytes.size() - r.consumed) +
                                             " byte(s) left, " + (key ? "value" : "key") +
                                             " incomplete)"};
      return r;
    }
    if (key->starts_with(kFileStoreDeletePrefix)) {
      const auto it = keys.find(key->substr(kFileStoreDeletePrefix.size()));
      if (it != keys.end()) keys.erase(it);
    } else {
      keys.insert_or_assign(std::string(*key), std::string(*value));
    }
    r.consumed = at;
  }
  return r;
}

std::string FileUserKey(std::string_view key) {
  std::string out(kFileStoreUserPrefix);
  out.append(key);
  return out;
}

std::optional<std::int64_t> FileAddResult(const FileStoreKeys& keys, std::string_view raw_key,
                                          std::int64_t delta) {
  const auto it = keys.find(raw_key);
  if (it == keys.end() || it->second.empty()) return delta;
  const auto current = StoLl(it->second);
  if (!current) return std::nullopt;
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(*current) +
                                   static_cast<std::uint64_t>(delta));
}

CompareSetOutcome FileCompareSet(const FileStoreKeys& keys, std::string_view raw_key,
                                 std::string_view expected, std::string_view desired) {
  const auto it = keys.find(raw_key);
  if ((it == keys.end() && expected.empty()) || (it != keys.end() && it->second == expected)) {
    return {true, std::string(desired)};
  }
  if (it == keys.end()) return {false, std::string(expected)};
  return {false, it->second};
}

bool FileStoreRemovesFile(std::int64_t refcount, std::int64_t cleanups, int num_workers) {
  return refcount == 0 && num_workers >= 0 && cleanups >= num_workers;
}

}  // namespace tzrun::rendezvous::detail
