// Behaviour of tzrun::cli::parse against torchrun 2.11's argparse front end
// (torch/distributed/run.py, torch/distributed/argparse_util.py): PET_ environment
// variables, --nproc-per-node, rendezvous settings, --redirects/--tee and validation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "tzrun/cli/cli.hpp"

namespace tzrun::cli {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

// -------------------------------------------------------------- PET_ env

TEST(CliPet, FlagBeatsEnvBeatsDefaultForSeveralTypes) {
  // int
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_MAX_RESTARTS", "3"}}).max_restarts, 3);
  EXPECT_EQ(Cfg({"--max-restarts", "1", "x.py"}, {{"PET_MAX_RESTARTS", "3"}}).max_restarts, 1);
  EXPECT_EQ(Cfg({"x.py"}).max_restarts, 0);
  // string
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_RDZV_BACKEND", "c10d"}}).rdzv_backend, "c10d");
  EXPECT_EQ(Cfg({"--rdzv-backend", "static", "x.py"}, {{"PET_RDZV_BACKEND", "c10d"}}).rdzv_backend,
            "static");
  // float
  EXPECT_DOUBLE_EQ(Cfg({"x.py"}, {{"PET_MONITOR_INTERVAL", "2.5"}}).monitor_interval, 2.5);
  // choice
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_START_METHOD", "forkserver"}}).start_method, "forkserver");
  // nproc spec, nnodes, -r (PET_ name is the long destination, not PET_R)
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_NPROC_PER_NODE", "4"}}).nproc_per_node, 4);
  EXPECT_EQ(Cfg({"--nproc-per-node", "2", "x.py"}, {{"PET_NPROC_PER_NODE", "4"}}).nproc_per_node,
            2);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_NNODES", "1:3"}}).max_nodes, 3);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_REDIRECTS", "0:1"}}).redirects.ForRank(0), Std::kOut);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_R", "3"}}).redirects.all, Std::kNone);
  // master port from env counts as explicit.
  const auto c = Cfg({"x.py"}, {{"PET_MASTER_PORT", "4000"}});
  EXPECT_EQ(c.master_port, 4000);
  EXPECT_TRUE(c.master_port_explicit);
  // extensions have PET_ too
  EXPECT_TRUE(Cfg({"x.py"}, {{"PET_DRY_RUN", "1"}}).dry_run);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_PLATFORM", "none"}}).platform, "none");
}

TEST(CliPet, BooleanValues) {
  for (const std::string v : {"1", "true", "TRUE", "yes", "on", "", " 1 ", "2"}) {
    SCOPED_TRACE("PET_STANDALONE='" + v + "'");
    EXPECT_TRUE(Cfg({"x.py"}, {{"PET_STANDALONE", v}}).standalone);
  }
  for (const std::string v : {"0", "false", "False", "no", "off"}) {
    SCOPED_TRACE("PET_STANDALONE='" + v + "'");
    EXPECT_FALSE(Cfg({"x.py"}, {{"PET_STANDALONE", v}}).standalone);
  }
  // presence on the command line always sets
  EXPECT_TRUE(Cfg({"--standalone", "x.py"}, {{"PET_STANDALONE", "0"}}).standalone);
  EXPECT_TRUE(Cfg({"x.py"}, {{"PET_MODULE", "1"}}).module);
  EXPECT_TRUE(Cfg({"x.py"}, {{"PET_NO_PYTHON", "yes"}}).no_python);
  EXPECT_TRUE(Cfg({"x.py"}, {{"PET_RUN_PATH", "on"}}).run_path);
  EXPECT_TRUE(Cfg({"x.py"}, {{"PET_VIRTUAL_LOCAL_RANK", "true"}}).virtual_local_rank);
}

TEST(CliPet, BadValuesNameTheVariable) {
  EXPECT_EQ(ErrorOf({"x.py"}, {{"PET_STANDALONE", "maybe"}}),
            "environment variable PET_STANDALONE (default for --standalone): invalid boolean "
            "value: 'maybe' (use 1/true/yes/on to enable or 0/false/no/off to disable, or unset "
            "PET_STANDALONE)");
  EXPECT_EQ(ErrorOf({"x.py"}, {{"PET_MAX_RESTARTS", "x"}}),
            "environment variable PET_MAX_RESTARTS (default for --max-restarts): invalid int "
            "value: 'x' (expected an integer; fix or unset PET_MAX_RESTARTS)");
  EXPECT_THAT(ErrorOf({"x.py"}, {{"PET_START_METHOD", "bogus"}}),
              AllOf(HasSubstr("PET_START_METHOD"), HasSubstr("invalid choice: 'bogus'")));
  EXPECT_THAT(ErrorOf({"x.py"}, {{"PET_NNODES", "0"}}),
              AllOf(HasSubstr("environment variable PET_NNODES"), HasSubstr("'0'")));
  EXPECT_THAT(ErrorOf({"x.py"}, {{"PET_REDIRECTS", "9"}}), HasSubstr("PET_REDIRECTS"));
  // A bad PET_ value is irrelevant when the flag is given.
  EXPECT_EQ(Cfg({"--max-restarts", "2", "x.py"}, {{"PET_MAX_RESTARTS", "x"}}).max_restarts, 2);
}

TEST(CliPet, EmptyValueMeansUnsetAndSomeOptionsHaveNoPet) {
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_MAX_RESTARTS", ""}}).max_restarts, 0);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_NPROC_PER_NODE", ""}}).nproc_per_node, 1);
  EXPECT_FALSE(Cfg({"x.py"}, {{"PET_LOGS_SPECS", "mine"}}).logs_specs.has_value());
  EXPECT_NO_THROW(Cfg({"x.py"}, {{"PET_NUMA_BINDING", "node"}}));  // torchrun reads no PET_ for it
}

// --------------------------------------------------------- --nproc-per-node

TEST(CliNproc, Integers) {
  EXPECT_EQ(Cfg({"--nproc-per-node", "4", "x.py"}).nproc_per_node, 4);
  EXPECT_EQ(Cfg({"--nproc-per-node", " 4 ", "x.py"}).nproc_per_node, 4);
  EXPECT_EQ(Cfg({"--nproc-per-node", "4", "x.py"}).nproc_per_node_spec, "4");
  EXPECT_THAT(ErrorOf({"--nproc-per-node", "0", "x.py"}), HasSubstr("nproc-per-node must be > 0"));
  EXPECT_THAT(ErrorOf({"--nproc-per-node=-2", "x.py"}), HasSubstr("nproc-per-node must be > 0"));
  EXPECT_THAT(ErrorOf({"--nproc-per-node", "many", "x.py"}),
              AllOf(HasSubstr("'many'"), HasSubstr("Unsupported nproc_per_node value")));
  EXPECT_THAT(ErrorOf({"--nproc-per-node", "xpu", "x.py"}), HasSubstr("not supported by tzrun"));
}

TEST(CliNproc, CpuGpuAuto) {
  EXPECT_EQ(Cfg({"--nproc-per-node", "cpu", "x.py"}).nproc_per_node, kFakeCpus);
  EXPECT_EQ(Cfg({"--nproc-per-node", "cpu", "x.py"}).nproc_per_node_spec, "cpu");
  EXPECT_EQ(Cfg({"--nproc-per-node", "gpu", "x.py"}, {}, 2).nproc_per_node, 2);
  EXPECT_EQ(
      Cfg({"--nproc-per-node", "gpu", "x.py"}, {{"CUDA_VISIBLE_DEVICES", "1"}}, 2).nproc_per_node,
      1);
  EXPECT_EQ(Cfg({"--nproc-per-node", "auto", "x.py"}, {}, 3).nproc_per_node, 3);
  EXPECT_EQ(Cfg({"--nproc-per-node", "auto", "x.py"}, {}, 0).nproc_per_node, kFakeCpus);
  EXPECT_EQ(
      Cfg({"--nproc-per-node", "auto", "x.py"}, {{"CUDA_VISIBLE_DEVICES", ""}}, 4).nproc_per_node,
      kFakeCpus);
  const auto msg = ErrorOf({"--nproc-per-node", "gpu", "x.py"}, {}, 0);
  EXPECT_THAT(msg, AllOf(HasSubstr("--nproc-per-node=gpu but no NVIDIA GPU is visible"),
                         HasSubstr("use an integer or cpu")));
  EXPECT_THAT(ErrorOf({"--nproc-per-node", "gpu", "x.py"}, {{"CUDA_VISIBLE_DEVICES", "-1"}}, 2),
              HasSubstr("CUDA_VISIBLE_DEVICES='-1'"));
}

// --------------------------------------------------------------- rendezvous

TEST(CliRdzv, ConfParsing) {
  const auto c = Cfg({"--rdzv-backend", "c10d", "--rdzv-conf", " a=1, b = 2 ,c=x=y ", "x.py"});
  EXPECT_EQ(c.rdzv_conf,
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}, {"c", "x=y"}}));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "=1", "x.py"}),
              HasSubstr("The rendezvous configuration string must be in format "
                        "<key1>=<value1>,...,<keyN>=<valueN>."));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "a", "x.py"}),
              HasSubstr("The rendezvous configuration option 'a' must have a value specified."));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "a= ", "x.py"}), HasSubstr("option 'a' must have a value"));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "a=1,,b=2", "x.py"}), HasSubstr("must be in format"));
  EXPECT_THAT(ErrorOf({"--rdzv-conf", "a", "x.py"}),
              HasSubstr("argument --rdzv-conf/--rdzv_conf: invalid value 'a'"));
}

TEST(CliRdzv, StaticBackendGetsNodeRank) {
  auto c = Cfg({"--nnodes", "2", "--node-rank", "1", "--rdzv-conf", "rank=5,timeout=10", "x.py"});
  EXPECT_EQ(c.rdzv_conf.at("rank"), "1");
  EXPECT_EQ(c.rdzv_conf.at("timeout"), "10");
  c = Cfg({"--rdzv-backend", "c10d", "--node-rank", "3", "x.py"});
  EXPECT_EQ(c.rdzv_conf.count("rank"), 0U);
  EXPECT_THAT(ErrorOf({"--node-rank", "1", "x.py"}),
              HasSubstr("node-rank must be < the number of nodes (1)"));
}

TEST(CliRdzv, StandaloneOverridesRendezvousSettings) {
  const auto c = Cfg({"--standalone", "--rdzv-backend", "static", "--rdzv-endpoint", "h:1",
                      "--rdzv-id", "mine", "x.py"});
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.rdzv_backend, "c10d");
  EXPECT_EQ(c.rdzv_endpoint, "localhost:0");
  EXPECT_TRUE(std::regex_match(
      c.rdzv_id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << c.rdzv_id;
  EXPECT_EQ(c.rdzv_conf.count("rank"), 0U);
  EXPECT_NE(c.rdzv_id, Cfg({"--standalone", "x.py"}).rdzv_id);
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_STANDALONE", "1"}}).rdzv_backend, "c10d");
}

TEST(CliRdzv, EmptyRunIdBecomesRandom) {
  const auto out = RunCli({"--rdzv-id=", "x.py"});
  EXPECT_EQ(out.config.rdzv_id.size(), 36U);
  ASSERT_EQ(out.warnings.size(), 1U);
  EXPECT_THAT(out.warnings[0], HasSubstr("generated a random run_id"));
}

TEST(CliSignals, ForwardSignalsAreNotStopSignals) {
  const LaunchConfig c = Cfg({"--signals-to-handle", "SIGTERM,SIGUSR1", "--forward-signals",
                              "SIGUSR1, SIGUSR2,SIGUSR1", "x.py"});
  EXPECT_EQ(c.forward_signals, (std::vector<std::string>{"SIGUSR1", "SIGUSR2"}));
  EXPECT_EQ(c.signals_to_handle, (std::vector<std::string>{"SIGTERM"}));
  EXPECT_TRUE(Cfg({"x.py"}).forward_signals.empty());  // torchrun's default: none
  EXPECT_THAT(ErrorOf({"--forward-signals", "SIGFOO", "x.py"}),
              AllOf(HasSubstr("--forward-signals"), HasSubstr("unknown signal name 'SIGFOO'")));
  EXPECT_THAT(ErrorOf({"--forward-signals", "SIGKILL", "x.py"}), HasSubstr("cannot be caught"));
}

TEST(CliRdzv, NodeRankFlagUnderC10dIsNamedAsIgnored) {
  const auto out = RunCli({"--rdzv-backend", "c10d", "--node-rank", "3", "x.py"});
  ASSERT_EQ(out.warnings.size(), 1U);
  EXPECT_THAT(out.warnings[0],
              AllOf(HasSubstr("--node-rank=3"), HasSubstr("ignored by the c10d rendezvous")));
  // A platform's PET_NODE_RANK (Kubeflow sets it on every pod) and the static backend: quiet.
  EXPECT_TRUE(
      RunCli({"--rdzv-backend", "c10d", "x.py"}, {{"PET_NODE_RANK", "1"}}).warnings.empty());
  EXPECT_TRUE(RunCli({"--nnodes", "2", "--node-rank", "1", "x.py"}).warnings.empty());
}

TEST(CliRdzv, MasterAddrWarningWithDynamicBackend) {
  EXPECT_EQ(RunCli({"--rdzv-backend", "c10d", "--master-addr", "h", "x.py"}).warnings.size(), 1U);
  EXPECT_TRUE(RunCli({"--rdzv-backend", "c10d", "x.py"}).warnings.empty());
  EXPECT_TRUE(RunCli({"--master-addr", "h", "x.py"}).warnings.empty());
}

// ------------------------------------------------------------- -r / -t maps

TEST(CliStd, ValuesAndMaps) {
  auto c = Cfg({"-r", "0:1,1:2", "-t", "0:3,12:1", "x.py"});
  EXPECT_EQ(c.redirects.ForRank(0), Std::kOut);
  EXPECT_EQ(c.redirects.ForRank(1), Std::kErr);
  EXPECT_EQ(c.redirects.ForRank(2), Std::kNone);
  EXPECT_EQ(c.tee.ForRank(0), Std::kAll);
  EXPECT_EQ(c.tee.ForRank(12), Std::kOut);  // multi-digit local rank (tzrun)
  EXPECT_EQ(c.tee.ForRank(1), Std::kNone);
  EXPECT_EQ(Cfg({"-t", "0", "x.py"}).tee.all, Std::kNone);
  for (const std::string bad : {"4", "0:4", "a:1", "", "0:1,", "1:", ":1", "01", "0:1;1:2", "-1"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ErrorOf({"-r", bad, "x.py"}),
                AllOf(HasSubstr("argument -r/--redirects: invalid value"),
                      HasSubstr("or a map like 0:1,1:2")));
  }
  EXPECT_THAT(ErrorOf({"--tee=9", "x.py"}), HasSubstr("argument -t/--tee"));
}

// -------------------------------------------------------- other validation

TEST(CliValidate, Nnodes) {
  EXPECT_EQ(Cfg({"--nnodes", "2", "--node-rank", "1", "x.py"}).min_nodes, 2);
  const auto c = Cfg({"--nnodes", "1:4", "x.py"});
  EXPECT_EQ(c.min_nodes, 1);
  EXPECT_EQ(c.max_nodes, 4);
  for (const std::string bad : {"0", "3:2", "0:2", "1:2:3", "a", "", "1:"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ErrorOf({"--nnodes=" + bad, "x.py"}),
                AllOf(HasSubstr("argument --nnodes: invalid value"), HasSubstr("MIN:MAX")));
  }
}

TEST(CliValidate, NumbersAndRanges) {
  EXPECT_THAT(ErrorOf({"--max-restarts", "-1", "x.py"}), HasSubstr("max_restarts must be >= 0"));
  EXPECT_EQ(ErrorOf({"--max-restarts", "x", "x.py"}),
            "argument --max-restarts/--max_restarts: invalid int value: 'x' (expected an integer)");
  EXPECT_EQ(Cfg({"--max-restarts", "1_0", "x.py"}).max_restarts, 10);  // Python int()
  EXPECT_THAT(ErrorOf({"--monitor-interval", "0", "x.py"}),
              HasSubstr("monitor-interval must be > 0"));
  EXPECT_THAT(ErrorOf({"--monitor-interval", "nan", "x.py"}),
              HasSubstr("monitor-interval must be > 0"));
  EXPECT_THAT(ErrorOf({"--monitor-interval", "fast", "x.py"}),
              HasSubstr("invalid float value: 'fast'"));
  EXPECT_DOUBLE_EQ(Cfg({"--monitor-interval", "1e-1", "x.py"}).monitor_interval, 0.1);
  EXPECT_EQ(Cfg({"--master-port", "0", "x.py"}).master_port, 0);
  EXPECT_EQ(Cfg({"--master-port", "65535", "x.py"}).master_port, 65535);
  EXPECT_THAT(ErrorOf({"--master-port", "65536", "x.py"}),
              HasSubstr("master-port must be in 0..65535"));
  EXPECT_THAT(ErrorOf({"--master-port", "0x10", "x.py"}), HasSubstr("invalid int value: '0x10'"));
}

TEST(CliValidate, Choices) {
  EXPECT_EQ(ErrorOf({"--start-method", "bogus", "x.py"}),
            "argument --start-method/--start_method: invalid choice: 'bogus' (choose from "
            "'spawn', 'fork', 'forkserver')");
  EXPECT_THAT(ErrorOf({"--numa-binding", "cpu", "x.py"}),
              HasSubstr("choose from 'node', 'socket', 'exclusive', 'core-complex'"));
  // Every mode is accepted (the agent plans the binding from sysfs); no PET_ fallback.
  for (const char* mode : {"node", "socket", "exclusive", "core-complex"}) {
    EXPECT_EQ(Cfg({"--numa_binding", mode, "x.py"}).numa_binding, mode);
  }
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_NUMA_BINDING", "node"}}).numa_binding, "");
  EXPECT_THAT(ErrorOf({"--platform", "k8s", "x.py"}), HasSubstr("invalid choice: 'k8s'"));
  EXPECT_THAT(ErrorOf({"--event-log-handler", "foo", "x.py"}),
              HasSubstr("use null, console or dynamic_rendezvous"));
}

TEST(CliValidate, ModuleAndNoPython) {
  EXPECT_THAT(
      ErrorOf({"-m", "--no-python", "x"}),
      HasSubstr("Don't use both the '--no-python' flag and the '--module' flag at the same time."));
  EXPECT_THAT(ErrorOf({"-m", "x"}, {{"PET_NO_PYTHON", "1"}}), HasSubstr("'--no-python' flag"));
  // run.py checks --run-path first, so the combination is accepted there.
  EXPECT_TRUE(Cfg({"-m", "--no-python", "--run-path", "/abs/x.py"}).run_path);
}

TEST(CliValidate, LocalRanksFilterAndDuplicateFilters) {
  EXPECT_EQ(Cfg({"--local-ranks-filter", "0, 1,1", "x.py"}).local_ranks_filter,
            (std::set<int>{0, 1}));
  EXPECT_THAT(ErrorOf({"--local-ranks-filter", "0,x", "x.py"}),
              HasSubstr("comma-separated list of non-negative integers"));
  EXPECT_THAT(ErrorOf({"--local-ranks-filter", "0,,1", "x.py"}), HasSubstr("--local_ranks_filter"));
  EXPECT_THAT(ErrorOf({"--local-ranks-filter", "-1", "x.py"}), HasSubstr("non-negative"));
  EXPECT_THAT(Cfg({"--duplicate-stdout-filters", "a,,b,c", "x.py"}).duplicate_stdout_filters,
              ElementsAre("a,b", "c"));
  // torchrun's comma_separated_list keeps empty items (an empty filter matches every line).
  EXPECT_THAT(Cfg({"--duplicate-stdout-filters", "a,", "x.py"}).duplicate_stdout_filters,
              ElementsAre("a", ""));
  EXPECT_THAT(Cfg({"--duplicate-stdout-filters=", "x.py"}).duplicate_stdout_filters,
              ElementsAre(""));
  // ',,' pairs are taken left to right, as Python's str.replace does.
  EXPECT_THAT(Cfg({"--duplicate-stdout-filters", ",,,", "x.py"}).duplicate_stdout_filters,
              ElementsAre(",", ""));
  EXPECT_THAT(Cfg({"--duplicate-stdout-filters", ",,,,a", "x.py"}).duplicate_stdout_filters,
              ElementsAre(",,a"));
  EXPECT_THAT(ErrorOf({"--log-dir", "/dev/null", "--duplicate-stderr-filters", "e", "x.py"}),
              AllOf(HasSubstr("--duplicate-stderr-filters"), HasSubstr("--log-dir=/dev/null")));
  EXPECT_THAT(Cfg({"x.py"}, {{"PET_DUPLICATE_STDERR_FILTERS", "err"}}).duplicate_stderr_filters,
              ElementsAre("err"));
}

TEST(CliValidate, SignalsToHandle) {
  EXPECT_THAT(Cfg({"--signals-to-handle", " SIGTERM , SIGUSR2,SIGTERM,", "x.py"}).signals_to_handle,
              ElementsAre("SIGTERM", "SIGUSR2"));
  EXPECT_THAT(ErrorOf({"--signals-to-handle", "SIGTERM,SIGFOO", "x.py"}),
              HasSubstr("unknown signal name 'SIGFOO'"));
  EXPECT_THAT(ErrorOf({"--signals-to-handle", "sigterm", "x.py"}),
              HasSubstr("unknown signal name"));
  EXPECT_THAT(ErrorOf({"--signals-to-handle", "SIGKILL", "x.py"}),
              HasSubstr("SIGKILL cannot be caught"));
  EXPECT_THAT(ErrorOf({"--signals-to-handle", "SIGCHLD", "x.py"}),
              HasSubstr("cannot be forwarded"));
  EXPECT_THAT(Cfg({"--signals-to-handle", "SIGIOT,SIGPOLL", "x.py"}).signals_to_handle,
              ElementsAre("SIGIOT", "SIGPOLL"));
}

TEST(CliValidate, ExitBarrierAndStragglerSeconds) {
  const auto d = Cfg({"x.py"});
  EXPECT_DOUBLE_EQ(d.exit_barrier_timeout, 300.0);  // torchrun's LocalElasticAgent default
  EXPECT_DOUBLE_EQ(d.straggler_warning, 60.0);
  EXPECT_DOUBLE_EQ(d.straggler_timeout, 0.0);
  const auto c = Cfg({"--exit-barrier-timeout", "2.5", "--straggler_warning=0",
                      "--straggler-timeout", "30", "x.py"});
  EXPECT_DOUBLE_EQ(c.exit_barrier_timeout, 2.5);
  EXPECT_DOUBLE_EQ(c.straggler_warning, 0.0);
  EXPECT_DOUBLE_EQ(c.straggler_timeout, 30.0);
  EXPECT_DOUBLE_EQ(Cfg({"x.py"}, {{"PET_EXIT_BARRIER_TIMEOUT", "9"}}).exit_barrier_timeout, 9.0);
  EXPECT_DOUBLE_EQ(Cfg({"x.py"}, {{"PET_STRAGGLER_TIMEOUT", "4"}}).straggler_timeout, 4.0);
  EXPECT_THAT(
      ErrorOf({"--exit-barrier-timeout=-1", "x.py"}),
      HasSubstr("argument --exit-barrier-timeout/--exit_barrier_timeout: invalid value '-1': "
                "seconds must be "
                "finite and >= 0"));
  EXPECT_THAT(ErrorOf({"--straggler-warning=inf", "x.py"}),
              HasSubstr("seconds must be finite and >= 0"));
  EXPECT_THAT(ErrorOf({"x.py"}, {{"PET_STRAGGLER_TIMEOUT", "soon"}}),
              HasSubstr("PET_STRAGGLER_TIMEOUT"));
}

TEST(CliValidate, ShutdownTimeout) {
  EXPECT_DOUBLE_EQ(Cfg({"x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}}).shutdown_timeout, 7.0);
  EXPECT_DOUBLE_EQ(
      Cfg({"x.py"}, {{"PET_SHUTDOWN_TIMEOUT", "8"}, {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}})
          .shutdown_timeout,
      8.0);
  EXPECT_DOUBLE_EQ(
      Cfg({"--shutdown-timeout", "0", "x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}})
          .shutdown_timeout,
      0.0);
  EXPECT_THAT(ErrorOf({"--shutdown-timeout=-1", "x.py"}),
              HasSubstr("shutdown-timeout must be >= 0"));
  EXPECT_THAT(
      ErrorOf({"x.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "soon"}}),
      HasSubstr("environment variable TORCH_ELASTIC_SHUTDOWN_TIMEOUT: invalid value 'soon'"));
}

TEST(CliValidate, LogLevel) {
  EXPECT_EQ(Cfg({"x.py"}, {{"LOGLEVEL", "INFO"}}).log_level, "info");
  EXPECT_EQ(Cfg({"x.py"}, {{"LOGLEVEL", "WARN"}}).log_level, "warning");
  EXPECT_EQ(Cfg({"--log-level", "error", "x.py"}, {{"LOGLEVEL", "INFO"}}).log_level, "error");
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_LOG_LEVEL", "debug"}, {"LOGLEVEL", "INFO"}}).log_level, "debug");
  EXPECT_THAT(ErrorOf({"--log-level", "loud", "x.py"}), HasSubstr("unknown log level"));
  EXPECT_THAT(ErrorOf({"x.py"}, {{"LOGLEVEL", "loud"}}),
              HasSubstr("environment variable LOGLEVEL"));
}

}  // namespace
}  // namespace tzrun::cli
