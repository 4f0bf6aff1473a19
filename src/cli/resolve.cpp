// tzrun::cli resolve — the collected option values -> tzrun::LaunchConfig, with the checks of
// torch/distributed/run.py::config_from_args (and run.py::run for --standalone), one group of
// options per function, in torchrun's order (see parser.hpp).
#include <algorithm>
#include <cmath>
#include <csignal>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "parser.hpp"
#include "text.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::cli {
namespace detail {
namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

/// Signals tzrun can install a handler for (Python `signal` module names).
const std::map<std::string, int>& CatchableSignals() {
  static const std::map<std::string, int> kSignals = {
      {"SIGABRT", SIGABRT},   {"SIGALRM", SIGALRM},     {"SIGBUS", SIGBUS},
      {"SIGCONT", SIGCONT},   {"SIGFPE", SIGFPE},       {"SIGHUP", SIGHUP},
      {"SIGILL", SIGILL},     {"SIGINT", SIGINT},       {"SIGIO", SIGIO},
      {"SIGIOT", SIGIOT},     {"SIGPIPE", SIGPIPE},     {"SIGPOLL", SIGPOLL},
      {"SIGPROF", SIGPROF},   {"SIGPWR", SIGPWR},       {"SIGQUIT", SIGQUIT},
      {"SIGSEGV", SIGSEGV},   {"SIGSTKFLT", SIGSTKFLT}, {"SIGSYS", SIGSYS},
      {"SIGTERM", SIGTERM},   {"SIGTRAP", SIGTRAP},     {"SIGTSTP", SIGTSTP},
      {"SIGTTIN", SIGTTIN},   {"SIGTTOU", SIGTTOU},     {"SIGURG", SIGURG},
      {"SIGUSR1", SIGUSR1},   {"SIGUSR2", SIGUSR2},     {"SIGVTALRM", SIGVTALRM},
      {"SIGWINCH", SIGWINCH}, {"SIGXCPU", SIGXCPU},     {"SIGXFSZ", SIGXFSZ},
  };
  return kSignals;
}

/// The value of environment variable `name` when it is set and not blank, else nullptr.
const std::string* NonBlankEnv(const std::map<std::string, std::string>& env,
                               const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || base::Strip(it->second).empty()) return nullptr;
  return &it->second;
}

}  // namespace

int Parser::IntValue(const std::string& dest, int def, std::int64_t lo, std::int64_t hi,
                     const std::string& rule) const {
  const Raw* r = FindRaw(dest);
  if (!r) return def;
  const auto v = *PythonInt(r->value);  // type already checked
  if (v < lo || v > hi) Bad(dest, rule, "");
  return static_cast<int>(v);
}

void Parser::Resolve(LaunchConfig& c, std::vector<std::string>& warnings) const {
  c.training_script = *script_;
  c.training_script_args = script_args_;
  if (c.training_script.empty()) {
    Fail("training_script is empty (name the program to launch after the options)");
  }
  ResolveBackend(c);
  ResolveNnodes(c);
  ResolveRestarts(c);
  c.nproc_per_node_spec = ValueOr("nproc_per_node", "1");
  c.nproc_per_node = ResolveNproc(c.nproc_per_node_spec);
  try {
    c.rdzv_conf = ParseRdzvConf(ValueOr("rdzv_conf", ""));
  } catch (const std::invalid_argument& e) {
    Bad("rdzv_conf", e.what(), "use key1=value1,key2=value2");
  }
  ResolveNodeRank(c, warnings);
  ResolveLaunch(c);
  ResolveLogs(c);
  if (const Raw* r = FindRaw("local_addr")) c.local_addr = r->value;
  if (const Raw* r = FindRaw("logs_specs")) {
    // run.py::_get_logs_specs_class loads the name from the torchrun.logs_specs entry-point
    // group, where torch registers only "default" (DefaultLogsSpecs, what tzrun does); any other
    // name is a ValueError before anything starts.
    if (r->value != "default") {
      Bad("logs_specs",
          "Could not find entrypoint under 'torchrun.logs_specs[" + r->value +
              "]' key; tzrun implements only 'default' (DefaultLogsSpecs)",
          "drop the flag or pass --logs-specs default");
    }
    c.logs_specs = r->value;
  }
  // argparse checked the choice; the binding itself is planned by the agent (it reads sysfs).
  if (const Raw* r = FindRaw("numa_binding")) c.numa_binding = r->value;
  ResolveSignals(c);
  c.virtual_local_rank = Flag("virtual_local_rank");

  // --- tzrun extensions ---
  ResolveShutdownTimeout(c);
  c.exit_barrier_timeout = Seconds("exit_barrier_timeout", c.exit_barrier_timeout);
  c.straggler_warning = Seconds("straggler_warning", c.straggler_warning);
  c.straggler_timeout = Seconds("straggler_timeout", c.straggler_timeout);
  if (const Raw* r = FindRaw("summary_json")) c.summary_json = r->value;
  c.dry_run = Flag("dry_run");
  c.flash_checkpoint = Flag("flash_checkpoint");
  c.hang_timeout = Seconds("hang_timeout", c.hang_timeout);
  c.metrics_port =
      IntValue("metrics_port", -1, 0, 65535, "the port must be 0 (any free port) to 65535");
  if (const Raw* r = FindRaw("event_log")) {
    if (base::Strip(r->value).empty()) {
      Bad("event_log", "the file name is empty", "name a file such as --event-log=events.jsonl");
    }
    c.event_log = r->value;
  }
  if (c.flash_checkpoint && c.max_nodes > 1) {
    Fail(Where("flash_checkpoint") + ": flash checkpoints are held by each node's agent, so " +
         "with --nnodes " + std::to_string(c.min_nodes) + ":" + std::to_string(c.max_nodes) +
         " no node would hold a whole checkpoint; use it on one-node jobs (--nnodes 1), or rely "
         "on disk checkpoints (save_checkpoints_steps) across nodes");
  }
  ResolveLogLevel(c);
  c.platform = ValueOr("platform", "auto");
}

void Parser::ResolveBackend(LaunchConfig& c) const {
  c.standalone = Flag("standalone");
  c.rdzv_backend = ValueOr("rdzv_backend", "static");
  c.rdzv_endpoint = ValueOr("rdzv_endpoint", "");
  c.rdzv_id = ValueOr("rdzv_id", "none");
  if (c.standalone) {
    // run.py::run: values given for these three are silently overwritten.
    c.rdzv_backend = "c10d";
    c.rdzv_endpoint = "localhost:0";
    c.rdzv_id = base::Uuid4();
  }
  if (c.rdzv_backend.empty()) {
    Bad("rdzv_backend", "the rendezvous backend is empty", "use static or c10d");
  }
}

void Parser::ResolveNnodes(LaunchConfig& c) const {
  // --nnodes N | MIN:MAX (run.py::parse_min_max_nnodes + the 0 < min <= max check).
  const std::string nnodes = ValueOr("nnodes", "1:1");
  const auto parts = base::Split(nnodes, ':');
  const char* fix = "use N or MIN:MAX with integers 0 < MIN <= MAX, e.g. --nnodes=2 or 1:4";
  if (parts.size() > 2) Bad("nnodes", "not in \"MIN:MAX\" format", fix);
  std::vector<std::int64_t> n;
  for (const auto& p : parts) {
    auto v = PythonInt(p);
    if (!v) Bad("nnodes", "invalid int " + PyRepr(p), fix);
    n.push_back(*v);
  }
  const auto lo = n.front();
  const auto hi = n.back();
  if (!(0 < lo && lo <= hi) || hi > kIntMax) {
    Bad("nnodes",
        "min_nodes must be > 0 and <= max_nodes, got min_nodes=" + std::to_string(lo) +
            ", max_nodes=" + std::to_string(hi),
        fix);
  }
  c.min_nodes = static_cast<int>(lo);
  c.max_nodes = static_cast<int>(hi);
}

void Parser::ResolveRestarts(LaunchConfig& c) const {
  c.max_restarts = IntValue("max_restarts", 0, 0, kIntMax, "max_restarts must be >= 0");
  c.max_membership_restarts = IntValue("max_membership_restarts", 10, -1, kIntMax,
                                       "max-membership-restarts must be >= -1 (-1: no bound)");
  for (const auto& item : base::Split(ValueOr("no_restart_exit_codes", ""), ',')) {
    const std::string code = base::Strip(item);
    if (code.empty()) continue;
    const auto v = PythonInt(code);
    if (!v || *v < 1 || *v > 255) {
      Bad("no_restart_exit_codes", "not an exit code in 1..255: " + PyRepr(code),
          "list exit codes separated by commas, e.g. --no-restart-exit-codes=2,3");
    }
    c.no_restart_exit_codes.insert(static_cast<int>(*v));
  }
  const Raw* r = FindRaw("monitor_interval");
  c.monitor_interval = r ? *PythonFloat(r->value) : 0.1;
  if (!(c.monitor_interval > 0)) Bad("monitor_interval", "monitor-interval must be > 0", "");
}

int Parser::ResolveNproc(const std::string& spec) const {
  // torch/distributed/run.py::determine_local_world_size.
  if (auto n = PythonInt(spec)) {
    if (*n <= 0) {
      Bad("nproc_per_node", "nproc-per-node must be > 0",
          "use a positive integer, cpu, gpu or auto");
    }
    if (*n > 1'000'000) Bad("nproc_per_node", "too many workers per node", "use <= 1000000");
    return static_cast<int>(*n);
  }
  const int cpus = host_.cpu_count > 0 ? host_.cpu_count : CountCpus();
  if (spec == "cpu") return cpus;
  if (spec == "gpu" || spec == "auto") {
    const int gpus = CountGpus(env_, host_.sysroot);
    if (gpus > 0) return gpus;
    if (spec == "auto") return cpus;
    const auto cvd = env_.find("CUDA_VISIBLE_DEVICES");
    Bad("nproc_per_node",
        "--nproc-per-node=gpu but no NVIDIA GPU is visible (no entries in " +
            (host_.sysroot / "proc/driver/nvidia/gpus").string() +
            (cvd != env_.end() ? ", CUDA_VISIBLE_DEVICES=" + PyRepr(cvd->second) : "") + ")",
        "use an integer or cpu, or check the driver and CUDA_VISIBLE_DEVICES");
  }
  if (spec == "xpu") {
    Bad("nproc_per_node", "xpu is not supported by tzrun",
        "use an integer, cpu, gpu or auto; tzrun only detects NVIDIA GPUs");
  }
  Bad("nproc_per_node", "Unsupported nproc_per_node value",
      "use a positive integer, cpu, gpu or auto");
}

void Parser::ResolveNodeRank(LaunchConfig& c, std::vector<std::string>& warnings) const {
  c.node_rank = IntValue("node_rank", 0, 0, kIntMax, "node-rank must be >= 0");
  c.master_addr = ValueOr("master_addr", "127.0.0.1");
  c.master_port = IntValue("master_port", 29500, 0, 65535, "master-port must be in 0..65535");
  c.master_port_explicit = FindRaw("master_port") != nullptr;
  if (c.rdzv_backend == "static") {
    c.rdzv_conf["rank"] = std::to_string(c.node_rank);
    if (c.node_rank >= c.max_nodes) {
      Bad("node_rank",
          "node-rank must be < the number of nodes (" + std::to_string(c.max_nodes) +
              ") for the static rendezvous",
          "give each node a distinct rank in 0.." + std::to_string(c.max_nodes - 1));
    }
  } else {
    if (FindRaw("master_addr") && c.rdzv_endpoint.empty()) {
      warnings.emplace_back(
          "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not "
          "specified.");
    }
    // torchrun ignores --node-rank without a word under c10d; tzrun says so. A platform's
    // PET_NODE_RANK (Kubeflow sets it on every pod) is not worth a warning.
    const Raw* rank = FindRaw("node_rank");
    if (rank != nullptr && !rank->from_env && rank->origin.empty()) {
      warnings.emplace_back("--node-rank=" + rank->value + " is ignored by the " + c.rdzv_backend +
                            " rendezvous, which numbers nodes (group_rank) in join order; it is "
                            "only used with --rdzv-backend=static");
    }
  }
  if (c.rdzv_id.empty()) {
    // elastic/agent launch_agent: an empty run id becomes a random one.
    c.rdzv_id = base::Uuid4();
    warnings.emplace_back("config has no run_id, generated a random run_id: " + c.rdzv_id);
  }
}

void Parser::ResolveLaunch(LaunchConfig& c) const {
  c.start_method = ValueOr("start_method", "spawn");
  c.event_log_handler = ValueOr("event_log_handler", "null");
  if (c.event_log_handler != "null" && c.event_log_handler != "console" &&
      c.event_log_handler != "dynamic_rendezvous") {
    Bad("event_log_handler", "unknown event log handler",
        "use null, console or dynamic_rendezvous");
  }
  c.role = ValueOr("role", "default");
  c.module = Flag("module");
  c.no_python = Flag("no_python");
  c.run_path = Flag("run_path");
  if (c.no_python && c.module && !c.run_path) {
    Fail(
        "Don't use both the '--no-python' flag and the '--module' flag at the same time. "
        "(drop one of them; check PET_NO_PYTHON / PET_MODULE in the environment)");
  }
  if (const Raw* r = FindRaw("log_dir")) c.log_dir = r->value;
}

StdSpec Parser::StdSpecOf(const std::string& dest) const {
  try {
    return ParseStdSpec(ValueOr(dest, "0"));
  } catch (const std::invalid_argument& e) {
    Bad(dest, e.what(),
        "use 0 (none), 1 (stdout), 2 (stderr), 3 (both) for all local ranks, or a map like "
        "0:1,1:2");
  }
}

void Parser::ResolveLogs(LaunchConfig& c) const {
  c.redirects = StdSpecOf("redirects");
  c.tee = StdSpecOf("tee");
  if (const std::string f = ValueOr("local_ranks_filter", ""); !f.empty()) {
    for (const auto& item : base::Split(f, ',')) {
      auto v = PythonInt(item);
      if (!v || *v < 0 || *v > kIntMax) {
        Bad("local_ranks_filter",
            "--local_ranks_filter must be a comma-separated list of non-negative integers",
            "e.g. --local_ranks_filter=0,1,2");
      }
      c.local_ranks_filter.insert(static_cast<int>(*v));
    }
  }
  c.duplicate_stdout_filters = Filters("duplicate_stdout_filters");
  c.duplicate_stderr_filters = Filters("duplicate_stderr_filters");
  // torchrun opens /dev/null/filtered_stdout.log and dies with NotADirectoryError.
  for (const char* dest : {"duplicate_stdout_filters", "duplicate_stderr_filters"}) {
    if (FindRaw(dest) != nullptr && c.log_dir == "/dev/null") {
      Bad(dest, "the filtered copy is a log file, but --log-dir=/dev/null turns log files off",
          "drop the filters or give a real --log-dir");
    }
  }
}

std::vector<std::string> Parser::Filters(const std::string& dest) const {
  // run.py comma_separated_list: ',,' escapes a literal comma; empty items are kept (an
  // empty filter matches every line, as in torchrun). One pass with push_back: the
  // replace()-based version made GCC 12 -O3 print -Wrestrict false positives.
  std::vector<std::string> out;
  const Raw* r = FindRaw(dest);
  if (!r) return out;
  const std::string& v = r->value;
  std::string item;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != ',') {
      item.push_back(v[i]);
    } else if (i + 1 < v.size() && v[i + 1] == ',') {
      item.push_back(',');
      ++i;
    } else {
      out.push_back(std::move(item));
      item.clear();
    }
  }
  out.push_back(std::move(item));
  return out;
}

std::vector<std::string> Parser::SignalList(const std::string& dest) const {
  std::vector<std::string> out;
  for (const auto& item : base::Split(FindRaw(dest)->value, ',')) {
    const std::string name = base::Strip(item);
    if (name.empty()) continue;
    if (name == "SIGKILL" || name == "SIGSTOP") {
      Bad(dest, name + " cannot be caught",
          "list catchable signals such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (name == "SIGCHLD" || name == "SIGCLD") {
      Bad(dest, name + " is how tzrun watches its workers and cannot be forwarded",
          "list other signals such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (!CatchableSignals().count(name)) {
      Bad(dest, "unknown signal name " + PyRepr(name),
          "use Python signal names such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

void Parser::ResolveSignals(LaunchConfig& c) const {
  if (FindRaw("signals_to_handle") != nullptr)
    c.signals_to_handle = SignalList("signals_to_handle");
  if (FindRaw("forward_signals") == nullptr) return;
  c.forward_signals = SignalList("forward_signals");
  // A signal both forwarded and handled is forwarded only: the job goes on.
  std::erase_if(c.signals_to_handle, [&](const std::string& s) {
    return std::find(c.forward_signals.begin(), c.forward_signals.end(), s) !=
           c.forward_signals.end();
  });
}

void Parser::ResolveShutdownTimeout(LaunchConfig& c) const {
  std::string text;
  std::string source;
  if (const Raw* r = FindRaw("shutdown_timeout")) {
    text = r->value;
  } else if (const auto* e = NonBlankEnv(env_, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT")) {
    text = *e;
    source = "environment variable TORCH_ELASTIC_SHUTDOWN_TIMEOUT";
  }
  if (text.empty()) return;
  const auto v = PythonFloat(text);
  const char* fix = "use a number of seconds >= 0, e.g. 30";
  if (!v || !std::isfinite(*v) || *v < 0) {
    if (source.empty()) Bad("shutdown_timeout", "shutdown-timeout must be >= 0", fix);
    Fail(source + ": invalid value " + PyRepr(text) + ": shutdown timeout must be >= 0 (" + fix +
         ", or unset it)");
  }
  c.shutdown_timeout = *v;
}

double Parser::Seconds(const std::string& dest, double def) const {
  const Raw* r = FindRaw(dest);
  if (r == nullptr) return def;
  const auto v = PythonFloat(r->value);  // the type is already checked
  if (!v || !std::isfinite(*v) || *v < 0) {
    Bad(dest, "seconds must be finite and >= 0",
        "use a number of seconds such as 60; 0 is allowed, see --help");
  }
  return *v;
}

void Parser::ResolveLogLevel(LaunchConfig& c) const {
  std::string level = "warning";
  std::string source;
  if (const Raw* r = FindRaw("log_level")) {
    level = r->value;
  } else if (const auto* e = NonBlankEnv(env_, "LOGLEVEL")) {
    level = *e;
    source = "environment variable LOGLEVEL";
  }
  std::string l = base::Lower(base::Strip(level));
  if (l == "warn") l = "warning";
  if (l == "fatal") l = "critical";
  if (l == "err") l = "error";
  static const std::set<std::string> kLevels = {"trace", "debug",    "info", "warning",
                                                "error", "critical", "off"};
  if (!kLevels.count(l)) {
    const char* fix = "use trace, debug, info, warning, error, critical or off";
    if (source.empty()) Bad("log_level", "unknown log level", fix);
    Fail(source + ": invalid value " + PyRepr(level) + ": unknown log level (" + fix +
         ", or unset it)");
  }
  c.log_level = l;
}

}  // namespace detail

StdSpec ParseStdSpec(const std::string& text) {
  // elastic/multiprocessing/api.py Std.from_str, with multi-digit map keys.
  auto to_std = [](char c) { return static_cast<Std>(c - '0'); };
  auto is_std = [](char c) { return c >= '0' && c <= '3'; };
  StdSpec spec;
  if (text.size() == 1 && is_std(text[0])) {
    spec.all = to_std(text[0]);
    return spec;
  }
  const std::string err =
      detail::PyRepr(text) + " is neither a single value 0-3 nor a map <local_rank>:<0-3>,...";
  if (text.empty()) throw std::invalid_argument(err);
  for (const auto& item : base::Split(text, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon > 9 || item.size() != colon + 2 ||
        !is_std(item[colon + 1])) {
      throw std::invalid_argument(err);
    }
    int rank = 0;
    for (std::size_t k = 0; k < colon; ++k) {
      if (item[k] < '0' || item[k] > '9') throw std::invalid_argument(err);
      rank = rank * 10 + (item[k] - '0');
    }
    spec.per_rank[rank] = to_std(item[colon + 1]);
  }
  return spec;
}

std::map<std::string, std::string> ParseRdzvConf(const std::string& text) {
  // elastic/rendezvous/utils.py::_parse_rendezvous_config.
  std::map<std::string, std::string> out;
  const std::string stripped = base::Strip(text);
  if (stripped.empty()) return out;
  for (const auto& kv : base::Split(stripped, ',')) {
    const auto eq = kv.find('=');
    const std::string key = base::Strip(std::string_view(kv).substr(0, eq));
    if (key.empty()) {
      throw std::invalid_argument(
          "The rendezvous configuration string must be in format "
          "<key1>=<value1>,...,<keyN>=<valueN>.");
    }
    const std::string value =
        eq == std::string::npos ? std::string() : base::Strip(std::string_view(kv).substr(eq + 1));
    if (value.empty()) {
      throw std::invalid_argument("The rendezvous configuration option '" + key +
                                  "' must have a value specified.");
    }
    out[key] = value;
  }
  return out;
}

}  // namespace tzrun::cli
