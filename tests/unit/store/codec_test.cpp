// RequestParser / encoders: every opcode round-trips, any split works, bad input fails fast.
#include "tzrun/store/codec.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace tzrun::store {
namespace {

using testing::req;

std::string validate_bytes() {
  std::string s;
  put_u8(s, 0);
  put_u32(s, kValidationMagic);
  return s;
}

// One sample request of every opcode, with binary-safe keys/values.
std::vector<Request> all_requests() {
  const std::string bin("a\0b\xff", 4);
  return {
      req(QueryType::kSet, {"/k"}, {bin}),
      req(QueryType::kCompareSet, {"/cas"}, {"", "desired"}),
      req(QueryType::kGet, {"/k"}),
      req(QueryType::kAdd, {"/counter"}, {}, -42),
      req(QueryType::kCheck, {"/a", "/b", ""}),
      req(QueryType::kWait, {"/w"}),
      req(QueryType::kGetNumKeys),
      req(QueryType::kDeleteKey, {"/k"}),
      req(QueryType::kAppend, {"/k"}, {"more"}),
      req(QueryType::kMultiGet, {"/a", "/b"}),
      req(QueryType::kMultiSet, {"/a", "/b"}, {"1", bin}),
      req(QueryType::kCancelWait),
      req(QueryType::kPing, {}, {}, 0xDEADBEEF),
      req(QueryType::kQueuePush, {"/q"}, {"item"}),
      req(QueryType::kQueuePop, {"/q"}),
      req(QueryType::kQueueLen, {"/q"}),
      req(QueryType::kListKeys),
      req(QueryType::kBarrier, {"/bar"}, {}, 8),
      req(QueryType::kWait, {}),  // n = 0
      req(QueryType::kMultiSet, {}, {}),
  };
}

// Parses `stream` fed in chunks of `chunk` bytes; returns requests, stops on error.
std::vector<Request> parse_all(const std::string& stream, std::size_t chunk, RequestParser& parser,
                               bool* failed = nullptr) {
  std::vector<Request> out;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::string_view piece = std::string_view(stream).substr(pos, chunk);
    while (!piece.empty()) {
      const auto r = parser.feed(piece);
      piece.remove_prefix(r.consumed);
      pos += r.consumed;
      if (r.status == RequestParser::Status::kError) {
        if (failed) *failed = true;
        return out;
      }
      if (r.status == RequestParser::Status::kRequest) out.push_back(parser.take_request());
      if (r.status == RequestParser::Status::kNeedMore) break;
    }
  }
  // Zero-field requests complete on the opcode byte itself.
  return out;
}

TEST(Codec, QueryNames) {
  EXPECT_EQ(query_name(QueryType::kValidate), "VALIDATE");
  EXPECT_EQ(query_name(QueryType::kListKeys), "LIST_KEYS");
  EXPECT_EQ(query_name(QueryType::kBarrier), "BARRIER");
  EXPECT_EQ(query_name(std::uint8_t{19}), "UNKNOWN");
  EXPECT_EQ(static_cast<int>(QueryType::kQueueLen), 16);
  EXPECT_EQ(static_cast<int>(QueryType::kBarrier), 18);
}

TEST(Codec, SetMatchesUpstreamWireBytes) {
  // torch: store.set("foo", "bar") -> 01 | u64 4 | "/foo" | u64 3 | "bar"
  const std::string expected("\x01\x04\0\0\0\0\0\0\0/foo\x03\0\0\0\0\0\0\0bar", 1 + 8 + 4 + 8 + 3);
  EXPECT_EQ(encode_request(req(QueryType::kSet, {"/foo"}, {"bar"})), expected);
  std::string v;
  put_u8(v, 0);
  put_u32(v, kValidationMagic);
  EXPECT_EQ(v, std::string("\x00\xCE\xF7\x85\x3C", 5));
}

TEST(Codec, EveryOpcodeRoundTripsWholeAndByteByByte) {
  const auto requests = all_requests();
  std::string stream = validate_bytes();
  for (const auto& r : requests) stream += encode_request(r);
  for (std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    RequestParser parser;
    bool failed = false;
    auto parsed = parse_all(stream, chunk, parser, &failed);
    ASSERT_FALSE(failed) << parser.error();
    ASSERT_EQ(parsed.size(), requests.size() + 1) << "chunk " << chunk;
    EXPECT_EQ(parsed[0].type, QueryType::kValidate);
    EXPECT_EQ(parsed[0].number, kValidationMagic);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(parsed[i + 1], requests[i]) << query_name(requests[i].type) << " chunk " << chunk;
      EXPECT_EQ(encode_request(parsed[i + 1]), encode_request(requests[i]));
    }
    EXPECT_FALSE(parser.mid_request());
  }
}

TEST(Codec, FeedStopsAfterOneRequest) {
  RequestParser parser;
  const std::string two = validate_bytes() + encode_request(req(QueryType::kGet, {"/x"}));
  auto r = parser.feed(two);
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
  EXPECT_EQ(r.consumed, 5u);
  EXPECT_TRUE(parser.validated());
  r = parser.feed(std::string_view(two).substr(5));
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
  EXPECT_EQ(parser.take_request(), req(QueryType::kGet, {"/x"}));
}

TEST(Codec, TruncatedFrameNeedsMore) {
  RequestParser parser;
  ASSERT_EQ(parser.feed(validate_bytes()).status, RequestParser::Status::kRequest);
  const std::string set = encode_request(req(QueryType::kSet, {"/key"}, {"value"}));
  for (std::size_t cut = 1; cut < set.size(); ++cut) {
    RequestParser p;
    p.feed(validate_bytes());
    const auto r = p.feed(std::string_view(set).substr(0, cut));
    EXPECT_EQ(r.status, RequestParser::Status::kNeedMore) << "cut " << cut;
    EXPECT_EQ(r.consumed, cut);
    EXPECT_TRUE(p.mid_request());
    // The rest completes it.
    const auto rest = p.feed(std::string_view(set).substr(cut));
    EXPECT_EQ(rest.status, RequestParser::Status::kRequest) << "cut " << cut;
    EXPECT_EQ(p.take_request().values.at(0), "value");
  }
}

TEST(Codec, UnknownOpcodeIsAnError) {
  for (int op : {19, 42, 255}) {
    RequestParser parser;
    parser.feed(validate_bytes());
    const auto r = parser.feed(std::string(1, static_cast<char>(op)) + "trailing");
    EXPECT_EQ(r.status, RequestParser::Status::kError);
    EXPECT_EQ(r.consumed, 1u);
    EXPECT_NE(parser.error().find("unknown opcode " + std::to_string(op)), std::string::npos)
        << parser.error();
    // Stays failed.
    EXPECT_EQ(parser.feed(validate_bytes()).status, RequestParser::Status::kError);
  }
}

TEST(Codec, WrongMagicIsAnError) {
  RequestParser parser;
  std::string bad;
  put_u8(bad, 0);
  put_u32(bad, 0x12345678);
  const auto r = parser.feed(bad);
  EXPECT_EQ(r.status, RequestParser::Status::kError);
  EXPECT_NE(parser.error().find("0x12345678"), std::string::npos) << parser.error();
  EXPECT_NE(parser.error().find("0x3C85F7CE"), std::string::npos) << parser.error();
}

TEST(Codec, FirstMessageMustBeValidate) {
  RequestParser parser;
  const auto r = parser.feed(std::string_view("GET / HTTP/1.1\r\n"));
  EXPECT_EQ(r.status, RequestParser::Status::kError);
  EXPECT_EQ(r.consumed, 1u);  // rejected on the first byte
  EXPECT_NE(parser.error().find("expected VALIDATE"), std::string::npos) << parser.error();

  RequestParser set_first;
  EXPECT_EQ(set_first.feed(encode_request(req(QueryType::kSet, {"/a"}, {"b"}))).status,
            RequestParser::Status::kError);
}

TEST(Codec, SecondValidateIsAnError) {
  RequestParser parser;
  ASSERT_EQ(parser.feed(validate_bytes()).status, RequestParser::Status::kRequest);
  EXPECT_EQ(parser.feed(validate_bytes()).status, RequestParser::Status::kError);
  EXPECT_NE(parser.error().find("VALIDATE received again"), std::string::npos);
}

TEST(Codec, WithoutValidateRequirement) {
  RequestParser parser(RequestParser::Options{Limits{}, false});
  const auto r = parser.feed(encode_request(req(QueryType::kGet, {"/a"})));
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
}

// A length/count prefix of 2^63 (or 2^64-1) is rejected when its 8 bytes are complete,
// before anything is allocated for it.
TEST(Codec, AbsurdLengthPrefixesAreRejectedWithoutAllocation) {
  for (std::uint64_t len : {std::uint64_t{1} << 63, ~std::uint64_t{0}, std::uint64_t{8193}}) {
    RequestParser key_parser;
    key_parser.feed(validate_bytes());
    std::string frame;
    put_u8(frame, static_cast<std::uint8_t>(QueryType::kSet));
    put_u64(frame, len);
    const auto r = key_parser.feed(frame);
    EXPECT_EQ(r.status, RequestParser::Status::kError) << len;
    EXPECT_EQ(r.consumed, 9u);
    EXPECT_EQ(key_parser.buffered_bytes(), 0u);
    EXPECT_NE(key_parser.error().find("key length " + std::to_string(len)), std::string::npos)
        << key_parser.error();
    EXPECT_NE(key_parser.error().find("max_key_bytes=8192"), std::string::npos);
  }
  {  // value length
    RequestParser p;
    p.feed(validate_bytes());
    std::string frame;
    put_u8(frame, static_cast<std::uint8_t>(QueryType::kSet));
    put_bytes(frame, "/k");
    put_u64(frame, std::uint64_t{1} << 63);
    EXPECT_EQ(p.feed(frame).status, RequestParser::Status::kError);
    EXPECT_NE(p.error().find("value length 9223372036854775808"), std::string::npos) << p.error();
  }
  {  // count
    RequestParser p;
    p.feed(validate_bytes());
    std::string frame;
    put_u8(frame, static_cast<std::uint8_t>(QueryType::kMultiGet));
    put_u64(frame, std::uint64_t{1} << 63);
    EXPECT_EQ(p.feed(frame).status, RequestParser::Status::kError);
    EXPECT_NE(p.error().find("key count"), std::string::npos) << p.error();
  }
  {  // MULTI_SET with a negative i64 count
    RequestParser p;
    p.feed(validate_bytes());
    std::string frame;
    put_u8(frame, static_cast<std::uint8_t>(QueryType::kMultiSet));
    put_i64(frame, -1);
    EXPECT_EQ(p.feed(frame).status, RequestParser::Status::kError);
  }
}

TEST(Codec, LimitsAreInclusiveAndConfigurable) {
  Limits limits;
  limits.max_key_bytes = 4;
  limits.max_value_bytes = 6;
  limits.max_count = 2;
  auto parse_one = [&](const Request& r, Limits l) {
    RequestParser p(RequestParser::Options{l, false});
    return p.feed(encode_request(r)).status;
  };
  using S = RequestParser::Status;
  EXPECT_EQ(parse_one(req(QueryType::kSet, {"abcd"}, {"123456"}), limits), S::kRequest);
  EXPECT_EQ(parse_one(req(QueryType::kSet, {"abcde"}, {"1"}), limits), S::kError);
  EXPECT_EQ(parse_one(req(QueryType::kSet, {"a"}, {"1234567"}), limits), S::kError);
  EXPECT_EQ(parse_one(req(QueryType::kMultiGet, {"a", "b"}), limits), S::kRequest);
  EXPECT_EQ(parse_one(req(QueryType::kMultiGet, {"a", "b", "c"}), limits), S::kError);
  EXPECT_EQ(parse_one(req(QueryType::kCompareSet, {"a"}, {"1234567", ""}), limits), S::kError);
  Limits none{0, 0, 0};
  EXPECT_EQ(parse_one(req(QueryType::kSet, {std::string(20000, 'k')}, {"v"}), none), S::kRequest);
  // Defaults are the libuv backend's.
  EXPECT_EQ(Limits{}.max_key_bytes, 8192u);
  EXPECT_EQ(Limits{}.max_value_bytes, 8u * 1024 * 1024);
  EXPECT_EQ(Limits{}.max_count, 131072u);
}

TEST(Codec, BufferedBytesTrackOnlyWhatArrived) {
  RequestParser p;
  p.feed(validate_bytes());
  std::string frame;
  put_u8(frame, static_cast<std::uint8_t>(QueryType::kSet));
  put_bytes(frame, "/k");
  put_u64(frame, 8 * 1024 * 1024);  // announces 8 MiB ...
  frame += std::string(100, 'x');   // ... but only 100 bytes arrive
  EXPECT_EQ(p.feed(frame).status, RequestParser::Status::kNeedMore);
  EXPECT_EQ(p.buffered_bytes(), 102u);
}

TEST(Codec, ReplyEncoders) {
  using testing::i64s;
  EXPECT_EQ(encode_bytes_reply("ab"), i64s(2) + "ab");
  EXPECT_EQ(encode_i64_reply(-1), std::string(8, '\xff'));
  EXPECT_EQ(encode_u32_reply(0x01020304), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(encode_check_reply(CheckResponseType::kNotReady), std::string(1, '\x01'));
  EXPECT_EQ(encode_wait_reply(WaitResponseType::kStopWaiting), std::string(1, '\0'));
  EXPECT_EQ(encode_queue_pop_reply(0, std::nullopt), i64s(0));
  EXPECT_EQ(encode_queue_pop_reply(3, "v"), i64s(3) + i64s(1) + "v");
  EXPECT_EQ(encode_list_keys_reply({"/a", "init/"}), i64s(2) + i64s(2) + "/a" + i64s(5) + "init/");
}

TEST(Codec, ParseCounterFollowsStoll) {
  EXPECT_EQ(parse_counter("7"), 7);
  EXPECT_EQ(parse_counter("-3"), -3);
  EXPECT_EQ(parse_counter("+5"), 5);
  EXPECT_EQ(parse_counter("  \t12abc"), 12);
  EXPECT_EQ(parse_counter("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_counter("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse_counter("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parse_counter(""), std::nullopt);
  EXPECT_EQ(parse_counter("abc"), std::nullopt);
  EXPECT_EQ(parse_counter("-"), std::nullopt);
  EXPECT_EQ(parse_counter(std::string_view("1\0"
                                           "2",
                                           3)),
            1);
}

}  // namespace
}  // namespace tzrun::store
