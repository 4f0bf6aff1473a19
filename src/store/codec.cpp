// Request parser and encoders for the c10d TCPStore protocol (see tzrun/store/codec.hpp).
#include "tzrun/store/codec.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace tzrun::store {

std::string_view QueryName(std::uint8_t opcode) noexcept {
  static constexpr std::string_view kNames[] = {
      "VALIDATE",   "SET",        "COMPARE_SET", "GET",       "ADD",       "CHECK",       "WAIT",
      "GETNUMKEYS", "DELETE_KEY", "APPEND",      "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING",
      "QUEUE_PUSH", "QUEUE_POP",  "QUEUE_LEN",   "LIST_KEYS", "BARRIER"};
  static_assert(std::size(kNames) == kMaxQueryType + 1);
  return opcode <= kMaxQueryType ? kNames[opcode] : std::string_view("UNKNOWN");
}

// ---------------------------------------------------------------------------------------------
// Primitives

void PutU8(std::string& out, std::uint8_t v) {
  out.push_back(static_cast<char>(v));
}

void PutU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PutU64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PutBytes(std::string& out, std::string_view bytes) {
  PutU64(out, bytes.size());
  out.append(bytes);
}

std::uint32_t GetU32(const std::uint8_t* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t GetU64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string EncodeRequest(const Request& r) {
  std::string out;
  PutU8(out, static_cast<std::uint8_t>(r.type));
  auto key = [&](std::size_t i) { PutBytes(out, i < r.keys.size() ? r.keys[i] : std::string()); };
  auto value = [&](std::size_t i) {
    PutBytes(out, i < r.values.size() ? r.values[i] : std::string());
  };
  switch (r.type) {
    case QueryType::kValidate:
    case QueryType::kPing:
      PutU32(out, static_cast<std::uint32_t>(r.number));
      break;
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
      key(0);
      value(0);
      break;
    case QueryType::kCompareSet:
      key(0);
      value(0);
      value(1);
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      key(0);
      break;
    case QueryType::kAdd:
    case QueryType::kBarrier:
      key(0);
      PutI64(out, r.number);
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
    case QueryType::kMultiGet:
      PutU64(out, r.keys.size());
      for (std::size_t i = 0; i < r.keys.size(); ++i) key(i);
      break;
    case QueryType::kMultiSet:
      PutI64(out, static_cast<std::int64_t>(r.keys.size()));
      for (std::size_t i = 0; i < r.keys.size(); ++i) {
        key(i);
        value(i);
      }
      break;
    case QueryType::kGetNumKeys:
    case QueryType::kCancelWait:
    case QueryType::kListKeys:
      break;
  }
  return out;
}

std::string EncodeBytesReply(std::string_view value) {
  std::string out;
  out.reserve(8 + value.size());
  PutBytes(out, value);
  return out;
}

std::string EncodeI64Reply(std::int64_t value) {
  std::string out;
  PutI64(out, value);
  return out;
}

std::string EncodeU32Reply(std::uint32_t value) {
  std::string out;
  PutU32(out, value);
  return out;
}

std::string EncodeCheckReply(CheckResponseType value) {
  return std::string(1, static_cast<char>(value));
}

std::string EncodeWaitReply(WaitResponseType value) {
  return std::string(1, static_cast<char>(value));
}

std::string EncodeQueuePopReply(std::int64_t len_before, std::optional<std::string_view> value) {
  std::string out;
  PutI64(out, len_before);
  if (value) PutBytes(out, *value);
  return out;
}

std::string EncodeListKeysReply(const std::vector<std::string_view>& keys) {
  std::size_t total = 8;
  for (auto k : keys) total += 8 + k.size();
  std::string out;
  out.reserve(total);
  PutI64(out, static_cast<std::int64_t>(keys.size()));
  for (auto k : keys) PutBytes(out, k);
  return out;
}

std::optional<std::int64_t> ParseCounter(std::string_view text) noexcept {
  std::size_t i = 0;
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  while (i < text.size() && is_space(text[i])) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    negative = text[i] == '-';
    ++i;
  }
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  // Accumulate as a negative number so INT64_MIN is representable.
  std::int64_t acc = 0;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const int digit = text[i] - '0';
    if (acc < (kMin + digit) / 10) return std::nullopt;
    acc = acc * 10 - digit;
  }
  if (negative) return acc;
  if (acc == kMin) return std::nullopt;
  return -acc;
}

// ---------------------------------------------------------------------------------------------
// RequestParser

namespace {
std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}
}  // namespace

RequestParser::Status RequestParser::Fail(std::string message) {
  failed_ = true;
  error_ = std::move(message);
  return Status::kError;
}

void RequestParser::BeginBlob(bool is_key) {
  blob_is_key_ = is_key;
  want_ = Want::kLength;
  scratch_len_ = 0;
}

// Decides the next field of request_ from its type and step_. Returns false on error (only
// possible for counts, validated in ScalarComplete()).
bool RequestParser::PlanNext() {
  const std::uint64_t s = step_;
  auto sequence = [&](std::initializer_list<Want> fields, std::initializer_list<bool> keys) {
    if (s >= fields.size()) {
      want_ = Want::kDone;
      return;
    }
    const Want w = fields.begin()[s];
    if (w == Want::kLength) {
      BeginBlob(keys.begin()[s]);
    } else {
      want_ = w;
      scratch_len_ = 0;
    }
  };
  constexpr Want kL = Want::kLength;
  switch (request_.type) {
    case QueryType::kValidate:
    case QueryType::kPing:
      sequence({Want::kU32}, {false});
      break;
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
      sequence({kL, kL}, {true, false});
      break;
    case QueryType::kCompareSet:
      sequence({kL, kL, kL}, {true, false, false});
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      sequence({kL}, {true});
      break;
    case QueryType::kAdd:
    case QueryType::kBarrier:
      sequence({kL, Want::kI64}, {true, false});
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
    case QueryType::kMultiGet:
      if (s == 0) {
        want_ = Want::kCount;
        scratch_len_ = 0;
      } else if (s <= count_) {
        BeginBlob(true);
      } else {
        want_ = Want::kDone;
      }
      break;
    case QueryType::kMultiSet:
      if (s == 0) {
        want_ = Want::kCount;
        scratch_len_ = 0;
      } else if (s <= 2 * count_) {
        BeginBlob(s % 2 == 1);
      } else {
        want_ = Want::kDone;
      }
      break;
    case QueryType::kGetNumKeys:
    case QueryType::kCancelWait:
    case QueryType::kListKeys:
      want_ = Want::kDone;
      break;
  }
  return true;
}

bool RequestParser::ScalarComplete() {
  const std::string_view op = QueryName(request_.type);
  switch (want_) {
    case Want::kU32: {
      const std::uint32_t v = GetU32(scratch_);
      if (request_.type == QueryType::kValidate && v != kValidationMagic) {
        Fail("VALIDATE carried magic " + Hex32(v) + ", expected " + Hex32(kValidationMagic) +
             " (not a c10d TCPStore client, or an incompatible PyTorch version)");
        return false;
      }
      request_.number = v;
      break;
    }
    case Want::kI64:
      request_.number = GetI64(scratch_);
      break;
    case Want::kCount: {
      const std::uint64_t n = GetU64(scratch_);
      const std::size_t cap = options_.limits.max_count;
      if (cap != 0 && n > cap) {
        Fail(std::string(op) + " key count " + std::to_string(n) + " exceeds max_count=" +
             std::to_string(cap) + " (raise the store's key-count limit if this is legitimate)");
        return false;
      }
      count_ = n;
      break;
    }
    case Want::kLength: {
      const std::uint64_t n = GetU64(scratch_);
      const std::size_t cap =
          blob_is_key_ ? options_.limits.max_key_bytes : options_.limits.max_value_bytes;
      if (cap != 0 && n > cap) {
        Fail(std::string(op) + (blob_is_key_ ? " key" : " value") + " length " + std::to_string(n) +
             " exceeds " + (blob_is_key_ ? "max_key_bytes=" : "max_value_bytes=") +
             std::to_string(cap) + " (raise the store's --max-" + (blob_is_key_ ? "key" : "value") +
             "-size if this is legitimate)");
        return false;
      }
      auto& vec = blob_is_key_ ? request_.keys : request_.values;
      vec.emplace_back();
      blob_ = &vec.back();
      blob_remaining_ = n;
      if (n != 0) {
        want_ = Want::kBlob;
        return true;  // the field continues with its bytes; step_ unchanged
      }
      break;
    }
    default:
      break;
  }
  ++step_;
  return PlanNext();
}

RequestParser::Result RequestParser::Feed(std::span<const std::uint8_t> data) {
  if (failed_) return {Status::kError, 0};
  std::size_t pos = 0;
  while (true) {
    if (want_ == Want::kDone) {
      want_ = Want::kOpcode;
      buffered_ = 0;
      blob_ = nullptr;
      if (request_.type == QueryType::kValidate) validated_ = true;
      return {Status::kRequest, pos};
    }
    if (pos >= data.size()) return {Status::kNeedMore, pos};
    switch (want_) {
      case Want::kOpcode: {
        const std::uint8_t opcode = data[pos++];
        if (options_.expect_validate && !validated_ && opcode != 0) {
          return {Fail("first message started with byte " + std::to_string(opcode) + " (" +
                       std::string(QueryName(opcode)) +
                       "), expected VALIDATE (opcode 0): not a c10d TCPStore client (e.g. "
                       "an HTTP request or a port scanner)"),
                  pos};
        }
        if (opcode > kMaxQueryType) {
          return {Fail("unknown opcode " + std::to_string(opcode) +
                       " (valid: 0..18; the peer is not a c10d TCPStore client or is out of "
                       "sync)"),
                  pos};
        }
        const auto type = static_cast<QueryType>(opcode);
        if (options_.expect_validate && validated_ && type == QueryType::kValidate) {
          return {Fail("VALIDATE received again on an already validated connection"), pos};
        }
        request_ = Request{};
        request_.type = type;
        count_ = 0;
        step_ = 0;
        PlanNext();
        break;
      }
      case Want::kU32:
      case Want::kI64:
      case Want::kCount:
      case Want::kLength: {
        const std::size_t need = (want_ == Want::kU32 ? 4 : 8) - scratch_len_;
        const std::size_t n = std::min(need, data.size() - pos);
        std::copy_n(data.data() + pos, n, scratch_ + scratch_len_);
        scratch_len_ = static_cast<std::uint8_t>(scratch_len_ + n);
        pos += n;
        if (n == need && !ScalarComplete()) return {Status::kError, pos};
        break;
      }
      case Want::kBlob: {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(blob_remaining_, data.size() - pos));
        blob_->append(reinterpret_cast<const char*>(data.data() + pos), n);
        pos += n;
        buffered_ += n;
        blob_remaining_ -= n;
        if (blob_remaining_ == 0) {
          ++step_;
          PlanNext();
        }
        break;
      }
      case Want::kDone:
        break;
    }
  }
}

}  // namespace tzrun::store
