// Unit tests of the pure c10d state machine (src/rendezvous/dynamic_ops.hpp): the decision
// tables of torchrun's join/exit/close/keep-alive ops, the state updates, dead-node pruning,
// wake-up timing and the watcher's membership view.
#include "dynamic_ops.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr double kWall = 1'000'000.0;  // wall-clock seconds of "now"

class DynamicOpsTest : public ::testing::Test {
 protected:
  DynamicOptions Opts(int min_nodes, int max_nodes) const {
    DynamicOptions o;
    o.run_id = "job";
    o.min_nodes = min_nodes;
    o.max_nodes = max_nodes;
    o.keep_alive_interval = seconds(5);
    o.keep_alive_max_attempt = 3;
    o.last_call_timeout = seconds(30);
    o.poll_interval = seconds(1);
    return o;
  }
  Action Join(const RendezvousState& s, const NodeDesc& me, const DynamicOptions& o,
              SteadyTime deadline) const {
    return Decide(Op::kJoin, s, me, o, now_, deadline, kWall);
  }

  const SteadyTime now_ = std::chrono::steady_clock::now();
  const SteadyTime later_ = now_ + seconds(60);
  const NodeDesc a_{"a", 1, 0};
  const NodeDesc b_{"b", 2, 0};
  const NodeDesc c_{"c", 3, 0};
};

TEST_F(DynamicOpsTest, ExitLeavesTheRoundOnlyAsParticipantAndBeforeTheDeadline) {
  const auto o = Opts(1, 2);
  RendezvousState s;
  EXPECT_EQ(Decide(Op::kExit, s, a_, o, now_, later_, kWall), Action::kFinish);
  s.participants[a_] = {0, 0};
  EXPECT_EQ(Decide(Op::kExit, s, a_, o, now_, later_, kWall), Action::kRemoveFromParticipants);
  EXPECT_EQ(Decide(Op::kExit, s, a_, o, later_, now_, kWall), Action::kErrorTimeout);
}

TEST_F(DynamicOpsTest, CloseMarksClosedOnceAndTimesOut) {
  const auto o = Opts(1, 2);
  RendezvousState s;
  EXPECT_EQ(Decide(Op::kClose, s, a_, o, now_, later_, kWall), Action::kMarkClosed);
  EXPECT_EQ(Decide(Op::kClose, s, a_, o, later_, now_, kWall), Action::kErrorTimeout);
  EXPECT_FALSE(Apply(Action::kMarkClosed, s, a_, o, 0, 7, kWall));
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.closed_exit_code, 7);
  EXPECT_EQ(s.closed_by, "a_1_0");
  EXPECT_EQ(Decide(Op::kClose, s, a_, o, now_, later_, kWall), Action::kFinish);
  EXPECT_EQ(ClosedMessage(s, o),
            "the rendezvous 'job' was closed by node 'a_1_0' after its workers failed (exit code "
            "7); the job has ended, start a new one (with a new --rdzv-id) to run again");
  // Under store_type=file the closed state stays in the file: removing it also starts afresh.
  auto file = o;
  file.store_file = "/tmp/x.store";
  EXPECT_EQ(ClosedMessage(s, file),
            ClosedMessage(s, o) +
                " (--rdzv-conf store_type=file keeps the ended job's state in '/tmp/x.store': "
                "remove that file, or pass another --rdzv-endpoint file, to run again under the "
                "same --rdzv-id)");
  file.store_file = "";  // a temporary file: never shared by a second run, no hint
  EXPECT_EQ(ClosedMessage(s, file), ClosedMessage(s, o));
}

TEST_F(DynamicOpsTest, KeepAliveIsDueAfterOneInterval) {
  const auto o = Opts(1, 2);
  RendezvousState s;
  EXPECT_FALSE(KeepAliveDue(s, a_, o, kWall));
  s.last_heartbeats[a_] = kWall - 4.9;
  EXPECT_FALSE(KeepAliveDue(s, a_, o, kWall));
  EXPECT_EQ(Decide(Op::kKeepAlive, s, a_, o, now_, later_, kWall), Action::kFinish);
  s.last_heartbeats[a_] = kWall - 5.0;
  EXPECT_TRUE(KeepAliveDue(s, a_, o, kWall));
  EXPECT_EQ(Decide(Op::kKeepAlive, s, a_, o, now_, later_, kWall), Action::kKeepAlive);
  EXPECT_EQ(Decide(Op::kKeepAlive, s, a_, o, later_, now_, kWall), Action::kErrorTimeout);
  Apply(Action::kKeepAlive, s, a_, o, 0, std::nullopt, kWall);
  EXPECT_EQ(s.last_heartbeats.at(a_), kWall);
}

TEST_F(DynamicOpsTest, JoinFillsTheRoundThenCompletesAtMaxNodes) {
  const auto o = Opts(1, 2);
  RendezvousState s;
  ASSERT_EQ(Join(s, b_, o, later_), Action::kAddToParticipants);
  Apply(Action::kAddToParticipants, s, b_, o, 3, std::nullopt, kWall);
  // min_nodes reached: the last call starts.
  ASSERT_TRUE(s.deadline.has_value());
  EXPECT_EQ(*s.deadline, kWall + 30.0);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.participants.at(b_).restart_count, 3);
  EXPECT_EQ(s.last_heartbeats.at(b_), kWall);
  // Waiting for more nodes before the last call ends.
  EXPECT_EQ(Join(s, b_, o, later_), Action::kSync);
  Apply(Action::kAddToParticipants, s, a_, o, 0, std::nullopt, kWall);
  EXPECT_TRUE(s.complete);
  EXPECT_FALSE(s.deadline.has_value());
  EXPECT_EQ(s.participants.at(a_).rank, 0);  // node order, not join order
  EXPECT_EQ(s.participants.at(b_).rank, 1);
  EXPECT_EQ(Join(s, a_, o, later_), Action::kFinish);
}

TEST_F(DynamicOpsTest, JoinCompletesAfterTheLastCall) {
  const auto o = Opts(1, 3);
  RendezvousState s;
  Apply(Action::kAddToParticipants, s, a_, o, 0, std::nullopt, kWall);
  s.deadline = kWall - 0.1;
  EXPECT_EQ(Join(s, a_, o, later_), Action::kMarkComplete);
}

TEST_F(DynamicOpsTest, LateNodesWaitOrAreRedundant) {
  auto o = Opts(1, 2);
  RendezvousState s;
  Apply(Action::kAddToParticipants, s, a_, o, 0, std::nullopt, kWall);
  MarkComplete(s);
  EXPECT_EQ(Join(s, b_, o, later_), Action::kAddToWaitList);
  Apply(Action::kAddToWaitList, s, b_, o, 0, std::nullopt, kWall);
  EXPECT_TRUE(s.wait_list.contains(b_));
  EXPECT_EQ(Join(s, b_, o, later_), Action::kSync);

  o = Opts(1, 1);
  EXPECT_EQ(Join(s, c_, o, later_), Action::kAddToRedundancyList);
  Apply(Action::kAddToRedundancyList, s, c_, o, 0, std::nullopt, kWall);
  EXPECT_EQ(Join(s, c_, o, later_), Action::kSync);  // the round is still full
  // A redundant node rejoins (with a fresh deadline) once the round has room.
  o = Opts(1, 2);
  EXPECT_EQ(Join(s, c_, o, later_), Action::kRemoveFromRedundancyList);
  EXPECT_TRUE(Apply(Action::kRemoveFromRedundancyList, s, c_, o, 0, std::nullopt, kWall));
  EXPECT_FALSE(s.redundancy_list.contains(c_));
}

TEST_F(DynamicOpsTest, JoinOnAClosedRendezvous) {
  const auto o = Opts(1, 1);
  RendezvousState s;
  s.closed = true;
  EXPECT_EQ(Join(s, a_, o, later_), Action::kErrorClosed);
  s.redundancy_list.insert(a_);
  EXPECT_EQ(Join(s, a_, o, later_), Action::kExitRedundant);
}

TEST_F(DynamicOpsTest, JoinPastTheDeadlineLeavesWithinFiveSecondsThenTimesOut) {
  const auto o = Opts(2, 2);
  RendezvousState s;
  Apply(Action::kAddToParticipants, s, a_, o, 0, std::nullopt, kWall);
  const SteadyTime passed = now_ - seconds(1);
  EXPECT_EQ(Join(s, a_, o, passed), Action::kRemoveFromParticipants);
  EXPECT_EQ(Join(s, a_, o, now_ - seconds(6)), Action::kErrorTimeout);
  Apply(Action::kRemoveFromParticipants, s, a_, o, 0, std::nullopt, kWall);
  EXPECT_TRUE(s.participants.empty());
  EXPECT_FALSE(s.last_heartbeats.contains(a_));
  s.wait_list.insert(b_);
  EXPECT_EQ(Join(s, b_, o, passed), Action::kRemoveFromWaitList);
  EXPECT_EQ(Join(s, c_, o, passed), Action::kErrorTimeout);
}

TEST_F(DynamicOpsTest, TimeoutMessages) {
  auto o = Opts(2, 4);
  o.join_timeout = seconds(600);
  RendezvousState s;
  s.participants[a_] = {0, 0};
  s.wait_list.insert(b_);
  EXPECT_EQ(Describe(RendezvousState{}), "0 participant(s)");
  EXPECT_EQ(Describe(s), "1 participant(s) [a_1_0], 1 waiting");
  RendezvousState two = s;
  two.participants[c_] = {1, 0};
  two.wait_list.clear();
  EXPECT_EQ(Describe(two), "2 participant(s) [a_1_0, c_3_0]");
  const std::string join_text = TimeoutMessage(Op::kJoin, s, a_, o);
  EXPECT_NE(join_text.find("did not complete within join_timeout"), std::string::npos);
  EXPECT_NE(join_text.find("1 participant(s) [a_1_0], 1 waiting, need 2..4 node(s)"),
            std::string::npos);
  // This node already left the lists when the message is made: it still counts as joined.
  EXPECT_NE(TimeoutMessage(Op::kJoin, RendezvousState{}, c_, o).find("1 participant(s) [c_3_0]"),
            std::string::npos);
  EXPECT_EQ(TimeoutMessage(Op::kExit, s, a_, o),
            "could not leave the previous round of the rendezvous 'job' in time");
  EXPECT_NE(TimeoutMessage(Op::kKeepAlive, s, a_, o).find("keep-alive heartbeat of node 'a_1_0'"),
            std::string::npos);
}

TEST_F(DynamicOpsTest, DeadNodesAreRemovedAndAnEmptyCompleteRoundAdvances) {
  const auto o = Opts(1, 2);
  RendezvousState s;
  Apply(Action::kAddToParticipants, s, a_, o, 0, std::nullopt, kWall - 20);
  MarkComplete(s);
  s.wait_list.insert(b_);
  s.last_heartbeats[b_] = kWall - 1;
  const auto dead = RemoveDeadNodes(s, o, kWall);  // expiry: 3 x 5 s
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead.front(), a_);
  EXPECT_TRUE(s.participants.empty());
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.round, 1);
  EXPECT_TRUE(s.wait_list.contains(b_));
  EXPECT_TRUE(RemoveDeadNodes(s, o, kWall).empty());
}

TEST_F(DynamicOpsTest, LosingParticipantsBelowMinNodesDropsTheLastCall) {
  const auto o = Opts(2, 3);
  RendezvousState s;
  s.participants[a_] = {0, 0};
  s.deadline = kWall + 10;
  RemoveParticipantEpilogue(s, o);
  EXPECT_FALSE(s.deadline.has_value());
  EXPECT_EQ(s.round, 0);
}

TEST_F(DynamicOpsTest, NextWakeAndReadGap) {
  auto o = Opts(1, 2);
  RendezvousState s;
  EXPECT_EQ(NextWake(s, a_, o, seconds(60), kWall), seconds(1));  // poll_interval
  EXPECT_EQ(NextWake(s, a_, o, milliseconds(100), kWall), milliseconds(105));
  EXPECT_EQ(NextWake(s, a_, o, milliseconds(-50), kWall), milliseconds(1));
  s.deadline = kWall + 0.25;
  EXPECT_EQ(NextWake(s, a_, o, seconds(60), kWall), milliseconds(255));
  s.deadline.reset();
  s.last_heartbeats[a_] = kWall - 4.5;  // my next heartbeat in 0.5 s
  EXPECT_EQ(NextWake(s, a_, o, seconds(60), kWall), milliseconds(505));
  s.last_heartbeats[a_] = kWall;
  s.last_heartbeats[b_] = kWall - 14.75;  // b expires in 0.25 s
  EXPECT_EQ(NextWake(s, a_, o, seconds(60), kWall), milliseconds(255));

  EXPECT_EQ(MinReadGap(s, o), milliseconds(0));
  s.participants[a_] = {0, 0};
  s.wait_list.insert(b_);
  EXPECT_EQ(MinReadGap(s, o), milliseconds(10));
  o.poll_interval = milliseconds(7);
  EXPECT_EQ(MinReadGap(s, o), milliseconds(7));
}

TEST_F(DynamicOpsTest, MembershipChanges) {
  RendezvousState s;
  s.round = 2;
  s.participants[a_] = {0, 0};
  s.participants[b_] = {1, 0};
  const std::set<NodeDesc> mine = {a_, b_};
  EXPECT_FALSE(DetectMembershipChange(s, a_, 2, mine, false).has_value());

  s.wait_list.insert(c_);
  auto up = DetectMembershipChange(s, a_, 2, mine, false);
  ASSERT_TRUE(up.has_value());
  EXPECT_TRUE(up->scale_up);
  EXPECT_EQ(up->why, "detected 1 new node(s) waiting to join");
  EXPECT_FALSE(DetectMembershipChange(s, a_, 2, mine, true).has_value());

  RendezvousState empty = s;
  empty.participants = {{a_, {0, 0}}};
  auto both = DetectMembershipChange(empty, a_, 2, {a_, b_, c_}, true);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->why, "node(s) b_2_0, c_3_0 left round 2 (stopped, or missed their heartbeats)");

  s.participants.erase(b_);
  auto gone = DetectMembershipChange(s, a_, 2, mine, true);
  ASSERT_TRUE(gone.has_value());
  EXPECT_FALSE(gone->scale_up);
  EXPECT_EQ(gone->why, "node(s) b_2_0 left round 2 (stopped, or missed their heartbeats)");

  auto dropped = DetectMembershipChange(s, b_, 2, mine, false);
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->why,
            "this node is no longer a participant of round 2 (its heartbeats were late?)");

  s.round = 3;
  auto next = DetectMembershipChange(s, a_, 2, mine, false);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->why, "round 2 of the rendezvous ended (round 3 is forming)");
}

TEST_F(DynamicOpsTest, ClosedEventDetail) {
  const auto o = Opts(1, 1);
  RendezvousState s;
  s.closed = true;
  s.closed_by = "b_2_0";
  EXPECT_EQ(ClosedEventDetail(s, o),
            "the rendezvous 'job' was closed by node 'b_2_0': stopping this node too");
  s.closed_exit_code = 3;
  EXPECT_EQ(ClosedEventDetail(s, o),
            "the rendezvous 'job' was closed by node 'b_2_0' after its workers failed (exit code "
            "3): stopping this node too");
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
