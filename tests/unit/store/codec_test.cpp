// RequestParser / encoders: every opcode round-trips, any split works, bad input fails fast.
#include "tzrun/store/codec.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace tzrun::store {
namespace {

using testing::Req;

std::string ValidateBytes() {
  std::string s;
  PutU8(s, 0);
  PutU32(s, kValidationMagic);
  return s;
}

// One sample request of every opcode, with binary-safe keys/values.
std::vector<Request> AllRequests() {
  const std::string bin("a\0b\xff", 4);
  return {
      Req(QueryType::kSet, {"/k"}, {bin}),
      Req(QueryType::kCompareSet, {"/cas"}, {"", "desired"}),
      Req(QueryType::kGet, {"/k"}),
      Req(QueryType::kAdd, {"/counter"}, {}, -42),
      Req(QueryType::kCheck, {"/a", "/b", ""}),
      Req(QueryType::kWait, {"/w"}),
      Req(QueryType::kGetNumKeys),
      Req(QueryType::kDeleteKey, {"/k"}),
      Req(QueryType::kAppend, {"/k"}, {"more"}),
      Req(QueryType::kMultiGet, {"/a", "/b"}),
      Req(QueryType::kMultiSet, {"/a", "/b"}, {"1", bin}),
      Req(QueryType::kCancelWait),
      Req(QueryType::kPing, {}, {}, 0xDEADBEEF),
      Req(QueryType::kQueuePush, {"/q"}, {"item"}),
      Req(QueryType::kQueuePop, {"/q"}),
      Req(QueryType::kQueueLen, {"/q"}),
      Req(QueryType::kListKeys),
      Req(QueryType::kBarrier, {"/bar"}, {}, 8),
      Req(QueryType::kWait, {}),  // n = 0
      Req(QueryType::kMultiSet, {}, {}),
  };
}

// Parses `stream` fed in chunks of `chunk` bytes; returns requests, stops on error.
std::vector<Request> ParseAll(const std::string& stream, std::size_t chunk, RequestParser& parser,
                              bool* failed = nullptr) {
  std::vector<Request> out;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::string_view piece = std::string_view(stream).substr(pos, chunk);
    while (!piece.empty()) {
      const auto r = parser.Feed(piece);
      piece.remove_prefix(r.consumed);
      pos += r.consumed;
      if (r.status == RequestParser::Status::kError) {
        if (failed) *failed = true;
        return out;
      }
      if (r.status == RequestParser::Status::kRequest) out.push_back(parser.TakeRequest());
      if (r.status == RequestParser::Status::kNeedMore) break;
    }
  }
  // Zero-field requests complete on the opcode byte itself.
  return out;
}

TEST(Codec, QueryNames) {
  EXPECT_EQ(QueryName(QueryType::kValidate), "VALIDATE");
  EXPECT_EQ(QueryName(QueryType::kListKeys), "LIST_KEYS");
  EXPECT_EQ(QueryName(QueryType::kBarrier), "BARRIER");
  EXPECT_EQ(QueryName(std::uint8_t{19}), "UNKNOWN");
  EXPECT_EQ(static_cast<int>(QueryType::kQueueLen), 16);
  EXPECT_EQ(static_cast<int>(QueryType::kBarrier), 18);
}

TEST(Codec, SetMatchesUpstreamWireBytes) {
  // torch: store.set("foo", "bar") -> 01 | u64 4 | "/foo" | u64 3 | "bar"
  const std::string expected("\x01\x04\0\0\0\0\0\0\0/foo\x03\0\0\0\0\0\0\0bar", 1 + 8 + 4 + 8 + 3);
  EXPECT_EQ(EncodeRequest(Req(QueryType::kSet, {"/foo"}, {"bar"})), expected);
  std::string v;
  PutU8(v, 0);
  PutU32(v, kValidationMagic);
  EXPECT_EQ(v, std::string("\x00\xCE\xF7\x85\x3C", 5));
}

TEST(Codec, EveryOpcodeRoundTripsWholeAndByteByByte) {
  const auto requests = AllRequests();
  std::string stream = ValidateBytes();
  for (const auto& r : requests) stream += EncodeRequest(r);
  for (std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    RequestParser parser;
    bool failed = false;
    auto parsed = ParseAll(stream, chunk, parser, &failed);
    ASSERT_FALSE(failed) << parser.Error();
    ASSERT_EQ(parsed.size(), requests.size() + 1) << "chunk " << chunk;
    EXPECT_EQ(parsed[0].type, QueryType::kValidate);
    EXPECT_EQ(parsed[0].number, kValidationMagic);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(parsed[i + 1], requests[i]) << QueryName(requests[i].type) << " chunk " << chunk;
      EXPECT_EQ(EncodeRequest(parsed[i + 1]), EncodeRequest(requests[i]));
    }
    EXPECT_FALSE(parser.MidRequest());
  }
}

TEST(Codec, FeedStopsAfterOneRequest) {
  RequestParser parser;
  const std::string two = ValidateBytes() + EncodeRequest(Req(QueryType::kGet, {"/x"}));
  auto r = parser.Feed(two);
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
  EXPECT_EQ(r.consumed, 5u);
  EXPECT_TRUE(parser.Validated());
  r = parser.Feed(std::string_view(two).substr(5));
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
  EXPECT_EQ(parser.TakeRequest(), Req(QueryType::kGet, {"/x"}));
}

TEST(Codec, TruncatedFrameNeedsMore) {
  RequestParser parser;
  ASSERT_EQ(parser.Feed(ValidateBytes()).status, RequestParser::Status::kRequest);
  const std::string set = EncodeRequest(Req(QueryType::kSet, {"/key"}, {"value"}));
  for (std::size_t cut = 1; cut < set.size(); ++cut) {
    RequestParser p;
    p.Feed(ValidateBytes());
    const auto r = p.Feed(std::string_view(set).substr(0, cut));
    EXPECT_EQ(r.status, RequestParser::Status::kNeedMore) << "cut " << cut;
    EXPECT_EQ(r.consumed, cut);
    EXPECT_TRUE(p.MidRequest());
    // The rest completes it.
    const auto rest = p.Feed(std::string_view(set).substr(cut));
    EXPECT_EQ(rest.status, RequestParser::Status::kRequest) << "cut " << cut;
    EXPECT_EQ(p.TakeRequest().values.at(0), "value");
  }
}

TEST(Codec, UnknownOpcodeIsAnError) {
  for (int op : {19, 42, 255}) {
    RequestParser parser;
    parser.Feed(ValidateBytes());
    const auto r = parser.Feed(std::string(1, static_cast<char>(op)) + "trailing");
    EXPECT_EQ(r.status, RequestParser::Status::kError);
    EXPECT_EQ(r.consumed, 1u);
    EXPECT_NE(parser.Error().find("unknown opcode " + std::to_string(op)), std::string::npos)
        << parser.Error();
    // Stays failed.
    EXPECT_EQ(parser.Feed(ValidateBytes()).status, RequestParser::Status::kError);
  }
}

TEST(Codec, WrongMagicIsAnError) {
  RequestParser parser;
  std::string bad;
  PutU8(bad, 0);
  PutU32(bad, 0x12345678);
  const auto r = parser.Feed(bad);
  EXPECT_EQ(r.status, RequestParser::Status::kError);
  EXPECT_NE(parser.Error().find("0x12345678"), std::string::npos) << parser.Error();
  EXPECT_NE(parser.Error().find("0x3C85F7CE"), std::string::npos) << parser.Error();
}

TEST(Codec, FirstMessageMustBeValidate) {
  RequestParser parser;
  const auto r = parser.Feed(std::string_view("GET / HTTP/1.1\r\n"));
  EXPECT_EQ(r.status, RequestParser::Status::kError);
  EXPECT_EQ(r.consumed, 1u);  // rejected on the first byte
  EXPECT_NE(parser.Error().find("expected VALIDATE"), std::string::npos) << parser.Error();

  RequestParser set_first;
  EXPECT_EQ(set_first.Feed(EncodeRequest(Req(QueryType::kSet, {"/a"}, {"b"}))).status,
            RequestParser::Status::kError);
}

TEST(Codec, SecondValidateIsAnError) {
  RequestParser parser;
  ASSERT_EQ(parser.Feed(ValidateBytes()).status, RequestParser::Status::kRequest);
  EXPECT_EQ(parser.Feed(ValidateBytes()).status, RequestParser::Status::kError);
  EXPECT_NE(parser.Error().find("VALIDATE received again"), std::string::npos);
}

TEST(Codec, WithoutValidateRequirement) {
  RequestParser parser(RequestParser::Options{Limits{}, false});
  const auto r = parser.Feed(EncodeRequest(Req(QueryType::kGet, {"/a"})));
  EXPECT_EQ(r.status, RequestParser::Status::kRequest);
}

// A length/count prefix of 2^63 (or 2^64-1) is rejected when its 8 bytes are complete,
// before anything is allocated for it.
TEST(Codec, AbsurdLengthPrefixesAreRejectedWithoutAllocation) {
  for (std::uint64_t len : {std::uint64_t{1} << 63, ~std::uint64_t{0}, std::uint64_t{8193}}) {
    RequestParser key_parser;
    key_parser.Feed(ValidateBytes());
    std::string frame;
    PutU8(frame, static_cast<std::uint8_t>(QueryType::kSet));
    PutU64(frame, len);
    const auto r = key_parser.Feed(frame);
    EXPECT_EQ(r.status, RequestParser::Status::kError) << len;
    EXPECT_EQ(r.consumed, 9u);
    EXPECT_EQ(key_parser.BufferedBytes(), 0u);
    EXPECT_NE(key_parser.Error().find("key length " + std::to_string(len)), std::string::npos)
        << key_parser.Error();
    EXPECT_NE(key_parser.Error().find("max_key_bytes=8192"), std::string::npos);
  }
  {  // value length
    RequestParser p;
    p.Feed(ValidateBytes());
    std::string frame;
    PutU8(frame, static_cast<std::uint8_t>(QueryType::kSet));
    PutBytes(frame, "/k");
    PutU64(frame, std::uint64_t{1} << 63);
    EXPECT_EQ(p.Feed(frame).status, RequestParser::Status::kError);
    EXPECT_NE(p.Error().find("value length 9223372036854775808"), std::string::npos) << p.Error();
  }
  {  // count
    RequestParser p;
    p.Feed(ValidateBytes());
    std::string frame;
    PutU8(frame, static_cast<std::uint8_t>(QueryType::kMultiGet));
    PutU64(frame, std::uint64_t{1} << 63);
    EXPECT_EQ(p.Feed(frame).status, RequestParser::Status::kError);
    EXPECT_NE(p.Error().find("key count"), std::string::npos) << p.Error();
  }
  {  // MULTI_SET with a negative i64 count
    RequestParser p;
    p.Feed(ValidateBytes());
    std::string frame;
    PutU8(frame, static_cast<std::uint8_t>(QueryType::kMultiSet));
    PutI64(frame, -1);
    EXPECT_EQ(p.Feed(frame).status, RequestParser::Status::kError);
  }
}

TEST(Codec, LimitsAreInclusiveAndConfigurable) {
  Limits limits;
  limits.max_key_bytes = 4;
  limits.max_value_bytes = 6;
  limits.max_count = 2;
  auto parse_one = [&](const Request& r, Limits l) {
    RequestParser p(RequestParser::Options{l, false});
    return p.Feed(EncodeRequest(r)).status;
  };
  using S = RequestParser::Status;
  EXPECT_EQ(parse_one(Req(QueryType::kSet, {"abcd"}, {"123456"}), limits), S::kRequest);
  EXPECT_EQ(parse_one(Req(QueryType::kSet, {"abcde"}, {"1"}), limits), S::kError);
  EXPECT_EQ(parse_one(Req(QueryType::kSet, {"a"}, {"1234567"}), limits), S::kError);
  EXPECT_EQ(parse_one(Req(QueryType::kMultiGet, {"a", "b"}), limits), S::kRequest);
  EXPECT_EQ(parse_one(Req(QueryType::kMultiGet, {"a", "b", "c"}), limits), S::kError);
  EXPECT_EQ(parse_one(Req(QueryType::kCompareSet, {"a"}, {"1234567", ""}), limits), S::kError);
  Limits none{0, 0, 0};
  EXPECT_EQ(parse_one(Req(QueryType::kSet, {std::string(20000, 'k')}, {"v"}), none), S::kRequest);
  // Defaults are the libuv backend's.
  EXPECT_EQ(Limits{}.max_key_bytes, 8192u);
  EXPECT_EQ(Limits{}.max_value_bytes, 8u * 1024 * 1024);
  EXPECT_EQ(Limits{}.max_count, 131072u);
}

TEST(Codec, BufferedBytesTrackOnlyWhatArrived) {
  RequestParser p;
  p.Feed(ValidateBytes());
  std::string frame;
  PutU8(frame, static_cast<std::uint8_t>(QueryType::kSet));
  PutBytes(frame, "/k");
  PutU64(frame, 8 * 1024 * 1024);  // announces 8 MiB ...
  frame += std::string(100, 'x');  // ... but only 100 bytes arrive
  EXPECT_EQ(p.Feed(frame).status, RequestParser::Status::kNeedMore);
  EXPECT_EQ(p.BufferedBytes(), 102u);
}

TEST(Codec, ReplyEncoders) {
  using testing::I64s;
  EXPECT_EQ(EncodeBytesReply("ab"), I64s(2) + "ab");
  EXPECT_EQ(EncodeI64Reply(-1), std::string(8, '\xff'));
  EXPECT_EQ(EncodeU32Reply(0x01020304), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(EncodeCheckReply(CheckResponseType::kNotReady), std::string(1, '\x01'));
  EXPECT_EQ(EncodeWaitReply(WaitResponseType::kStopWaiting), std::string(1, '\0'));
  EXPECT_EQ(EncodeQueuePopReply(0, std::nullopt), I64s(0));
  EXPECT_EQ(EncodeQueuePopReply(3, "v"), I64s(3) + I64s(1) + "v");
  EXPECT_EQ(EncodeListKeysReply({"/a", "init/"}), I64s(2) + I64s(2) + "/a" + I64s(5) + "init/");
}

TEST(Codec, ParseCounterFollowsStoll) {
  EXPECT_EQ(ParseCounter("7"), 7);
  EXPECT_EQ(ParseCounter("-3"), -3);
  EXPECT_EQ(ParseCounter("+5"), 5);
  EXPECT_EQ(ParseCounter("  \t12abc"), 12);
  EXPECT_EQ(ParseCounter("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(ParseCounter("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(ParseCounter("9223372036854775808"), std::nullopt);
  EXPECT_EQ(ParseCounter(""), std::nullopt);
  EXPECT_EQ(ParseCounter("abc"), std::nullopt);
  EXPECT_EQ(ParseCounter("-"), std::nullopt);
  EXPECT_EQ(ParseCounter(std::string_view("1\0"
                                          "2",
                                          3)),
            1);
}

}  // namespace
}  // namespace tzrun::store
