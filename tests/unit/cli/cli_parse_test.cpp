// Behaviour of tzrun::cli::parse against torchrun 2.11's argparse front end
// (torch/distributed/run.py, torch/distributed/argparse_util.py): defaults, every option
// in every spelling, abbreviations, and the script/REMAINDER split.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "options.hpp"  // the real option table (src/cli, on this target's include path)
#include "tzrun/cli/cli.hpp"

namespace tzrun::cli {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

// ---------------------------------------------------------------- defaults

TEST(CliDefaults, MatchTorchrun) {
  const auto c = Cfg({"train.py"});
  EXPECT_EQ(c.min_nodes, 1);
  EXPECT_EQ(c.max_nodes, 1);
  EXPECT_EQ(c.nproc_per_node_spec, "1");
  EXPECT_EQ(c.nproc_per_node, 1);
  EXPECT_EQ(c.rdzv_backend, "static");
  EXPECT_EQ(c.rdzv_endpoint, "");
  EXPECT_EQ(c.rdzv_id, "none");
  EXPECT_EQ(c.rdzv_conf, (std::map<std::string, std::string>{{"rank", "0"}}));
  EXPECT_FALSE(c.standalone);
  EXPECT_EQ(c.max_restarts, 0);
  EXPECT_DOUBLE_EQ(c.monitor_interval, 0.1);
  EXPECT_EQ(c.start_method, "spawn");
  EXPECT_EQ(c.event_log_handler, "null");
  EXPECT_EQ(c.role, "default");
  EXPECT_FALSE(c.module);
  EXPECT_FALSE(c.no_python);
  EXPECT_FALSE(c.run_path);
  EXPECT_FALSE(c.log_dir.has_value());
  EXPECT_EQ(c.redirects.all, Std::kNone);
  EXPECT_TRUE(c.redirects.per_rank.empty());
  EXPECT_EQ(c.tee.all, Std::kNone);
  EXPECT_TRUE(c.local_ranks_filter.empty());
  EXPECT_TRUE(c.duplicate_stdout_filters.empty());
  EXPECT_TRUE(c.duplicate_stderr_filters.empty());
  EXPECT_EQ(c.node_rank, 0);
  EXPECT_EQ(c.master_addr, "127.0.0.1");
  EXPECT_EQ(c.master_port, 29500);
  EXPECT_FALSE(c.master_port_explicit);
  EXPECT_FALSE(c.local_addr.has_value());
  EXPECT_FALSE(c.logs_specs.has_value());
  EXPECT_THAT(c.signals_to_handle, ElementsAre("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"));
  EXPECT_FALSE(c.virtual_local_rank);
  EXPECT_DOUBLE_EQ(c.shutdown_timeout, 30.0);
  EXPECT_EQ(c.max_membership_restarts, 10);
  EXPECT_TRUE(c.no_restart_exit_codes.empty());
  EXPECT_FALSE(c.summary_json.has_value());
  EXPECT_FALSE(c.dry_run);
  EXPECT_EQ(c.log_level, "warning");
  EXPECT_EQ(c.platform, "auto");
  EXPECT_EQ(c.training_script, "train.py");
  EXPECT_TRUE(c.training_script_args.empty());
}

// ------------------------------------------------- every option, every form
// The options and their spellings come from the real table (detail::options()); the cases below
// only give each option a value and the LaunchConfig field it must reach. An option of the table
// without a case fails the test, so a new option cannot go untested.

struct ValueCase {
  std::string dash;  // the option's first long spelling (or its only one)
  std::string value;
  std::function<void(const LaunchConfig&)> check;
};

std::vector<ValueCase> ValueCases() {
  return {
      {"--nnodes", "2:4",
       [](const LaunchConfig& c) {
         EXPECT_EQ(c.min_nodes, 2);
         EXPECT_EQ(c.max_nodes, 4);
       }},
      {"--nproc-per-node", "3", [](const LaunchConfig& c) { EXPECT_EQ(c.nproc_per_node, 3); }},
      {"--rdzv-backend", "c10d", [](const LaunchConfig& c) { EXPECT_EQ(c.rdzv_backend, "c10d"); }},
      {"--rdzv-endpoint", "host:29400",
       [](const LaunchConfig& c) { EXPECT_EQ(c.rdzv_endpoint, "host:29400"); }},
      {"--rdzv-id", "job7", [](const LaunchConfig& c) { EXPECT_EQ(c.rdzv_id, "job7"); }},
      {"--rdzv-conf", "join_timeout=5",
       [](const LaunchConfig& c) { EXPECT_EQ(c.rdzv_conf.at("join_timeout"), "5"); }},
      {"--max-restarts", "3", [](const LaunchConfig& c) { EXPECT_EQ(c.max_restarts, 3); }},
      {"--monitor-interval", "0.5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.monitor_interval, 0.5); }},
      {"--start-method", "fork", [](const LaunchConfig& c) { EXPECT_EQ(c.start_method, "fork"); }},
      {"--event-log-handler", "console",
       [](const LaunchConfig& c) { EXPECT_EQ(c.event_log_handler, "console"); }},
      {"--role", "trainer", [](const LaunchConfig& c) { EXPECT_EQ(c.role, "trainer"); }},
      {"--log-dir", "/tmp/logs", [](const LaunchConfig& c) { EXPECT_EQ(c.log_dir, "/tmp/logs"); }},
      {"--redirects", "3", [](const LaunchConfig& c) { EXPECT_EQ(c.redirects.all, Std::kAll); }},
      {"--tee", "2", [](const LaunchConfig& c) { EXPECT_EQ(c.tee.all, Std::kErr); }},
      {"--local-ranks-filter", "0,2",
       [](const LaunchConfig& c) {
         EXPECT_EQ(c.local_ranks_filter, (std::set<int>{0, 2}));
       }},
      {"--duplicate-stdout-filters", "apple,orange",
       [](const LaunchConfig& c) {
         EXPECT_THAT(c.duplicate_stdout_filters, ElementsAre("apple", "orange"));
       }},
      {"--duplicate-stderr-filters", "pear",
       [](const LaunchConfig& c) { EXPECT_THAT(c.duplicate_stderr_filters, ElementsAre("pear")); }},
      {"--node-rank", "0", [](const LaunchConfig& c) { EXPECT_EQ(c.node_rank, 0); }},
      {"--master-addr", "10.0.0.1",
       [](const LaunchConfig& c) { EXPECT_EQ(c.master_addr, "10.0.0.1"); }},
      {"--master-port", "1234",
       [](const LaunchConfig& c) {
         EXPECT_EQ(c.master_port, 1234);
         EXPECT_TRUE(c.master_port_explicit);
       }},
      {"--local-addr", "node1", [](const LaunchConfig& c) { EXPECT_EQ(c.local_addr, "node1"); }},
      {"--logs-specs", "default",
       [](const LaunchConfig& c) { EXPECT_EQ(c.logs_specs, "default"); }},
      {"--numa-binding", "core-complex",
       [](const LaunchConfig& c) { EXPECT_EQ(c.numa_binding, "core-complex"); }},
      {"--signals-to-handle", "SIGTERM,SIGUSR1",
       [](const LaunchConfig& c) {
         EXPECT_THAT(c.signals_to_handle, ElementsAre("SIGTERM", "SIGUSR1"));
       }},
      {"--forward-signals", "SIGUSR1",
       [](const LaunchConfig& c) { EXPECT_THAT(c.forward_signals, ElementsAre("SIGUSR1")); }},
      {"--shutdown-timeout", "5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.shutdown_timeout, 5.0); }},
      {"--exit-barrier-timeout", "7.5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.exit_barrier_timeout, 7.5); }},
      {"--straggler-warning", "5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.straggler_warning, 5.0); }},
      {"--straggler-timeout", "6",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.straggler_timeout, 6.0); }},
      {"--hang-timeout", "7.5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.hang_timeout, 7.5); }},
      {"--metrics-port", "9400", [](const LaunchConfig& c) { EXPECT_EQ(c.metrics_port, 9400); }},
      {"--event-log", "ev.jsonl",
       [](const LaunchConfig& c) { EXPECT_EQ(c.event_log, "ev.jsonl"); }},
      {"--max-membership-restarts", "-1",
       [](const LaunchConfig& c) { EXPECT_EQ(c.max_membership_restarts, -1); }},
      {"--no-restart-exit-codes", " 3, 2,,3",
       [](const LaunchConfig& c) {
         EXPECT_EQ(c.no_restart_exit_codes, (std::set<int>{2, 3}));
       }},
      {"--summary-json", "/tmp/s.json",
       [](const LaunchConfig& c) { EXPECT_EQ(c.summary_json, "/tmp/s.json"); }},
      {"--log-level", "DEBUG", [](const LaunchConfig& c) { EXPECT_EQ(c.log_level, "debug"); }},
      // (a named platform needs its variables: tests/unit/platform covers those)
      {"--platform", "none", [](const LaunchConfig& c) { EXPECT_EQ(c.platform, "none"); }},
      {"-j", "2x8",
       [](const LaunchConfig& c) {
         EXPECT_EQ(c.min_nodes, 2);
         EXPECT_EQ(c.max_nodes, 2);
         EXPECT_EQ(c.nproc_per_node, 8);
       }},
  };
}

// The table entry whose spellings include `spelling` (nullptr if none).
const detail::OptionSpec* TableOption(const std::string& spelling) {
  for (const auto& spec : detail::Options()) {
    if (std::find(spec.strings.begin(), spec.strings.end(), spelling) != spec.strings.end()) {
      return &spec;
    }
  }
  return nullptr;
}

TEST(CliOptions, EveryValueOptionInEverySpellingAndForm) {
  const auto cases = ValueCases();
  for (const auto& spec : detail::Options()) {
    if (spec.arity != detail::Arity::kValue) continue;
    const auto vc = std::find_if(cases.begin(), cases.end(), [&](const ValueCase& c) {
      return std::find(spec.strings.begin(), spec.strings.end(), c.dash) != spec.strings.end();
    });
    ASSERT_NE(vc, cases.end()) << spec.Display() << " has no case in value_cases()";
    for (const auto& s : spec.strings) {
      SCOPED_TRACE(s);
      vc->check(Cfg({s, vc->value, "train.py"}));
      vc->check(Cfg({s + "=" + vc->value, "train.py"}));
    }
  }
  for (const auto& vc : cases) {
    const auto* spec = TableOption(vc.dash);
    ASSERT_NE(spec, nullptr) << vc.dash << " is not an option of the table";
    EXPECT_EQ(spec->arity, detail::Arity::kValue) << vc.dash;
  }
}

TEST(CliOptions, EveryFlagInEverySpelling) {
  // argparse dest -> the LaunchConfig field the flag sets; the spellings come from the table.
  const std::map<std::string, bool LaunchConfig::*> fields = {
      {"standalone", &LaunchConfig::standalone},
      {"module", &LaunchConfig::module},
      {"no_python", &LaunchConfig::no_python},
      {"run_path", &LaunchConfig::run_path},
      {"virtual_local_rank", &LaunchConfig::virtual_local_rank},
      {"dry_run", &LaunchConfig::dry_run},
      {"flash_checkpoint", &LaunchConfig::flash_checkpoint},
  };
  int flags = 0;
  for (const auto& spec : detail::Options()) {
    if (spec.arity != detail::Arity::kFlag) continue;
    ++flags;
    const auto field = fields.find(spec.dest);
    ASSERT_NE(field, fields.end()) << spec.Display() << " has no field in this test";
    for (const auto& spelling : spec.strings) {
      SCOPED_TRACE(spelling);
      EXPECT_TRUE(Cfg({spelling, "train.py"}).*field->second);
      EXPECT_FALSE(Cfg({"train.py"}).*field->second);
    }
  }
  EXPECT_EQ(flags, static_cast<int>(fields.size())) << "a field above names no flag of the table";
}

TEST(CliOptions, ShortOptionForms) {
  EXPECT_EQ(Cfg({"-r", "3", "x.py"}).redirects.all, Std::kAll);
  EXPECT_EQ(Cfg({"-r3", "x.py"}).redirects.all, Std::kAll);
  EXPECT_EQ(Cfg({"-r=1", "x.py"}).redirects.all, Std::kOut);
  EXPECT_EQ(Cfg({"-t", "2", "x.py"}).tee.all, Std::kErr);
  EXPECT_EQ(Cfg({"-t1", "x.py"}).tee.all, Std::kOut);
  // Clustered short flags, as argparse: -m then -t 3.
  const auto c = Cfg({"-mt3", "x.py"});
  EXPECT_TRUE(c.module);
  EXPECT_EQ(c.tee.all, Std::kAll);
  const auto c2 = Cfg({"-mr", "2", "x.py"});
  EXPECT_TRUE(c2.module);
  EXPECT_EQ(c2.redirects.all, Std::kErr);
  EXPECT_EQ(ErrorOf({"-mfoo", "x.py"}),
            "argument -m/--module: ignored explicit argument 'foo' (-m takes no value)");
  EXPECT_THAT(ErrorOf({"--standalone=1", "x.py"}),
              HasSubstr("argument --standalone: ignored explicit argument '1'"));
}

TEST(CliOptions, LastOccurrenceWins) {
  EXPECT_EQ(Cfg({"--max-restarts", "1", "--max_restarts=2", "x.py"}).max_restarts, 2);
  EXPECT_EQ(Cfg({"--role", "a", "--role", "b", "x.py"}).role, "b");
}

TEST(CliOptions, ValueStartingWithDash) {
  // torchrun refuses a LogsSpecs name with no torchrun.logs_specs entry point before starting.
  EXPECT_THAT(ErrorOf({"--logs-specs", "DOESNOT_EXIST", "x.py"}),
              AllOf(HasSubstr("--logs-specs"), HasSubstr("'torchrun.logs_specs[DOESNOT_EXIST]'"),
                    HasSubstr("default")));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "-a", "x.py"}),
              HasSubstr("argument --rdzv-conf/--rdzv_conf: expected one argument"));
  EXPECT_THAT(ErrorOf({"--nnodes"}), HasSubstr("argument --nnodes: expected one argument"));
  EXPECT_THAT(ErrorOf({"--nnodes", "--", "x.py"}), HasSubstr("expected one argument"));
  // --opt=-value is fine, and so are negative numbers (argparse rules) ...
  EXPECT_EQ(Cfg({"--role=-a", "x.py"}).role, "-a");
  EXPECT_EQ(Cfg({"--role", "-1.5", "x.py"}).role, "-1.5");
  // ... which then fail validation with a clear reason, not "expected one argument".
  EXPECT_THAT(
      ErrorOf({"--node-rank", "-1", "x.py"}),
      HasSubstr("argument --node-rank/--node_rank: invalid value '-1': node-rank must be >= 0"));
}

// ------------------------------------------------------------ abbreviations

TEST(CliAbbrev, UniquePrefixesResolve) {
  EXPECT_EQ(Cfg({"--nproc-per", "2", "x.py"}).nproc_per_node, 2);
  EXPECT_EQ(Cfg({"--nproc-per=2", "x.py"}).nproc_per_node, 2);
  EXPECT_TRUE(Cfg({"--stand", "x.py"}).standalone);
  EXPECT_TRUE(Cfg({"--no-p", "x.py"}).no_python);
  EXPECT_EQ(Cfg({"--max-r", "4", "x.py"}).max_restarts, 4);
  EXPECT_EQ(Cfg({"--nn", "2", "x.py"}).max_nodes, 2);
  EXPECT_EQ(Cfg({"--plat", "none", "x.py"}).platform, "none");
  // torchrun's --log- means --log-dir; tzrun's --log-level does not steal it.
  EXPECT_EQ(Cfg({"--log-", "/tmp/x", "x.py"}).log_dir, "/tmp/x");
  EXPECT_EQ(Cfg({"--log-l", "info", "x.py"}).log_level, "info");
  // torchrun's --max- / --no- keep meaning --max-restarts / --no-python next to the tzrun
  // extensions --max-membership-restarts / --no-restart-exit-codes.
  EXPECT_EQ(Cfg({"--max-", "2", "x.py"}).max_restarts, 2);
  EXPECT_TRUE(Cfg({"--no-", "x.py"}).no_python);
}

TEST(CliAbbrev, AmbiguousPrefixListsCandidates) {
  EXPECT_EQ(ErrorOf({"--n", "2", "x.py"}),
            "ambiguous option: --n could match --nnodes, --nproc-per-node, --nproc_per_node, "
            "--no-python, --no_python, --node-rank, --node_rank, --numa-binding, --numa_binding, "
            "--no-restart-exit-codes, --no_restart_exit_codes (type more of the option name)");
  EXPECT_THAT(
      ErrorOf({"--st", "x.py"}),
      HasSubstr("ambiguous option: --st could match --standalone, --start-method, --start_method"));
  // Same as Python 3.11 argparse: the two spellings of one option are two candidates.
  EXPECT_THAT(
      ErrorOf({"--nproc=2", "x.py"}),
      HasSubstr("ambiguous option: --nproc could match --nproc-per-node, --nproc_per_node"));
}

// ----------------------------------------------------- script and REMAINDER

TEST(CliRemainder, EverythingAfterTheScriptIsPassedVerbatim) {
  const auto c = Cfg({"--nproc-per-node", "2", "train.py", "--nproc-per-node", "3", "-h", "--n"});
  EXPECT_EQ(c.nproc_per_node, 2);
  EXPECT_EQ(c.training_script, "train.py");
  EXPECT_THAT(c.training_script_args, ElementsAre("--nproc-per-node", "3", "-h", "--n"));
}

TEST(CliRemainder, DoubleDashLikePython311Argparse) {
  auto c = Cfg({"--", "x.py", "a"});
  EXPECT_EQ(c.training_script, "x.py");
  EXPECT_THAT(c.training_script_args, ElementsAre("a"));
  c = Cfg({"--", "--nnodes", "x.py"});  // after '--' everything is positional
  EXPECT_EQ(c.training_script, "--nnodes");
  EXPECT_THAT(c.training_script_args, ElementsAre("x.py"));
  c = Cfg({"x.py", "--", "a"});  // the '--' right after the script is dropped
  EXPECT_THAT(c.training_script_args, ElementsAre("a"));
  c = Cfg({"x.py", "--", "--", "a"});
  EXPECT_THAT(c.training_script_args, ElementsAre("--", "a"));
  c = Cfg({"--", "x.py", "--", "a"});
  EXPECT_THAT(c.training_script_args, ElementsAre("--", "a"));
  c = Cfg({"x.py", "a", "--", "b"});
  EXPECT_THAT(c.training_script_args, ElementsAre("a", "--", "b"));
}

TEST(CliRemainder, ScriptLikeTokens) {
  EXPECT_EQ(Cfg({"-", "a"}).training_script, "-");
  EXPECT_EQ(Cfg({"-5", "a"}).training_script, "-5");  // negative number => positional
  EXPECT_EQ(Cfg({"-m", "pkg.mod", "--lr", "1"}).training_script, "pkg.mod");
}

TEST(CliRemainder, MissingScript) {
  for (const Args& args : {Args{}, Args{"--nnodes", "2"}, Args{"--standalone", "--"}}) {
    EXPECT_THAT(ErrorOf(args), HasSubstr("the following arguments are required: training_script, "
                                         "training_script_args"));
  }
  EXPECT_THAT(ErrorOf({""}), HasSubstr("training_script is empty"));
}

TEST(CliRemainder, UnknownOptionsBeforeTheScript) {
  try {
    RunCli({"--foo", "--bar=1", "x.py", "--baz"});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.ExitCode(), 2);
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("tzrun: error: unrecognized arguments: --foo --bar=1"));
    EXPECT_THAT(std::string(e.what()), StartsWith("usage: tzrun [-h] [--nnodes NNODES]"));
    EXPECT_THAT(e.Message(), Not(HasSubstr("--baz")));
  }
  EXPECT_THAT(ErrorOf({"-x", "x.py"}), HasSubstr("unrecognized arguments: -x"));
}

}  // namespace
}  // namespace tzrun::cli
