// libFuzzer target over tzrun::store::RequestParser (the c10d TCPStore frame parser).
//
// Input layout: byte 0 = mode (bit 0: require VALIDATE first; bits 1..7: chunk size - 1 for
// the split feed), the rest is the byte stream a peer would send.
// Oracles (any violation traps):
//  1. feeding the stream whole and in chunks gives identical requests and the same outcome;
//  2. every parsed request re-encodes to exactly the bytes it was parsed from;
//  3. the parser never consumes more than it was given and never buffers more than arrived;
//  4. requests respect the (small) limits used here;
//  5. applying the parsed requests to a KvState (src/store/kv_state.hpp) from three clients in
//     turn keeps its waiter count equal to the clients' pending waits, and wakes only
//     registered clients.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv_state.hpp"
#include "tzrun/store/codec.hpp"

namespace {

using tzrun::store::Limits;
using tzrun::store::Request;
using tzrun::store::RequestParser;

struct Outcome {
  std::vector<Request> requests;
  std::vector<std::string> frames;  // bytes each request was parsed from
  bool failed = false;
  std::size_t consumed = 0;
};

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

Outcome Run(std::span<const std::uint8_t> data, std::size_t chunk, RequestParser::Options opts) {
  RequestParser parser(opts);
  Outcome out;
  std::string frame;
  std::size_t pos = 0;
  while (pos < data.size() && !out.failed) {
    auto piece = data.subspan(pos, std::min(chunk, data.size() - pos));
    while (!piece.empty()) {
      const auto r = parser.Feed(piece);
      Check(r.consumed <= piece.size());
      Check(parser.BufferedBytes() <= frame.size() + r.consumed);
      frame.append(reinterpret_cast<const char*>(piece.data()), r.consumed);
      piece = piece.subspan(r.consumed);
      pos += r.consumed;
      if (r.status == RequestParser::Status::kError) {
        Check(!parser.Error().empty());
        out.failed = true;
        break;
      }
      if (r.status == RequestParser::Status::kNeedMore) {
        Check(piece.empty());
        break;
      }
      out.requests.push_back(parser.TakeRequest());
      out.frames.push_back(std::move(frame));
      frame.clear();
    }
  }
  out.consumed = pos;
  return out;
}

// Oracle 5: the parsed requests against the pure key/value state.
void ApplyAll(std::vector<Request> requests) {
  using tzrun::store::detail::Effects;
  using tzrun::store::detail::KvClient;
  tzrun::store::detail::KvState kv;
  KvClient clients[3];
  Effects out;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    KvClient& from = clients[i % 3];
    if (requests[i].type == tzrun::store::QueryType::kPing && requests[i].number % 7 == 0) {
      kv.DropClient(from);  // as a connection closing
      continue;
    }
    out.Clear();
    kv.Apply(from, requests[i], out);
    for (const KvClient* woken : out.woken) Check(woken >= clients && woken < clients + 3);
    std::size_t pending = 0;
    for (const auto& c : clients) pending += c.waits.size();
    Check(pending == kv.Waiters());
  }
  for (auto& c : clients) kv.DropClient(c);
  Check(kv.Waiters() == 0);
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point, named by libFuzzer.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::span<const std::uint8_t> stream(data + 1, size - 1);
  RequestParser::Options opts;
  opts.expect_validate = (mode & 1) != 0;
  opts.limits.max_key_bytes = 64;
  opts.limits.max_value_bytes = 4096;
  opts.limits.max_count = 32;
  const std::size_t chunk = static_cast<std::size_t>(mode >> 1) + 1;

  const Outcome whole = Run(stream, stream.size() + 1, opts);
  const Outcome split = Run(stream, chunk, opts);
  Check(whole.failed == split.failed);
  Check(whole.consumed == split.consumed);
  Check(whole.requests == split.requests);
  for (std::size_t i = 0; i < whole.requests.size(); ++i) {
    const Request& r = whole.requests[i];
    Check(tzrun::store::EncodeRequest(r) == whole.frames[i]);
    Check(r.keys.size() <= 2 * opts.limits.max_count + 1);
    for (const auto& k : r.keys) Check(k.size() <= opts.limits.max_key_bytes);
    for (const auto& v : r.values) Check(v.size() <= opts.limits.max_value_bytes);
  }
  ApplyAll(whole.requests);
  return 0;
}
