// Unit tests of include/tzrec/comm/agree.hpp at world size 1 (no launcher): the status encoding,
// the first failure, the rebuilt error classes. The multi-rank agreement runs in comm_check.cpp.
#include "tzrec/comm/agree.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/error.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

template <class E>
RankStatus Caught(const E& error, int rank) {
  try {
    throw error;
  } catch (...) {
    return StatusOf(std::current_exception(), rank);
  }
}

TEST(AgreeStatus, OkRoundTrips) {
  EXPECT_EQ(EncodeStatus(StatusOf(nullptr, 3)), "OK");
  EXPECT_TRUE(DecodeStatus("OK").ok);
}

TEST(AgreeStatus, EveryFieldRoundTripsWithAnyBytes) {
  const std::string message = "line 1\nline 2: 12:34 \0 tail";
  const RankStatus s = Caught(
      PlannerError(PlannerError::Kind::kStrictConstraints, "cat:0\n", 1234567890123, message), 2);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error_class, ErrorClass::kPlanner);
  const RankStatus d = DecodeStatus(EncodeStatus(s));
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.error_class, ErrorClass::kPlanner);
  EXPECT_EQ(d.code, ExitCode::kNoPlan);
  EXPECT_EQ(d.message, message);
  EXPECT_EQ(d.planner_kind, static_cast<int>(PlannerError::Kind::kStrictConstraints));
  EXPECT_EQ(d.planner_table, "cat:0\n");
  EXPECT_EQ(d.planner_missing_bytes, 1234567890123);
}

TEST(AgreeStatus, ClassesAreRecognised) {
  EXPECT_EQ(Caught(InputError("x"), 0).error_class, ErrorClass::kInput);
  EXPECT_EQ(Caught(ConfigError("x"), 0).error_class, ErrorClass::kConfig);
  EXPECT_EQ(Caught(CommError("x"), 0).error_class, ErrorClass::kComm);
  EXPECT_EQ(Caught(CheckpointError("x", ExitCode::kBadInput), 0).code, ExitCode::kBadInput);
  EXPECT_EQ(Caught(InternalError("x"), 0).error_class, ErrorClass::kInternal);
  EXPECT_EQ(Caught(Error("x", ExitCode::kNoPlan), 0).error_class, ErrorClass::kError);
  const RankStatus foreign = Caught(std::invalid_argument("bad split"), 1);
  EXPECT_EQ(foreign.error_class, ErrorClass::kForeign);
  EXPECT_EQ(foreign.code, ExitCode::kInternal);
  EXPECT_EQ(foreign.message, "bad split");
  try {
    throw 42;
  } catch (...) {
    EXPECT_EQ(StatusOf(std::current_exception(), 0).error_class, ErrorClass::kForeign);
  }
}

TEST(AgreeStatus, MalformedTextIsACommError) {
  for (const std::string text :
       {"", "ok", "ERR\n", "ERR\n1:0", "ERR\nx:0", "ERR\n9:0", "ERR\n1:01:91:1"}) {
    EXPECT_THROW(DecodeStatus(text), CommError) << text;
  }
}

TEST(AgreeStatus, FirstFailureIsTheLowestFailingRank) {
  const std::vector<std::string> all = {EncodeStatus(StatusOf(nullptr, 0)),
                                        EncodeStatus(Caught(CommError("peer"), 1)),
                                        EncodeStatus(Caught(ConfigError("cfg"), 2))};
  const auto first = FirstFailure(all);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->rank, 1);
  EXPECT_EQ(first->message, "peer");
  EXPECT_FALSE(FirstFailure({"OK", "OK"}).has_value());
}

TEST(AgreeStatus, ThrowAgreedKeepsClassCodeAndMessage) {
  try {
    ThrowAgreed(Caught(CheckpointError("disk full", ExitCode::kBadInput), 1), "checkpoint save");
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_STREQ(e.what(), "checkpoint save failed on rank 1: disk full");
    EXPECT_EQ(e.Code(), ExitCode::kBadInput);
    EXPECT_EQ(e.OriginRank(), 1);  // the boundary prints it in full on rank 1 only
  }
  try {
    ThrowAgreed(Caught(PlannerError(PlannerError::Kind::kInsufficientStorage, "t", 7, "no"), 0),
                "");
    FAIL();
  } catch (const PlannerError& e) {
    EXPECT_STREQ(e.what(), "no");
    EXPECT_EQ(e.Table(), "t");
    EXPECT_EQ(e.MissingBytes(), 7);
    EXPECT_EQ(e.ExitCode(), 3);
  }
  try {
    ThrowAgreed(Caught(std::out_of_range("index 9"), 2), "");
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "rank 2: index 9");
    EXPECT_EQ(e.ExitCode(), 1);
    EXPECT_EQ(e.OriginRank(), 2);
  }
  try {
    ThrowAgreed(Caught(Error("plain", ExitCode::kCollective, "checkpoint"), 0), "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "plain");
    EXPECT_EQ(e.ExitCode(), 4);
    EXPECT_STREQ(e.Label(), "checkpoint");
  }
  EXPECT_EQ(InputError("mine").OriginRank(), -1);  // not agreed: this process's own
  EXPECT_THROW(ThrowAgreed(Caught(InputError("row 3"), 0), ""), InputError);
  EXPECT_THROW(ThrowAgreed(Caught(ConfigError("key"), 0), ""), ConfigError);
}

TEST(AgreeOnFirstError, WorldOneReturnsTheResultOrRebuildsTheError) {
  DistEnv env;
  auto comm = Comm::Init(env);
  EXPECT_EQ(AgreeOnFirstError(*comm, [] { return 41 + 1; }), 42);
  int calls = 0;
  AgreeOnFirstError(*comm, "step", [&] { ++calls; });
  EXPECT_EQ(calls, 1);
  try {
    AgreeOnFirstError(*comm, "step", [] { throw CommError("gone"); });
    FAIL();
  } catch (const CommError& e) {
    EXPECT_STREQ(e.what(), "step failed on rank 0: gone");
  }
  EXPECT_EQ(AllGatherStrings(*comm, "abc"), std::vector<std::string>{"abc"});
}

}  // namespace
}  // namespace tzrec
