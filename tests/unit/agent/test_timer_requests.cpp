// Unit tests of the file timer's pure core (src/agent/timer_requests.hpp) against the
// behaviour of torchrun 2.11's FileTimerServer (torch/distributed/elastic/timer/
// file_based_local_timer.py): the JSON line FileTimerRequest.to_json writes, acquire /
// release, expiry at <= now, the first signalled timer in expiration order, clearing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "timer_requests.hpp"

namespace tzrun::agent {
namespace {

TimerRequest Req(pid_t pid, std::string scope, double exp, int sig) {
  return TimerRequest{pid, std::move(scope), exp, sig};
}

TEST(TimerRequests, ParsesTheLineFileTimerClientWrites) {
  // json.dumps({"version": 1, "pid": ..., "scope_id": ..., "expiration_time": ..., "signal": 9})
  std::string why;
  auto r = ParseTimerRequest(
      R"({"version": 1, "pid": 4242, "scope_id": "step", "expiration_time": 1733130000.25, )"
      R"("signal": 9})",
      &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(*r, Req(4242, "step", 1733130000.25, 9));
  // release: expiration_time -1 (an int in the JSON), signal 0
  r = ParseTimerRequest(R"({"version": 1, "pid": 7, "scope_id": "s", "expiration_time": -1, )"
                        R"("signal": 0})",
                        &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(*r, Req(7, "s", -1, 0));
}

TEST(TimerRequests, RefusesMalformedLinesSayingWhy) {
  std::string why;
  EXPECT_FALSE(ParseTimerRequest("not json", &why));
  EXPECT_EQ(why, "not a JSON object");
  EXPECT_FALSE(ParseTimerRequest(R"({"pid": 1, "scope_id": "s", "expiration_time": 1})", &why));
  EXPECT_NE(why.find("\"signal\""), std::string::npos) << why;
  EXPECT_FALSE(ParseTimerRequest(
      R"({"pid": "1", "scope_id": "s", "expiration_time": 1, "signal": 9})", &why));
  EXPECT_NE(why.find("\"pid\""), std::string::npos) << why;
  EXPECT_FALSE(
      ParseTimerRequest(R"({"pid": 1, "scope_id": 3, "expiration_time": 1, "signal": 9})", &why));
  EXPECT_NE(why.find("\"scope_id\""), std::string::npos) << why;
  EXPECT_FALSE(ParseTimerRequest(
      R"({"pid": 1, "scope_id": "s", "expiration_time": "x", "signal": 9})", &why));
  EXPECT_NE(why.find("\"expiration_time\""), std::string::npos) << why;
  EXPECT_FALSE(
      ParseTimerRequest(R"({"pid": 0, "scope_id": "s", "expiration_time": 1, "signal": 9})", &why));
}

TEST(TimerTable, AcquireReplacesAndNegativeExpirationReleases) {
  TimerTable t;
  t.Apply({Req(1, "a", 10, 9), Req(1, "b", 20, 9), Req(1, "a", 30, 9)});
  EXPECT_EQ(t.Size(), 2U);
  EXPECT_EQ(t.NextExpiry(), 20);
  t.Apply({Req(1, "b", -1, 0), Req(2, "zz", -1, 0)});  // releasing an unknown timer: no-op
  EXPECT_EQ(t.Size(), 1U);
  EXPECT_EQ(t.NextExpiry(), 30);
  EXPECT_TRUE(t.Expired(29.9).empty());
  ASSERT_EQ(t.Expired(30).size(), 1U);  // expiration_time <= deadline
}

TEST(TimerTable, PicksTheEarliestExpiredTimerWithASignal) {
  TimerTable t;
  // pid 5: the earliest expired timer has no signal, the next asks for SIGTERM (15), a later
  // one SIGKILL: upstream sorts by expiration and takes the first signal > 0.
  t.Apply({Req(5, "late", 8, 9), Req(5, "nosig", 2, 0), Req(5, "term", 4, 15),
           Req(5, "future", 100, 9), Req(6, "quiet", 1, 0)});
  auto e = t.Expired(10);
  ASSERT_EQ(e.size(), 2U);
  EXPECT_EQ(e[0].pid, 5);
  EXPECT_EQ(e[0].signal, 15);
  EXPECT_EQ(e[0].scopes, (std::vector<std::string>{"nosig", "term", "late"}));
  EXPECT_EQ(e[1].pid, 6);
  EXPECT_EQ(e[1].signal, 0);  // expired without a signal: not killed
}

TEST(TimerTable, ClearDropsReapedPidsAndDeadOnes) {
  TimerTable t;
  t.Apply({Req(5, "a", 1, 9), Req(5, "future", 100, 9), Req(6, "b", 100, 9), Req(7, "c", 100, 9)});
  t.Clear(std::set<pid_t>{5}, [](pid_t p) { return p != 7; });
  EXPECT_EQ(t.Size(), 1U);  // only pid 6's timer is left
  EXPECT_EQ(t.NextExpiry(), 100);
  t.Reset();
  EXPECT_FALSE(t.NextExpiry());
}

}  // namespace
}  // namespace tzrun::agent
