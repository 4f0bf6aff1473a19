#include "options.hpp"

#include <algorithm>
#include <cctype>

#include "text.hpp"

namespace tzrun::cli::detail {
namespace {

using enum Arity;
using enum ValueType;

std::vector<OptionSpec> BuildOptions() {
  // Help strings of torchrun's options are torch/distributed/run.py's, verbatim.
  std::vector<OptionSpec> o;
  o.push_back({.strings = {"-h", "--help"},
               .dest = "help",
               .arity = kHelp,
               .pet = false,
               .help = "show this help message and exit"});
  o.push_back({.strings = {"--nnodes"},
               .dest = "nnodes",
               .arity = kValue,
               .help = "Number of nodes, or the range of nodes in form "
                       "<minimum_nodes>:<maximum_nodes>."});
  o.push_back({.strings = {"--nproc-per-node", "--nproc_per_node"},
               .dest = "nproc_per_node",
               .arity = kValue,
               .help = "Number of workers per node; supported values: [auto, cpu, gpu, int] (xpu "
                       "is not supported by tzrun)."});
  o.push_back({.strings = {"--rdzv-backend", "--rdzv_backend"},
               .dest = "rdzv_backend",
               .arity = kValue,
               .help = "Rendezvous backend."});
  o.push_back({.strings = {"--rdzv-endpoint", "--rdzv_endpoint"},
               .dest = "rdzv_endpoint",
               .arity = kValue,
               .help = "Rendezvous backend endpoint; usually in form <host>:<port>."});
  o.push_back({.strings = {"--rdzv-id", "--rdzv_id"},
               .dest = "rdzv_id",
               .arity = kValue,
               .help = "User-defined group id."});
  o.push_back(
      {.strings = {"--rdzv-conf", "--rdzv_conf"},
       .dest = "rdzv_conf",
       .arity = kValue,
       .help = "Additional rendezvous configuration (<key1>=<value1>,<key2>=<value2>,...)."});
  o.push_back({.strings = {"--standalone"},
               .dest = "standalone",
               .arity = kFlag,
               .help = "Start a local standalone rendezvous backend that is represented by a C10d "
                       "TCP store on a free port. Useful when launching single-node, multi-worker "
                       "job. If specified --rdzv-backend, --rdzv-endpoint, --rdzv-id are "
                       "auto-assigned and any explicitly set values are ignored."});
  o.push_back({.strings = {"--max-restarts", "--max_restarts"},
               .dest = "max_restarts",
               .arity = kValue,
               .type = kInt,
               .help = "Maximum number of worker group restarts before failing."});
  o.push_back({.strings = {"--monitor-interval", "--monitor_interval"},
               .dest = "monitor_interval",
               .arity = kValue,
               .type = kFloat,
               .help = "Interval, in seconds, to monitor the state of workers."});
  o.push_back({.strings = {"--start-method", "--start_method"},
               .dest = "start_method",
               .arity = kValue,
               .choices = {"spawn", "fork", "forkserver"},
               .help = "Multiprocessing start method to use when creating workers."});
  o.push_back({.strings = {"--event-log-handler", "--event_log_handler"},
               .dest = "event_log_handler",
               .arity = kValue,
               .help = "name of a registered event logging handler (see: "
                       "https://docs.pytorch.org/docs/stable/elastic/events.html)"});
  o.push_back(
      {{"--role"}, "role", kValue, kString, true, false, {}, "User-defined role for the workers."});
  o.push_back({.strings = {"-m", "--module"},
               .dest = "module",
               .arity = kFlag,
               .help = "Change each process to interpret the launch script as a Python module, "
                       "executing with the same behavior as 'python -m'."});
  o.push_back({.strings = {"--no-python", "--no_python"},
               .dest = "no_python",
               .arity = kFlag,
               .help = "Skip prepending the training script with 'python' - just execute it "
                       "directly. Useful when the script is not a Python script."});
  o.push_back({.strings = {"--run-path", "--run_path"},
               .dest = "run_path",
               .arity = kFlag,
               .help =
                   "Run the training script with runpy.run_path in the same interpreter. Script "
                   "must be provided as an abs path (e.g. /abs/path/script.py). Takes "
                   "precedence over --no-python."});
  o.push_back({.strings = {"--log-dir", "--log_dir"},
               .dest = "log_dir",
               .arity = kValue,
               .help =
                   "Base directory to use for log files (e.g. /var/log/torch/elastic). The same "
                   "directory is reused for multiple runs (a unique job-level sub-directory is "
                   "created with rdzv_id as the prefix)."});
  o.push_back({.strings = {"-r", "--redirects"},
               .dest = "redirects",
               .arity = kValue,
               .help =
                   "Redirect std streams into a log file in the log directory (e.g. [-r 3] "
                   "redirects both stdout+stderr for all workers, [-r 0:1,1:2] redirects stdout "
                   "for local rank 0 and stderr for local rank 1)."});
  o.push_back({.strings = {"-t", "--tee"},
               .dest = "tee",
               .arity = kValue,
               .help = "Tee std streams into a log file and also to console (see --redirects for "
                       "format)."});
  o.push_back({.strings = {"--local-ranks-filter", "--local_ranks_filter"},
               .dest = "local_ranks_filter",
               .arity = kValue,
               .help =
                   "Only show logs from specified ranks in console (e.g. "
                   "[--local_ranks_filter=0,1,2] will only show logs from rank 0, 1 and 2). This "
                   "will only apply to stdout and stderr, not tolog files saved via --redirect "
                   "or --tee"});
  o.push_back({.strings = {"--duplicate-stdout-filters", "--duplicate_stdout_filters"},
               .dest = "duplicate_stdout_filters",
               .arity = kValue,
               .help =
                   "Duplicates logs streamed to stdout to another specified file with a list of "
                   "filters (e.g. [--duplicate_stdout_filters 'apple,orange'] will duplicate log "
                   "lines matching 'apple' OR 'orange'. An empty filters list won't duplicate "
                   "any lines. Use double comma to escape a comma)"});
  o.push_back({.strings = {"--duplicate-stderr-filters", "--duplicate_stderr_filters"},
               .dest = "duplicate_stderr_filters",
               .arity = kValue,
               .help =
                   "Duplicates logs streamed to stderr to another specified file with a list of "
                   "filters (e.g. [--duplicate_stdout_filters 'apple,orange'] will duplicate log "
                   "lines matching 'apple' OR 'orange'. An empty filters list won't duplicate "
                   "any lines. Use double comma to escape a comma)"});
  o.push_back({.strings = {"--node-rank", "--node_rank"},
               .dest = "node_rank",
               .arity = kValue,
               .type = kInt,
               .help = "Rank of the node for multi-node distributed training."});
  o.push_back({.strings = {"--master-addr", "--master_addr"},
               .dest = "master_addr",
               .arity = kValue,
               .help = "Address of the master node (rank 0) that only used for static rendezvous. "
                       "It should be either the IP address or the hostname of rank 0. For single "
                       "node multi-proc training the --master-addr can simply be 127.0.0.1; IPv6 "
                       "should have the pattern `[0:0:0:0:0:0:0:1]`."});
  o.push_back({.strings = {"--master-port", "--master_port"},
               .dest = "master_port",
               .arity = kValue,
               .type = kInt,
               .help = "Port on the master node (rank 0) to be used for communication during "
                       "distributed training. It is only used for static rendezvous."});
  o.push_back({.strings = {"--local-addr", "--local_addr"},
               .dest = "local_addr",
               .arity = kValue,
               .help = "Address of the local node. If specified, will use the given address for "
                       "connection. Else, will look up the local node address instead. Else, it "
                       "will be default to local machine's FQDN."});
  o.push_back({.strings = {"--logs-specs", "--logs_specs"},
               .dest = "logs_specs",
               .arity = kValue,
               .pet = false,
               .help =
                   "torchrun.logs_specs group entrypoint name, value must be type of LogsSpecs. "
                   "Can be used to override custom logging behavior."});
  o.push_back({.strings = {"--numa-binding", "--numa_binding"},
               .dest = "numa_binding",
               .arity = kValue,
               .pet = false,
               .choices = {"node", "socket", "exclusive", "core-complex"},
               .help = "Bind worker processes to CPUs near their assigned GPUs for better "
                       "performance. See torch/numa/binding.py for available modes and details."});
  o.push_back({.strings = {"--signals-to-handle", "--signals_to_handle"},
               .dest = "signals_to_handle",
               .arity = kValue,
               .help = "Comma-separated list of signals to handle and forward to subprocesses. "
                       "Default: SIGTERM,SIGINT,SIGHUP,SIGQUIT. Common additional signals: "
                       "SIGUSR1,SIGUSR2 (used in SLURM environments)."});
  o.push_back({.strings = {"--virtual-local-rank", "--virtual_local_rank"},
               .dest = "virtual_local_rank",
               .arity = kFlag,
               .help =
                   "Enable virtual local rank mode for workers. When enabled, LOCAL_RANK is set "
                   "to 0 for all workers and CUDA_VISIBLE_DEVICES is adjusted so each worker "
                   "accesses its assigned GPU at device index 0."});
  // --- tzrun extensions ---
  o.push_back({.strings = {"--shutdown-timeout", "--shutdown_timeout"},
               .dest = "shutdown_timeout",
               .arity = kValue,
               .type = kFloat,
               .extension = true,
               .help = "Seconds between forwarding a termination signal to the workers and "
                       "SIGKILLing the survivors (>= 0). Default: $TORCH_ELASTIC_SHUTDOWN_TIMEOUT, "
                       "else 30. Same flag as torchrun 2.12."});
  o.push_back({.strings = {"--exit-barrier-timeout", "--exit_barrier_timeout"},
               .dest = "exit_barrier_timeout",
               .arity = kValue,
               .type = kFloat,
               .extension = true,
               .help = "Seconds a node whose workers all succeeded waits for the other nodes "
                       "to finish (>= 0). Default: 300, torchrun's LocalElasticAgent "
                       "exit_barrier_timeout. The node hosting the store waits on past it "
                       "while a slower node still runs healthy workers."});
  o.push_back({.strings = {"--straggler-warning", "--straggler_warning"},
               .dest = "straggler_warning",
               .arity = kValue,
               .type = kFloat,
               .extension = true,
               .help = "Warn about a local worker still running this many seconds after every "
                       "other local worker exited 0 (> 0, or 0 for no warning). Default: 60."});
  o.push_back({.strings = {"--straggler-timeout", "--straggler_timeout"},
               .dest = "straggler_timeout",
               .arity = kValue,
               .type = kFloat,
               .extension = true,
               .help = "Stop a local worker still running this many seconds after every other "
                       "local worker exited 0; the worker group then counts as failed (> 0, "
                       "or 0 to never stop it). Default: 0."});
  o.push_back({.strings = {"--forward-signals", "--forward_signals"},
               .dest = "forward_signals",
               .arity = kValue,
               .extension = true,
               .help = "Comma-separated signals to pass on to the workers without stopping the "
                       "job (e.g. SIGUSR1,SIGUSR2 for a worker that checkpoints before "
                       "preemption). Default: none; signals in --signals-to-handle stop the job, "
                       "as under torchrun."});
  o.push_back({.strings = {"--max-membership-restarts", "--max_membership_restarts"},
               .dest = "max_membership_restarts",
               .arity = kValue,
               .type = kInt,
               .extension = true,
               .help = "How many times this node may restart a healthy worker group because "
                       "nodes joined or left (c10d), before it stops the whole job with exit "
                       "125; -1: no bound (torchrun). These restarts do not use --max-restarts. "
                       "Default: 10."});
  o.push_back({.strings = {"--no-restart-exit-codes", "--no_restart_exit_codes"},
               .dest = "no_restart_exit_codes",
               .arity = kValue,
               .extension = true,
               .help = "Comma-separated worker exit codes (1..255; 128+N for signal N) that "
                       "are never retried: the whole job stops at once, whatever "
                       "--max-restarts allows (e.g. 2,3 for a bad config). A worker whose "
                       "error file has extraInfo.retryable \"false\" is never retried either. "
                       "Default: none."});
  o.push_back({.strings = {"--summary-json", "--summary_json"},
               .dest = "summary_json",
               .arity = kValue,
               .extension = true,
               .help =
                   "Write a machine-readable JSON summary of the run (configuration, worker exit "
                   "codes, restarts) to this file when tzrun exits."});
  o.push_back({.strings = {"--flash-checkpoint", "--flash_checkpoint"},
               .dest = "flash_checkpoint",
               .arity = kFlag,
               .extension = true,
               .help = "Give the workers a private directory in /dev/shm (TZRUN_FLASH_DIR) that "
                       "outlives worker restarts, for in-memory checkpoints (tzrec_train "
                       "--flash_checkpoint_steps N); the agent copies the disk saves the workers "
                       "stage there into their model_dir in the background, and at exit the "
                       "newest flash checkpoint when newer; then the directory is removed. "
                       "One-node jobs only."});
  o.push_back({.strings = {"--hang-timeout", "--hang_timeout"},
               .dest = "hang_timeout",
               .arity = kValue,
               .type = kFloat,
               .extension = true,
               .help = "Seconds without a progress report (TZRUN_PROGRESS_FILE, which each "
                       "worker gets; tzrec_train and examples/progress_helper.py write it) "
                       "after which a rank that reported before counts as hung: tzrun kills "
                       "it, stops the group and restarts it within --max-restarts, naming "
                       "the rank, its last step and phase and its threads' states. Default: "
                       "0 (off)."});
  o.push_back({.strings = {"--metrics-port", "--metrics_port"},
               .dest = "metrics_port",
               .arity = kValue,
               .type = kInt,
               .extension = true,
               .help = "Serve Prometheus metrics (text format 0.0.4: worker states, restarts by "
                       "cause, rendezvous rounds, per-rank last step and step rate, hang "
                       "detections, flash checkpoints) at http://0.0.0.0:PORT/metrics (0: any "
                       "free port, logged). Default: off."});
  o.push_back({.strings = {"--event-log", "--event_log"},
               .dest = "event_log",
               .arity = kValue,
               .extension = true,
               .help = "Append one JSON object per line to this file for every state change of "
                       "the agent (rendezvous, workers started/stopped, failure with its root "
                       "cause, restart, hang detected, job finished). Default: off."});
  o.push_back({.strings = {"--dry-run", "--dry_run"},
               .dest = "dry_run",
               .arity = kFlag,
               .extension = true,
               .help =
                   "Print the resolved configuration and each worker's command and environment, "
                   "then exit without starting anything."});
  o.push_back({.strings = {"--log-level", "--log_level"},
               .dest = "log_level",
               .arity = kValue,
               .extension = true,
               .help = "Level of tzrun's own log messages: trace, debug, info, warning, error, "
                       "critical or off (any case). Default: $LOGLEVEL, else warning."});
  o.push_back({.strings = {"--platform"},
               .dest = "platform",
               .arity = kValue,
               .extension = true,
               .choices = {"auto", "dlc", "kubeflow", "slurm", "none"},
               .help = "Cluster platform whose environment variables supply defaults for the "
                       "node/rendezvous settings; auto detects it, none disables detection. "
                       "Explicit flags and PET_ variables always win."});
  o.push_back({.strings = {"-j"},
               .dest = "job_shape",
               .arity = kValue,
               .pet = false,
               .extension = true,
               .help = "TorchX-style job shape [[MIN:]MAX x]NPROC, e.g. 2x8 (2 nodes, 8 workers "
                       "each), 1:4x8 (elastic 1 to 4 nodes) or 8 (one node): sets --nnodes and "
                       "--nproc-per-node, which must not be given with it."});
  o.push_back({.strings = {"-V", "--version"},
               .dest = "version",
               .arity = kVersion,
               .pet = false,
               .extension = true,
               .help = "show program's version number and exit"});
  return o;
}

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string UsagePart(const OptionSpec& opt) {
  std::string part = "[";
  part += opt.strings.front();
  if (opt.arity == kValue) part.append(" ").append(opt.Metavar());
  return part.append("]");
}

/// argparse HelpFormatter._format_usage's get_lines().
std::vector<std::string> GetLines(const std::vector<std::string>& parts, std::size_t indent,
                                  std::size_t text_width, std::size_t prefix_len, bool has_prefix) {
  std::vector<std::string> lines;
  std::vector<std::string> line;
  std::size_t line_len = has_prefix ? prefix_len - 1 : indent - 1;
  auto flush = [&] {
    std::string s(indent, ' ');
    for (std::size_t i = 0; i < line.size(); ++i) s += (i ? " " : "") + line[i];
    lines.push_back(std::move(s));
    line.clear();
  };
  for (const auto& part : parts) {
    if (line_len + 1 + part.size() > text_width && !line.empty()) {
      flush();
      line_len = indent - 1;
    }
    line.push_back(part);
    line_len += part.size() + 1;
  }
  if (!line.empty()) flush();
  if (has_prefix && !lines.empty()) lines[0].erase(0, indent);
  return lines;
}

/// One action's block in the help (argparse HelpFormatter._format_action).
void FormatAction(std::string& out, const std::string& invocation, const std::string& help,
                  std::size_t width) {
  // argparse: max_help_position = min(24, max(width - 20, 4)); our longest
  // invocation is wider than that, so help_position == max_help_position.
  constexpr std::size_t kIndent = 2;
  const std::size_t k_help_position = std::min<std::size_t>(24, width > 24 ? width - 20 : 4);
  const std::size_t help_width = width > k_help_position + 11 ? width - k_help_position : 11;
  const std::size_t action_width = k_help_position - kIndent - 2;
  std::size_t indent_first = 0;
  out += std::string(kIndent, ' ');
  if (help.empty()) {
    out += invocation + "\n";
    return;
  }
  if (invocation.size() <= action_width) {
    out += invocation + std::string(action_width - invocation.size() + 2, ' ');
  } else {
    out += invocation + "\n";
    indent_first = k_help_position;
  }
  const auto lines = Wrap(help, static_cast<int>(help_width));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += std::string(i == 0 ? indent_first : k_help_position, ' ') + lines[i] + "\n";
  }
}

std::string Invocation(const OptionSpec& opt) {
  std::string s;
  for (const auto& str : opt.strings) {
    if (!s.empty()) s += ", ";
    s += str;
    if (opt.arity == kValue) s.append(" ").append(opt.Metavar());
  }
  return s;
}

}  // namespace

std::string OptionSpec::PetName() const {
  return "PET_" + Upper(dest);
}

std::string OptionSpec::Metavar() const {
  if (choices.empty()) return Upper(dest);
  std::string s = "{";
  for (std::size_t i = 0; i < choices.size(); ++i) s += (i ? "," : "") + choices[i];
  return s + "}";
}

std::string OptionSpec::Display() const {
  std::string s;
  for (const auto& str : strings) s += (s.empty() ? "" : "/") + str;
  return s;
}

std::span<const OptionSpec> Options() {
  static const std::vector<OptionSpec> kOptions = BuildOptions();
  return kOptions;
}

std::string UsageText(int width) {
  const std::size_t text_width = width > 1 ? static_cast<std::size_t>(width) : 1;
  const std::string prefix = "usage: ";
  const std::string prog = "tzrun";
  std::vector<std::string> opt_parts;
  for (const auto& opt : Options()) opt_parts.push_back(UsagePart(opt));
  const std::vector<std::string> pos_parts = {"training_script", "..."};

  std::string one_line = prog;
  for (const auto& p : opt_parts) one_line += " " + p;
  for (const auto& p : pos_parts) one_line += " " + p;
  if (prefix.size() + one_line.size() <= text_width) return prefix + one_line + "\n";

  std::vector<std::string> lines;
  if (prefix.size() + prog.size() <= text_width * 3 / 4) {
    const std::size_t indent = prefix.size() + prog.size() + 1;
    std::vector<std::string> first = {prog};
    first.insert(first.end(), opt_parts.begin(), opt_parts.end());
    lines = GetLines(first, indent, text_width, prefix.size(), true);
    auto pos = GetLines(pos_parts, indent, text_width, 0, false);
    lines.insert(lines.end(), pos.begin(), pos.end());
  } else {
    const std::size_t indent = prefix.size();
    std::vector<std::string> parts = opt_parts;
    parts.insert(parts.end(), pos_parts.begin(), pos_parts.end());
    lines = GetLines(parts, indent, text_width, 0, false);
    lines.insert(lines.begin(), prog);
  }
  std::string out = prefix;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out + "\n";
}

std::string RenderHelp(int width) {
  const std::size_t w = width > 1 ? static_cast<std::size_t>(width) : 1;
  std::string out = UsageText(width) + "\n";
  for (const auto& line :
       Wrap("tzrun: a drop-in C++ replacement for torchrun, the Torch Distributed Elastic "
            "Training Launcher, with its own c10d-compatible TCP store.",
            static_cast<int>(w))) {
    out += line + "\n";
  }
  out += "\npositional arguments:\n";
  FormatAction(out, "training_script",
               "Full path to the (single GPU) training program/script to be launched in "
               "parallel, followed by all the arguments for the training script.",
               w);
  FormatAction(out, "training_script_args", "", w);
  out += "\noptions:\n";
  for (const auto& opt : Options()) {
    if (!opt.extension) FormatAction(out, Invocation(opt), opt.help, w);
  }
  out += "\ntzrun options (not in torchrun 2.11):\n";
  for (const auto& opt : Options()) {
    if (opt.extension) FormatAction(out, Invocation(opt), opt.help, w);
  }
  out += "\n";
  for (const auto& line :
       Wrap("Every option can also be set through PET_<OPTION> in the environment (e.g. "
            "PET_NPROC_PER_NODE=4), except --logs-specs, --numa-binding and -j; the command line "
            "wins. The standalone c10d-compatible store server: tzrun store --help.",
            static_cast<int>(w))) {
    out += line + "\n";
  }
  return out;
}

}  // namespace tzrun::cli::detail
