// Tests of src/worker/app/flags.hpp: which unknown arguments are misspellings (errors) and which
// are ignored with a warning (TorchEasyRec's argparse parse_known_args), and the no-effect /
// refused TorchEasyRec flags of a command, on a real CLI11 parser.
#include "flags.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

const std::vector<std::string> kKnown = {"pipeline_config_path",
                                         "pipeline-config-path",
                                         "model_dir",
                                         "model-dir",
                                         "checkpoint_path",
                                         "help"};

TEST(Flags, MisspellingsNameTheFlag) {
  EXPECT_EQ(MisspeltFlag("--modle_dir", kKnown), "model_dir");     // transposition
  EXPECT_EQ(MisspeltFlag("--model_dirs=x", kKnown), "model_dir");  // one extra letter
  EXPECT_EQ(MisspeltFlag("--Model_Dir", kKnown), "model_dir");     // case
  EXPECT_EQ(MisspeltFlag("--pipline-config-path", kKnown), "pipeline_config_path");
  EXPECT_EQ(MisspeltFlag("--pipeline", kKnown), "pipeline_config_path");  // an abbreviation
  EXPECT_EQ(MisspeltFlag("--checkpoint", kKnown), "checkpoint_path");
  EXPECT_EQ(MisspeltFlag("--mode", kKnown), "model_dir");  // argparse would take it as --model_dir
  EXPECT_EQ(MisspeltFlag("--hlp", kKnown), "help");        // short flag: distance 1 only
}

TEST(Flags, UnrelatedArgumentsAreNoMisspelling) {
  for (const char* arg : {"--odps_data_quota_name", "--fg_threads", "--he", "value", "-x", "--",
                          "--model_dir_backup_location"}) {
    EXPECT_EQ(MisspeltFlag(arg, kKnown), "") << arg;
  }
  EXPECT_EQ(MisspeltFlag("--hxyz", kKnown), "");  // distance 3 from help
}

TEST(Flags, UnknownArgumentsAreReturnedOrRefused) {
  EXPECT_EQ(UnknownArguments({"--fg_threads", "4", "extra"}, kKnown),
            (std::vector<std::string>{"--fg_threads", "4", "extra"}));
  try {
    UnknownArguments({"--fg_threads", "--modle_dir", "x"}, kKnown);
    FAIL() << "a misspelling must throw";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown flag '--modle_dir'; did you mean '--model_dir'? (run with --help for "
                 "the flags)");
  }
  EXPECT_EQ(IgnoredArgumentsWarning("eval", {"--fg_threads", "4"}),
            "tzrec_train eval: warning: ignoring unknown argument(s) '--fg_threads', '4' "
            "(TorchEasyRec's scripts ignore them too: argparse parse_known_args)");
}

// argv of a parse: the command name first.
struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    for (auto& s : strings) pointers.push_back(s.data());
  }
  int Argc() { return static_cast<int>(pointers.size()); }
  char** Data() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

TEST(Flags, CommandParsesKnownIgnoresUnknownRefusesMisspelt) {
  CLI::App app{"test", "tzrec_train test"};
  std::string model_dir;
  app.add_option("--model_dir,--model-dir", model_dir, "");
  CommandFlags flags(app, "test");
  flags.NoEffect("predict_threads", true, "one thread");
  flags.Refused("ignore_restore_lr_scheduler", false, "the schedule always continues");

  Argv ok({"test", "--model-dir", "/m", "--unknown_flag", "v", "--predict_threads", "8"});
  testing::internal::CaptureStderr();
  EXPECT_EQ(flags.Parse(ok.Argc(), ok.Data()), std::nullopt);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(model_dir, "/m");
  EXPECT_NE(err.find("--predict_threads has no effect in tzrec_train: one thread"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ignoring unknown argument(s) '--unknown_flag', 'v'"), std::string::npos)
      << err;
}

TEST(Flags, RefusedAndMisspeltFlagsThrow) {
  for (const char* bad : {"--ignore_restore_lr_scheduler", "--modeldir"}) {
    CLI::App app{"test", "tzrec_train test"};
    std::string model_dir;
    app.add_option("--model_dir", model_dir, "");
    CommandFlags flags(app, "test");
    flags.Refused("ignore_restore_lr_scheduler", false, "the schedule always continues");
    Argv args({"test", bad, "x"});
    try {
      flags.Parse(args.Argc(), args.Data());
      FAIL() << bad;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("--ignore_restore_lr_scheduler is a TorchEasyRec flag that "
                            "tzrec_train does not support: the schedule always continues") == 0 ||
                  what.find("did you mean '--model_dir'?") != std::string::npos)
          << what;
    }
  }
}

TEST(Flags, MisspeltRequiredFlagIsNamed) {
  CLI::App app{"test", "tzrec_train test"};
  std::string config;
  app.add_option("--pipeline_config_path", config, "")->required();
  CommandFlags flags(app, "test");
  Argv args({"test", "--pipline_config_path", "c.config"});
  try {
    flags.Parse(args.Argc(), args.Data());
    FAIL() << "a misspelt required flag must throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean '--pipeline_config_path'?"),
              std::string::npos)
        << e.what();
  }
}

TEST(Flags, HelpAndUsageErrorsReturnTheirCode) {
  CLI::App app{"test", "tzrec_train test"};
  int n = 0;
  app.add_option("--n", n, "")->required();
  CommandFlags flags(app, "test");
  Argv help({"test", "--help"});
  testing::internal::CaptureStdout();
  EXPECT_EQ(flags.Parse(help.Argc(), help.Data()), 0);
  testing::internal::GetCapturedStdout();
  CLI::App app2{"test", "tzrec_train test"};
  app2.add_option("--n", n, "")->required();
  CommandFlags flags2(app2, "test");
  Argv missing({"test"});
  testing::internal::CaptureStderr();
  EXPECT_EQ(flags2.Parse(missing.Argc(), missing.Data()), 2);
  testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace tzrec
