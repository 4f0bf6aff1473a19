// The platform through the real command line: precedence flag > PET_ > platform >
// default, -j, error messages, and that platform variables never reach workers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tzrun/agent/worker_env.hpp"
#include "tzrun/cli/cli.hpp"
#include "tzrun/platform/platform.hpp"

namespace tzrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Args = std::vector<std::string>;
using Env = std::map<std::string, std::string>;
namespace fs = std::filesystem;

/// A sysroot without GPUs and a fixed CPU count, so nproc "auto" resolves to 6.
cli::HostProbe Probe() {
  static const fs::path kRoot = [] {
    auto p = fs::temp_directory_path() / ("tzrun_platform_test_" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p;
  }();
  return cli::HostProbe{kRoot, 6};
}

cli::ParseOutcome RunCli(const Args& args, const Env& env) {
  return cli::Parse(args, env, Probe());
}

LaunchConfig Cfg(const Args& args, const Env& env) {
  auto out = RunCli(args, env);
  EXPECT_EQ(out.kind, cli::ParseOutcome::Kind::kRun);
  return out.config;
}

std::string ErrorOf(const Args& args, const Env& env) {
  try {
    RunCli(args, env);
  } catch (const cli::UsageError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kUsage);
    return e.Message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

const Env kDlc = {{"MASTER_ADDR", "10.0.0.1"},
                  {"MASTER_PORT", "23456"},
                  {"WORLD_SIZE", "2"},
                  {"RANK", "1"},
                  {"NPROC_PER_NODE", "8"}};

TEST(CliPlatform, DlcJobWithoutFlags) {
  const auto out = RunCli({"train.py"}, kDlc);
  const auto& c = out.config;
  EXPECT_EQ(out.platform.kind, platform::Kind::kDlc);
  EXPECT_EQ(c.min_nodes, 2);
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.node_rank, 1);
  EXPECT_EQ(c.master_addr, "10.0.0.1");
  EXPECT_EQ(c.master_port, 23456);
  EXPECT_TRUE(c.master_port_explicit);
  EXPECT_EQ(c.nproc_per_node, 8);
  EXPECT_EQ(c.rdzv_backend, "static");
  EXPECT_EQ(c.rdzv_conf.at("rank"), "1");  // the static rendezvous sees the platform rank
  EXPECT_EQ(c.platform, "auto");
  EXPECT_EQ(platform::SummaryLine(out.platform, c),
            "tzrun: platform: dlc (nnodes=2 node_rank=1 master=10.0.0.1:23456 nproc_per_node=8; "
            "pod-level MASTER_ADDR/WORLD_SIZE/RANK/NPROC_PER_NODE)");
}

TEST(CliPlatform, TorchEasyRecDlcCommandLineIsUnchanged) {
  // docs/source/quick_start/dlc_tutorial.md: every value is passed explicitly.
  const auto c = Cfg({"--master_addr=10.0.0.1", "--master_port=23456", "--nnodes=2",
                      "--nproc-per-node=8", "--node_rank=1", "-m", "tzrec.train_eval"},
                     kDlc);
  EXPECT_EQ(c.min_nodes, 2);
  EXPECT_EQ(c.node_rank, 1);
  EXPECT_EQ(c.nproc_per_node, 8);
  EXPECT_EQ(c.master_port, 23456);
}

TEST(CliPlatform, PrecedenceFlagThenPetThenPlatformThenDefault) {
  // nnodes: platform 2 < PET 3 < flag 4.
  Env env = kDlc;
  EXPECT_EQ(Cfg({"x.py"}, env).max_nodes, 2);
  env["PET_NNODES"] = "3";
  EXPECT_EQ(Cfg({"x.py"}, env).max_nodes, 3);
  EXPECT_EQ(Cfg({"--nnodes=4", "x.py"}, env).max_nodes, 4);
  // nproc_per_node: platform 8 < PET 3 < flag 5; default 1 without platform.
  env = kDlc;
  EXPECT_EQ(Cfg({"x.py"}, env).nproc_per_node, 8);
  env["PET_NPROC_PER_NODE"] = "3";
  EXPECT_EQ(Cfg({"x.py"}, env).nproc_per_node, 3);
  EXPECT_EQ(Cfg({"--nproc_per_node", "5", "x.py"}, env).nproc_per_node, 5);
  EXPECT_EQ(Cfg({"--platform=none", "x.py"}, kDlc).nproc_per_node, 1);
  // master_addr / master_port.
  env = kDlc;
  env["PET_MASTER_ADDR"] = "pet-host";
  auto c = Cfg({"--master-port=1234", "x.py"}, env);
  EXPECT_EQ(c.master_addr, "pet-host");
  EXPECT_EQ(c.master_port, 1234);
  // node_rank.
  env = kDlc;
  env["PET_NODE_RANK"] = "0";
  EXPECT_EQ(Cfg({"x.py"}, env).node_rank, 0);
  // Without any platform: torchrun's defaults.
  c = Cfg({"x.py"}, {});
  EXPECT_EQ(c.max_nodes, 1);
  EXPECT_EQ(c.master_addr, "127.0.0.1");
  EXPECT_EQ(c.master_port, 29500);
  EXPECT_FALSE(c.master_port_explicit);
}

TEST(CliPlatform, PlatformValuesAreValidatedLikeFlagsAndNamed) {
  Env env = kDlc;
  env["RANK"] = "2";  // == WORLD_SIZE
  EXPECT_THAT(ErrorOf({"x.py"}, env),
              AllOf(HasSubstr("environment variable RANK (dlc platform, default for --node-rank)"),
                    HasSubstr("node-rank must be < the number of nodes (2)")));
  env = kDlc;
  env["NPROC_PER_NODE"] = "eight";
  EXPECT_THAT(
      ErrorOf({"x.py"}, env),
      AllOf(HasSubstr("environment variable NPROC_PER_NODE (dlc platform"), HasSubstr("'eight'")));
  env = kDlc;
  env["MASTER_PORT"] = "70000";
  EXPECT_THAT(ErrorOf({"x.py"}, env),
              AllOf(HasSubstr("environment variable MASTER_PORT"), HasSubstr("0..65535")));
}

TEST(CliPlatform, RequestedPlatformErrorsAreUsageErrors) {
  Env env = kDlc;
  env.erase("RANK");
  EXPECT_THAT(ErrorOf({"--platform=dlc", "x.py"}, env),
              AllOf(HasSubstr("--platform=dlc: RANK"), HasSubstr("--node-rank")));
  EXPECT_THAT(ErrorOf({"x.py"}, Env{{"PET_PLATFORM", "slurm"}}),
              HasSubstr("--platform=slurm: SLURM_NNODES is not set"));
}

TEST(CliPlatform, KubeflowV19WorldSizeOfProcessesIsNotTheNodeCount) {
  const Env env = {{"MASTER_ADDR", "job-master-0"},
                   {"MASTER_PORT", "23456"},
                   {"WORLD_SIZE", "16"},
                   {"RANK", "1"},
                   {"PET_NNODES", "2"},
                   {"PET_NODE_RANK", "1"},
                   {"PET_NPROC_PER_NODE", "8"},
                   {"PET_MASTER_ADDR", "job-master-0"},
                   {"PET_MASTER_PORT", "23456"}};
  const auto out = RunCli({"x.py"}, env);
  EXPECT_EQ(out.platform.kind, platform::Kind::kKubeflow);
  EXPECT_EQ(out.config.max_nodes, 2);
  EXPECT_EQ(out.config.node_rank, 1);
  EXPECT_EQ(out.config.nproc_per_node, 8);
  EXPECT_EQ(out.config.master_addr, "job-master-0");
}

TEST(CliPlatform, KubeflowAutoNprocResolvesOnTheHost) {
  const Env env = {{"MASTER_ADDR", "job-master-0"},
                   {"WORLD_SIZE", "2"},
                   {"RANK", "1"},
                   {"PET_NNODES", "2"},
                   {"PET_NODE_RANK", "1"},
                   {"PET_NPROC_PER_NODE", "auto"},
                   {"PET_MASTER_ADDR", "job-master-0"},
                   {"PET_MASTER_PORT", "23456"}};
  const auto c = Cfg({"x.py"}, env);
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.nproc_per_node, 6);  // no GPU in the fake host: CPU count
}

TEST(CliPlatform, KubeflowStandaloneEmptyPetValueMeansOn) {
  const Env env = {{"PET_STANDALONE", ""}, {"PET_NNODES", "1"}, {"PET_NPROC_PER_NODE", "2"}};
  const auto c = Cfg({"x.py"}, env);
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.rdzv_endpoint, "localhost:0");
}

TEST(CliPlatform, KubeflowElasticTakesEverythingFromPet) {
  const Env env = {{"PET_RDZV_ENDPOINT", "job-worker-0:23456"},
                   {"PET_RDZV_BACKEND", "c10d"},
                   {"PET_NNODES", "1:3"},
                   {"PET_MAX_RESTARTS", "100"}};
  const auto out = RunCli({"x.py"}, env);
  EXPECT_EQ(out.platform.variant, "PyTorchJob elastic");
  EXPECT_EQ(out.config.rdzv_backend, "c10d");
  EXPECT_EQ(out.config.rdzv_endpoint, "job-worker-0:23456");
  EXPECT_EQ(out.config.min_nodes, 1);
  EXPECT_EQ(out.config.max_nodes, 3);
  EXPECT_EQ(out.config.max_restarts, 100);
  EXPECT_THAT(out.warnings, IsEmpty());
}

TEST(CliPlatform, SlurmWithC10dBackend) {
  const Env env = {{"SLURM_JOB_ID", "77"},        {"SLURM_NNODES", "2"},
                   {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_NUM_TASKS", "2"},
                   {"SLURM_NODEID", "0"},         {"SLURM_STEP_NODELIST", "node[01-02]"},
                   {"SLURM_GPUS_ON_NODE", "8"}};
  auto c = Cfg({"--rdzv-backend=c10d", "x.py"}, env);
  EXPECT_EQ(c.rdzv_endpoint, "node01:29500");
  EXPECT_EQ(c.rdzv_id, "77");
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.nproc_per_node, 8);
  c = Cfg({"--rdzv-backend=c10d", "--rdzv-id=mine", "--rdzv-endpoint=h:1", "x.py"}, env);
  EXPECT_EQ(c.rdzv_endpoint, "h:1");
  EXPECT_EQ(c.rdzv_id, "mine");
  c = Cfg({"x.py"}, env);
  EXPECT_EQ(c.master_addr, "node01");
  EXPECT_EQ(c.node_rank, 0);
}

TEST(CliPlatform, NestedLaunchWarnsAndIgnoresWorkerVariables) {
  const Env env = {{"RANK", "3"},
                   {"GROUP_RANK", "1"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "2"},
                   {"WORLD_SIZE", "4"},
                   {"MASTER_ADDR", "h"},
                   {"TORCHELASTIC_RUN_ID", "r"}};
  const auto out = RunCli({"x.py"}, env);
  EXPECT_EQ(out.platform.kind, platform::Kind::kNone);
  EXPECT_EQ(out.config.max_nodes, 1);
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_THAT(out.warnings[0], HasSubstr("inside a torchrun/tzrun worker"));
}

TEST(CliJobShape, SetsNnodesAndNproc) {
  auto c = Cfg({"-j", "2x8", "--node-rank=1", "x.py"}, {});
  EXPECT_EQ(c.min_nodes, 2);
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.nproc_per_node, 8);
  c = Cfg({"-j1:4x3", "--rdzv-backend=c10d", "--rdzv-endpoint=h:1", "x.py"}, {});
  EXPECT_EQ(c.min_nodes, 1);
  EXPECT_EQ(c.max_nodes, 4);
  EXPECT_EQ(c.nproc_per_node, 3);
  c = Cfg({"-j=4", "x.py"}, {});
  EXPECT_EQ(c.max_nodes, 1);
  EXPECT_EQ(c.nproc_per_node, 4);
}

TEST(CliJobShape, BeatsPetAndPlatform) {
  Env env = kDlc;
  env["PET_NNODES"] = "5";
  env["PET_NPROC_PER_NODE"] = "5";
  const auto c = Cfg({"-j", "2x2", "x.py"}, env);
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.nproc_per_node, 2);
  EXPECT_EQ(c.node_rank, 1);  // still from the platform
}

TEST(CliJobShape, ConflictsAndBadValuesAreUsageErrors) {
  EXPECT_THAT(ErrorOf({"-j", "2x8", "--nnodes=2", "x.py"}, {}),
              AllOf(HasSubstr("argument -j: not allowed with argument --nnodes"),
                    HasSubstr("drop one of them")));
  EXPECT_THAT(ErrorOf({"--nproc_per_node=8", "-j", "2x8", "x.py"}, {}),
              HasSubstr("argument -j: not allowed with argument --nproc-per-node"));
  EXPECT_THAT(
      ErrorOf({"-j", "0x8", "x.py"}, {}),
      AllOf(HasSubstr("argument -j: invalid job shape '0x8'"), HasSubstr("[[MIN:]MAX x]NPROC")));
  EXPECT_THAT(ErrorOf({"-j", "x.py"}, {}), HasSubstr("argument -j: invalid job shape 'x.py'"));
  // -j has no PET_ fallback.
  EXPECT_EQ(Cfg({"x.py"}, {{"PET_JOB_SHAPE", "2x8"}}).max_nodes, 1);
}

TEST(CliPlatform, PlatformVariablesNeverReachWorkers) {
  Env env = kDlc;
  env["LOCAL_RANK"] = "";  // harmless empty value still overwritten
  env["GROUP_RANK"] = "9";
  env["LOCAL_WORLD_SIZE"] = "9";
  env["ROLE_RANK"] = "9";
  env["GROUP_WORLD_SIZE"] = "9";
  env["ROLE_WORLD_SIZE"] = "9";
  const auto c = Cfg({"--platform=dlc", "x.py"}, env);
  // Node 1 of 2, local rank 3 of 8.
  agent::WorkerSpec spec{3, 11, 11, 1, 2, 16, 16, 8, 0};
  const auto w = agent::BuildWorkerEnv(c, spec, env, "10.0.0.1", 23456, "");
  EXPECT_EQ(w.at("RANK"), "11");
  EXPECT_EQ(w.at("WORLD_SIZE"), "16");
  EXPECT_EQ(w.at("LOCAL_RANK"), "3");
  EXPECT_EQ(w.at("GROUP_RANK"), "1");
  EXPECT_EQ(w.at("LOCAL_WORLD_SIZE"), "8");
  EXPECT_EQ(w.at("GROUP_WORLD_SIZE"), "2");
  EXPECT_EQ(w.at("ROLE_RANK"), "11");
  EXPECT_EQ(w.at("ROLE_WORLD_SIZE"), "16");
  EXPECT_EQ(w.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(w.at("MASTER_PORT"), "23456");
  // Like torchrun, variables it does not own pass through unchanged.
  EXPECT_EQ(w.at("NPROC_PER_NODE"), "8");
}

}  // namespace
}  // namespace tzrun
