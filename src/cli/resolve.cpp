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
const std::map<std::string, int>& catchable_signals() {
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
const std::string* non_blank_env(const std::map<std::string, std::string>& env,
                                 const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || base::strip(it->second).empty()) return nullptr;
  return &it->second;
}

}  // namespace

int Parser::int_value(const std::string& dest, int def, std::int64_t lo, std::int64_t hi,
                      const std::string& rule) const {
  const Raw* r = raw(dest);
  if (!r) return def;
  const auto v = *python_int(r->value);  // type already checked
  if (v < lo || v > hi) bad(dest, rule, "");
  return static_cast<int>(v);
}

void Parser::resolve(LaunchConfig& c, std::vector<std::string>& warnings) const {
  c.training_script = *script_;
  c.training_script_args = script_args_;
  if (c.training_script.empty()) {
    fail("training_script is empty (name the program to launch after the options)");
  }
  resolve_backend(c);
  resolve_nnodes(c);
  resolve_restarts(c);
  c.nproc_per_node_spec = value_or("nproc_per_node", "1");
  c.nproc_per_node = resolve_nproc(c.nproc_per_node_spec);
  try {
    c.rdzv_conf = parse_rdzv_conf(value_or("rdzv_conf", ""));
  } catch (const std::invalid_argument& e) {
    bad("rdzv_conf", e.what(), "use key1=value1,key2=value2");
  }
  resolve_node_rank(c, warnings);
  resolve_launch(c);
  resolve_logs(c);
  if (const Raw* r = raw("local_addr")) c.local_addr = r->value;
  if (const Raw* r = raw("logs_specs")) c.logs_specs = r->value;
  if (const Raw* r = raw("numa_binding")) c.numa_binding = r->value;
  resolve_signals(c);
  c.virtual_local_rank = flag("virtual_local_rank");

  // --- tzrun extensions ---
  resolve_shutdown_timeout(c);
  if (const Raw* r = raw("summary_json")) c.summary_json = r->value;
  c.dry_run = flag("dry_run");
  resolve_log_level(c);
  c.platform = value_or("platform", "auto");
}

void Parser::resolve_backend(LaunchConfig& c) const {
  c.standalone = flag("standalone");
  c.rdzv_backend = value_or("rdzv_backend", "static");
  c.rdzv_endpoint = value_or("rdzv_endpoint", "");
  c.rdzv_id = value_or("rdzv_id", "none");
  if (c.standalone) {
    // run.py::run: values given for these three are silently overwritten.
    c.rdzv_backend = "c10d";
    c.rdzv_endpoint = "localhost:0";
    c.rdzv_id = base::uuid4();
  }
  if (c.rdzv_backend.empty()) {
    bad("rdzv_backend", "the rendezvous backend is empty", "use static or c10d");
  }
}

void Parser::resolve_nnodes(LaunchConfig& c) const {
  // --nnodes N | MIN:MAX (run.py::parse_min_max_nnodes + the 0 < min <= max check).
  const std::string nnodes = value_or("nnodes", "1:1");
  const auto parts = base::split(nnodes, ':');
  const char* fix = "use N or MIN:MAX with integers 0 < MIN <= MAX, e.g. --nnodes=2 or 1:4";
  if (parts.size() > 2) bad("nnodes", "not in \"MIN:MAX\" format", fix);
  std::vector<std::int64_t> n;
  for (const auto& p : parts) {
    auto v = python_int(p);
    if (!v) bad("nnodes", "invalid int " + py_repr(p), fix);
    n.push_back(*v);
  }
  const auto lo = n.front();
  const auto hi = n.back();
  if (!(0 < lo && lo <= hi) || hi > kIntMax) {
    bad("nnodes",
        "min_nodes must be > 0 and <= max_nodes, got min_nodes=" + std::to_string(lo) +
            ", max_nodes=" + std::to_string(hi),
        fix);
  }
  c.min_nodes = static_cast<int>(lo);
  c.max_nodes = static_cast<int>(hi);
}

void Parser::resolve_restarts(LaunchConfig& c) const {
  c.max_restarts = int_value("max_restarts", 0, 0, kIntMax, "max_restarts must be >= 0");
  const Raw* r = raw("monitor_interval");
  c.monitor_interval = r ? *python_float(r->value) : 0.1;
  if (!(c.monitor_interval > 0)) bad("monitor_interval", "monitor-interval must be > 0", "");
}

int Parser::resolve_nproc(const std::string& spec) const {
  // torch/distributed/run.py::determine_local_world_size.
  if (auto n = python_int(spec)) {
    if (*n <= 0) {
      bad("nproc_per_node", "nproc-per-node must be > 0",
          "use a positive integer, cpu, gpu or auto");
    }
    if (*n > 1'000'000) bad("nproc_per_node", "too many workers per node", "use <= 1000000");
    return static_cast<int>(*n);
  }
  const int cpus = host_.cpu_count > 0 ? host_.cpu_count : count_cpus();
  if (spec == "cpu") return cpus;
  if (spec == "gpu" || spec == "auto") {
    const int gpus = count_gpus(env_, host_.sysroot);
    if (gpus > 0) return gpus;
    if (spec == "auto") return cpus;
    const auto cvd = env_.find("CUDA_VISIBLE_DEVICES");
    bad("nproc_per_node",
        "--nproc-per-node=gpu but no NVIDIA GPU is visible (no entries in " +
            (host_.sysroot / "proc/driver/nvidia/gpus").string() +
            (cvd != env_.end() ? ", CUDA_VISIBLE_DEVICES=" + py_repr(cvd->second) : "") + ")",
        "use an integer or cpu, or check the driver and CUDA_VISIBLE_DEVICES");
  }
  if (spec == "xpu") {
    bad("nproc_per_node", "xpu is not supported by tzrun",
        "use an integer, cpu, gpu or auto; tzrun only detects NVIDIA GPUs");
  }
  bad("nproc_per_node", "Unsupported nproc_per_node value",
      "use a positive integer, cpu, gpu or auto");
}

void Parser::resolve_node_rank(LaunchConfig& c, std::vector<std::string>& warnings) const {
  c.node_rank = int_value("node_rank", 0, 0, kIntMax, "node-rank must be >= 0");
  c.master_addr = value_or("master_addr", "127.0.0.1");
  c.master_port = int_value("master_port", 29500, 0, 65535, "master-port must be in 0..65535");
  c.master_port_explicit = raw("master_port") != nullptr;
  if (c.rdzv_backend == "static") {
    c.rdzv_conf["rank"] = std::to_string(c.node_rank);
    if (c.node_rank >= c.max_nodes) {
      bad("node_rank",
          "node-rank must be < the number of nodes (" + std::to_string(c.max_nodes) +
              ") for the static rendezvous",
          "give each node a distinct rank in 0.." + std::to_string(c.max_nodes - 1));
    }
  } else if (raw("master_addr") && c.rdzv_endpoint.empty()) {
    warnings.emplace_back(
        "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not "
        "specified.");
  }
  if (c.rdzv_id.empty()) {
    // elastic/agent launch_agent: an empty run id becomes a random one.
    c.rdzv_id = base::uuid4();
    warnings.emplace_back("config has no run_id, generated a random run_id: " + c.rdzv_id);
  }
}

void Parser::resolve_launch(LaunchConfig& c) const {
  c.start_method = value_or("start_method", "spawn");
  c.event_log_handler = value_or("event_log_handler", "null");
  if (c.event_log_handler != "null" && c.event_log_handler != "console" &&
      c.event_log_handler != "dynamic_rendezvous") {
    bad("event_log_handler", "unknown event log handler",
        "use null, console or dynamic_rendezvous");
  }
  c.role = value_or("role", "default");
  c.module = flag("module");
  c.no_python = flag("no_python");
  c.run_path = flag("run_path");
  if (c.no_python && c.module && !c.run_path) {
    fail(
        "Don't use both the '--no-python' flag and the '--module' flag at the same time. "
        "(drop one of them; check PET_NO_PYTHON / PET_MODULE in the environment)");
  }
  if (const Raw* r = raw("log_dir")) c.log_dir = r->value;
}

StdSpec Parser::std_spec(const std::string& dest) const {
  try {
    return parse_std_spec(value_or(dest, "0"));
  } catch (const std::invalid_argument& e) {
    bad(dest, e.what(),
        "use 0 (none), 1 (stdout), 2 (stderr), 3 (both) for all local ranks, or a map like "
        "0:1,1:2");
  }
}

void Parser::resolve_logs(LaunchConfig& c) const {
  c.redirects = std_spec("redirects");
  c.tee = std_spec("tee");
  if (const std::string f = value_or("local_ranks_filter", ""); !f.empty()) {
    for (const auto& item : base::split(f, ',')) {
      auto v = python_int(item);
      if (!v || *v < 0 || *v > kIntMax) {
        bad("local_ranks_filter",
            "--local_ranks_filter must be a comma-separated list of non-negative integers",
            "e.g. --local_ranks_filter=0,1,2");
      }
      c.local_ranks_filter.insert(static_cast<int>(*v));
    }
  }
  c.duplicate_stdout_filters = filters("duplicate_stdout_filters");
  c.duplicate_stderr_filters = filters("duplicate_stderr_filters");
}

std::vector<std::string> Parser::filters(const std::string& dest) const {
  // run.py comma_separated_list: ',,' escapes a literal comma. tzrun drops empty
  // items (an empty filter would otherwise match every line).
  std::vector<std::string> out;
  const Raw* r = raw(dest);
  if (!r) return out;
  static constexpr std::string_view kPlaceholder = "\x01";
  std::string v = r->value;
  for (auto pos = v.find(",,"); pos != std::string::npos; pos = v.find(",,", pos + 1)) {
    v.replace(pos, 2, kPlaceholder);
  }
  for (auto item : base::split(v, ',')) {
    for (auto pos = item.find(kPlaceholder); pos != std::string::npos;
         pos = item.find(kPlaceholder)) {
      item.replace(pos, 1, ",");
    }
    if (!item.empty()) out.push_back(std::move(item));
  }
  return out;
}

void Parser::resolve_signals(LaunchConfig& c) const {
  const Raw* r = raw("signals_to_handle");
  if (r == nullptr) return;
  c.signals_to_handle.clear();
  for (const auto& item : base::split(r->value, ',')) {
    const std::string name = base::strip(item);
    if (name.empty()) continue;
    if (name == "SIGKILL" || name == "SIGSTOP") {
      bad("signals_to_handle", name + " cannot be caught",
          "list catchable signals such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (name == "SIGCHLD" || name == "SIGCLD") {
      bad("signals_to_handle", name + " is how tzrun watches its workers and cannot be forwarded",
          "list other signals such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (!catchable_signals().count(name)) {
      bad("signals_to_handle", "unknown signal name " + py_repr(name),
          "use Python signal names such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2");
    }
    if (std::find(c.signals_to_handle.begin(), c.signals_to_handle.end(), name) ==
        c.signals_to_handle.end()) {
      c.signals_to_handle.push_back(name);
    }
  }
}

void Parser::resolve_shutdown_timeout(LaunchConfig& c) const {
  std::string text;
  std::string source;
  if (const Raw* r = raw("shutdown_timeout")) {
    text = r->value;
  } else if (const auto* e = non_blank_env(env_, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT")) {
    text = *e;
    source = "environment variable TORCH_ELASTIC_SHUTDOWN_TIMEOUT";
  }
  if (text.empty()) return;
  const auto v = python_float(text);
  const char* fix = "use a number of seconds >= 0, e.g. 30";
  if (!v || !std::isfinite(*v) || *v < 0) {
    if (source.empty()) bad("shutdown_timeout", "shutdown-timeout must be >= 0", fix);
    fail(source + ": invalid value " + py_repr(text) + ": shutdown timeout must be >= 0 (" + fix +
         ", or unset it)");
  }
  c.shutdown_timeout = *v;
}

void Parser::resolve_log_level(LaunchConfig& c) const {
  std::string level = "warning";
  std::string source;
  if (const Raw* r = raw("log_level")) {
    level = r->value;
  } else if (const auto* e = non_blank_env(env_, "LOGLEVEL")) {
    level = *e;
    source = "environment variable LOGLEVEL";
  }
  std::string l = base::lower(base::strip(level));
  if (l == "warn") l = "warning";
  if (l == "fatal") l = "critical";
  if (l == "err") l = "error";
  static const std::set<std::string> kLevels = {"trace", "debug",    "info", "warning",
                                                "error", "critical", "off"};
  if (!kLevels.count(l)) {
    const char* fix = "use trace, debug, info, warning, error, critical or off";
    if (source.empty()) bad("log_level", "unknown log level", fix);
    fail(source + ": invalid value " + py_repr(level) + ": unknown log level (" + fix +
         ", or unset it)");
  }
  c.log_level = l;
}

}  // namespace detail

StdSpec parse_std_spec(const std::string& text) {
  // elastic/multiprocessing/api.py Std.from_str, with multi-digit map keys.
  auto to_std = [](char c) { return static_cast<Std>(c - '0'); };
  auto is_std = [](char c) { return c >= '0' && c <= '3'; };
  StdSpec spec;
  if (text.size() == 1 && is_std(text[0])) {
    spec.all = to_std(text[0]);
    return spec;
  }
  const std::string err =
      detail::py_repr(text) + " is neither a single value 0-3 nor a map <local_rank>:<0-3>,...";
  if (text.empty()) throw std::invalid_argument(err);
  for (const auto& item : base::split(text, ',')) {
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

std::map<std::string, std::string> parse_rdzv_conf(const std::string& text) {
  // elastic/rendezvous/utils.py::_parse_rendezvous_config.
  std::map<std::string, std::string> out;
  const std::string stripped = base::strip(text);
  if (stripped.empty()) return out;
  for (const auto& kv : base::split(stripped, ',')) {
    const auto eq = kv.find('=');
    const std::string key = base::strip(std::string_view(kv).substr(0, eq));
    if (key.empty()) {
      throw std::invalid_argument(
          "The rendezvous configuration string must be in format "
          "<key1>=<value1>,...,<keyN>=<valueN>.");
    }
    const std::string value =
        eq == std::string::npos ? std::string() : base::strip(std::string_view(kv).substr(eq + 1));
    if (value.empty()) {
      throw std::invalid_argument("The rendezvous configuration option '" + key +
                                  "' must have a value specified.");
    }
    out[key] = value;
  }
  return out;
}

}  // namespace tzrun::cli
