// Unit tests for src/agent/report.{hpp,cpp}. The golden reports are torchrun 2.11's own
// ChildFailedError output, captured from real runs (see comments), plus tzrun's one-line
// root-cause summary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "report.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using tzrun::agent::CopyRootErrorFile;
using tzrun::agent::FormatFailureLogMessage;
using tzrun::agent::FormatFailureReport;
using tzrun::agent::RankOutcome;
using tzrun::agent::ReadErrorFile;
using tzrun::agent::ReportError;
using tzrun::agent::RunSummary;
using tzrun::agent::SelectRootCause;
using tzrun::agent::SignalName;
using tzrun::agent::SummaryToJson;
using tzrun::agent::TzrunExitCode;
using tzrun::agent::WorkerFailure;
using tzrun::agent::WriteSummaryJson;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tzrun_report_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& Path() const { return path_; }
  std::string File(const std::string& name, const std::string& content) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  fs::path path_;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::chrono::system_clock::time_point At(long long unix_seconds, int ms = 0) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(unix_seconds) +
                                               std::chrono::milliseconds(ms));
}

// All report times are local time (like Python's datetime.fromtimestamp): pin UTC.
class Report : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* tz = std::getenv("TZ")) old_tz_ = tz;
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  void TearDown() override {
    if (old_tz_) {
      ::setenv("TZ", old_tz_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  TempDir tmp_;

 private:
  std::optional<std::string> old_tz_;
};

// torchrun's error file for `raise ValueError("boom on rank 1")` inside a @record main
// (copied from <log-dir>/.../attempt_0/1/error.json of a real torchrun 2.11 run).
const std::string kRecordErrorJson =
    R"({"message": {"message": "ValueError: boom on rank 1", "extraInfo": {"py_callstack": )"
    R"("Traceback (most recent call last):\n  File \"/work/main/.venv/lib/python3.11/)"
    R"(site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 362, )"
    R"(in wrapper\n    return f(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^\n  File )"
    R"(\"/tmp/lh/fail_record.py\", line 8, in main\n    raise ValueError(\"boom on rank 1\")\n)"
    R"(ValueError: boom on rank 1\n", "timestamp": "1795975278"}}})";

}  // namespace

// ------------------------------------------------------------------ golden reports

// torchrun --nproc-per-node=1 fail_sig.py, where the worker SIGKILLs itself. Note the
// border width 53 = the longest line (the traceback line), not 60.
TEST_F(Report, GoldenSignalFailure) {
  const std::vector<WorkerFailure> f = {{0, 0, 6140, 0, SIGKILL, "", At(1795975286, 700)}};
  const std::string want =
      "=====================================================\n"
      "fail_sig.py FAILED\n"
      "-----------------------------------------------------\n"
      "Failures:\n"
      "  <NO_OTHER_FAILURES>\n"
      "-----------------------------------------------------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-29_18:01:26\n"
      "  host      : localhost\n"
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -9 (pid: 6140)\n"
      "  error_file: <N/A>\n"
      "  traceback : Signal 9 (SIGKILL) received by PID 6140\n"
      "=====================================================\n"
      "tzrun: root cause is rank 0 (local_rank: 0, pid: 6140), killed by signal 9 (SIGKILL); "
      "exit code 137\n";
  EXPECT_EQ(FormatFailureReport("fail_sig.py", f, 0, "localhost"), want);
}

// torchrun --nproc-per-node=2 fail_exit.py: rank 1 exits 3, rank 0 is then SIGTERMed by
// the agent and recorded as a second failure (index = detection order).
TEST_F(Report, GoldenExitCodeFailureWithOtherFailures) {
  const std::vector<WorkerFailure> f = {
      {1, 1, 6119, 3, 0, "/nonexistent/error.json", At(1795975282, 100)},
      {0, 0, 6118, 0, SIGTERM, "", At(1795975282, 300)},
  };
  const std::string want =
      "============================================================\n"
      "fail_exit.py FAILED\n"
      "------------------------------------------------------------\n"
      "Failures:\n"
      "[1]:\n"
      "  time      : 2026-11-29_18:01:22\n"
      "  host      : localhost\n"
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -15 (pid: 6118)\n"
      "  error_file: <N/A>\n"
      "  traceback : Signal 15 (SIGTERM) received by PID 6118\n"
      "------------------------------------------------------------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-29_18:01:22\n"
      "  host      : localhost\n"
      "  rank      : 1 (local_rank: 1)\n"
      "  exitcode  : 3 (pid: 6119)\n"
      "  error_file: <N/A>\n"
      "  traceback : To enable traceback see: "
      "https://pytorch.org/docs/stable/elastic/errors.html\n"
      "============================================================\n"
      "tzrun: root cause is rank 1 (local_rank: 1, pid: 6119), exited with code 3; exit code 3\n";
  EXPECT_EQ(SelectRootCause(f), 0u);
  EXPECT_EQ(FormatFailureReport("fail_exit.py", f, 0, "localhost"), want);
}

// torchrun --nproc-per-node=2 -t 3 fail_record.py with @record: the report shows the
// worker's Python traceback from its error file, indented by two spaces, and the error
// file's timestamp (not the detection time).
TEST_F(Report, GoldenRecordedPythonException) {
  const std::string ef = tmp_.File("error.json", kRecordErrorJson);
  const std::vector<WorkerFailure> f = {{1, 1, 5986, 1, 0, ef, At(1795975279, 900)}};
  const std::string want =
      "============================================================\n"
      "fail_record.py FAILED\n"
      "------------------------------------------------------------\n"
      "Failures:\n"
      "  <NO_OTHER_FAILURES>\n"
      "------------------------------------------------------------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-29_18:01:18\n"
      "  host      : localhost\n"
      "  rank      : 1 (local_rank: 1)\n"
      "  exitcode  : 1 (pid: 5986)\n"
      "  error_file: " +
      ef +
      "\n"
      "  traceback : Traceback (most recent call last):\n"
      "    File \"/work/main/.venv/lib/python3.11/site-packages/torch/distributed/elastic/"
      "multiprocessing/errors/__init__.py\", line 362, in wrapper\n"
      "      return f(*args, **kwargs)\n"
      "             ^^^^^^^^^^^^^^^^^^\n"
      "    File \"/tmp/lh/fail_record.py\", line 8, in main\n"
      "      raise ValueError(\"boom on rank 1\")\n"
      "  ValueError: boom on rank 1\n"
      "  \n"
      "============================================================\n"
      "tzrun: root cause is rank 1 (local_rank: 1, pid: 5986), exited with code 1; exit code 1\n";
  EXPECT_EQ(FormatFailureReport("fail_record.py", f, 0, "localhost"), want);
}

TEST_F(Report, BorderWidthFollowsTitleAndCapsAt60) {
  const std::vector<WorkerFailure> f = {{0, 0, 1, 0, SIGKILL, "", At(0)}};
  // Longest block line: "  traceback : Signal 9 (SIGKILL) received by PID 1" (50 chars).
  auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  EXPECT_EQ(first_line(FormatFailureReport("a", f, 0, "h")), std::string(50, '='));
  const std::string name55(48, 'x');  // title = 48 + " FAILED" = 55 chars
  EXPECT_EQ(first_line(FormatFailureReport(name55, f, 0, "h")), std::string(55, '='));
  const std::string name80(80, 'y');
  EXPECT_EQ(first_line(FormatFailureReport(name80, f, 0, "h")), std::string(60, '='));
  // Width counts characters, not UTF-8 bytes.
  const std::string wide = std::string(45, 'z') + "\xc3\xa9\xc3\xa9\xc3\xa9";  // 48 chars
  EXPECT_EQ(first_line(FormatFailureReport(wide, f, 0, "h")), std::string(55, '='));
}

TEST_F(Report, PlainErrorFileMessageIsShown) {
  const std::string ef =
      tmp_.File("e.json", R"({"message": "CUDA OOM on device 3\nsecond line", "timestamp": 5})");
  const std::vector<WorkerFailure> f = {{2, 7, 42, 12, 0, ef, At(100)}};
  const std::string r = FormatFailureReport("train", f, 0, "h");
  EXPECT_NE(r.find("  traceback : CUDA OOM on device 3\n  second line\n"), std::string::npos) << r;
  EXPECT_NE(r.find("  error_file: " + ef + "\n"), std::string::npos);
  EXPECT_NE(r.find("  time      : 1970-01-01_00:00:05\n"), std::string::npos) << r;
  EXPECT_NE(r.find("  rank      : 7 (local_rank: 2)\n"), std::string::npos);
  EXPECT_NE(r.find("exit code 12\n"), std::string::npos);
}

TEST_F(Report, SignalledWorkerWithErrorFileShowsItsTraceback) {
  const std::string ef = tmp_.File("e.json", kRecordErrorJson);
  const std::vector<WorkerFailure> f = {{0, 0, 9, 0, SIGABRT, ef, At(1795975279)}};
  const std::string r = FormatFailureReport("t.py", f, 0, "h");
  EXPECT_NE(r.find("  exitcode  : -6 (pid: 9)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("ValueError: boom on rank 1"), std::string::npos);
  EXPECT_NE(r.find("killed by signal 6 (SIGABRT); exit code 134\n"), std::string::npos) << r;
}

TEST_F(Report, MalformedErrorFileIsReportedNotFatal) {
  const std::string ef = tmp_.File("e.json", "{not json");
  const std::vector<WorkerFailure> f = {{0, 0, 9, 1, 0, ef, At(10)}};
  const std::string r = FormatFailureReport("t.py", f, 0, "h");
  EXPECT_NE(r.find("could not be parsed"), std::string::npos) << r;
  EXPECT_NE(r.find("  error_file: " + ef + "\n"), std::string::npos);
}

TEST_F(Report, FailureLogMessageMatchesTorchrun) {
  const WorkerFailure f{1, 1, 5986, 1, 0, "", At(0)};
  EXPECT_EQ(
      FormatFailureLogMessage(f, "/work/main/.venv/bin/python"),
      "failed (exitcode: 1) local_rank: 1 (pid: 5986) of binary: /work/main/.venv/bin/python");
  const WorkerFailure s{0, 0, 6140, 0, SIGKILL, "", At(0)};
  EXPECT_EQ(FormatFailureLogMessage(s, "x"),
            "failed (exitcode: -9) local_rank: 0 (pid: 6140) of binary: x");
}

// ------------------------------------------------------------------ root cause

TEST_F(Report, RootCauseOfAHangIsTheLikelyCauseNotTheFirstObserved) {
  // --hang-timeout killed both; rank 0 (a peer blocked on rank 1) was observed first.
  std::vector<WorkerFailure> f = {
      {0, 0, 1, 0, 9, "", At(1000)},
      {1, 1, 2, 0, 9, "", At(1001)},
  };
  f[0].hang = "no progress";
  f[0].hang_order = 1;
  f[1].hang = "no progress";
  f[1].hang_order = 0;
  EXPECT_EQ(SelectRootCause(f), 1u);
  f[0].hang_order = 0;  // the lowest order wins, whatever the times
  f[1].hang_order = 1;
  EXPECT_EQ(SelectRootCause(f), 0u);
}

TEST_F(Report, RootCauseIsTheEarliestTimestamp) {
  // Rank 0 was observed first, but rank 1's error file says it failed earlier.
  const std::string ef =
      tmp_.File("e.json", R"({"message": {"message": "E", "extraInfo": {"timestamp": "1000"}}})");
  std::vector<WorkerFailure> f = {
      {0, 0, 1, 1, 0, "", At(1005)},
      {1, 1, 2, 1, 0, ef, At(1006)},
  };
  EXPECT_EQ(SelectRootCause(f), 1u);
  f[1].error_file.clear();
  EXPECT_EQ(SelectRootCause(f), 0u);
  f[1].time = f[0].time;  // tie => first in order
  EXPECT_EQ(SelectRootCause(f), 0u);
  f[1].time = At(1004);
  EXPECT_EQ(SelectRootCause(f), 1u);
}

TEST(ReportHelpers, SignalNamesAndExitCodes) {
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
  EXPECT_EQ(SignalName(0), "<N/A>");
  EXPECT_EQ(SignalName(1000), "<N/A>");
  EXPECT_EQ(TzrunExitCode({0, 0, 1, 0, SIGKILL, "", {}}), 137);
  EXPECT_EQ(TzrunExitCode({0, 0, 1, 85, 0, "", {}}), 85);
}

// ------------------------------------------------------------------ error files

TEST_F(Report, ReadsTorchelasticForm) {
  const auto info = ReadErrorFile(tmp_.File("e.json", kRecordErrorJson));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->message, "ValueError: boom on rank 1");
  EXPECT_EQ(info->traceback.rfind("Traceback (most recent call last):\n", 0), 0u);
  EXPECT_NE(info->traceback.find("ValueError: boom on rank 1\n"), std::string::npos);
  ASSERT_TRUE(info->timestamp);
  EXPECT_DOUBLE_EQ(*info->timestamp, 1795975278.0);
}

TEST_F(Report, ReadsPlainForm) {
  auto info = ReadErrorFile(tmp_.File("a.json", R"({"message": "disk full", "timestamp": 17})"));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->message, "disk full");
  EXPECT_TRUE(info->traceback.empty());
  ASSERT_TRUE(info->timestamp);
  EXPECT_DOUBLE_EQ(*info->timestamp, 17.0);

  info = ReadErrorFile(tmp_.File("b.json", R"({"message": "no time"})"));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->message, "no time");
  EXPECT_FALSE(info->timestamp);

  info = ReadErrorFile(tmp_.File("c.json", R"({"message": "x", "timestamp": "12.5"})"));
  ASSERT_TRUE(info && info->timestamp);
  EXPECT_DOUBLE_EQ(*info->timestamp, 12.5);
}

TEST_F(Report, MissingOrEmptyErrorFileIsNullopt) {
  EXPECT_FALSE(ReadErrorFile(""));
  EXPECT_FALSE(ReadErrorFile((tmp_.Path() / "nope.json").string()));
  EXPECT_FALSE(ReadErrorFile(tmp_.File("empty.json", "")));
  EXPECT_FALSE(ReadErrorFile(tmp_.File("blank.json", " \n")));
  EXPECT_FALSE(ReadErrorFile(tmp_.Path().string()));  // a directory
}

TEST_F(Report, GarbageErrorFileSaysItCouldNotBeParsed) {
  for (const std::string content : {"garbage", "[1,2]", R"({"msg": "x"})", R"({"message": 3})"}) {
    const std::string p = tmp_.File("g.json", content);
    const auto info = ReadErrorFile(p);
    ASSERT_TRUE(info) << content;
    EXPECT_NE(info->message.find("could not be parsed"), std::string::npos) << info->message;
    EXPECT_NE(info->message.find(p), std::string::npos) << info->message;
    EXPECT_FALSE(info->timestamp);
  }
}

// ------------------------------------------------------------------ error file copy

TEST_F(Report, CopyRootErrorFileAddsErrorCode) {
  const std::string ef = tmp_.File("child.json", kRecordErrorJson);
  const std::string dest = (tmp_.Path() / "parent.json").string();
  std::ofstream(dest) << "old contents";
  ASSERT_TRUE(CopyRootErrorFile({1, 1, 5, 1, 0, ef, At(0)}, dest));
  auto j = json::parse(Slurp(dest));
  EXPECT_EQ(j["message"]["errorCode"], 1);
  EXPECT_EQ(j["message"]["message"], "ValueError: boom on rank 1");
  EXPECT_EQ(j["message"]["extraInfo"]["timestamp"], "1795975278");

  ASSERT_TRUE(CopyRootErrorFile({1, 1, 5, 0, SIGKILL, ef, At(0)}, dest));
  EXPECT_EQ(json::parse(Slurp(dest))["message"]["errorCode"], -9);
}

TEST_F(Report, CopyRootErrorFileKeepsPlainFormAndSkipsMissing) {
  const std::string plain = tmp_.File("p.json", R"({"message": "m", "timestamp": 3})");
  const std::string dest = (tmp_.Path() / "parent.json").string();
  ASSERT_TRUE(CopyRootErrorFile({0, 0, 5, 2, 0, plain, At(0)}, dest));
  EXPECT_EQ(json::parse(Slurp(dest)), json::parse(R"({"message": "m", "timestamp": 3})"));

  const std::string dest2 = (tmp_.Path() / "parent2.json").string();
  EXPECT_FALSE(CopyRootErrorFile({0, 0, 5, 2, 0, "", At(0)}, dest2));
  EXPECT_FALSE(CopyRootErrorFile({0, 0, 5, 2, 0, tmp_.File("bad.json", "{"), At(0)}, dest2));
  EXPECT_FALSE(fs::exists(dest2));
  EXPECT_FALSE(CopyRootErrorFile({0, 0, 5, 2, 0, plain, At(0)}, ""));
}

// ------------------------------------------------------------------ summary

namespace {
RunSummary SampleSummary() {
  RunSummary s;
  s.run_id = "job42";
  s.outcome = "failed";
  s.exit_code = 137;
  s.restarts = 1;
  s.world_size = 2;
  s.start_time = 1000.25;
  s.end_time = 1010.75;
  s.hostname = "node1";
  const RankOutcome a0{0, 0, 100, 3, 0, 0, 1000.5, 1002.0, "E: first"};
  const RankOutcome a1{1, 1, 101, 143, 15, 0, 1000.5, 1002.5, ""};
  const RankOutcome b0{0, 0, 200, 0, 0, 1, 1003.0, 1010.0, ""};
  const RankOutcome b1{1, 1, 201, 137, 9, 1, 1003.0, 1009.0, ""};
  s.attempts = {{a0, a1}, {b0, b1}};
  s.ranks = {b0, b1};
  s.root_cause_rank = 1;
  return s;
}
}  // namespace

TEST_F(Report, SummaryJsonRoundTrip) {
  const std::string path = (tmp_.Path() / "summary.json").string();
  WriteSummaryJson(path, SampleSummary());
  const json j = json::parse(Slurp(path));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["tool"], "tzrun");
  EXPECT_EQ(j["run_id"], "job42");
  EXPECT_EQ(j["hostname"], "node1");
  EXPECT_EQ(j["outcome"], "failed");
  EXPECT_EQ(j["exit_code"], 137);
  EXPECT_EQ(j["restarts"], 1);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_DOUBLE_EQ(j["start_time"].get<double>(), 1000.25);
  EXPECT_DOUBLE_EQ(j["duration_s"].get<double>(), 10.5);
  EXPECT_EQ(j["root_cause_rank"], 1);
  EXPECT_EQ(j["root_cause"]["pid"], 201);
  EXPECT_EQ(j["root_cause"]["signal_name"], "SIGKILL");
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["state"], "succeeded");
  EXPECT_TRUE(j["ranks"][0]["signal_name"].is_null());
  EXPECT_EQ(j["ranks"][1]["state"], "signaled");
  EXPECT_EQ(j["ranks"][1]["exit_code"], 137);
  EXPECT_DOUBLE_EQ(j["ranks"][1]["duration_s"].get<double>(), 6.0);
  ASSERT_EQ(j["attempts"].size(), 2u);
  EXPECT_EQ(j["attempts"][0][0]["state"], "failed");
  EXPECT_EQ(j["attempts"][0][0]["error_message"], "E: first");
  EXPECT_EQ(j["attempts"][0][1]["signal"], 15);
  EXPECT_EQ(j["attempts"][1][0]["restarts"], 1);
  EXPECT_EQ(Slurp(path).back(), '\n');
}

TEST_F(Report, SummaryWithoutRootCauseHasNulls) {
  RunSummary s;
  s.run_id = "ok";
  s.outcome = "succeeded";
  const json j = json::parse(SummaryToJson(s));
  EXPECT_TRUE(j["root_cause_rank"].is_null());
  EXPECT_TRUE(j["root_cause"].is_null());
  EXPECT_TRUE(j["ranks"].is_array());
  EXPECT_TRUE(j["attempts"].empty());
}

TEST_F(Report, SummaryWithInvalidUtf8StillWrites) {
  RunSummary s = SampleSummary();
  s.ranks[0].error_message = "bad \xff\xfe bytes";
  const std::string path = (tmp_.Path() / "s.json").string();
  ASSERT_NO_THROW(WriteSummaryJson(path, s));
  EXPECT_TRUE(json::accept(Slurp(path)));
}

TEST_F(Report, SummaryReplacesAnExistingFileWhole) {
  const std::string path = (tmp_.Path() / "summary.json").string();
  std::ofstream(path) << std::string(100000, 'x');  // longer than the summary
  WriteSummaryJson(path, SampleSummary());
  EXPECT_TRUE(json::accept(Slurp(path)));
  // Only the summary itself is left in the directory (no temp files).
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp_.Path()), fs::directory_iterator()), 1);
}

TEST_F(Report, SummaryWriteFailureLeavesNoPartialFile) {
  // 1. Directory does not exist: clear error, nothing created.
  const std::string missing = (tmp_.Path() / "no" / "such" / "summary.json").string();
  try {
    WriteSummaryJson(missing, SampleSummary());
    FAIL() << "expected ReportError";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp_.Path() / "no"));

  // 2. The temp file is written, but the final rename fails (target is a non-empty
  //    directory): the temp file is removed and the target is untouched.
  const fs::path target = tmp_.Path() / "target";
  fs::create_directory(target);
  std::ofstream(target / "keep") << "k";
  EXPECT_THROW(WriteSummaryJson(target.string(), SampleSummary()), ReportError);
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_EQ(Slurp(target / "keep"), "k");
  for (const auto& entry : fs::directory_iterator(tmp_.Path())) {
    EXPECT_EQ(entry.path().filename(), "target") << "left behind: " << entry.path();
  }
  EXPECT_THROW(WriteSummaryJson("", SampleSummary()), ReportError);
}

// ------------------------------------------------------------------ tzrun extensions

namespace {
WorkerFailure Failure(int rank, int exit_code, int sig, long long t) {
  WorkerFailure f;
  f.local_rank = rank;
  f.global_rank = rank;
  f.pid = 1000 + rank;
  f.exit_code = exit_code;
  f.signal = sig;
  f.time = At(t);
  return f;
}
}  // namespace

TEST_F(Report, StderrTailShownWhenNoErrorFile) {
  auto f = Failure(1, 1, 0, 1795975282);
  f.stderr_tail = "Traceback (most recent call last):\nRuntimeError: boom";
  const std::string text = FormatFailureReport("w.py", {f}, 0, "h");
  EXPECT_NE(text.find("  traceback : To enable traceback see: "
                      "https://pytorch.org/docs/stable/elastic/errors.html\n"
                      "  stderr    : last 2 lines:\n"
                      "    Traceback (most recent call last):\n"
                      "    RuntimeError: boom\n"
                      "============================================================\n"),
            std::string::npos)
      << text;

  // An error file wins: its traceback is shown, the tail is not.
  f.error_file = tmp_.File("e.json", kRecordErrorJson);
  const std::string with_file = FormatFailureReport("w.py", {f}, 0, "h");
  EXPECT_EQ(with_file.find("  stderr    :"), std::string::npos) << with_file;
  // An empty or uncaptured tail adds nothing.
  f.error_file.clear();
  f.stderr_tail = "";
  EXPECT_EQ(FormatFailureReport("w.py", {f}, 0, "h").find("stderr    :"), std::string::npos);
  f.stderr_tail.reset();
  EXPECT_EQ(FormatFailureReport("w.py", {f}, 0, "h").find("stderr    :"), std::string::npos);
}

TEST_F(Report, RanksStoppedByTzrunAreNotFailures) {
  auto stopped = Failure(0, 0, SIGTERM, 1795975280);  // observed earlier than the root cause
  stopped.stopped_by_tzrun = true;
  auto stopped2 = Failure(2, 1, 0, 1795975283);
  stopped2.stopped_by_tzrun = true;
  const std::vector<WorkerFailure> f = {stopped, Failure(1, 3, 0, 1795975282), stopped2};
  ASSERT_EQ(SelectRootCause(f), 1u);
  const std::string text = FormatFailureReport("w.py", f, 1, "h");
  EXPECT_NE(text.find("Failures:\n  <NO_OTHER_FAILURES>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Root Cause (first observed failure):\n[0]:\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("Signal 15"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntzrun: stopped by tzrun after the failure (not failures themselves): "
                      "rank 0 (local_rank: 0, pid: 1000, exitcode: -15), "
                      "rank 2 (local_rank: 2, pid: 1002, exitcode: 1)\n"
                      "tzrun: root cause is rank 1 (local_rank: 1, pid: 1001), exited with code "
                      "3; exit code 3\n"),
            std::string::npos)
      << text;

  // Only stopped ranks (a peer node failed): torchrun's rule over all of them.
  const std::vector<WorkerFailure> all_stopped = {stopped2, stopped};
  EXPECT_EQ(SelectRootCause(all_stopped), 1u);
  const std::string t2 = FormatFailureReport("w.py", all_stopped, 1, "h");
  EXPECT_NE(t2.find("Signal 15 (SIGTERM) received by PID 1000"), std::string::npos) << t2;
  EXPECT_EQ(t2.find("stopped by tzrun after"), std::string::npos) << t2;
}

TEST_F(Report, MutedFailureIsNamed) {
  auto f = Failure(3, 2, 0, 100);
  f.muted = true;
  f.stderr_tail = "E1\nE2";
  EXPECT_EQ(tzrun::agent::FormatMutedFailure(f, true),
            "rank 3 (local_rank: 3, pid: 1003) failed (exitcode: 2) with its output hidden by "
            "--local-ranks-filter; its last stderr lines:\n  E1\n  E2");
  const std::string text = FormatFailureReport("w.py", {f}, 0, "h");
  EXPECT_NE(text.find("\ntzrun: rank 3 (local_rank: 3, pid: 1003) failed (exitcode: 2) with its "
                      "output hidden by --local-ranks-filter; see its entry in the report "
                      "above\n"),
            std::string::npos)
      << text;
  f.stderr_tail = "";
  EXPECT_NE(tzrun::agent::FormatMutedFailure(f, true).find("it wrote nothing to stderr"),
            std::string::npos);
  f.stderr_tail.reset();
  EXPECT_NE(tzrun::agent::FormatMutedFailure(f, true).find("its stderr was not captured"),
            std::string::npos);
}

TEST_F(Report, SummaryMarksStoppedRanksAndCarriesTails) {
  RunSummary s = SampleSummary();
  s.ranks[0].stderr_tail = "not shown: exit 0";
  s.ranks[1].stderr_tail = "Fatal Python error: boom";
  s.attempts[0][1].stopped_by_tzrun = true;
  s.attempts[0][0].stderr_tail = "E: first";
  const json j = json::parse(SummaryToJson(s));
  EXPECT_TRUE(j["ranks"][0]["stderr_tail"].is_null());
  EXPECT_EQ(j["ranks"][1]["stderr_tail"], "Fatal Python error: boom");
  EXPECT_EQ(j["root_cause"]["stderr_tail"], "Fatal Python error: boom");
  EXPECT_EQ(j["ranks"][1]["stopped_by_tzrun"], false);
  EXPECT_EQ(j["attempts"][0][1]["state"], "stopped");
  EXPECT_EQ(j["attempts"][0][1]["stopped_by_tzrun"], true);
  EXPECT_EQ(j["attempts"][0][1]["signal_name"], "SIGTERM");
  EXPECT_EQ(j["attempts"][0][0]["state"], "failed");
  EXPECT_EQ(j["attempts"][0][0]["stderr_tail"], "E: first");
  EXPECT_TRUE(j["attempts"][0][1]["stderr_tail"].is_null());
}
