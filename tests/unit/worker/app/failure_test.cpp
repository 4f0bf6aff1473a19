// tzrec_train's failure line and torchelastic error file (src/worker/app/failure.hpp).
#include "failure.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using tzrec::DescribeFailure;

TEST(Failure, OwnErrorIsPrintedInFullWithItsLabel) {
  const auto t = DescribeFailure("tzrec_train train_eval rank 1", "config", "bad key", 2, -1, 1, 7);
  EXPECT_EQ(t.console, "tzrec_train train_eval rank 1: config: bad key\n");
  const auto j = nlohmann::json::parse(t.error_json);
  EXPECT_EQ(j["message"]["message"], "tzrec_train train_eval rank 1: config: bad key");
  EXPECT_EQ(j["message"]["extraInfo"]["timestamp"], "7");  // a string, as torch's @record writes
  EXPECT_FALSE(j["message"]["extraInfo"].contains("py_callstack"));
}

TEST(Failure, AgreedErrorIsPrintedInFullOnlyOnTheRankThatRaisedIt) {
  const auto origin = DescribeFailure("tzrec_train train_eval rank 1", "", "no rows", 2, 1, 1, 0);
  EXPECT_EQ(origin.console, "tzrec_train train_eval rank 1: no rows\n");
  const auto other = DescribeFailure("tzrec_train train_eval rank 0", "", "no rows", 2, 1, 0, 0);
  EXPECT_EQ(other.console,
            "tzrec_train train_eval rank 0: the same error as rank 1 (printed there; exit 2)\n");
  // The error file keeps the whole message on every rank: the launcher may name any of them.
  EXPECT_EQ(nlohmann::json::parse(other.error_json)["message"]["message"],
            "tzrec_train train_eval rank 0: no rows (raised on rank 1)");
}

TEST(Failure, OutsideALauncherEveryErrorIsPrintedInFull) {
  const auto t = DescribeFailure("tzrec_train eval", "checkpoint", "gone", 4, 0, -1, 0);
  EXPECT_EQ(t.console, "tzrec_train eval: checkpoint: gone\n");
}

TEST(Failure, DeterministicFailuresAreMarkedNotRetryable) {
  // exit 2 (bad config/input) and 3 (no plan) fail again on every retry; 1 and 4 may not.
  for (const int code : {2, 3}) {
    const auto j = nlohmann::json::parse(DescribeFailure("w", "", "m", code, -1, 0, 0).error_json);
    EXPECT_EQ(j["message"]["extraInfo"]["retryable"], "false") << code;
  }
  for (const int code : {1, 4}) {
    const auto j = nlohmann::json::parse(DescribeFailure("w", "", "m", code, -1, 0, 0).error_json);
    EXPECT_FALSE(j["message"]["extraInfo"].contains("retryable")) << code;
  }
}

TEST(Failure, ErrorFileIsReplacedAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tzrec_failure_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "error.json").string();
  std::ofstream(path) << "old";
  EXPECT_EQ(tzrec::WriteErrorFile(path, "{\"message\": \"x\"}\n"), "");
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(), "{\"message\": \"x\"}\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const std::string why = tzrec::WriteErrorFile((dir / "missing" / "e.json").string(), "{}");
  EXPECT_NE(why.find("cannot create"), std::string::npos) << why;
  std::filesystem::remove_all(dir);
}

}  // namespace
