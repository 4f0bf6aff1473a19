// Platform detection and mapping (see include/tzrun/platform/platform.hpp and
// docs/multinode.md, "Platform detection").
#include "tzrun/platform/platform.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tzrun/base/strings.hpp"

namespace tzrun::platform {
namespace {

using Env = std::map<std::string, std::string>;

/// torchx dist.ddp and torchrun's default port for a rendezvous endpoint.
constexpr std::string_view kDefaultPort = "29500";

using base::Strip;

/// A set, non-blank variable (stripped), else nullopt.
std::optional<std::string> Get(const Env& env, const std::string& key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  auto v = Strip(it->second);
  if (v.empty()) return std::nullopt;
  return v;
}

/// The first set variable of `keys`, with its name.
std::optional<std::pair<std::string, std::string>> FirstOf(
    const Env& env, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (auto v = Get(env, k)) return std::make_pair(std::string(k), *v);
  }
  return std::nullopt;
}

std::optional<std::int64_t> ToInt(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// "host:port", bracketing a bare IPv6 address.
std::string Endpoint(const std::string& host, std::string_view port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::string(port);
}

/// Collects defaults for one platform, honouring explicit dests and the
/// rendezvous mode, and turns missing required variables into errors.
class Mapper {
 public:
  Mapper(const Request& req, const Env& environment, Detection& detection)
      : request(req), env(environment), out(detection) {}

  [[nodiscard]] bool IsStatic() const {
    return !request.standalone && request.rdzv_backend == "static";
  }

  /// True when the platform may supply `dest`: not explicit, and used in this
  /// rendezvous mode (standalone: only nproc_per_node; non-static: no
  /// node_rank/master_*; static: no rdzv_endpoint).
  [[nodiscard]] bool Wants(const std::string& dest) const {
    if (request.explicit_dests.count(dest) != 0) return false;
    if (request.standalone) return dest == "nproc_per_node";
    if (dest == "node_rank" || dest == "master_addr" || dest == "master_port") return IsStatic();
    if (dest == "rdzv_endpoint") return !IsStatic();
    return true;
  }

  void Set(const std::string& dest, std::string value, std::string source) {
    if (Wants(dest)) out.defaults[dest] = Value{std::move(value), std::move(source)};
  }

  /// A needed variable is missing: an error when the platform was named, else
  /// the built-in default stays (what torchrun would do).
  void Missing(const std::string& dest, const std::string& what, const std::string& flag) const {
    if (!Wants(dest) || !out.requested) return;
    throw PlatformError("--platform=" + std::string(Name(out.kind)) + ": " + what +
                        ", so the value of " + flag + " is unknown (pass " + flag +
                        " explicitly, or use --platform=auto or none)");
  }

  /// A positive/non-negative integer variable, or a PlatformError naming it.
  std::int64_t Integer(const std::string& var, const std::string& value, std::int64_t min,
                       const std::string& flag) const {
    auto v = ToInt(value);
    if (!v || *v < min || *v > 0x7fffffff) {
      throw PlatformError(std::string(Name(out.kind)) + " platform: environment variable " + var +
                          "='" + value + "' is not an integer >= " + std::to_string(min) +
                          " (it supplies " + flag + "; fix the job's environment, pass " + flag +
                          " explicitly, or use --platform=none)");
    }
    return *v;
  }

  /// MASTER_ADDR / MASTER_PORT style address: static -> master_addr/port,
  /// non-static -> rdzv_endpoint "addr:port".
  void Master(const std::optional<std::pair<std::string, std::string>>& addr,
              const std::optional<std::pair<std::string, std::string>>& port) {
    if (port) Integer(port->first, port->second, 0, "--master-port");
    if (addr) {
      Set("master_addr", addr->second, addr->first);
      Set("rdzv_endpoint", Endpoint(addr->second, port ? port->second : kDefaultPort),
          addr->first + (port ? "+" + port->first : std::string()));
    } else {
      Missing("master_addr", "MASTER_ADDR is not set", "--master-addr");
      Missing("rdzv_endpoint", "MASTER_ADDR is not set", "--rdzv-endpoint");
    }
    if (port) Set("master_port", port->second, port->first);
  }

  const Request& request;
  const Env& env;
  Detection& out;
};

bool NestedWorker(const Env& env, std::string& why) {
  if (Get(env, "TORCHELASTIC_RUN_ID")) {
    why = "TORCHELASTIC_RUN_ID is set";
    return true;
  }
  if (Get(env, "RANK") && Get(env, "GROUP_RANK") && Get(env, "LOCAL_RANK") &&
      Get(env, "LOCAL_WORLD_SIZE")) {
    why = "RANK, GROUP_RANK, LOCAL_RANK and LOCAL_WORLD_SIZE are set";
    return true;
  }
  return false;
}

bool HasPetMarkers(const Env& env) {
  return Get(env, "PET_NNODES") || Get(env, "PET_NODE_RANK") || Get(env, "PET_MASTER_ADDR") ||
         Get(env, "PET_RDZV_ENDPOINT");
}

bool HasPodLevel(const Env& env) {
  return Get(env, "MASTER_ADDR") && Get(env, "WORLD_SIZE") && Get(env, "RANK") &&
         !Get(env, "LOCAL_RANK");
}

struct SlurmFacts {
  std::optional<std::pair<std::string, std::string>> job_id, nodes, tasks, node_id, nodelist, gpus;
};

SlurmFacts ReadSlurmFacts(const Env& env) {
  SlurmFacts f;
  f.job_id = FirstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  f.nodes = FirstOf(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  f.tasks = FirstOf(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  f.node_id = FirstOf(env, {"SLURM_NODEID"});
  f.nodelist = FirstOf(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  f.gpus = FirstOf(env, {"SLURM_GPUS_ON_NODE"});
  return f;
}

void MapDlc(Mapper& m, const Env& env) {
  auto& out = m.out;
  out.variant = "pod-level MASTER_ADDR/WORLD_SIZE/RANK/NPROC_PER_NODE";
  if (auto ws = Get(env, "WORLD_SIZE")) {
    m.Integer("WORLD_SIZE", *ws, 1, "--nnodes");
    m.Set("nnodes", *ws, "WORLD_SIZE");
  } else {
    m.Missing("nnodes", "WORLD_SIZE (the node count on PAI-DLC) is not set", "--nnodes");
  }
  if (auto rank = Get(env, "RANK")) {
    if (m.Wants("node_rank")) m.Integer("RANK", *rank, 0, "--node-rank");
    m.Set("node_rank", *rank, "RANK");
  } else {
    m.Missing("node_rank", "RANK (the node rank on PAI-DLC) is not set", "--node-rank");
  }
  m.Master(FirstOf(env, {"MASTER_ADDR"}), FirstOf(env, {"MASTER_PORT"}));
  if (auto n = Get(env, "NPROC_PER_NODE")) {
    m.Set("nproc_per_node", *n, "NPROC_PER_NODE");
  } else if (m.Wants("nproc_per_node") && out.requested) {
    out.warnings.emplace_back(
        "--platform=dlc: NPROC_PER_NODE is not set; --nproc-per-node keeps its default (pass "
        "--nproc-per-node explicitly, e.g. --nproc-per-node=gpu)");
  }
}

void MapKubeflow(Mapper& m, const Env& env) {
  auto& out = m.out;
  const bool pet = HasPetMarkers(env);
  const bool pod = Get(env, "MASTER_ADDR") || Get(env, "WORLD_SIZE") || Get(env, "RANK");
  if (Get(env, "PET_RDZV_ENDPOINT")) {
    out.variant = "PyTorchJob elastic";
  } else if (pet && pod) {
    out.variant = "PyTorchJob v1.7+";
  } else if (pet) {
    // Trainer v2 injects only PET_*; outside Kubernetes they were set by hand.
    out.variant = Get(env, "KUBERNETES_SERVICE_HOST") ? "Trainer v2" : "PET_* variables only";
  } else {
    out.variant = "PyTorchJob <= v1.6, pod-level MASTER_ADDR/WORLD_SIZE/RANK";
  }
  // PET_* values are read by the CLI like torchrun does; they are explicit
  // here. What remains is the pod-level fallback of PyTorchJob <= v1.6.
  if (auto ws = Get(env, "WORLD_SIZE")) {
    const auto pods = m.Integer("WORLD_SIZE", *ws, 1, "--nnodes");
    // v1.7+: WORLD_SIZE = pods * nprocPerNode when nprocPerNode is an integer.
    const auto nproc = Get(env, "PET_NPROC_PER_NODE");
    const auto per_pod = nproc ? ToInt(*nproc) : std::nullopt;
    if (pet && per_pod && *per_pod > 0) {
      if (m.Wants("nnodes") && pods % *per_pod != 0) {
        throw PlatformError("kubeflow platform: WORLD_SIZE=" + *ws +
                            " is not a multiple of PET_NPROC_PER_NODE=" + *nproc +
                            " (PyTorchJob v1.7+ sets WORLD_SIZE = pods * nprocPerNode; pass "
                            "--nnodes explicitly or set PET_NNODES)");
      }
      m.Set("nnodes", std::to_string(pods / *per_pod), "WORLD_SIZE/PET_NPROC_PER_NODE");
    } else {
      m.Set("nnodes", *ws, "WORLD_SIZE");
    }
  } else {
    m.Missing("nnodes", "neither PET_NNODES nor WORLD_SIZE is set", "--nnodes");
  }
  if (auto rank = Get(env, "RANK")) {
    if (m.Wants("node_rank")) m.Integer("RANK", *rank, 0, "--node-rank");
    m.Set("node_rank", *rank, "RANK");
  } else {
    m.Missing("node_rank", "neither PET_NODE_RANK nor RANK is set", "--node-rank");
  }
  const auto addr = FirstOf(env, {"MASTER_ADDR"});
  const auto port = FirstOf(env, {"MASTER_PORT"});
  if (addr || out.requested) m.Master(addr, port);
}

void MapSlurm(Mapper& m, const SlurmFacts& f) {
  auto& out = m.out;
  out.variant = "one tzrun per node";
  if (f.nodes && f.tasks) {
    const auto nodes = m.Integer(f.nodes->first, f.nodes->second, 1, "--nnodes");
    const auto tasks = ToInt(f.tasks->second);
    if (tasks && *tasks > nodes) {
      throw PlatformError("--platform=slurm: " + f.tasks->first + "=" + f.tasks->second +
                          " tasks on " + f.nodes->first + "=" + f.nodes->second +
                          " nodes; tzrun must run once per node (srun --ntasks-per-node=1) and "
                          "starts the per-GPU workers itself");
    }
  }
  if (f.nodes) {
    m.Integer(f.nodes->first, f.nodes->second, 1, "--nnodes");
    m.Set("nnodes", f.nodes->second, f.nodes->first);
  } else {
    m.Missing("nnodes", "SLURM_NNODES is not set", "--nnodes");
  }
  if (f.node_id) {
    if (m.Wants("node_rank")) m.Integer(f.node_id->first, f.node_id->second, 0, "--node-rank");
    m.Set("node_rank", f.node_id->second, f.node_id->first);
  } else {
    m.Missing("node_rank", "SLURM_NODEID is not set (run tzrun through srun)", "--node-rank");
  }
  if (f.nodelist) {
    std::string head;
    if (m.Wants("master_addr") || m.Wants("rdzv_endpoint")) {
      try {
        head = ExpandHostlist(f.nodelist->second).front();
      } catch (const std::invalid_argument& e) {
        throw PlatformError("slurm platform: environment variable " + f.nodelist->first + ": " +
                            e.what() + "; pass --master-addr (or --rdzv-endpoint) explicitly");
      }
    }
    m.Set("master_addr", head, f.nodelist->first + " (first host)");
    m.Set("rdzv_endpoint", Endpoint(head, kDefaultPort), f.nodelist->first + " (first host)");
  } else {
    m.Missing("master_addr", "SLURM_JOB_NODELIST is not set", "--master-addr");
    m.Missing("rdzv_endpoint", "SLURM_JOB_NODELIST is not set", "--rdzv-endpoint");
  }
  if (f.gpus) {
    if (auto g = ToInt(f.gpus->second); g && *g > 0) {
      m.Set("nproc_per_node", f.gpus->second, f.gpus->first);
    }
  }
  if (f.job_id) m.Set("rdzv_id", f.job_id->second, f.job_id->first);
}

Kind ParseKind(const std::string& s) {
  if (s == "dlc") return Kind::kDlc;
  if (s == "kubeflow") return Kind::kKubeflow;
  if (s == "slurm") return Kind::kSlurm;
  if (s == "none") return Kind::kNone;
  throw PlatformError("--platform: invalid choice: '" + s +
                      "' (choose from 'auto', 'dlc', 'kubeflow', 'slurm', 'none')");
}

}  // namespace

std::string_view Name(Kind kind) noexcept {
  switch (kind) {
    case Kind::kDlc:
      return "dlc";
    case Kind::kKubeflow:
      return "kubeflow";
    case Kind::kSlurm:
      return "slurm";
    case Kind::kNone:
      break;
  }
  return "none";
}

Detection Detect(const Request& request, const Env& env) {
  Detection out;
  const SlurmFacts slurm = ReadSlurmFacts(env);
  if (request.platform != "auto") {
    out.kind = ParseKind(request.platform);
    out.requested = true;
    if (out.kind == Kind::kNone) {
      out.reason = "detection disabled by --platform=none";
      return out;
    }
    out.reason = "--platform=" + request.platform;
  } else {
    std::string why;
    if (NestedWorker(env, why)) {
      out.reason = "inside a torchrun/tzrun worker";
      out.warnings.push_back(
          "tzrun runs inside a torchrun/tzrun worker (" + why +
          "): platform auto-detection is off, so RANK/WORLD_SIZE are not read as node values "
          "(pass --platform=... to force a platform, or --platform=none to silence this)");
      return out;
    }
    if (HasPetMarkers(env)) {
      out.kind = Kind::kKubeflow;
      out.reason = "PET_* topology variables are set";
    } else if (HasPodLevel(env)) {
      out.kind = Get(env, "NPROC_PER_NODE") ? Kind::kDlc : Kind::kKubeflow;
      out.reason = out.kind == Kind::kDlc
                       ? "MASTER_ADDR, WORLD_SIZE, RANK and NPROC_PER_NODE are set"
                       : "MASTER_ADDR, WORLD_SIZE and RANK are set without NPROC_PER_NODE";
    } else if (slurm.job_id && slurm.nodes && slurm.node_id && slurm.nodelist) {
      const auto job_name = Get(env, "SLURM_JOB_NAME");
      const auto nodes = ToInt(slurm.nodes->second);
      const auto tasks = slurm.tasks ? ToInt(slurm.tasks->second) : std::nullopt;
      if (job_name && (*job_name == "bash" || *job_name == "interactive")) {
        out.reason = "interactive Slurm job (SLURM_JOB_NAME=" + *job_name + ")";
        return out;
      }
      if (nodes && tasks && *tasks > *nodes) {
        out.reason = "Slurm step with more tasks than nodes";
        out.warnings.push_back(
            "Slurm: " + slurm.tasks->first + "=" + slurm.tasks->second + " tasks on " +
            slurm.nodes->first + "=" + slurm.nodes->second +
            " nodes, so this is not one tzrun per node; Slurm variables are ignored (launch "
            "tzrun with srun --ntasks-per-node=1, or pass --platform=none to silence this)");
        return out;
      }
      out.kind = Kind::kSlurm;
      out.reason = "SLURM_JOB_ID, SLURM_NODEID and the node list are set";
      if (!Get(env, "SLURM_STEP_NUM_NODES") && nodes && *nodes > 1) {
        out.warnings.push_back(
            "Slurm: not inside an srun step (SLURM_STEP_NUM_NODES unset) in a " +
            slurm.nodes->second +
            "-node job; start tzrun with srun --ntasks-per-node=1 so that every node runs one");
      }
    } else {
      out.reason = "no platform variables found";
      return out;
    }
  }

  Mapper m(request, env, out);
  switch (out.kind) {
    case Kind::kDlc:
      MapDlc(m, env);
      break;
    case Kind::kKubeflow:
      MapKubeflow(m, env);
      break;
    case Kind::kSlurm:
      MapSlurm(m, slurm);
      break;
    case Kind::kNone:
      break;
  }
  return out;
}

std::string SummaryLine(const Detection& d, const LaunchConfig& c) {
  std::string s = "tzrun: platform: " + std::string(Name(d.kind)) + " (nnodes=";
  s += c.min_nodes == c.max_nodes ? std::to_string(c.max_nodes)
                                  : std::to_string(c.min_nodes) + ":" + std::to_string(c.max_nodes);
  if (!c.standalone && c.rdzv_backend == "static") {
    s += " node_rank=" + std::to_string(c.node_rank);
    s += " master=" + Endpoint(c.master_addr, std::to_string(c.master_port));
  } else {
    // An empty endpoint is shown as the backend's default (torchrun's parse_rendezvous_endpoint:
    // localhost and 2379 for etcd, 29400 for c10d).
    const bool etcd = c.rdzv_backend == "etcd" || c.rdzv_backend == "etcd-v2";
    const std::string endpoint = !c.rdzv_endpoint.empty() ? c.rdzv_endpoint
                                 : etcd                   ? "localhost:2379"
                                                          : "localhost:29400";
    s += " rdzv=" + c.rdzv_backend + "@" + endpoint;
  }
  s += " nproc_per_node=" + std::to_string(c.nproc_per_node);
  if (!d.variant.empty()) {
    s += "; " + d.variant;
  } else if (!d.reason.empty()) {
    s += "; " + d.reason;
  }
  s += ")";
  return s;
}

}  // namespace tzrun::platform
