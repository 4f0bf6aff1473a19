// KvState without sockets: every opcode's reply bytes, wake-ups, CANCEL_WAIT, COMPARE_SET's
// table, queue order, counters, and the two libuv bugs that are not copied.
#include "kv_state.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

namespace tzrun::store::detail {
namespace {

using tzrun::store::testing::req;

// A KvState with helpers that apply one request and return its Effects.
class KvStateTest : public ::testing::Test {
 protected:
  Effects run(KvClient& from, Request r) {
    Effects out;
    kv.apply(from, r, out);
    return out;
  }
  Effects run(Request r) { return run(alice, std::move(r)); }

  // The replies of one request, concatenated in wire form.
  std::string wire(KvClient& from, Request r) {
    const Effects out = run(from, std::move(r));
    EXPECT_TRUE(out.error.empty()) << out.error;
    std::string bytes;
    for (const auto& reply : out.replies) bytes += reply.view();
    return bytes;
  }
  std::string wire(Request r) { return wire(alice, std::move(r)); }

  void set(const std::string& key, const std::string& value) {
    EXPECT_EQ(wire(req(QueryType::kSet, {key}, {value})), "");
  }

  KvState kv;
  KvClient alice;
  KvClient bob;
  KvClient carol;
};

const std::string kStop = encode_wait_reply(WaitResponseType::kStopWaiting);
const std::string kCanceled = encode_wait_reply(WaitResponseType::kWaitCanceled);

TEST_F(KvStateTest, SetThenGetRepliesTheValue) {
  set("/k", std::string("a\0b", 3));
  EXPECT_EQ(wire(req(QueryType::kGet, {"/k"})), encode_bytes_reply(std::string("a\0b", 3)));
  set("/k", "second");
  EXPECT_EQ(wire(req(QueryType::kGet, {"/k"})), encode_bytes_reply("second"));
}

TEST_F(KvStateTest, GetOfAMissingKeyRepliesEmpty) {
  EXPECT_EQ(wire(req(QueryType::kGet, {"/missing"})), encode_bytes_reply(""));
  EXPECT_EQ(kv.keys(), 0U);
}

TEST_F(KvStateTest, GetSharesTheStoredBufferAndSetDoesNotRewriteIt) {
  set("/k", "v1");
  Effects got = run(req(QueryType::kGet, {"/k"}));
  ASSERT_EQ(got.replies.size(), 1U);
  ASSERT_TRUE(got.replies[0].shared);
  set("/k", "v2");  // a queued reply still holds the old buffer: it must stay intact
  EXPECT_EQ(got.replies[0].view(), encode_bytes_reply("v1"));
  EXPECT_EQ(wire(req(QueryType::kGet, {"/k"})), encode_bytes_reply("v2"));
}

TEST_F(KvStateTest, CompareSetFollowsUpstreamTable) {
  // missing key, empty expected: stores desired
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/a"}, {"", "d"})), encode_bytes_reply("d"));
  EXPECT_EQ(wire(req(QueryType::kGet, {"/a"})), encode_bytes_reply("d"));
  // missing key, non-empty expected: nothing stored, replies expected ("lying" row)
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/b"}, {"exp", "d"})), encode_bytes_reply("exp"));
  EXPECT_EQ(wire(req(QueryType::kCheck, {"/b"})), encode_check_reply(CheckResponseType::kNotReady));
  // equal: replaced
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/a"}, {"d", "e"})), encode_bytes_reply("e"));
  // different: unchanged, replies current value
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/a"}, {"zzz", "f"})), encode_bytes_reply("e"));
  EXPECT_EQ(wire(req(QueryType::kGet, {"/a"})), encode_bytes_reply("e"));
  // present key holding "" with empty expected: equal, replaced
  set("/empty", "");
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/empty"}, {"", "x"})), encode_bytes_reply("x"));
  // a long "lying" reply (over the inline size) is still exact
  const std::string long_expected(100, 'e');
  EXPECT_EQ(wire(req(QueryType::kCompareSet, {"/c"}, {long_expected, "d"})),
            encode_bytes_reply(long_expected));
}

TEST_F(KvStateTest, CompareSetWakesWaitersOnlyWhenItStored) {
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/a"})), "");
  ASSERT_EQ(kv.waiters(), 1U);
  // libuv wakes here although nothing was stored (bug not copied)
  EXPECT_TRUE(run(req(QueryType::kCompareSet, {"/a"}, {"exp", "d"})).woken.empty());
  EXPECT_EQ(kv.waiters(), 1U);
  const Effects stored = run(req(QueryType::kCompareSet, {"/a"}, {"", "d"}));
  EXPECT_EQ(stored.woken, std::vector<KvClient*>{&bob});
  EXPECT_EQ(kv.waiters(), 0U);
  // a mismatching COMPARE_SET on a present key does not wake either
  EXPECT_EQ(wire(carol, req(QueryType::kBarrier, {"/bar"}, {}, 2)), "");
  EXPECT_TRUE(run(req(QueryType::kCompareSet, {"/bar"}, {"no", "x"})).woken.empty());
}

TEST_F(KvStateTest, AddCountsAndRejectsNonNumericValues) {
  EXPECT_EQ(wire(req(QueryType::kAdd, {"/n"}, {}, 5)), encode_i64_reply(5));
  EXPECT_EQ(wire(req(QueryType::kAdd, {"/n"}, {}, -7)), encode_i64_reply(-2));
  EXPECT_EQ(wire(req(QueryType::kGet, {"/n"})), encode_bytes_reply("-2"));
  set("/s", "abc");
  const Effects bad = run(req(QueryType::kAdd, {"/s"}, {}, 1));
  EXPECT_TRUE(bad.replies.empty());
  EXPECT_EQ(bad.error,
            "ADD on key '/s' whose value 'abc' is not a decimal integer (do not mix set() and "
            "add() on one key)");
  EXPECT_EQ(wire(req(QueryType::kGet, {"/s"})), encode_bytes_reply("abc"));
}

TEST_F(KvStateTest, AddOverflowIsAProtocolError) {
  EXPECT_EQ(wire(req(QueryType::kAdd, {"/n"}, {}, INT64_MAX)), encode_i64_reply(INT64_MAX));
  const Effects bad = run(req(QueryType::kAdd, {"/n"}, {}, 1));
  EXPECT_NE(bad.error.find("overflows int64 (9223372036854775807 + 1)"), std::string::npos);
  EXPECT_EQ(wire(req(QueryType::kGet, {"/n"})), encode_bytes_reply("9223372036854775807"));
}

TEST_F(KvStateTest, CheckCountsKeysAndNonEmptyQueues) {
  EXPECT_EQ(wire(req(QueryType::kCheck, {"/a", "/q"})),
            encode_check_reply(CheckResponseType::kNotReady));
  set("/a", "1");
  EXPECT_EQ(wire(req(QueryType::kQueuePush, {"/q"}, {"x"})), "");
  EXPECT_EQ(wire(req(QueryType::kCheck, {"/a", "/q"})),
            encode_check_reply(CheckResponseType::kReady));
  EXPECT_EQ(wire(req(QueryType::kCheck, {})), encode_check_reply(CheckResponseType::kReady));
}

TEST_F(KvStateTest, WaitOnPresentKeysRepliesAtOnce) {
  set("/a", "1");
  EXPECT_EQ(wire(req(QueryType::kWait, {"/a"})), kStop);
  EXPECT_EQ(wire(req(QueryType::kWait, {})), kStop);
  EXPECT_EQ(kv.waiters(), 0U);
}

TEST_F(KvStateTest, WaitIsReleasedWhenEveryMissingKeyArrives) {
  set("/a", "1");
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/a", "/b", "/c"})), "");
  EXPECT_EQ(kv.waiters(), 1U);
  EXPECT_TRUE(run(req(QueryType::kSet, {"/b"}, {"x"})).woken.empty());
  const Effects last = run(req(QueryType::kAdd, {"/c"}, {}, 1));
  EXPECT_EQ(last.replies.size(), 1U);  // the ADD's own reply, then the wake-up
  EXPECT_EQ(last.woken, std::vector<KvClient*>{&bob});
  EXPECT_EQ(kv.waiters(), 0U);
  EXPECT_TRUE(bob.waits.empty());
}

TEST_F(KvStateTest, EveryWritingOpcodeReleasesWaiters) {
  const std::vector<Request> writers = {
      req(QueryType::kSet, {"/k"}, {"v"}),
      req(QueryType::kAdd, {"/k"}, {}, 1),
      req(QueryType::kAppend, {"/k"}, {"v"}),
      req(QueryType::kMultiSet, {"/x", "/k"}, {"1", "2"}),
      req(QueryType::kCompareSet, {"/k"}, {"", "v"}),
  };
  for (const auto& w : writers) {
    KvState fresh;
    KvClient waiter;
    Effects out;
    Request wait = req(QueryType::kWait, {"/k"});
    fresh.apply(waiter, wait, out);
    Request write = w;
    fresh.apply(alice, write, out);
    EXPECT_EQ(out.woken, std::vector<KvClient*>{&waiter}) << query_name(w.type);
    EXPECT_EQ(fresh.waiters(), 0U) << query_name(w.type);
  }
}

TEST_F(KvStateTest, DeleteDoesNotWake) {
  set("/k", "v");
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/other"})), "");
  const Effects del = run(req(QueryType::kDeleteKey, {"/other"}));
  EXPECT_TRUE(del.woken.empty());
  EXPECT_EQ(wire(req(QueryType::kDeleteKey, {"/k"})), encode_i64_reply(1));
  EXPECT_EQ(wire(req(QueryType::kDeleteKey, {"/k"})), encode_i64_reply(0));
  EXPECT_EQ(kv.keys(), 0U);
}

TEST_F(KvStateTest, CancelWaitDropsOnlyTheCallersWaits) {
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/k"})), "");
  EXPECT_EQ(wire(carol, req(QueryType::kWait, {"/k", "/j"})), "");
  EXPECT_EQ(kv.waiters(), 2U);
  EXPECT_EQ(wire(bob, req(QueryType::kCancelWait)), kCanceled);
  EXPECT_EQ(kv.waiters(), 1U);
  EXPECT_TRUE(run(req(QueryType::kSet, {"/k"}, {"v"})).woken.empty());
  EXPECT_EQ(run(req(QueryType::kSet, {"/j"}, {"v"})).woken, std::vector<KvClient*>{&carol});
  // CANCEL_WAIT with nothing pending still replies
  EXPECT_EQ(wire(bob, req(QueryType::kCancelWait)), kCanceled);
}

TEST_F(KvStateTest, DropClientForgetsItsRegistrations) {
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/k"})), "");
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/k", "/j"})), "");
  EXPECT_EQ(kv.waiters(), 2U);
  kv.drop_client(bob);
  EXPECT_EQ(kv.waiters(), 0U);
  EXPECT_TRUE(run(req(QueryType::kMultiSet, {"/k", "/j"}, {"1", "2"})).woken.empty());
}

TEST_F(KvStateTest, GetNumKeysAndListKeysCountKvNotQueues) {
  set("/a", "1");
  set("/b", "2");
  EXPECT_EQ(wire(req(QueryType::kQueuePush, {"/q"}, {"x"})), "");
  EXPECT_EQ(wire(req(QueryType::kGetNumKeys)), encode_i64_reply(2));
  const std::string listed = wire(req(QueryType::kListKeys));
  EXPECT_TRUE(listed == encode_list_keys_reply({"/a", "/b"}) ||
              listed == encode_list_keys_reply({"/b", "/a"}));
  EXPECT_EQ(kv.keys(), 2U);
  EXPECT_EQ(kv.queues(), 1U);
}

TEST_F(KvStateTest, AppendCreatesAndExtends) {
  EXPECT_EQ(wire(req(QueryType::kAppend, {"/k"}, {"ab"})), "");
  Effects held = run(req(QueryType::kGet, {"/k"}));  // shares the buffer: append copies
  EXPECT_EQ(wire(req(QueryType::kAppend, {"/k"}, {"cd"})), "");
  EXPECT_EQ(held.replies[0].view(), encode_bytes_reply("ab"));
  held.replies.clear();
  EXPECT_EQ(wire(req(QueryType::kAppend, {"/k"}, {"ef"})), "");  // in place
  EXPECT_EQ(wire(req(QueryType::kGet, {"/k"})), encode_bytes_reply("abcdef"));
}

TEST_F(KvStateTest, MultiGetAndMultiSet) {
  EXPECT_EQ(wire(req(QueryType::kMultiSet, {"/a", "/b", "/a"}, {"1", "2", "3"})), "");
  EXPECT_EQ(wire(req(QueryType::kMultiGet, {"/a", "/missing", "/b"})),
            encode_bytes_reply("3") + encode_bytes_reply("") + encode_bytes_reply("2"));
  EXPECT_EQ(wire(req(QueryType::kMultiGet, {})), "");
}

TEST_F(KvStateTest, PingEchoesTheNonce) {
  EXPECT_EQ(wire(req(QueryType::kPing, {}, {}, 0xDEADBEEF)), encode_u32_reply(0xDEADBEEF));
}

TEST_F(KvStateTest, ValidateDoesNothing) {
  const Effects out = run(req(QueryType::kValidate, {}, {}, kValidationMagic));
  EXPECT_TRUE(out.replies.empty());
  EXPECT_TRUE(out.woken.empty());
  EXPECT_TRUE(out.error.empty());
}

TEST_F(KvStateTest, QueueIsFirstInFirstOut) {
  for (const char* item : {"one", "two", "three"}) {
    EXPECT_EQ(wire(req(QueryType::kQueuePush, {"/q"}, {item})), "");
  }
  EXPECT_EQ(wire(req(QueryType::kQueueLen, {"/q"})), encode_i64_reply(3));
  EXPECT_EQ(wire(req(QueryType::kQueuePop, {"/q"})), encode_queue_pop_reply(3, "one"));
  EXPECT_EQ(wire(req(QueryType::kQueuePop, {"/q"})), encode_queue_pop_reply(2, "two"));
  EXPECT_EQ(wire(req(QueryType::kQueuePop, {"/q"})), encode_queue_pop_reply(1, "three"));
  EXPECT_EQ(wire(req(QueryType::kQueuePop, {"/q"})), encode_i64_reply(0));
  EXPECT_EQ(wire(req(QueryType::kQueueLen, {"/q"})), encode_i64_reply(0));
  EXPECT_EQ(kv.queues(), 0U);
}

TEST_F(KvStateTest, QueuePushWakesExactlyOneWaiterInArrivalOrder) {
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(wire(carol, req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(run(req(QueryType::kQueuePush, {"/q"}, {"1"})).woken, std::vector<KvClient*>{&bob});
  EXPECT_EQ(kv.waiters(), 1U);
  // libuv leaves bob's stale registration behind (counter underflow): here the second push
  // releases carol, not nobody.
  EXPECT_EQ(run(req(QueryType::kQueuePush, {"/q"}, {"2"})).woken, std::vector<KvClient*>{&carol});
  EXPECT_EQ(kv.waiters(), 0U);
  EXPECT_TRUE(run(req(QueryType::kQueuePush, {"/q"}, {"3"})).woken.empty());
}

TEST_F(KvStateTest, QueuePushOnAMultiKeyWaitConsumesOneRegistration) {
  EXPECT_EQ(wire(bob, req(QueryType::kWait, {"/q", "/k"})), "");
  EXPECT_EQ(wire(carol, req(QueryType::kWait, {"/q"})), "");
  // bob's entry is consumed without completing him; carol completes
  EXPECT_EQ(run(req(QueryType::kQueuePush, {"/q"}, {"1"})).woken, std::vector<KvClient*>{&carol});
  EXPECT_EQ(run(req(QueryType::kSet, {"/k"}, {"v"})).woken, std::vector<KvClient*>{&bob});
}

TEST_F(KvStateTest, BarrierReleasesEveryoneAtWorldSize) {
  EXPECT_EQ(wire(alice, req(QueryType::kBarrier, {"/bar"}, {}, 3)), "");
  EXPECT_EQ(wire(bob, req(QueryType::kBarrier, {"/bar"}, {}, 3)), "");
  EXPECT_EQ(kv.waiters(), 2U);
  const Effects last = run(carol, req(QueryType::kBarrier, {"/bar"}, {}, 3));
  ASSERT_EQ(last.replies.size(), 1U);
  EXPECT_EQ(last.replies[0].view(), kStop);
  EXPECT_EQ(last.woken, (std::vector<KvClient*>{&alice, &bob}));
  EXPECT_EQ(kv.waiters(), 0U);
  EXPECT_EQ(wire(req(QueryType::kGet, {"/bar"})), encode_bytes_reply("3"));
  // past world size: released at once
  EXPECT_EQ(wire(req(QueryType::kBarrier, {"/bar"}, {}, 3)), kStop);
}

TEST_F(KvStateTest, BarrierOnANonNumericKeyIsAProtocolError) {
  set("/bar", "x");
  const Effects bad = run(req(QueryType::kBarrier, {"/bar"}, {}, 2));
  EXPECT_EQ(bad.error.rfind("BARRIER on key '/bar' whose value 'x'", 0), 0U) << bad.error;
  EXPECT_EQ(kv.waiters(), 0U);
}

TEST_F(KvStateTest, CountersFollowTheMapAndQueues) {
  set("/a", "1");
  EXPECT_EQ(wire(req(QueryType::kAdd, {"/n"}, {}, 1)), encode_i64_reply(1));
  EXPECT_EQ(kv.keys(), 2U);
  EXPECT_EQ(wire(req(QueryType::kQueuePush, {"/q1"}, {"x"})), "");
  EXPECT_EQ(wire(req(QueryType::kQueuePush, {"/q2"}, {"x"})), "");
  EXPECT_EQ(kv.queues(), 2U);
  EXPECT_EQ(wire(req(QueryType::kQueuePop, {"/q1"})), encode_queue_pop_reply(1, "x"));
  EXPECT_EQ(kv.queues(), 1U);
}

TEST(KvStatePrintable, EscapesAndShortens) {
  EXPECT_EQ(printable(std::string("a\\b\x01", 4)), "'a\\x5Cb\\x01'");
  EXPECT_EQ(printable(std::string(100, 'k')), "'" + std::string(80, 'k') + "...'");
}

TEST(KvStateReply, InlineOrShared) {
  const Reply small = Reply::copy("0123456789abcdef");
  EXPECT_FALSE(small.shared);
  EXPECT_EQ(small.view(), "0123456789abcdef");
  const Reply big = Reply::take(std::string(17, 'x'));
  ASSERT_TRUE(big.shared);
  EXPECT_EQ(big.view(), std::string(17, 'x'));
}

}  // namespace
}  // namespace tzrun::store::detail
