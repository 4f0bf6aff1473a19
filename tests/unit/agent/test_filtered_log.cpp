// Unit tests for src/agent/filtered_log.{hpp,cpp} and its use by TeeRouter: torchrun 2.11's
// filtered_stdout.log rule (PContext's `any(needle in line ...)`, TailLog's header + line).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent_error.hpp"
#include "filtered_log.hpp"
#include "logs.hpp"

namespace fs = std::filesystem;
using tzrun::agent::ConsoleSink;
using tzrun::agent::FilteredLog;
using tzrun::agent::MatchesAnyFilter;
using tzrun::agent::TeeRouter;

namespace {

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "tzrun_filtered_XXXXXX").string();
  return ::mkdtemp(tmpl.data());
}

}  // namespace

TEST(FilteredLog, MatchesAnySubstring) {
  EXPECT_TRUE(MatchesAnyFilter({"apple", "orange"}, "an orange\n"));
  EXPECT_FALSE(MatchesAnyFilter({"apple", "orange"}, "pear\n"));
  EXPECT_TRUE(MatchesAnyFilter({"a,b"}, "x a,b y"));
  EXPECT_TRUE(MatchesAnyFilter({""}, "anything"));  // torchrun: "" in line is True
  EXPECT_FALSE(MatchesAnyFilter({}, "anything"));
  EXPECT_TRUE(MatchesAnyFilter({"end\n"}, "the end\n"));  // the line keeps its newline
}

TEST(FilteredLog, WritesPrefixedMatchingLinesOnly) {
  const fs::path dir = TempDir();
  const fs::path file = dir / "filtered_stdout.log";
  {
    std::ofstream(file) << "old content\n";  // truncated, as open(path, "w")
    FilteredLog log(file.string(), {"apple"});
    log.Offer("[default0]:", "apple 0", true);
    log.Offer("[default0]:", "pear 0", true);
    log.Offer("[default1]:", "last apple", false);
    EXPECT_TRUE(log.WriteError().empty());
  }
  EXPECT_EQ(Slurp(file), "[default0]:apple 0\n[default1]:last apple\n");
  fs::remove_all(dir);
}

TEST(FilteredLog, UnopenablePathIsAnInfrastructureError) {
  try {
    FilteredLog log("/dev/null/filtered_stdout.log", {"x"});
    FAIL() << "expected AgentError";
  } catch (const tzrun::agent::AgentError& e) {
    EXPECT_EQ(e.ExitCode(), 125);
    EXPECT_NE(std::string(e.what()).find("/dev/null/filtered_stdout.log"), std::string::npos);
  }
}

TEST(FilteredLog, TeeRouterOffersEveryConsoleLine) {
  const fs::path dir = TempDir();
  const fs::path file = dir / "filtered_stderr.log";
  const int out = ::open((dir / "console").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  {
    ConsoleSink sink(out, out, tzrun::agent::ColorMode::kNever);
    FilteredLog log(file.string(), {"err"});
    TeeRouter router(sink, "[trainer3]:", 2, -1, true, 3);
    router.DuplicateTo(&log);
    router.Feed("one err\ntwo\nthr");
    router.Feed("ee err");
    router.Finish();
  }
  ::close(out);
  EXPECT_EQ(Slurp(file), "[trainer3]:one err\n[trainer3]:three err\n");
  EXPECT_EQ(Slurp(dir / "console"), "[trainer3]:one err\n[trainer3]:two\n[trainer3]:three err\n");
  fs::remove_all(dir);
}
