// KvState without sockets: every opcode's reply bytes, wake-ups, CANCEL_WAIT, COMPARE_SET's
// table, queue order, counters, and the two libuv bugs that are not copied.
#include "kv_state.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

namespace tzrun::store::detail {
namespace {

using tzrun::store::testing::Req;

// A KvState with helpers that apply one request and return its Effects.
class KvStateTest : public ::testing::Test {
 protected:
  Effects Run(KvClient& from, Request r) {
    Effects out;
    kv_.Apply(from, r, out);
    return out;
  }
  Effects Run(Request r) { return Run(alice_, std::move(r)); }

  // The replies of one request, concatenated in wire form.
  std::string Wire(KvClient& from, Request r) {
    const Effects out = Run(from, std::move(r));
    EXPECT_TRUE(out.error.empty()) << out.error;
    std::string bytes;
    for (const auto& reply : out.replies) bytes += reply.View();
    return bytes;
  }
  std::string Wire(Request r) { return Wire(alice_, std::move(r)); }

  void Set(const std::string& key, const std::string& value) {
    EXPECT_EQ(Wire(Req(QueryType::kSet, {key}, {value})), "");
  }

  KvState kv_;
  KvClient alice_;
  KvClient bob_;
  KvClient carol_;
};

const std::string kStop = EncodeWaitReply(WaitResponseType::kStopWaiting);
const std::string kCanceled = EncodeWaitReply(WaitResponseType::kWaitCanceled);

TEST_F(KvStateTest, SetThenGetRepliesTheValue) {
  Set("/k", std::string("a\0b", 3));
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/k"})), EncodeBytesReply(std::string("a\0b", 3)));
  Set("/k", "second");
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/k"})), EncodeBytesReply("second"));
}

TEST_F(KvStateTest, GetOfAMissingKeyRepliesEmpty) {
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/missing"})), EncodeBytesReply(""));
  EXPECT_EQ(kv_.Keys(), 0U);
}

TEST_F(KvStateTest, GetSharesTheStoredBufferAndSetDoesNotRewriteIt) {
  Set("/k", "v1");
  Effects got = Run(Req(QueryType::kGet, {"/k"}));
  ASSERT_EQ(got.replies.size(), 1U);
  ASSERT_TRUE(got.replies[0].shared);
  Set("/k", "v2");  // a queued reply still holds the old buffer: it must stay intact
  EXPECT_EQ(got.replies[0].View(), EncodeBytesReply("v1"));
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/k"})), EncodeBytesReply("v2"));
}

TEST_F(KvStateTest, CompareSetFollowsUpstreamTable) {
  // missing key, empty expected: stores desired
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/a"}, {"", "d"})), EncodeBytesReply("d"));
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/a"})), EncodeBytesReply("d"));
  // missing key, non-empty expected: nothing stored, replies expected ("lying" row)
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/b"}, {"exp", "d"})), EncodeBytesReply("exp"));
  EXPECT_EQ(Wire(Req(QueryType::kCheck, {"/b"})), EncodeCheckReply(CheckResponseType::kNotReady));
  // equal: replaced
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/a"}, {"d", "e"})), EncodeBytesReply("e"));
  // different: unchanged, replies current value
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/a"}, {"zzz", "f"})), EncodeBytesReply("e"));
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/a"})), EncodeBytesReply("e"));
  // present key holding "" with empty expected: equal, replaced
  Set("/empty", "");
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/empty"}, {"", "x"})), EncodeBytesReply("x"));
  // a long "lying" reply (over the inline size) is still exact
  const std::string long_expected(100, 'e');
  EXPECT_EQ(Wire(Req(QueryType::kCompareSet, {"/c"}, {long_expected, "d"})),
            EncodeBytesReply(long_expected));
}

TEST_F(KvStateTest, CompareSetWakesWaitersOnlyWhenItStored) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/a"})), "");
  ASSERT_EQ(kv_.Waiters(), 1U);
  // libuv wakes here although nothing was stored (bug not copied)
  EXPECT_TRUE(Run(Req(QueryType::kCompareSet, {"/a"}, {"exp", "d"})).woken.empty());
  EXPECT_EQ(kv_.Waiters(), 1U);
  const Effects stored = Run(Req(QueryType::kCompareSet, {"/a"}, {"", "d"}));
  EXPECT_EQ(stored.woken, std::vector<KvClient*>{&bob_});
  EXPECT_EQ(kv_.Waiters(), 0U);
  // a mismatching COMPARE_SET on a present key does not wake either
  EXPECT_EQ(Wire(carol_, Req(QueryType::kBarrier, {"/bar"}, {}, 2)), "");
  EXPECT_TRUE(Run(Req(QueryType::kCompareSet, {"/bar"}, {"no", "x"})).woken.empty());
}

TEST_F(KvStateTest, AddCountsAndRejectsNonNumericValues) {
  EXPECT_EQ(Wire(Req(QueryType::kAdd, {"/n"}, {}, 5)), EncodeI64Reply(5));
  EXPECT_EQ(Wire(Req(QueryType::kAdd, {"/n"}, {}, -7)), EncodeI64Reply(-2));
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/n"})), EncodeBytesReply("-2"));
  Set("/s", "abc");
  const Effects bad = Run(Req(QueryType::kAdd, {"/s"}, {}, 1));
  EXPECT_TRUE(bad.replies.empty());
  EXPECT_EQ(bad.error,
            "ADD on key '/s' whose value 'abc' is not a decimal integer (do not mix set() and "
            "add() on one key)");
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/s"})), EncodeBytesReply("abc"));
}

TEST_F(KvStateTest, AddOverflowIsAProtocolError) {
  EXPECT_EQ(Wire(Req(QueryType::kAdd, {"/n"}, {}, INT64_MAX)), EncodeI64Reply(INT64_MAX));
  const Effects bad = Run(Req(QueryType::kAdd, {"/n"}, {}, 1));
  EXPECT_NE(bad.error.find("overflows int64 (9223372036854775807 + 1)"), std::string::npos);
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/n"})), EncodeBytesReply("9223372036854775807"));
}

TEST_F(KvStateTest, CheckCountsKeysAndNonEmptyQueues) {
  EXPECT_EQ(Wire(Req(QueryType::kCheck, {"/a", "/q"})),
            EncodeCheckReply(CheckResponseType::kNotReady));
  Set("/a", "1");
  EXPECT_EQ(Wire(Req(QueryType::kQueuePush, {"/q"}, {"x"})), "");
  EXPECT_EQ(Wire(Req(QueryType::kCheck, {"/a", "/q"})),
            EncodeCheckReply(CheckResponseType::kReady));
  EXPECT_EQ(Wire(Req(QueryType::kCheck, {})), EncodeCheckReply(CheckResponseType::kReady));
}

TEST_F(KvStateTest, WaitOnPresentKeysRepliesAtOnce) {
  Set("/a", "1");
  EXPECT_EQ(Wire(Req(QueryType::kWait, {"/a"})), kStop);
  EXPECT_EQ(Wire(Req(QueryType::kWait, {})), kStop);
  EXPECT_EQ(kv_.Waiters(), 0U);
}

TEST_F(KvStateTest, WaitIsReleasedWhenEveryMissingKeyArrives) {
  Set("/a", "1");
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/a", "/b", "/c"})), "");
  EXPECT_EQ(kv_.Waiters(), 1U);
  EXPECT_TRUE(Run(Req(QueryType::kSet, {"/b"}, {"x"})).woken.empty());
  const Effects last = Run(Req(QueryType::kAdd, {"/c"}, {}, 1));
  EXPECT_EQ(last.replies.size(), 1U);  // the ADD's own reply, then the wake-up
  EXPECT_EQ(last.woken, std::vector<KvClient*>{&bob_});
  EXPECT_EQ(kv_.Waiters(), 0U);
  EXPECT_TRUE(bob_.waits.empty());
}

TEST_F(KvStateTest, EveryWritingOpcodeReleasesWaiters) {
  const std::vector<Request> writers = {
      Req(QueryType::kSet, {"/k"}, {"v"}),
      Req(QueryType::kAdd, {"/k"}, {}, 1),
      Req(QueryType::kAppend, {"/k"}, {"v"}),
      Req(QueryType::kMultiSet, {"/x", "/k"}, {"1", "2"}),
      Req(QueryType::kCompareSet, {"/k"}, {"", "v"}),
  };
  for (const auto& w : writers) {
    KvState fresh;
    KvClient waiter;
    Effects out;
    Request wait = Req(QueryType::kWait, {"/k"});
    fresh.Apply(waiter, wait, out);
    Request write = w;
    fresh.Apply(alice_, write, out);
    EXPECT_EQ(out.woken, std::vector<KvClient*>{&waiter}) << QueryName(w.type);
    EXPECT_EQ(fresh.Waiters(), 0U) << QueryName(w.type);
  }
}

TEST_F(KvStateTest, DeleteDoesNotWake) {
  Set("/k", "v");
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/other"})), "");
  const Effects del = Run(Req(QueryType::kDeleteKey, {"/other"}));
  EXPECT_TRUE(del.woken.empty());
  EXPECT_EQ(Wire(Req(QueryType::kDeleteKey, {"/k"})), EncodeI64Reply(1));
  EXPECT_EQ(Wire(Req(QueryType::kDeleteKey, {"/k"})), EncodeI64Reply(0));
  EXPECT_EQ(kv_.Keys(), 0U);
}

TEST_F(KvStateTest, CancelWaitDropsOnlyTheCallersWaits) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/k"})), "");
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/k", "/j"})), "");
  EXPECT_EQ(kv_.Waiters(), 2U);
  EXPECT_EQ(Wire(bob_, Req(QueryType::kCancelWait)), kCanceled);
  EXPECT_EQ(kv_.Waiters(), 1U);
  EXPECT_TRUE(Run(Req(QueryType::kSet, {"/k"}, {"v"})).woken.empty());
  EXPECT_EQ(Run(Req(QueryType::kSet, {"/j"}, {"v"})).woken, std::vector<KvClient*>{&carol_});
  // CANCEL_WAIT with nothing pending still replies
  EXPECT_EQ(Wire(bob_, Req(QueryType::kCancelWait)), kCanceled);
}

TEST_F(KvStateTest, DropClientForgetsItsRegistrations) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/k"})), "");
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/k", "/j"})), "");
  EXPECT_EQ(kv_.Waiters(), 2U);
  kv_.DropClient(bob_);
  EXPECT_EQ(kv_.Waiters(), 0U);
  EXPECT_TRUE(Run(Req(QueryType::kMultiSet, {"/k", "/j"}, {"1", "2"})).woken.empty());
}

// 100k ranks waiting on one key that disconnect one by one must not rescan the key's list
// each time: dropped entries are compacted in bulk, and the survivors keep their order.
TEST_F(KvStateTest, DisconnectingWaitersAreCompactedInBulkAndKeepOrder) {
  std::vector<KvClient> clients(100);
  for (auto& c : clients) EXPECT_EQ(Wire(c, Req(QueryType::kWait, {"/k"})), "");
  std::vector<KvClient*> survivors;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    if (i % 3 == 0) {
      survivors.push_back(&clients[i]);
    } else {
      kv_.DropClient(clients[i]);
      EXPECT_LE(kv_.WaitEntries(), 2 * kv_.Waiters() + 1);
    }
  }
  EXPECT_EQ(kv_.Waiters(), survivors.size());
  EXPECT_EQ(Run(Req(QueryType::kSet, {"/k"}, {"v"})).woken, survivors);
  EXPECT_EQ(kv_.WaitEntries(), 0U);
}

TEST_F(KvStateTest, RepeatedWaitAndCancelDoesNotPileUpEntries) {
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/k"})), "");
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/k", "/j"})), "");
    EXPECT_EQ(Wire(bob_, Req(QueryType::kCancelWait)), kCanceled);
  }
  EXPECT_LE(kv_.WaitEntries(), 4U);
  EXPECT_EQ(Run(Req(QueryType::kSet, {"/k"}, {"v"})).woken, std::vector<KvClient*>{&carol_});
  EXPECT_TRUE(Run(Req(QueryType::kSet, {"/j"}, {"v"})).woken.empty());
  EXPECT_EQ(kv_.WaitEntries(), 0U);
}

TEST_F(KvStateTest, QueuePushSkipsDroppedWaiters) {
  KvClient dave;
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(Wire(dave, Req(QueryType::kWait, {"/q"})), "");
  kv_.DropClient(bob_);
  EXPECT_EQ(Run(Req(QueryType::kQueuePush, {"/q"}, {"1"})).woken, std::vector<KvClient*>{&carol_});
  EXPECT_EQ(Run(Req(QueryType::kQueuePush, {"/q"}, {"2"})).woken, std::vector<KvClient*>{&dave});
  EXPECT_EQ(kv_.Waiters(), 0U);
  EXPECT_EQ(kv_.WaitEntries(), 0U);
}

// bob's registration on /k1 was consumed by a SET; dropping him later must not count against
// the new list another waiter started on /k1.
TEST_F(KvStateTest, DropAfterAPartialWakeLeavesTheKeysNewListAlone) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/k1", "/k2"})), "");
  EXPECT_TRUE(Run(Req(QueryType::kSet, {"/k1"}, {"v"})).woken.empty());
  EXPECT_TRUE(Run(Req(QueryType::kDeleteKey, {"/k1"})).woken.empty());
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/k1", "/k3"})), "");
  kv_.DropClient(bob_);
  EXPECT_EQ(kv_.WaitEntries(), 2U);  // carol's two
  EXPECT_TRUE(Run(Req(QueryType::kSet, {"/k1"}, {"v"})).woken.empty());
  EXPECT_EQ(Run(Req(QueryType::kSet, {"/k3"}, {"v"})).woken, std::vector<KvClient*>{&carol_});
}

TEST_F(KvStateTest, GetNumKeysAndListKeysCountKvNotQueues) {
  Set("/a", "1");
  Set("/b", "2");
  EXPECT_EQ(Wire(Req(QueryType::kQueuePush, {"/q"}, {"x"})), "");
  EXPECT_EQ(Wire(Req(QueryType::kGetNumKeys)), EncodeI64Reply(2));
  const std::string listed = Wire(Req(QueryType::kListKeys));
  EXPECT_TRUE(listed == EncodeListKeysReply({"/a", "/b"}) ||
              listed == EncodeListKeysReply({"/b", "/a"}));
  EXPECT_EQ(kv_.Keys(), 2U);
  EXPECT_EQ(kv_.Queues(), 1U);
}

TEST_F(KvStateTest, AppendCreatesAndExtends) {
  EXPECT_EQ(Wire(Req(QueryType::kAppend, {"/k"}, {"ab"})), "");
  Effects held = Run(Req(QueryType::kGet, {"/k"}));  // shares the buffer: append copies
  EXPECT_EQ(Wire(Req(QueryType::kAppend, {"/k"}, {"cd"})), "");
  EXPECT_EQ(held.replies[0].View(), EncodeBytesReply("ab"));
  held.replies.clear();
  EXPECT_EQ(Wire(Req(QueryType::kAppend, {"/k"}, {"ef"})), "");  // in place
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/k"})), EncodeBytesReply("abcdef"));
}

TEST_F(KvStateTest, MultiGetAndMultiSet) {
  EXPECT_EQ(Wire(Req(QueryType::kMultiSet, {"/a", "/b", "/a"}, {"1", "2", "3"})), "");
  EXPECT_EQ(Wire(Req(QueryType::kMultiGet, {"/a", "/missing", "/b"})),
            EncodeBytesReply("3") + EncodeBytesReply("") + EncodeBytesReply("2"));
  EXPECT_EQ(Wire(Req(QueryType::kMultiGet, {})), "");
}

TEST_F(KvStateTest, PingEchoesTheNonce) {
  EXPECT_EQ(Wire(Req(QueryType::kPing, {}, {}, 0xDEADBEEF)), EncodeU32Reply(0xDEADBEEF));
}

TEST_F(KvStateTest, ValidateDoesNothing) {
  const Effects out = Run(Req(QueryType::kValidate, {}, {}, kValidationMagic));
  EXPECT_TRUE(out.replies.empty());
  EXPECT_TRUE(out.woken.empty());
  EXPECT_TRUE(out.error.empty());
}

TEST_F(KvStateTest, QueueIsFirstInFirstOut) {
  for (const char* item : {"one", "two", "three"}) {
    EXPECT_EQ(Wire(Req(QueryType::kQueuePush, {"/q"}, {item})), "");
  }
  EXPECT_EQ(Wire(Req(QueryType::kQueueLen, {"/q"})), EncodeI64Reply(3));
  EXPECT_EQ(Wire(Req(QueryType::kQueuePop, {"/q"})), EncodeQueuePopReply(3, "one"));
  EXPECT_EQ(Wire(Req(QueryType::kQueuePop, {"/q"})), EncodeQueuePopReply(2, "two"));
  EXPECT_EQ(Wire(Req(QueryType::kQueuePop, {"/q"})), EncodeQueuePopReply(1, "three"));
  EXPECT_EQ(Wire(Req(QueryType::kQueuePop, {"/q"})), EncodeI64Reply(0));
  EXPECT_EQ(Wire(Req(QueryType::kQueueLen, {"/q"})), EncodeI64Reply(0));
  EXPECT_EQ(kv_.Queues(), 0U);
}

TEST_F(KvStateTest, QueuePushWakesExactlyOneWaiterInArrivalOrder) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/q"})), "");
  EXPECT_EQ(Run(Req(QueryType::kQueuePush, {"/q"}, {"1"})).woken, std::vector<KvClient*>{&bob_});
  EXPECT_EQ(kv_.Waiters(), 1U);
  // libuv leaves bob's stale registration behind (counter underflow): here the second push
  // releases carol, not nobody.
  EXPECT_EQ(Run(Req(QueryType::kQueuePush, {"/q"}, {"2"})).woken, std::vector<KvClient*>{&carol_});
  EXPECT_EQ(kv_.Waiters(), 0U);
  EXPECT_TRUE(Run(Req(QueryType::kQueuePush, {"/q"}, {"3"})).woken.empty());
}

TEST_F(KvStateTest, QueuePushOnAMultiKeyWaitConsumesOneRegistration) {
  EXPECT_EQ(Wire(bob_, Req(QueryType::kWait, {"/q", "/k"})), "");
  EXPECT_EQ(Wire(carol_, Req(QueryType::kWait, {"/q"})), "");
  // bob's entry is consumed without completing him; carol completes
  EXPECT_EQ(Run(Req(QueryType::kQueuePush, {"/q"}, {"1"})).woken, std::vector<KvClient*>{&carol_});
  EXPECT_EQ(Run(Req(QueryType::kSet, {"/k"}, {"v"})).woken, std::vector<KvClient*>{&bob_});
}

TEST_F(KvStateTest, BarrierReleasesEveryoneAtWorldSize) {
  EXPECT_EQ(Wire(alice_, Req(QueryType::kBarrier, {"/bar"}, {}, 3)), "");
  EXPECT_EQ(Wire(bob_, Req(QueryType::kBarrier, {"/bar"}, {}, 3)), "");
  EXPECT_EQ(kv_.Waiters(), 2U);
  const Effects last = Run(carol_, Req(QueryType::kBarrier, {"/bar"}, {}, 3));
  ASSERT_EQ(last.replies.size(), 1U);
  EXPECT_EQ(last.replies[0].View(), kStop);
  EXPECT_EQ(last.woken, (std::vector<KvClient*>{&alice_, &bob_}));
  EXPECT_EQ(kv_.Waiters(), 0U);
  EXPECT_EQ(Wire(Req(QueryType::kGet, {"/bar"})), EncodeBytesReply("3"));
  // past world size: released at once
  EXPECT_EQ(Wire(Req(QueryType::kBarrier, {"/bar"}, {}, 3)), kStop);
}

TEST_F(KvStateTest, BarrierOnANonNumericKeyIsAProtocolError) {
  Set("/bar", "x");
  const Effects bad = Run(Req(QueryType::kBarrier, {"/bar"}, {}, 2));
  EXPECT_EQ(bad.error.rfind("BARRIER on key '/bar' whose value 'x'", 0), 0U) << bad.error;
  EXPECT_EQ(kv_.Waiters(), 0U);
}

TEST_F(KvStateTest, CountersFollowTheMapAndQueues) {
  Set("/a", "1");
  EXPECT_EQ(Wire(Req(QueryType::kAdd, {"/n"}, {}, 1)), EncodeI64Reply(1));
  EXPECT_EQ(kv_.Keys(), 2U);
  EXPECT_EQ(Wire(Req(QueryType::kQueuePush, {"/q1"}, {"x"})), "");
  EXPECT_EQ(Wire(Req(QueryType::kQueuePush, {"/q2"}, {"x"})), "");
  EXPECT_EQ(kv_.Queues(), 2U);
  EXPECT_EQ(Wire(Req(QueryType::kQueuePop, {"/q1"})), EncodeQueuePopReply(1, "x"));
  EXPECT_EQ(kv_.Queues(), 1U);
}

TEST(KvStatePrintable, EscapesAndShortens) {
  EXPECT_EQ(Printable(std::string("a\\b\x01", 4)), "'a\\x5Cb\\x01'");
  EXPECT_EQ(Printable(std::string(100, 'k')), "'" + std::string(80, 'k') + "...'");
}

TEST(KvStateReply, InlineOrShared) {
  const Reply small = Reply::Copy("0123456789abcdef");
  EXPECT_FALSE(small.shared);
  EXPECT_EQ(small.View(), "0123456789abcdef");
  const Reply big = Reply::Take(std::string(17, 'x'));
  ASSERT_TRUE(big.shared);
  EXPECT_EQ(big.View(), std::string(17, 'x'));
}

}  // namespace
}  // namespace tzrun::store::detail
