// Shared fixtures of the tzrun::cli::parse tests (cli_parse_test.cpp, cli_values_test.cpp,
// cli_help_test.cpp): a fake sysroot and thin wrappers around parse().
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tzrun/cli/cli.hpp"

namespace tzrun::cli::cli_test {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Args = std::vector<std::string>;
using Env = std::map<std::string, std::string>;
namespace fs = std::filesystem;

constexpr int kFakeCpus = 7;

/// A fake sysroot with `gpus` entries under proc/driver/nvidia/gpus.
class FakeHost {
 public:
  explicit FakeHost(int gpus) {
    root_ = fs::temp_directory_path() /
            ("tzrun_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(root_ / "proc/driver/nvidia/gpus");
    for (int i = 0; i < gpus; ++i) {
      fs::create_directories(root_ / "proc/driver/nvidia/gpus" /
                             ("0000:0" + std::to_string(i) + ":00.0"));
    }
  }
  ~FakeHost() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;
  [[nodiscard]] HostProbe Probe() const { return HostProbe{root_, kFakeCpus}; }
  [[nodiscard]] const fs::path& Root() const { return root_; }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

inline ParseOutcome RunCli(const Args& args, const Env& env = {}, int gpus = 0) {
  FakeHost host(gpus);
  return Parse(args, env, host.Probe());
}

inline LaunchConfig Cfg(const Args& args, const Env& env = {}, int gpus = 0) {
  auto out = RunCli(args, env, gpus);
  EXPECT_EQ(out.kind, ParseOutcome::Kind::kRun);
  return out.config;
}

/// The one-line message of the UsageError `args` must raise ("" if none).
inline std::string ErrorOf(const Args& args, const Env& env = {}, int gpus = 0) {
  try {
    RunCli(args, env, gpus);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.ExitCode(), 2);
    EXPECT_THAT(std::string(e.what()), StartsWith("usage: tzrun [-h]"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("\ntzrun: error: " + e.Message()));
    return e.Message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

}  // namespace tzrun::cli::cli_test
