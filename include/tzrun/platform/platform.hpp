// tzrun/platform/platform.hpp — cluster platform environments as launch defaults.
//
// Cluster schedulers start one tzrun per node and describe the job through
// environment variables, each in its own dialect. detect() recognises the
// platform and translates its variables into values for torchrun options
// (argparse destinations such as "nnodes", "node_rank", "master_addr"). The CLI
// (src/cli) inserts them between PET_* and the built-in defaults, so the
// precedence is
//
//     explicit flag  >  PET_<DEST>  >  platform variable  >  built-in default
//
// and every value then goes through the same validation as a flag. Sources of
// the variable conventions (see docs/multinode.md for the full table):
//   * PAI-DLC / Baidu AIHC: MASTER_ADDR, MASTER_PORT, WORLD_SIZE (= nodes),
//     RANK (= node rank), NPROC_PER_NODE (Alibaba Cloud "General environment
//     variables"; alibaba/TorchEasyRec docs/source/quick_start/dlc_tutorial.md).
//   * Kubeflow training-operator v1 PyTorchJob (pkg/controller.v1/pytorch/
//     envvar.go, elastic.go): v1.7+ sets PET_* (read by the CLI like torchrun);
//     <= v1.6 only MASTER_ADDR/MASTER_PORT/WORLD_SIZE (= pods)/RANK (= pod index).
//     v1.7+ WORLD_SIZE is pods * nprocPerNode when that is an integer, so it is
//     never used when PET_NNODES is set. Trainer v2 (kubeflow/trainer
//     pkg/runtime/framework/plugins/torch/torch.go) sets only PET_*.
//   * Slurm, one tzrun per node (srun --ntasks-per-node=1): SLURM_STEP_NUM_NODES
//     or SLURM_NNODES, SLURM_NODEID, first host of SLURM_STEP_NODELIST or
//     SLURM_JOB_NODELIST, SLURM_GPUS_ON_NODE, SLURM_JOB_ID.
// The platform's RANK/WORLD_SIZE/MASTER_* never reach the workers: the agent
// overwrites them with per-worker values, exactly like torchrun.
//
// Errors: detect() throws PlatformError when a platform named by --platform
// lacks a variable that would be used, or a platform variable is malformed.
// Thread-safety: all functions are pure (they read only their arguments).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/error.hpp"
#include "tzrun/launch_config.hpp"

namespace tzrun::platform {

enum class Kind { kNone, kDlc, kKubeflow, kSlurm };

/// "none", "dlc", "kubeflow", "slurm" (the --platform spellings).
std::string_view Name(Kind kind) noexcept;

/// A platform variable or a --platform value that cannot be used. what() is one
/// line naming the variable, its value and what to do; the CLI reports it as a
/// usage error (exit 2).
class PlatformError : public tzrun::Error {
 public:
  explicit PlatformError(const std::string& what) : Error(what, ::tzrun::exit_code::kUsage) {}
};

/// What the CLI already knows when the platform is consulted.
struct Request {
  std::string platform = "auto";         ///< auto | dlc | kubeflow | slurm | none
  std::set<std::string> explicit_dests;  ///< dests set by a flag, -j or PET_<DEST>
  std::string rdzv_backend = "static";   ///< effective (flag, PET_ or default)
  bool standalone = false;               ///< --standalone / PET_STANDALONE in effect
};

/// One default contributed by the platform for an argparse destination.
struct Value {
  std::string value;   ///< as a flag would spell it ("2", "1:4", "10.0.0.1")
  std::string source;  ///< the variable(s) it came from, e.g. "WORLD_SIZE"
};

struct Detection {
  Kind kind = Kind::kNone;
  bool requested = false;  ///< named by --platform/PET_PLATFORM (not auto-detected)
  /// Human-readable flavour, e.g. "PyTorchJob v1.7+", "Trainer v2", "pod-level
  /// MASTER_ADDR/WORLD_SIZE/RANK", "one tzrun per node". Empty for kNone.
  std::string variant;
  /// Why this kind was chosen (auto) or why detection is off.
  std::string reason;
  /// dest -> value, only for dests that are not explicit. Keys are argparse
  /// destinations: nnodes, node_rank, nproc_per_node, master_addr, master_port,
  /// rdzv_endpoint, rdzv_id.
  std::map<std::string, Value> defaults;
  std::vector<std::string> warnings;  ///< non-fatal remarks for stderr
};

/// Detects the platform in `env` (auto) or checks the requested one, and maps
/// its variables to defaults for the dests not in request.explicit_dests.
/// Auto-detection rules, first match wins:
///   1. inside a torchrun/tzrun worker (TORCHELASTIC_RUN_ID, or RANK + GROUP_RANK
///      + LOCAL_RANK + LOCAL_WORLD_SIZE) -> none, with a warning;
///   2. any of PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_RDZV_ENDPOINT
///      -> kubeflow (v1.7+ PyTorchJob, elastic PyTorchJob or Trainer v2);
///   3. MASTER_ADDR + WORLD_SIZE + RANK without LOCAL_RANK -> dlc when
///      NPROC_PER_NODE is set (PAI-DLC, AIHC), else kubeflow (<= v1.6 / Volcano);
///   4. SLURM_JOB_ID + SLURM_NODEID + a node count + a node list, one task per
///      node -> slurm (more tasks than nodes: none, with a warning);
///   5. otherwise none.
/// With --standalone only nproc_per_node is taken from the platform; with a
/// non-static rendezvous backend node_rank/master_* are not used and
/// rdzv_endpoint defaults to the platform's master address and port instead.
/// Throws PlatformError (see above) or for an unknown request.platform.
Detection Detect(const Request& request, const std::map<std::string, std::string>& env);

/// The one line printed on stderr at start, from the final configuration:
/// "tzrun: platform: dlc (nnodes=2 node_rank=1 master=10.0.0.1:23456 nproc_per_node=8)".
/// Non-static backends show "rdzv=<backend>@<endpoint>" instead of node_rank/master.
std::string SummaryLine(const Detection& detection, const LaunchConfig& config);

/// Expands a Slurm compressed host list: "node[01-03,07],gpu5" -> node01,
/// node02, node03, node07, gpu5. Commas inside brackets do not split; several
/// bracket groups in one name form their product ("r[1-2]n[1-2]" -> r1n1, r1n2,
/// r2n1, r2n2); zero padding follows the range's lower bound ("[08-10]" ->
/// 08, 09, 10). Throws std::invalid_argument on unbalanced or nested brackets,
/// an empty or reversed range, a non-numeric bound, an empty host name, or
/// more than `limit` hosts.
std::vector<std::string> ExpandHostlist(std::string_view list, std::size_t limit = 1u << 20);

/// TorchX `dist.ddp -j` topology: [[MIN:]MAX x]NPROC ("2x8", "1:4x8", "8").
struct JobShape {
  int min_nodes = 1;
  int max_nodes = 1;
  int nproc_per_node = 1;
  /// "N" or "MIN:MAX", as --nnodes spells it.
  [[nodiscard]] std::string Nnodes() const;
};

/// Parses a -j value (torchx/components/dist.py::parse_nnodes grammar; 'x' or
/// 'X'). Throws std::invalid_argument whose message shows the accepted forms
/// for anything else, including zero or negative counts and MIN > MAX.
JobShape ParseJobShape(std::string_view text);

}  // namespace tzrun::platform
