#include "dry_run.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "numa_sysfs.hpp"
#include "rendezvous_options.hpp"
#include "tzrun/agent/worker_env.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/rendezvous/ranks.hpp"

namespace tzrun::agent {
namespace {

using Env = std::map<std::string, std::string>;
using PlannedWorker = std::pair<std::vector<std::string>, Env>;

/// Where the store would be: c10d picks a free port at run time.
struct StorePlan {
  std::string addr;
  int port = 0;
};

bool IsEtcd(const LaunchConfig& cfg) {
  return !cfg.standalone && (cfg.rdzv_backend == "etcd" || cfg.rdzv_backend == "etcd-v2");
}

StorePlan PlanStore(const LaunchConfig& cfg) {
  // etcd backends: the workers' store is hosted by whichever node becomes round rank 0.
  if (IsEtcd(cfg)) return {"<round rank 0's address>", 0};
  if (IsDynamic(cfg)) return {cfg.local_addr.value_or("<this host's FQDN>"), 0};
  if (!cfg.rdzv_endpoint.empty()) {  // static: an explicit endpoint wins
    const auto ep = rendezvous::ParseEndpoint(cfg.rdzv_endpoint, -1);
    return {ep.host, ep.port};
  }
  return {cfg.master_addr, cfg.master_port};
}

/// Every worker's argv and env, built first so an error for rank N is reported before
/// anything is printed.
std::vector<PlannedWorker> PlanWorkers(const LaunchConfig& cfg, const Env& base_env,
                                       const StorePlan& store, int group_rank, int group_world) {
  const bool dynamic = IsDynamic(cfg);
  const auto ranks = rendezvous::IdenticalRanks(group_rank, group_world, cfg.nproc_per_node);
  std::vector<PlannedWorker> workers;
  for (int lr = 0; lr < cfg.nproc_per_node; ++lr) {
    WorkerSpec spec{lr,
                    ranks.base_global_rank + lr,
                    ranks.base_role_rank + lr,
                    group_rank,
                    group_world,
                    ranks.global_world_size,
                    ranks.role_world_size,
                    cfg.nproc_per_node,
                    0};
    auto env = BuildWorkerEnv(cfg, spec, base_env, store.addr, store.port,
                              "<log dir>/attempt_0/" + std::to_string(lr) + "/error.json");
    if (dynamic) env["MASTER_PORT"] = "<free port>";
    if (cfg.flash_checkpoint) env["TZRUN_FLASH_DIR"] = "/dev/shm/tzrun-flash-<pid>-<random>";
    if (cfg.hang_timeout > 0 || cfg.metrics_port >= 0) {
      env["TZRUN_PROGRESS_FILE"] =
          "$TMPDIR/tzrun-progress-<pid>-<random>/rank_" + std::to_string(lr);
    }
    auto argv = BuildWorkerArgv(cfg, lr, env);
    workers.emplace_back(std::move(argv), std::move(env));
  }
  return workers;
}

/// "60s", or "off" for 0 (the straggler settings).
std::string SecondsOrOff(double s) {
  if (s <= 0) return "off";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

void PrintConfiguration(const LaunchConfig& cfg) {
  std::printf("resolved configuration:\n");
  std::printf("  nnodes=%d:%d node_rank=%d nproc_per_node=%d (%s)\n", cfg.min_nodes, cfg.max_nodes,
              cfg.node_rank, cfg.nproc_per_node, cfg.nproc_per_node_spec.c_str());
  // etcd's empty endpoint is localhost:2379 (torchrun's default port for the etcd backends).
  const std::string endpoint = !cfg.rdzv_endpoint.empty() ? cfg.rdzv_endpoint
                               : IsEtcd(cfg)              ? "localhost:2379"
                                                          : "<derived>";
  std::printf("  rdzv_backend=%s rdzv_endpoint=%s rdzv_id=%s\n",
              cfg.standalone ? "c10d" : cfg.rdzv_backend.c_str(), endpoint.c_str(),
              cfg.rdzv_id.c_str());
  std::printf("  max_restarts=%d shutdown_timeout=%gs log_dir=%s\n", cfg.max_restarts,
              cfg.shutdown_timeout, cfg.log_dir.value_or("<temporary>").c_str());
  std::vector<std::string> codes;
  for (int c : cfg.no_restart_exit_codes) codes.push_back(std::to_string(c));
  std::printf("  max_membership_restarts=%d no_restart_exit_codes=%s\n",
              cfg.max_membership_restarts,
              codes.empty() ? "<none>" : base::Join(codes, ",").c_str());
  std::printf("  signals_to_handle=%s\n", base::Join(cfg.signals_to_handle, ",").c_str());
  std::printf("  forward_signals=%s\n", base::Join(cfg.forward_signals, ",").c_str());
  std::printf("  exit_barrier_timeout=%gs straggler_warning=%s straggler_timeout=%s\n",
              cfg.exit_barrier_timeout, SecondsOrOff(cfg.straggler_warning).c_str(),
              SecondsOrOff(cfg.straggler_timeout).c_str());
  std::printf("  hang_timeout=%s flash_checkpoint=%s\n", SecondsOrOff(cfg.hang_timeout).c_str(),
              cfg.flash_checkpoint ? "on" : "off");
  std::printf("  numa_binding=%s\n", cfg.numa_binding.empty() ? "off" : cfg.numa_binding.c_str());
  std::printf("  metrics_port=%s event_log=%s\n",
              cfg.metrics_port < 0 ? "off" : std::to_string(cfg.metrics_port).c_str(),
              cfg.event_log.empty() ? "off" : cfg.event_log.c_str());
}

/// Every variable torchrun sets is shown, even when it equals the agent's own value
/// (e.g. a platform RANK that happens to match); other inherited variables are not.
void PrintWorkers(const std::vector<PlannedWorker>& workers, const Env& agent_env,
                  const std::vector<CpuSet>& numa_cpus) {
  static const std::set<std::string> kTorchrunKeys = {"RANK",
                                                      "LOCAL_RANK",
                                                      "GROUP_RANK",
                                                      "ROLE_RANK",
                                                      "ROLE_NAME",
                                                      "LOCAL_WORLD_SIZE",
                                                      "WORLD_SIZE",
                                                      "GROUP_WORLD_SIZE",
                                                      "ROLE_WORLD_SIZE",
                                                      "MASTER_ADDR",
                                                      "MASTER_PORT",
                                                      "TORCHELASTIC_RESTART_COUNT",
                                                      "TORCHELASTIC_MAX_RESTARTS",
                                                      "TORCHELASTIC_RUN_ID",
                                                      "TORCHELASTIC_USE_AGENT_STORE",
                                                      "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                      "TORCHELASTIC_ERROR_FILE",
                                                      "TORCHELASTIC_SIGNALS_TO_HANDLE"};
  for (std::size_t lr = 0; lr < workers.size(); ++lr) {
    const auto& [argv, env] = workers[lr];
    std::printf("[local_rank %zu] argv:", lr);
    for (const auto& a : argv) std::printf(" %s", a.c_str());
    std::printf("\n");
    if (lr < numa_cpus.size()) {
      std::printf("[local_rank %zu] cpus: %s\n", lr, CpuListText(numa_cpus[lr]).c_str());
    }
    for (const auto& [k, v] : env) {
      auto it = agent_env.find(k);
      if (kTorchrunKeys.contains(k) || it == agent_env.end() || it->second != v) {
        std::printf("  %s=%s\n", k.c_str(), v.c_str());
      }
    }
  }
}

}  // namespace

int DryRun(LaunchConfig cfg) {
  ValidateTopology(cfg);
  const auto agent_env = base::EnvironMap();
  Env base_env = agent_env;
  if (NeedsOmpDefault(cfg, base_env)) {
    // Not `= "1"`: assigning a literal made GCC 12 -O3 print a -Wrestrict false positive.
    base_env.insert_or_assign("OMP_NUM_THREADS", std::string(1, '1'));
  }
  if (cfg.rdzv_id.empty() || (cfg.standalone && cfg.rdzv_id == "none")) {
    cfg.rdzv_id = "<random uuid>";
  }
  std::vector<CpuSet> numa_cpus;  // the run's plan, and its errors (exit 2) before any output
  if (const auto mode = ParseNumaMode(cfg.numa_binding)) {
    numa_cpus = PlanNumaBinding(*mode, cfg.nproc_per_node, base_env);
  }
  const bool dynamic = IsDynamic(cfg);
  const StorePlan store = PlanStore(cfg);
  std::printf("tzrun dry run: %d worker(s), run id %s, store on %s:%s%s\n", cfg.nproc_per_node,
              cfg.rdzv_id.c_str(), store.addr.c_str(),
              dynamic ? "<free port>" : std::to_string(store.port).c_str(),
              IsEtcd(cfg) ? " (the rendezvous state is in etcd)" : "");
  // Multi-node: static ranks assume the same --nproc-per-node on every node; c10d ranks are
  // only known after the rendezvous (shown as node rank 0 of MIN nodes).
  const int group_rank = dynamic ? 0 : cfg.node_rank;
  const int group_world = dynamic ? cfg.min_nodes : cfg.max_nodes;
  if (group_world > 1) {
    const std::string why = dynamic
                                ? " (the " + std::string(IsEtcd(cfg) ? cfg.rdzv_backend : "c10d") +
                                      " rendezvous assigns node ranks)"
                                : " (assuming the same --nproc-per-node on every node)";
    std::printf("multi-node: ranks shown for node rank %d of %d%s\n", group_rank, group_world,
                why.c_str());
  }
  const auto workers = PlanWorkers(cfg, base_env, store, group_rank, group_world);
  PrintConfiguration(cfg);
  PrintWorkers(workers, agent_env, numa_cpus);
  return ExitCode::kSuccess;
}

}  // namespace tzrun::agent
