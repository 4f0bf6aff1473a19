// Behaviour of tzrun::cli::parse against torchrun 2.11's argparse front end
// (torch/distributed/run.py, torch/distributed/argparse_util.py): --help, --version
// (the process environment itself is tzrun::base::environ_map, tests/unit/base).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <string>

#include "cli_test_support.hpp"
#include "tzrun/cli/cli.hpp"

namespace tzrun::cli {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

// --------------------------------------------------------- help / version

TEST(CliHelp, ShapeAndPrecedence) {
  for (const Args& args : {Args{"-h"}, Args{"--help"}, Args{"--he"}, Args{"--foo", "-h"},
                           Args{"-mh"}, Args{"--nnodes", "2", "--help", "x.py"}}) {
    const auto out = RunCli(args);
    ASSERT_EQ(out.kind, ParseOutcome::Kind::kHelp);
    const auto& t = out.text;
    EXPECT_THAT(
        t, StartsWith("usage: tzrun [-h] [--nnodes NNODES] [--nproc-per-node NPROC_PER_NODE]\n"));
    EXPECT_THAT(t, HasSubstr("             training_script ...\n"));
    EXPECT_THAT(t, HasSubstr("\npositional arguments:\n  training_script       Full path to the"));
    EXPECT_THAT(t,
                HasSubstr("\noptions:\n  -h, --help            show this help message and exit\n"));
    EXPECT_THAT(t, HasSubstr("  --nproc-per-node NPROC_PER_NODE, --nproc_per_node NPROC_PER_NODE\n"
                             "                        Number of workers per node;"));
    EXPECT_THAT(t, HasSubstr("  -r REDIRECTS, --redirects REDIRECTS\n"));
    EXPECT_THAT(t, HasSubstr("  -m, --module          Change each process"));
    EXPECT_THAT(t, HasSubstr("--numa-binding {node,socket,exclusive,core-complex}"));
    EXPECT_THAT(t, HasSubstr("--shutdown-timeout SHUTDOWN_TIMEOUT"));
    EXPECT_THAT(t, HasSubstr("-V, --version"));
    EXPECT_THAT(t, HasSubstr("tzrun store"));
    EXPECT_EQ(t.back(), '\n');
  }
  // argparse converts values as it goes: an earlier bad value wins over -h.
  EXPECT_THAT(ErrorOf({"--max-restarts", "x", "-h"}), HasSubstr("invalid int value"));
  EXPECT_THAT(ErrorOf({"--help=1"}),
              HasSubstr("argument -h/--help: ignored explicit argument '1'"));
  // -h after the script belongs to the script.
  EXPECT_EQ(RunCli({"x.py", "-h"}).kind, ParseOutcome::Kind::kRun);
}

TEST(CliHelp, WrapsToColumns) {
  const auto t = RunCli({"--help"}, {{"COLUMNS", "100"}}).text;
  std::size_t longest_help_line = 0;
  std::size_t start = 0;
  while (start < t.size()) {
    const auto end = t.find('\n', start);
    const auto line = t.substr(start, end - start);
    if (line.rfind("                        ", 0) == 0)
      longest_help_line = std::max(longest_help_line, line.size());
    start = end + 1;
  }
  EXPECT_LE(longest_help_line, 98U);
  EXPECT_GT(longest_help_line, 78U);
  EXPECT_NE(HelpText(100), HelpText(80));
}

TEST(CliVersion, PrintsProjectVersion) {
  for (const Args& args :
       {Args{"-V"}, Args{"--version"}, Args{"--vers"}, Args{"--nnodes", "2", "-V", "x.py"}}) {
    const auto out = RunCli(args);
    ASSERT_EQ(out.kind, ParseOutcome::Kind::kVersion);
    EXPECT_TRUE(std::regex_match(
        out.text, std::regex(R"(tzrun \d+\.\d+\.\d+ \(torchrun 2\.11 compatible\)\n)")))
        << out.text;
    EXPECT_EQ(out.text, VersionString() + "\n");
  }
}
}  // namespace
}  // namespace tzrun::cli
