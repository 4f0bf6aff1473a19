// Platform detection and mapping (tzrun/platform/platform.hpp), scenario by scenario
// from the platforms' own variable conventions (docs/multinode.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tzrun/platform/platform.hpp"

namespace tzrun::platform {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Env = std::map<std::string, std::string>;

Request Req(std::string platform = "auto", std::set<std::string> explicit_dests = {},
            std::string backend = "static", bool standalone = false) {
  Request r;
  r.platform = std::move(platform);
  r.explicit_dests = std::move(explicit_dests);
  r.rdzv_backend = std::move(backend);
  r.standalone = standalone;
  return r;
}

/// dest -> value of the defaults, for compact assertions.
std::map<std::string, std::string> Values(const Detection& d) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : d.defaults) out[k] = v.value;
  return out;
}

std::string ErrorOf(const Request& r, const Env& env) {
  try {
    Detect(r, env);
  } catch (const PlatformError& e) {
    return e.what();
  }
  return "<no error>";
}

const Env kDlcWorker0 = {{"MASTER_ADDR", "dlc18isgeayd-master-0"},
                         {"MASTER_PORT", "23456"},
                         {"WORLD_SIZE", "2"},
                         {"RANK", "1"},
                         {"NPROC_PER_NODE", "8"},
                         {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}};

TEST(Detect, NothingInTheEnvironmentMeansNone) {
  const auto d = Detect(Req(), {{"HOME", "/root"}, {"PATH", "/bin"}});
  EXPECT_EQ(d.kind, Kind::kNone);
  EXPECT_FALSE(d.requested);
  EXPECT_THAT(d.defaults, IsEmpty());
  EXPECT_THAT(d.warnings, IsEmpty());
  EXPECT_EQ(d.reason, "no platform variables found");
}

TEST(Detect, DlcNodeLevelVariablesMapToNodeOptions) {
  const auto d = Detect(Req(), kDlcWorker0);
  EXPECT_EQ(d.kind, Kind::kDlc);
  EXPECT_FALSE(d.requested);
  EXPECT_EQ(Values(d), (std::map<std::string, std::string>{{"master_addr", "dlc18isgeayd-master-0"},
                                                           {"master_port", "23456"},
                                                           {"nnodes", "2"},
                                                           {"node_rank", "1"},
                                                           {"nproc_per_node", "8"}}));
  EXPECT_EQ(d.defaults.at("nnodes").source, "WORLD_SIZE");
  EXPECT_EQ(d.defaults.at("node_rank").source, "RANK");
  EXPECT_EQ(d.defaults.at("nproc_per_node").source, "NPROC_PER_NODE");
}

TEST(Detect, ExplicitDestsAreNeverOverridden) {
  const auto d = Detect(Req("auto", {"nnodes", "master_addr", "nproc_per_node"}), kDlcWorker0);
  EXPECT_EQ(Values(d),
            (std::map<std::string, std::string>{{"master_port", "23456"}, {"node_rank", "1"}}));
}

TEST(Detect, DlcRequestedButRankMissingIsAnErrorNamingRank) {
  Env env = kDlcWorker0;
  env.erase("RANK");
  const auto msg = ErrorOf(Req("dlc"), env);
  EXPECT_THAT(msg, AllOf(HasSubstr("--platform=dlc"), HasSubstr("RANK"), HasSubstr("is not set"),
                         HasSubstr("--node-rank")));
  // Auto-detection does not recognise the job at all without RANK.
  EXPECT_EQ(Detect(Req(), env).kind, Kind::kNone);
  // ... and when --node-rank is explicit nothing is missing.
  EXPECT_EQ(Values(Detect(Req("dlc", {"node_rank"}), env)).count("nnodes"), 1u);
}

TEST(Detect, DlcRequestedWithEverythingExplicitNeedsNoVariables) {
  const auto d = Detect(
      Req("dlc", {"nnodes", "node_rank", "nproc_per_node", "master_addr", "master_port"}), {});
  EXPECT_EQ(d.kind, Kind::kDlc);
  EXPECT_TRUE(d.requested);
  EXPECT_THAT(d.defaults, IsEmpty());
}

TEST(Detect, MalformedPlatformIntegersAreErrors) {
  Env env = kDlcWorker0;
  env["WORLD_SIZE"] = "two";
  EXPECT_THAT(ErrorOf(Req(), env),
              AllOf(HasSubstr("WORLD_SIZE='two'"), HasSubstr("--nnodes"), HasSubstr("integer")));
  env = kDlcWorker0;
  env["RANK"] = "-1";
  EXPECT_THAT(ErrorOf(Req(), env), HasSubstr("RANK='-1' is not an integer >= 0"));
  env = kDlcWorker0;
  env["MASTER_PORT"] = "http";
  EXPECT_THAT(ErrorOf(Req(), env), HasSubstr("MASTER_PORT='http'"));
  // An explicit --node-rank makes a broken RANK irrelevant.
  env = kDlcWorker0;
  env["RANK"] = "x";
  EXPECT_EQ(Values(Detect(Req("auto", {"node_rank"}), env)).count("node_rank"), 0u);
}

TEST(Detect, DlcWithoutNprocPerNodeLooksLikeOldKubeflow) {
  Env env = kDlcWorker0;
  env.erase("NPROC_PER_NODE");
  const auto d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kKubeflow);
  EXPECT_THAT(d.variant, HasSubstr("<= v1.6"));
  EXPECT_EQ(Values(d).at("nnodes"), "2");  // pods = nodes
  EXPECT_EQ(Values(d).count("nproc_per_node"), 0u);
  // Asking for dlc explicitly keeps the default nproc and says so.
  const auto asked = Detect(Req("dlc"), env);
  EXPECT_EQ(asked.kind, Kind::kDlc);
  ASSERT_EQ(asked.warnings.size(), 1u);
  EXPECT_THAT(asked.warnings[0], HasSubstr("NPROC_PER_NODE is not set"));
}

TEST(Detect, KubeflowV17IntegerNprocWorldSizeIsProcessesNotNodes) {
  // Scenario: PyTorchJob v1.9, Master + 1 Worker, nprocPerNode "8", worker pod.
  const Env env = {{"MASTER_ADDR", "job-master-0"},
                   {"MASTER_PORT", "23456"},
                   {"WORLD_SIZE", "16"},
                   {"RANK", "1"},
                   {"PET_NNODES", "2"},
                   {"PET_NODE_RANK", "1"},
                   {"PET_NPROC_PER_NODE", "8"},
                   {"PET_MASTER_ADDR", "job-master-0"},
                   {"PET_MASTER_PORT", "23456"}};
  // The CLI marks every PET_<DEST> as explicit: the platform adds nothing.
  const auto d = Detect(
      Req("auto", {"nnodes", "node_rank", "nproc_per_node", "master_addr", "master_port"}), env);
  EXPECT_EQ(d.kind, Kind::kKubeflow);
  EXPECT_EQ(d.variant, "PyTorchJob v1.7+");
  EXPECT_THAT(d.defaults, IsEmpty());
  // Without PET_NNODES the node count is WORLD_SIZE / nprocPerNode, never 16.
  Env no_nnodes = env;
  no_nnodes.erase("PET_NNODES");
  const auto d2 =
      Detect(Req("auto", {"node_rank", "nproc_per_node", "master_addr", "master_port"}), no_nnodes);
  EXPECT_EQ(Values(d2).at("nnodes"), "2");
  EXPECT_EQ(d2.defaults.at("nnodes").source, "WORLD_SIZE/PET_NPROC_PER_NODE");
  no_nnodes["WORLD_SIZE"] = "12";
  no_nnodes["PET_NPROC_PER_NODE"] = "5";
  EXPECT_THAT(ErrorOf(Req("auto", {"nproc_per_node"}), no_nnodes),
              AllOf(HasSubstr("WORLD_SIZE=12 is not a multiple of PET_NPROC_PER_NODE=5"),
                    HasSubstr("PET_NNODES")));
}

TEST(Detect, KubeflowV17AutoNprocWorldSizeIsPods) {
  // nprocPerNode unset => "auto": WORLD_SIZE is the pod count (multiplier 1).
  const Env env = {{"MASTER_ADDR", "job-master-0"},
                   {"WORLD_SIZE", "2"},
                   {"RANK", "1"},
                   {"PET_NODE_RANK", "1"},
                   {"PET_NPROC_PER_NODE", "auto"},
                   {"PET_MASTER_ADDR", "job-master-0"}};
  const auto d = Detect(Req("auto", {"node_rank", "nproc_per_node", "master_addr"}), env);
  EXPECT_EQ(Values(d).at("nnodes"), "2");
  EXPECT_EQ(d.defaults.at("nnodes").source, "WORLD_SIZE");
}

TEST(Detect, KubeflowV16PodLevelOnly) {
  const Env env = {{"MASTER_ADDR", "job-master-0"},
                   {"MASTER_PORT", "23456"},
                   {"WORLD_SIZE", "3"},
                   {"RANK", "2"},
                   {"PYTHONUNBUFFERED", "0"}};
  const auto d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kKubeflow);
  EXPECT_EQ(Values(d), (std::map<std::string, std::string>{{"master_addr", "job-master-0"},
                                                           {"master_port", "23456"},
                                                           {"nnodes", "3"},
                                                           {"node_rank", "2"}}));
}

TEST(Detect, TrainerV2IsPetOnly) {
  Env env = {{"PET_NNODES", "3"},
             {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
             {"PET_NPROC_PER_NODE", "2"},
             {"PET_NODE_RANK", "2"},
             {"PET_MASTER_ADDR", "tj-node-0-0.tj"},
             {"PET_MASTER_PORT", "29500"}};
  const auto d = Detect(
      Req("auto", {"nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port"}), env);
  EXPECT_EQ(d.kind, Kind::kKubeflow);
  EXPECT_EQ(d.variant, "Trainer v2");
  EXPECT_THAT(d.defaults, IsEmpty());
  EXPECT_THAT(d.warnings, IsEmpty());
  // The same PET_* variables exported by hand outside Kubernetes.
  env.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(Detect(Req(), env).variant, "PET_* variables only");
}

TEST(Detect, KubeflowElasticUsesTheRendezvousFromPet) {
  const Env env = {{"PET_RDZV_ENDPOINT", "job-worker-0:23456"},
                   {"PET_RDZV_BACKEND", "c10d"},
                   {"PET_NNODES", "1:3"},
                   {"PET_MAX_RESTARTS", "100"}};
  const auto d =
      Detect(Req("auto", {"rdzv_endpoint", "rdzv_backend", "nnodes", "max_restarts"}, "c10d"), env);
  EXPECT_EQ(d.kind, Kind::kKubeflow);
  EXPECT_EQ(d.variant, "PyTorchJob elastic");
  EXPECT_THAT(d.defaults, IsEmpty());
  // Requested explicitly, an elastic job needs no RANK (node ranks come from the rendezvous).
  EXPECT_EQ(ErrorOf(Req("kubeflow", {"rdzv_endpoint", "rdzv_backend", "nnodes"}, "c10d"), env),
            "<no error>");
}

TEST(Detect, KubeflowRequestedWithoutAnyTopologyIsAnError) {
  EXPECT_THAT(ErrorOf(Req("kubeflow"), {}),
              AllOf(HasSubstr("--platform=kubeflow"),
                    HasSubstr("neither PET_NNODES nor WORLD_SIZE is set"), HasSubstr("--nnodes")));
}

const Env kSlurmNode1 = {{"SLURM_JOB_ID", "4242"},
                         {"SLURM_JOB_NAME", "train"},
                         {"SLURM_NNODES", "3"},
                         {"SLURM_JOB_NUM_NODES", "3"},
                         {"SLURM_STEP_NUM_NODES", "3"},
                         {"SLURM_NTASKS", "3"},
                         {"SLURM_STEP_NUM_TASKS", "3"},
                         {"SLURM_NODEID", "1"},
                         {"SLURM_PROCID", "1"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_JOB_NODELIST", "gpu[07-08],cpu3"},
                         {"SLURM_STEP_NODELIST", "gpu[07-08],cpu3"},
                         {"SLURM_GPUS_ON_NODE", "4"}};

TEST(Detect, SlurmOneTzrunPerNode) {
  const auto d = Detect(Req(), kSlurmNode1);
  EXPECT_EQ(d.kind, Kind::kSlurm);
  EXPECT_EQ(Values(d), (std::map<std::string, std::string>{{"master_addr", "gpu07"},
                                                           {"nnodes", "3"},
                                                           {"node_rank", "1"},
                                                           {"nproc_per_node", "4"},
                                                           {"rdzv_id", "4242"}}));
  EXPECT_EQ(d.defaults.at("master_addr").source, "SLURM_STEP_NODELIST (first host)");
  EXPECT_EQ(d.defaults.at("nnodes").source, "SLURM_STEP_NUM_NODES");
  EXPECT_THAT(d.warnings, IsEmpty());
}

TEST(Detect, SlurmStepValuesWinOverJobValues) {
  Env env = kSlurmNode1;
  env["SLURM_STEP_NUM_NODES"] = "2";
  env["SLURM_STEP_NUM_TASKS"] = "2";
  env["SLURM_STEP_NODELIST"] = "gpu08,cpu3";
  const auto v = Values(Detect(Req(), env));
  EXPECT_EQ(v.at("nnodes"), "2");
  EXPECT_EQ(v.at("master_addr"), "gpu08");
}

TEST(Detect, SlurmWithElasticBackendGetsAnEndpointOnTheHeadNode) {
  const auto d = Detect(Req("auto", {"rdzv_backend"}, "c10d"), kSlurmNode1);
  const auto v = Values(d);
  EXPECT_EQ(v.at("rdzv_endpoint"), "gpu07:29500");
  EXPECT_EQ(v.count("node_rank"), 0u);
  EXPECT_EQ(v.count("master_addr"), 0u);
  EXPECT_EQ(v.at("nnodes"), "3");
}

TEST(Detect, SlurmWithoutGpusKeepsTheDefaultNproc) {
  Env env = kSlurmNode1;
  env.erase("SLURM_GPUS_ON_NODE");
  EXPECT_EQ(Values(Detect(Req(), env)).count("nproc_per_node"), 0u);
  env["SLURM_GPUS_ON_NODE"] = "0";
  EXPECT_EQ(Values(Detect(Req(), env)).count("nproc_per_node"), 0u);
}

TEST(Detect, SlurmOneTaskPerGpuIsNotPerNodeMode) {
  Env env = kSlurmNode1;
  env["SLURM_NTASKS"] = env["SLURM_STEP_NUM_TASKS"] = "12";
  const auto d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kNone);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_THAT(d.warnings[0],
              AllOf(HasSubstr("SLURM_STEP_NUM_TASKS=12 tasks"), HasSubstr("--ntasks-per-node=1")));
  EXPECT_THAT(ErrorOf(Req("slurm"), env), HasSubstr("tzrun must run once per node"));
}

TEST(Detect, SlurmInteractiveShellsAreIgnored) {
  Env env = kSlurmNode1;
  env["SLURM_JOB_NAME"] = "interactive";
  EXPECT_EQ(Detect(Req(), env).kind, Kind::kNone);
  EXPECT_EQ(Detect(Req("slurm"), env).kind, Kind::kSlurm);
}

TEST(Detect, SlurmOutsideAStepWarns) {
  Env env = kSlurmNode1;
  env.erase("SLURM_STEP_NUM_NODES");
  env.erase("SLURM_STEP_NUM_TASKS");
  env.erase("SLURM_STEP_NODELIST");
  const auto d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kSlurm);
  EXPECT_EQ(Values(d).at("nnodes"), "3");
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_THAT(d.warnings[0], HasSubstr("not inside an srun step"));
}

TEST(Detect, SlurmBadNodeListIsAnErrorNamingTheVariable) {
  Env env = kSlurmNode1;
  env["SLURM_STEP_NODELIST"] = "gpu[07-";
  EXPECT_THAT(ErrorOf(Req(), env), AllOf(HasSubstr("SLURM_STEP_NODELIST"), HasSubstr("unbalanced"),
                                         HasSubstr("--master-addr")));
  // Not needed when --master-addr is explicit.
  EXPECT_EQ(ErrorOf(Req("auto", {"master_addr"}), env), "<no error>");
}

TEST(Detect, SlurmRequestedOutsideSlurm) {
  EXPECT_THAT(ErrorOf(Req("slurm"), {}),
              AllOf(HasSubstr("--platform=slurm"), HasSubstr("SLURM_NNODES is not set")));
}

TEST(Detect, InsideAWorkerAutoDetectionIsOff) {
  Env env = kDlcWorker0;
  env["TORCHELASTIC_RUN_ID"] = "abc";
  auto d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kNone);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_THAT(d.warnings[0], HasSubstr("TORCHELASTIC_RUN_ID is set"));

  env = {{"RANK", "3"},       {"GROUP_RANK", "1"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
         {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}};
  d = Detect(Req(), env);
  EXPECT_EQ(d.kind, Kind::kNone);
  EXPECT_THAT(d.warnings.at(0), HasSubstr("RANK, GROUP_RANK, LOCAL_RANK and LOCAL_WORLD_SIZE"));
}

TEST(Detect, PlatformNoneIgnoresEverything) {
  const auto d = Detect(Req("none"), kDlcWorker0);
  EXPECT_EQ(d.kind, Kind::kNone);
  EXPECT_TRUE(d.requested);
  EXPECT_THAT(d.defaults, IsEmpty());
}

TEST(Detect, StandaloneOnlyTakesNprocPerNode) {
  const auto d = Detect(Req("auto", {"standalone"}, "c10d", true), kDlcWorker0);
  EXPECT_EQ(d.kind, Kind::kDlc);
  EXPECT_EQ(Values(d), (std::map<std::string, std::string>{{"nproc_per_node", "8"}}));
}

TEST(Detect, NonStaticBackendGetsEndpointFromMaster) {
  const auto d = Detect(Req("auto", {"rdzv_backend"}, "c10d"), kDlcWorker0);
  EXPECT_EQ(Values(d),
            (std::map<std::string, std::string>{{"nnodes", "2"},
                                                {"nproc_per_node", "8"},
                                                {"rdzv_endpoint", "dlc18isgeayd-master-0:23456"}}));
  Env v6 = kDlcWorker0;
  v6["MASTER_ADDR"] = "fd00::1";
  EXPECT_EQ(Values(Detect(Req("auto", {}, "c10d"), v6)).at("rdzv_endpoint"), "[fd00::1]:23456");
}

TEST(Detect, UnknownPlatformNameIsAnError) {
  EXPECT_THAT(ErrorOf(Req("k8s"), {}), HasSubstr("invalid choice: 'k8s'"));
}

TEST(Summary, OneLineWithTheResolvedValues) {
  Detection d;
  d.kind = Kind::kDlc;
  LaunchConfig c;
  c.min_nodes = c.max_nodes = 2;
  c.node_rank = 1;
  c.master_addr = "10.0.0.1";
  c.master_port = 23456;
  c.nproc_per_node = 8;
  EXPECT_EQ(SummaryLine(d, c),
            "tzrun: platform: dlc (nnodes=2 node_rank=1 master=10.0.0.1:23456 nproc_per_node=8)");

  d.kind = Kind::kKubeflow;
  d.variant = "PyTorchJob elastic";
  c.rdzv_backend = "c10d";
  c.rdzv_endpoint = "job-worker-0:23456";
  c.min_nodes = 1;
  c.max_nodes = 3;
  EXPECT_EQ(SummaryLine(d, c),
            "tzrun: platform: kubeflow (nnodes=1:3 rdzv=c10d@job-worker-0:23456 nproc_per_node=8; "
            "PyTorchJob elastic)");
  // An empty endpoint shows the backend's default (etcd: localhost:2379), not "etcd@".
  c.rdzv_backend = "etcd";
  c.rdzv_endpoint = "";
  EXPECT_EQ(SummaryLine(d, c),
            "tzrun: platform: kubeflow (nnodes=1:3 rdzv=etcd@localhost:2379 nproc_per_node=8; "
            "PyTorchJob elastic)");

  Detection none;
  none.reason = "no platform variables found";
  LaunchConfig local;
  local.master_addr = "::1";
  EXPECT_EQ(SummaryLine(none, local),
            "tzrun: platform: none (nnodes=1 node_rank=0 master=[::1]:29500 nproc_per_node=1; no "
            "platform variables found)");
}

}  // namespace
}  // namespace tzrun::platform
