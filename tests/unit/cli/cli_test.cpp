// Behaviour of tzrun::cli::parse against torchrun 2.11's argparse front end
// (torch/distributed/run.py, torch/distributed/argparse_util.py).
#include "tzrun/cli/cli.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "options.hpp"  // the real option table (src/cli, on this target's include path)

namespace tzrun::cli {
namespace {

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
  [[nodiscard]] HostProbe probe() const { return HostProbe{root_, kFakeCpus}; }
  [[nodiscard]] const fs::path& root() const { return root_; }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

ParseOutcome run(const Args& args, const Env& env = {}, int gpus = 0) {
  FakeHost host(gpus);
  return parse(args, env, host.probe());
}

LaunchConfig cfg(const Args& args, const Env& env = {}, int gpus = 0) {
  auto out = run(args, env, gpus);
  EXPECT_EQ(out.kind, ParseOutcome::Kind::kRun);
  return out.config;
}

/// The one-line message of the UsageError `args` must raise ("" if none).
std::string error_of(const Args& args, const Env& env = {}, int gpus = 0) {
  try {
    run(args, env, gpus);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_THAT(std::string(e.what()), StartsWith("usage: tzrun [-h]"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("\ntzrun: error: " + e.message()));
    return e.message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

// ---------------------------------------------------------------- defaults

TEST(CliDefaults, MatchTorchrun) {
  const auto c = cfg({"train.py"});
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
  EXPECT_FALSE(c.numa_binding.has_value());
  EXPECT_THAT(c.signals_to_handle, ElementsAre("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"));
  EXPECT_FALSE(c.virtual_local_rank);
  EXPECT_DOUBLE_EQ(c.shutdown_timeout, 30.0);
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

std::vector<ValueCase> value_cases() {
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
      {"--logs-specs", "mine", [](const LaunchConfig& c) { EXPECT_EQ(c.logs_specs, "mine"); }},
      {"--numa-binding", "core-complex",
       [](const LaunchConfig& c) { EXPECT_EQ(c.numa_binding, "core-complex"); }},
      {"--signals-to-handle", "SIGTERM,SIGUSR1",
       [](const LaunchConfig& c) {
         EXPECT_THAT(c.signals_to_handle, ElementsAre("SIGTERM", "SIGUSR1"));
       }},
      {"--shutdown-timeout", "5",
       [](const LaunchConfig& c) { EXPECT_DOUBLE_EQ(c.shutdown_timeout, 5.0); }},
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
const detail::OptionSpec* table_option(const std::string& spelling) {
  for (const auto& spec : detail::options()) {
    if (std::find(spec.strings.begin(), spec.strings.end(), spelling) != spec.strings.end()) {
      return &spec;
    }
  }
  return nullptr;
}

TEST(CliOptions, EveryValueOptionInEverySpellingAndForm) {
  const auto cases = value_cases();
  for (const auto& spec : detail::options()) {
    if (spec.arity != detail::Arity::kValue) continue;
    const auto vc = std::find_if(cases.begin(), cases.end(), [&](const ValueCase& c) {
      return std::find(spec.strings.begin(), spec.strings.end(), c.dash) != spec.strings.end();
    });
    ASSERT_NE(vc, cases.end()) << spec.display() << " has no case in value_cases()";
    for (const auto& s : spec.strings) {
      SCOPED_TRACE(s);
      vc->check(cfg({s, vc->value, "train.py"}));
      vc->check(cfg({s + "=" + vc->value, "train.py"}));
    }
  }
  for (const auto& vc : cases) {
    const auto* spec = table_option(vc.dash);
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
  };
  int flags = 0;
  for (const auto& spec : detail::options()) {
    if (spec.arity != detail::Arity::kFlag) continue;
    ++flags;
    const auto field = fields.find(spec.dest);
    ASSERT_NE(field, fields.end()) << spec.display() << " has no field in this test";
    for (const auto& spelling : spec.strings) {
      SCOPED_TRACE(spelling);
      EXPECT_TRUE(cfg({spelling, "train.py"}).*field->second);
      EXPECT_FALSE(cfg({"train.py"}).*field->second);
    }
  }
  EXPECT_EQ(flags, static_cast<int>(fields.size())) << "a field above names no flag of the table";
}

TEST(CliOptions, ShortOptionForms) {
  EXPECT_EQ(cfg({"-r", "3", "x.py"}).redirects.all, Std::kAll);
  EXPECT_EQ(cfg({"-r3", "x.py"}).redirects.all, Std::kAll);
  EXPECT_EQ(cfg({"-r=1", "x.py"}).redirects.all, Std::kOut);
  EXPECT_EQ(cfg({"-t", "2", "x.py"}).tee.all, Std::kErr);
  EXPECT_EQ(cfg({"-t1", "x.py"}).tee.all, Std::kOut);
  // Clustered short flags, as argparse: -m then -t 3.
  const auto c = cfg({"-mt3", "x.py"});
  EXPECT_TRUE(c.module);
  EXPECT_EQ(c.tee.all, Std::kAll);
  const auto c2 = cfg({"-mr", "2", "x.py"});
  EXPECT_TRUE(c2.module);
  EXPECT_EQ(c2.redirects.all, Std::kErr);
  EXPECT_EQ(error_of({"-mfoo", "x.py"}),
            "argument -m/--module: ignored explicit argument 'foo' (-m takes no value)");
  EXPECT_THAT(error_of({"--standalone=1", "x.py"}),
              HasSubstr("argument --standalone: ignored explicit argument '1'"));
}

TEST(CliOptions, LastOccurrenceWins) {
  EXPECT_EQ(cfg({"--max-restarts", "1", "--max_restarts=2", "x.py"}).max_restarts, 2);
  EXPECT_EQ(cfg({"--role", "a", "--role", "b", "x.py"}).role, "b");
}

TEST(CliOptions, ValueStartingWithDash) {
  EXPECT_THAT(error_of({"--rdzv-conf", "-a", "x.py"}),
              HasSubstr("argument --rdzv-conf/--rdzv_conf: expected one argument"));
  EXPECT_THAT(error_of({"--nnodes"}), HasSubstr("argument --nnodes: expected one argument"));
  EXPECT_THAT(error_of({"--nnodes", "--", "x.py"}), HasSubstr("expected one argument"));
  // --opt=-value is fine, and so are negative numbers (argparse rules) ...
  EXPECT_EQ(cfg({"--role=-a", "x.py"}).role, "-a");
  EXPECT_EQ(cfg({"--role", "-1.5", "x.py"}).role, "-1.5");
  // ... which then fail validation with a clear reason, not "expected one argument".
  EXPECT_THAT(
      error_of({"--node-rank", "-1", "x.py"}),
      HasSubstr("argument --node-rank/--node_rank: invalid value '-1': node-rank must be >= 0"));
}

// ------------------------------------------------------------ abbreviations

TEST(CliAbbrev, UniquePrefixesResolve) {
  EXPECT_EQ(cfg({"--nproc-per", "2", "x.py"}).nproc_per_node, 2);
  EXPECT_EQ(cfg({"--nproc-per=2", "x.py"}).nproc_per_node, 2);
  EXPECT_TRUE(cfg({"--stand", "x.py"}).standalone);
  EXPECT_TRUE(cfg({"--no-p", "x.py"}).no_python);
  EXPECT_EQ(cfg({"--max-r", "4", "x.py"}).max_restarts, 4);
  EXPECT_EQ(cfg({"--nn", "2", "x.py"}).max_nodes, 2);
  EXPECT_EQ(cfg({"--plat", "none", "x.py"}).platform, "none");
  // torchrun's --log- means --log-dir; tzrun's --log-level does not steal it.
  EXPECT_EQ(cfg({"--log-", "/tmp/x", "x.py"}).log_dir, "/tmp/x");
  EXPECT_EQ(cfg({"--log-l", "info", "x.py"}).log_level, "info");
}

TEST(CliAbbrev, AmbiguousPrefixListsCandidates) {
  EXPECT_EQ(error_of({"--n", "2", "x.py"}),
            "ambiguous option: --n could match --nnodes, --nproc-per-node, --nproc_per_node, "
            "--no-python, --no_python, --node-rank, --node_rank, --numa-binding, --numa_binding "
            "(type more of the option name)");
  EXPECT_THAT(
      error_of({"--st", "x.py"}),
      HasSubstr("ambiguous option: --st could match --standalone, --start-method, --start_method"));
  // Same as Python 3.11 argparse: the two spellings of one option are two candidates.
  EXPECT_THAT(
      error_of({"--nproc=2", "x.py"}),
      HasSubstr("ambiguous option: --nproc could match --nproc-per-node, --nproc_per_node"));
}

// -------------------------------------------------------------- PET_ env

TEST(CliPet, FlagBeatsEnvBeatsDefaultForSeveralTypes) {
  // int
  EXPECT_EQ(cfg({"x.py"}, {{"PET_MAX_RESTARTS", "3"}}).max_restarts, 3);
  EXPECT_EQ(cfg({"--max-restarts", "1", "x.py"}, {{"PET_MAX_RESTARTS", "3"}}).max_restarts, 1);
  EXPECT_EQ(cfg({"x.py"}).max_restarts, 0);
  // string
  EXPECT_EQ(cfg({"x.py"}, {{"PET_RDZV_BACKEND", "c10d"}}).rdzv_backend, "c10d");
  EXPECT_EQ(cfg({"--rdzv-backend", "static", "x.py"}, {{"PET_RDZV_BACKEND", "c10d"}}).rdzv_backend,
            "static");
  // float
  EXPECT_DOUBLE_EQ(cfg({"x.py"}, {{"PET_MONITOR_INTERVAL", "2.5"}}).monitor_interval, 2.5);
  // choice
  EXPECT_EQ(cfg({"x.py"}, {{"PET_START_METHOD", "forkserver"}}).start_method, "forkserver");
  // nproc spec, nnodes, -r (PET_ name is the long destination, not PET_R)
  EXPECT_EQ(cfg({"x.py"}, {{"PET_NPROC_PER_NODE", "4"}}).nproc_per_node, 4);
  EXPECT_EQ(cfg({"--nproc-per-node", "2", "x.py"}, {{"PET_NPROC_PER_NODE", "4"}}).nproc_per_node,
            2);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_NNODES", "1:3"}}).max_nodes, 3);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_REDIRECTS", "0:1"}}).redirects.for_rank(0), Std::kOut);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_R", "3"}}).redirects.all, Std::kNone);
  // master port from env counts as explicit.
  const auto c = cfg({"x.py"}, {{"PET_MASTER_PORT", "4000"}});
  EXPECT_EQ(c.master_port, 4000);
  EXPECT_TRUE(c.master_port_explicit);
  // extensions have PET_ too
  EXPECT_TRUE(cfg({"x.py"}, {{"PET_DRY_RUN", "1"}}).dry_run);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_PLATFORM", "none"}}).platform, "none");
}

TEST(CliPet, BooleanValues) {
  for (const std::string v : {"1", "true", "TRUE", "yes", "on", "", " 1 ", "2"}) {
    SCOPED_TRACE("PET_STANDALONE='" + v + "'");
    EXPECT_TRUE(cfg({"x.py"}, {{"PET_STANDALONE", v}}).standalone);
  }
  for (const std::string v : {"0", "false", "False", "no", "off"}) {
    SCOPED_TRACE("PET_STANDALONE='" + v + "'");
    EXPECT_FALSE(cfg({"x.py"}, {{"PET_STANDALONE", v}}).standalone);
  }
  // presence on the command line always sets
  EXPECT_TRUE(cfg({"--standalone", "x.py"}, {{"PET_STANDALONE", "0"}}).standalone);
  EXPECT_TRUE(cfg({"x.py"}, {{"PET_MODULE", "1"}}).module);
  EXPECT_TRUE(cfg({"x.py"}, {{"PET_NO_PYTHON", "yes"}}).no_python);
  EXPECT_TRUE(cfg({"x.py"}, {{"PET_RUN_PATH", "on"}}).run_path);
  EXPECT_TRUE(cfg({"x.py"}, {{"PET_VIRTUAL_LOCAL_RANK", "true"}}).virtual_local_rank);
}

TEST(CliPet, BadValuesNameTheVariable) {
  EXPECT_EQ(error_of({"x.py"}, {{"PET_STANDALONE", "maybe"}}),
            "environment variable PET_STANDALONE (default for --standalone): invalid boolean "
            "value: 'maybe' (use 1/true/yes/on to enable or 0/false/no/off to disable, or unset "
            "PET_STANDALONE)");
  EXPECT_EQ(error_of({"x.py"}, {{"PET_MAX_RESTARTS", "x"}}),
            "environment variable PET_MAX_RESTARTS (default for --max-restarts): invalid int "
            "value: 'x' (expected an integer; fix or unset PET_MAX_RESTARTS)");
  EXPECT_THAT(error_of({"x.py"}, {{"PET_START_METHOD", "bogus"}}),
              AllOf(HasSubstr("PET_START_METHOD"), HasSubstr("invalid choice: 'bogus'")));
  EXPECT_THAT(error_of({"x.py"}, {{"PET_NNODES", "0"}}),
              AllOf(HasSubstr("environment variable PET_NNODES"), HasSubstr("'0'")));
  EXPECT_THAT(error_of({"x.py"}, {{"PET_REDIRECTS", "9"}}), HasSubstr("PET_REDIRECTS"));
  // A bad PET_ value is irrelevant when the flag is given.
  EXPECT_EQ(cfg({"--max-restarts", "2", "x.py"}, {{"PET_MAX_RESTARTS", "x"}}).max_restarts, 2);
}

TEST(CliPet, EmptyValueMeansUnsetAndSomeOptionsHaveNoPet) {
  EXPECT_EQ(cfg({"x.py"}, {{"PET_MAX_RESTARTS", ""}}).max_restarts, 0);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_NPROC_PER_NODE", ""}}).nproc_per_node, 1);
  EXPECT_FALSE(cfg({"x.py"}, {{"PET_LOGS_SPECS", "mine"}}).logs_specs.has_value());
  EXPECT_FALSE(cfg({"x.py"}, {{"PET_NUMA_BINDING", "node"}}).numa_binding.has_value());
}

// ----------------------------------------------------- script and REMAINDER

TEST(CliRemainder, EverythingAfterTheScriptIsPassedVerbatim) {
  const auto c = cfg({"--nproc-per-node", "2", "train.py", "--nproc-per-node", "3", "-h", "--n"});
  EXPECT_EQ(c.nproc_per_node, 2);
  EXPECT_EQ(c.training_script, "train.py");
  EXPECT_THAT(c.training_script_args, ElementsAre("--nproc-per-node", "3", "-h", "--n"));
}

TEST(CliRemainder, DoubleDashLikePython311Argparse) {
  auto c = cfg({"--", "x.py", "a"});
  EXPECT_EQ(c.training_script, "x.py");
  EXPECT_THAT(c.training_script_args, ElementsAre("a"));
  c = cfg({"--", "--nnodes", "x.py"});  // after '--' everything is positional
  EXPECT_EQ(c.training_script, "--nnodes");
  EXPECT_THAT(c.training_script_args, ElementsAre("x.py"));
  c = cfg({"x.py", "--", "a"});  // the '--' right after the script is dropped
  EXPECT_THAT(c.training_script_args, ElementsAre("a"));
  c = cfg({"x.py", "--", "--", "a"});
  EXPECT_THAT(c.training_script_args, ElementsAre("--", "a"));
  c = cfg({"--", "x.py", "--", "a"});
  EXPECT_THAT(c.training_script_args, ElementsAre("--", "a"));
  c = cfg({"x.py", "a", "--", "b"});
  EXPECT_THAT(c.training_script_args, ElementsAre("a", "--", "b"));
}

TEST(CliRemainder, ScriptLikeTokens) {
  EXPECT_EQ(cfg({"-", "a"}).training_script, "-");
  EXPECT_EQ(cfg({"-5", "a"}).training_script, "-5");  // negative number => positional
  EXPECT_EQ(cfg({"-m", "pkg.mod", "--lr", "1"}).training_script, "pkg.mod");
}

TEST(CliRemainder, MissingScript) {
  for (const Args& args : {Args{}, Args{"--nnodes", "2"}, Args{"--standalone", "--"}}) {
    EXPECT_THAT(error_of(args), HasSubstr("the following arguments are required: training_script, "
                                          "training_script_args"));
  }
  EXPECT_THAT(error_of({""}), HasSubstr("training_script is empty"));
}

TEST(CliRemainder, UnknownOptionsBeforeTheScript) {
  try {
    run({"--foo", "--bar=1", "x.py", "--baz"});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("tzrun: error: unrecognized arguments: --foo --bar=1"));
    EXPECT_THAT(std::string(e.what()), StartsWith("usage: tzrun [-h] [--nnodes NNODES]"));
    EXPECT_THAT(e.message(), Not(HasSubstr("--baz")));
  }
  EXPECT_THAT(error_of({"-x", "x.py"}), HasSubstr("unrecognized arguments: -x"));
}

// --------------------------------------------------------- --nproc-per-node

TEST(CliNproc, Integers) {
  EXPECT_EQ(cfg({"--nproc-per-node", "4", "x.py"}).nproc_per_node, 4);
  EXPECT_EQ(cfg({"--nproc-per-node", " 4 ", "x.py"}).nproc_per_node, 4);
  EXPECT_EQ(cfg({"--nproc-per-node", "4", "x.py"}).nproc_per_node_spec, "4");
  EXPECT_THAT(error_of({"--nproc-per-node", "0", "x.py"}), HasSubstr("nproc-per-node must be > 0"));
  EXPECT_THAT(error_of({"--nproc-per-node=-2", "x.py"}), HasSubstr("nproc-per-node must be > 0"));
  EXPECT_THAT(error_of({"--nproc-per-node", "many", "x.py"}),
              AllOf(HasSubstr("'many'"), HasSubstr("Unsupported nproc_per_node value")));
  EXPECT_THAT(error_of({"--nproc-per-node", "xpu", "x.py"}), HasSubstr("not supported by tzrun"));
}

TEST(CliNproc, CpuGpuAuto) {
  EXPECT_EQ(cfg({"--nproc-per-node", "cpu", "x.py"}).nproc_per_node, kFakeCpus);
  EXPECT_EQ(cfg({"--nproc-per-node", "cpu", "x.py"}).nproc_per_node_spec, "cpu");
  EXPECT_EQ(cfg({"--nproc-per-node", "gpu", "x.py"}, {}, 2).nproc_per_node, 2);
  EXPECT_EQ(
      cfg({"--nproc-per-node", "gpu", "x.py"}, {{"CUDA_VISIBLE_DEVICES", "1"}}, 2).nproc_per_node,
      1);
  EXPECT_EQ(cfg({"--nproc-per-node", "auto", "x.py"}, {}, 3).nproc_per_node, 3);
  EXPECT_EQ(cfg({"--nproc-per-node", "auto", "x.py"}, {}, 0).nproc_per_node, kFakeCpus);
  EXPECT_EQ(
      cfg({"--nproc-per-node", "auto", "x.py"}, {{"CUDA_VISIBLE_DEVICES", ""}}, 4).nproc_per_node,
      kFakeCpus);
  const auto msg = error_of({"--nproc-per-node", "gpu", "x.py"}, {}, 0);
  EXPECT_THAT(msg, AllOf(HasSubstr("--nproc-per-node=gpu but no NVIDIA GPU is visible"),
                         HasSubstr("use an integer or cpu")));
  EXPECT_THAT(error_of({"--nproc-per-node", "gpu", "x.py"}, {{"CUDA_VISIBLE_DEVICES", "-1"}}, 2),
              HasSubstr("CUDA_VISIBLE_DEVICES='-1'"));
}

// --------------------------------------------------------------- rendezvous

TEST(CliRdzv, ConfParsing) {
  const auto c = cfg({"--rdzv-backend", "c10d", "--rdzv-conf", " a=1, b = 2 ,c=x=y ", "x.py"});
  EXPECT_EQ(c.rdzv_conf,
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}, {"c", "x=y"}}));
  EXPECT_THAT(error_of({"--rdzv-conf", "=1", "x.py"}),
              HasSubstr("The rendezvous configuration string must be in format "
                        "<key1>=<value1>,...,<keyN>=<valueN>."));
  EXPECT_THAT(error_of({"--rdzv-conf", "a", "x.py"}),
              HasSubstr("The rendezvous configuration option 'a' must have a value specified."));
  EXPECT_THAT(error_of({"--rdzv-conf", "a= ", "x.py"}), HasSubstr("option 'a' must have a value"));
  EXPECT_THAT(error_of({"--rdzv-conf", "a=1,,b=2", "x.py"}), HasSubstr("must be in format"));
  EXPECT_THAT(error_of({"--rdzv-conf", "a", "x.py"}),
              HasSubstr("argument --rdzv-conf/--rdzv_conf: invalid value 'a'"));
}

TEST(CliRdzv, StaticBackendGetsNodeRank) {
  auto c = cfg({"--nnodes", "2", "--node-rank", "1", "--rdzv-conf", "rank=5,timeout=10", "x.py"});
  EXPECT_EQ(c.rdzv_conf.at("rank"), "1");
  EXPECT_EQ(c.rdzv_conf.at("timeout"), "10");
  c = cfg({"--rdzv-backend", "c10d", "--node-rank", "3", "x.py"});
  EXPECT_EQ(c.rdzv_conf.count("rank"), 0U);
  EXPECT_THAT(error_of({"--node-rank", "1", "x.py"}),
              HasSubstr("node-rank must be < the number of nodes (1)"));
}

TEST(CliRdzv, StandaloneOverridesRendezvousSettings) {
  const auto c = cfg({"--standalone", "--rdzv-backend", "static", "--rdzv-endpoint", "h:1",
                      "--rdzv-id", "mine", "x.py"});
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.rdzv_backend, "c10d");
  EXPECT_EQ(c.rdzv_endpoint, "localhost:0");
  EXPECT_TRUE(std::regex_match(
      c.rdzv_id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << c.rdzv_id;
  EXPECT_EQ(c.rdzv_conf.count("rank"), 0U);
  EXPECT_NE(c.rdzv_id, cfg({"--standalone", "x.py"}).rdzv_id);
  EXPECT_EQ(cfg({"x.py"}, {{"PET_STANDALONE", "1"}}).rdzv_backend, "c10d");
}

TEST(CliRdzv, EmptyRunIdBecomesRandom) {
  const auto out = run({"--rdzv-id=", "x.py"});
  EXPECT_EQ(out.config.rdzv_id.size(), 36U);
  ASSERT_EQ(out.warnings.size(), 1U);
  EXPECT_THAT(out.warnings[0], HasSubstr("generated a random run_id"));
}

TEST(CliRdzv, MasterAddrWarningWithDynamicBackend) {
  EXPECT_EQ(run({"--rdzv-backend", "c10d", "--master-addr", "h", "x.py"}).warnings.size(), 1U);
  EXPECT_TRUE(run({"--rdzv-backend", "c10d", "x.py"}).warnings.empty());
  EXPECT_TRUE(run({"--master-addr", "h", "x.py"}).warnings.empty());
}

// ------------------------------------------------------------- -r / -t maps

TEST(CliStd, ValuesAndMaps) {
  auto c = cfg({"-r", "0:1,1:2", "-t", "0:3,12:1", "x.py"});
  EXPECT_EQ(c.redirects.for_rank(0), Std::kOut);
  EXPECT_EQ(c.redirects.for_rank(1), Std::kErr);
  EXPECT_EQ(c.redirects.for_rank(2), Std::kNone);
  EXPECT_EQ(c.tee.for_rank(0), Std::kAll);
  EXPECT_EQ(c.tee.for_rank(12), Std::kOut);  // multi-digit local rank (tzrun)
  EXPECT_EQ(c.tee.for_rank(1), Std::kNone);
  EXPECT_EQ(cfg({"-t", "0", "x.py"}).tee.all, Std::kNone);
  for (const std::string bad : {"4", "0:4", "a:1", "", "0:1,", "1:", ":1", "01", "0:1;1:2", "-1"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of({"-r", bad, "x.py"}),
                AllOf(HasSubstr("argument -r/--redirects: invalid value"),
                      HasSubstr("or a map like 0:1,1:2")));
  }
  EXPECT_THAT(error_of({"--tee=9", "x.py"}), HasSubstr("argument -t/--tee"));
}

// -------------------------------------------------------- other validation

TEST(CliValidate, Nnodes) {
  EXPECT_EQ(cfg({"--nnodes", "2", "--node-rank", "1", "x.py"}).min_nodes, 2);
  const auto c = cfg({"--nnodes", "1:4", "x.py"});
  EXPECT_EQ(c.min_nodes, 1);
  EXPECT_EQ(c.max_nodes, 4);
  for (const std::string bad : {"0", "3:2", "0:2", "1:2:3", "a", "", "1:"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of({"--nnodes=" + bad, "x.py"}),
                AllOf(HasSubstr("argument --nnodes: invalid value"), HasSubstr("MIN:MAX")));
  }
}

TEST(CliValidate, NumbersAndRanges) {
  EXPECT_THAT(error_of({"--max-restarts", "-1", "x.py"}), HasSubstr("max_restarts must be >= 0"));
  EXPECT_EQ(error_of({"--max-restarts", "x", "x.py"}),
            "argument --max-restarts/--max_restarts: invalid int value: 'x' (expected an integer)");
  EXPECT_EQ(cfg({"--max-restarts", "1_0", "x.py"}).max_restarts, 10);  // Python int()
  EXPECT_THAT(error_of({"--monitor-interval", "0", "x.py"}),
              HasSubstr("monitor-interval must be > 0"));
  EXPECT_THAT(error_of({"--monitor-interval", "nan", "x.py"}),
              HasSubstr("monitor-interval must be > 0"));
  EXPECT_THAT(error_of({"--monitor-interval", "fast", "x.py"}),
              HasSubstr("invalid float value: 'fast'"));
  EXPECT_DOUBLE_EQ(cfg({"--monitor-interval", "1e-1", "x.py"}).monitor_interval, 0.1);
  EXPECT_EQ(cfg({"--master-port", "0", "x.py"}).master_port, 0);
  EXPECT_EQ(cfg({"--master-port", "65535", "x.py"}).master_port, 65535);
  EXPECT_THAT(error_of({"--master-port", "65536", "x.py"}),
              HasSubstr("master-port must be in 0..65535"));
  EXPECT_THAT(error_of({"--master-port", "0x10", "x.py"}), HasSubstr("invalid int value: '0x10'"));
}

TEST(CliValidate, Choices) {
  EXPECT_EQ(error_of({"--start-method", "bogus", "x.py"}),
            "argument --start-method/--start_method: invalid choice: 'bogus' (choose from "
            "'spawn', 'fork', 'forkserver')");
  EXPECT_THAT(error_of({"--numa-binding", "cpu", "x.py"}),
              HasSubstr("choose from 'node', 'socket', 'exclusive', 'core-complex'"));
  EXPECT_THAT(error_of({"--platform", "k8s", "x.py"}), HasSubstr("invalid choice: 'k8s'"));
  EXPECT_THAT(error_of({"--event-log-handler", "foo", "x.py"}),
              HasSubstr("use null, console or dynamic_rendezvous"));
}

TEST(CliValidate, ModuleAndNoPython) {
  EXPECT_THAT(
      error_of({"-m", "--no-python", "x"}),
      HasSubstr("Don't use both the '--no-python' flag and the '--module' flag at the same time."));
  EXPECT_THAT(error_of({"-m", "x"}, {{"PET_NO_PYTHON", "1"}}), HasSubstr("'--no-python' flag"));
  // run.py checks --run-path first, so the combination is accepted there.
  EXPECT_TRUE(cfg({"-m", "--no-python", "--run-path", "/abs/x.py"}).run_path);
}

TEST(CliValidate, LocalRanksFilterAndDuplicateFilters) {
  EXPECT_EQ(cfg({"--local-ranks-filter", "0, 1,1", "x.py"}).local_ranks_filter,
            (std::set<int>{0, 1}));
  EXPECT_THAT(error_of({"--local-ranks-filter", "0,x", "x.py"}),
              HasSubstr("comma-separated list of non-negative integers"));
  EXPECT_THAT(error_of({"--local-ranks-filter", "0,,1", "x.py"}),
              HasSubstr("--local_ranks_filter"));
  EXPECT_THAT(error_of({"--local-ranks-filter", "-1", "x.py"}), HasSubstr("non-negative"));
  EXPECT_THAT(cfg({"--duplicate-stdout-filters", "a,,b,c", "x.py"}).duplicate_stdout_filters,
              ElementsAre("a,b", "c"));
  EXPECT_THAT(cfg({"--duplicate-stdout-filters", "a,", "x.py"}).duplicate_stdout_filters,
              ElementsAre("a"));
  EXPECT_THAT(cfg({"x.py"}, {{"PET_DUPLICATE_STDERR_FILTERS", "err"}}).duplicate_stderr_filters,
              ElementsAre("err"));
}

TEST(CliValidate, SignalsToHandle) {
  EXPECT_THAT(cfg({"--signals-to-handle", " SIGTERM , SIGUSR2,SIGTERM,", "x.py"}).signals_to_handle,
              ElementsAre("SIGTERM", "SIGUSR2"));
  EXPECT_THAT(error_of({"--signals-to-handle", "SIGTERM,SIGFOO", "x.py"}),
              HasSubstr("unknown signal name 'SIGFOO'"));
  EXPECT_THAT(error_of({"--signals-to-handle", "sigterm", "x.py"}),
              HasSubstr("unknown signal name"));
  EXPECT_THAT(error_of({"--signals-to-handle", "SIGKILL", "x.py"}),
              HasSubstr("SIGKILL cannot be caught"));
  EXPECT_THAT(error_of({"--signals-to-handle", "SIGCHLD", "x.py"}),
              HasSubstr("cannot be forwarded"));
  EXPECT_THAT(cfg({"--signals-to-handle", "SIGIOT,SIGPOLL", "x.py"}).signals_to_handle,
              ElementsAre("SIGIOT", "SIGPOLL"));
}

TEST(CliValidate, ShutdownTimeout) {
  EXPECT_DOUBLE_EQ(cfg({"x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}}).shutdown_timeout, 7.0);
  EXPECT_DOUBLE_EQ(
      cfg({"x.py"}, {{"PET_SHUTDOWN_TIMEOUT", "8"}, {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}})
          .shutdown_timeout,
      8.0);
  EXPECT_DOUBLE_EQ(
      cfg({"--shutdown-timeout", "0", "x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}})
          .shutdown_timeout,
      0.0);
  EXPECT_THAT(error_of({"--shutdown-timeout=-1", "x.py"}),
              HasSubstr("shutdown-timeout must be >= 0"));
  EXPECT_THAT(
      error_of({"x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "soon"}}),
      HasSubstr("environment variable TORCH_ELASTIC_SHUTDOWN_TIMEOUT: invalid value 'soon'"));
}

TEST(CliValidate, LogLevel) {
  EXPECT_EQ(cfg({"x.py"}, {{"LOGLEVEL", "INFO"}}).log_level, "info");
  EXPECT_EQ(cfg({"x.py"}, {{"LOGLEVEL", "WARN"}}).log_level, "warning");
  EXPECT_EQ(cfg({"--log-level", "error", "x.py"}, {{"LOGLEVEL", "INFO"}}).log_level, "error");
  EXPECT_EQ(cfg({"x.py"}, {{"PET_LOG_LEVEL", "debug"}, {"LOGLEVEL", "INFO"}}).log_level, "debug");
  EXPECT_THAT(error_of({"--log-level", "loud", "x.py"}), HasSubstr("unknown log level"));
  EXPECT_THAT(error_of({"x.py"}, {{"LOGLEVEL", "loud"}}),
              HasSubstr("environment variable LOGLEVEL"));
}

// --------------------------------------------------------- help / version

TEST(CliHelp, ShapeAndPrecedence) {
  for (const Args& args : {Args{"-h"}, Args{"--help"}, Args{"--he"}, Args{"--foo", "-h"},
                           Args{"-mh"}, Args{"--nnodes", "2", "--help", "x.py"}}) {
    const auto out = run(args);
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
  EXPECT_THAT(error_of({"--max-restarts", "x", "-h"}), HasSubstr("invalid int value"));
  EXPECT_THAT(error_of({"--help=1"}),
              HasSubstr("argument -h/--help: ignored explicit argument '1'"));
  // -h after the script belongs to the script.
  EXPECT_EQ(run({"x.py", "-h"}).kind, ParseOutcome::Kind::kRun);
}

TEST(CliHelp, WrapsToColumns) {
  const auto t = run({"--help"}, {{"COLUMNS", "100"}}).text;
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
  EXPECT_NE(help_text(100), help_text(80));
}

TEST(CliVersion, PrintsProjectVersion) {
  for (const Args& args :
       {Args{"-V"}, Args{"--version"}, Args{"--vers"}, Args{"--nnodes", "2", "-V", "x.py"}}) {
    const auto out = run(args);
    ASSERT_EQ(out.kind, ParseOutcome::Kind::kVersion);
    EXPECT_TRUE(std::regex_match(
        out.text, std::regex(R"(tzrun \d+\.\d+\.\d+ \(torchrun 2\.11 compatible\)\n)")))
        << out.text;
    EXPECT_EQ(out.text, version_string() + "\n");
  }
}

TEST(CliEnviron, ReadsTheProcessEnvironment) {
  ::setenv("TZRUN_CLI_TEST_VAR", "a=b", 1);
  const auto env = environ_map();
  ASSERT_EQ(env.count("TZRUN_CLI_TEST_VAR"), 1U);
  EXPECT_EQ(env.at("TZRUN_CLI_TEST_VAR"), "a=b");
  ::unsetenv("TZRUN_CLI_TEST_VAR");
}

}  // namespace
}  // namespace tzrun::cli
