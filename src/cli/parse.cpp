// tzrun::cli::parse — torchrun 2.11's argparse front end (torch/distributed/run.py,
// torch/distributed/argparse_util.py) and config_from_args validation.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "options.hpp"
#include "text.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/cli/cli.hpp"
#include "tzrun/platform/platform.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX

#ifndef TZRUN_VERSION
#define TZRUN_VERSION "0.0.0"
#endif

namespace tzrun::cli {
namespace {

using detail::Arity;
using detail::OptionSpec;
using detail::py_repr;
using detail::ValueType;

constexpr std::string_view kHelpHint = "see 'tzrun --help'";

/// argparse-shaped width: $COLUMNS - 2 (argparse's HelpFormatter), default 80 - 2.
int format_width(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("COLUMNS"); it != env.end()) {
    if (auto n = detail::python_int(it->second); n && *n > 2 && *n < 10000) {
      return static_cast<int>(*n) - 2;
    }
  }
  return 78;
}

using base::uuid4;

using base::lower;

/// argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$'.
bool looks_like_negative_number(std::string_view s) {
  if (s.size() < 2 || s[0] != '-') return false;
  s.remove_prefix(1);
  const auto dot = s.find('.');
  auto all_digits = [](std::string_view d) {
    return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return all_digits(s);
  return all_digits(s.substr(0, dot)) && dot + 1 < s.size() && all_digits(s.substr(dot + 1));
}

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

/// A value and where it came from: the option as typed on the command line, or
/// the environment variable that supplied the default.
struct Raw {
  std::string value;
  bool from_env = false;
  std::string env_name;
  std::string origin;  ///< overrides where(): "-j" or a platform variable
};

struct Match {
  const OptionSpec* opt = nullptr;  // nullptr: an unknown optional
  std::string option_string;
  std::optional<std::string> explicit_arg;
};

class Parser {
 public:
  Parser(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
         const HostProbe& host)
      : args_(args), env_(env), host_(host), usage_(detail::usage_text(format_width(env))) {}

  ParseOutcome run();

 private:
  [[noreturn]] void fail(const std::string& message) const { throw UsageError(message, usage_); }

  const OptionSpec* exact(std::string_view s) const {
    for (const auto& opt : detail::options()) {
      if (std::find(opt.strings.begin(), opt.strings.end(), s) != opt.strings.end()) return &opt;
    }
    return nullptr;
  }

  std::vector<Match> option_tuples(const std::string& tok) const;
  std::optional<Match> classify(const std::string& tok) const;
  bool consume(const Match& first, std::size_t& next, ParseOutcome& out);
  void store_cli(const OptionSpec& opt, const std::string& value);
  void apply_env_defaults();
  void apply_job_shape();
  void apply_platform(ParseOutcome& out);
  void check_value(const OptionSpec& opt, const std::string& value, const std::string& where_prefix,
                   const std::string& fix) const;

  // --- config building ---
  const Raw* raw(const std::string& dest) const {
    auto it = values_.find(dest);
    return it == values_.end() ? nullptr : &it->second;
  }
  std::string value_or(const std::string& dest, const std::string& def) const {
    const Raw* r = raw(dest);
    return r ? r->value : def;
  }
  bool flag(const std::string& dest) const { return flags_.count(dest) != 0; }
  /// "argument --nnodes" or "PET_NNODES (default for --nnodes)".
  std::string where(const std::string& dest) const;
  [[noreturn]] void bad(const std::string& dest, const std::string& why,
                        const std::string& fix) const;
  void build(LaunchConfig& c, std::vector<std::string>& warnings) const;
  int resolve_nproc(const std::string& spec) const;
  StdSpec std_spec(const std::string& dest) const;

  const std::vector<std::string>& args_;
  const std::map<std::string, std::string>& env_;
  const HostProbe& host_;
  const std::string usage_;

  std::map<std::string, Raw> values_;  // dest -> value (CLI or PET_)
  std::set<std::string> flags_;        // dests of flags that are set
  std::set<std::string> cli_seen_;     // dests given on the command line
  std::set<std::string> env_seen_;     // dests taken from PET_<DEST>
  std::optional<std::string> script_;
  std::vector<std::string> script_args_;
  std::vector<std::string> extras_;
};

std::vector<Match> Parser::option_tuples(const std::string& tok) const {
  // argparse 3.11 ArgumentParser._get_option_tuples (allow_abbrev=True).
  std::vector<Match> out;
  if (tok.size() >= 2 && tok[0] == '-' && tok[1] == '-') {
    std::string prefix = tok;
    std::optional<std::string> explicit_arg;
    if (auto eq = tok.find('='); eq != std::string::npos) {
      prefix = tok.substr(0, eq);
      explicit_arg = tok.substr(eq + 1);
    }
    for (const auto& opt : detail::options()) {
      for (const auto& s : opt.strings) {
        if (s.rfind(prefix, 0) == 0) out.push_back({&opt, s, explicit_arg});
      }
    }
  } else if (tok.size() >= 2 && tok[0] == '-') {
    const std::string short_prefix = tok.substr(0, 2);
    const std::string short_explicit = tok.substr(2);
    for (const auto& opt : detail::options()) {
      for (const auto& s : opt.strings) {
        if (s == short_prefix) {
          out.push_back({&opt, s, short_explicit});
        } else if (s.rfind(tok, 0) == 0) {
          out.push_back({&opt, s, std::nullopt});
        }
      }
    }
  }
  return out;
}

std::optional<Match> Parser::classify(const std::string& tok) const {
  // argparse 3.11 ArgumentParser._parse_optional: nullopt means "positional".
  if (tok.empty() || tok[0] != '-') return std::nullopt;
  if (const auto* opt = exact(tok)) return Match{opt, tok, std::nullopt};
  if (tok.size() == 1) return std::nullopt;
  if (auto eq = tok.find('='); eq != std::string::npos) {
    if (const auto* opt = exact(tok.substr(0, eq))) {
      return Match{opt, tok.substr(0, eq), tok.substr(eq + 1)};
    }
  }
  auto tuples = option_tuples(tok);
  if (tuples.size() > 1) {
    // tzrun: a prefix that names exactly one torchrun option string keeps meaning
    // it even where a tzrun extension shares the prefix (e.g. --log- = --log-dir).
    std::vector<Match> native;
    for (const auto& m : tuples) {
      if (!m.opt->extension) native.push_back(m);
    }
    if (native.size() == 1) return native.front();
    std::string names;
    for (const auto& m : tuples) names += (names.empty() ? "" : ", ") + m.option_string;
    const auto eq = tok.find('=');
    fail("ambiguous option: " + (eq == std::string::npos ? tok : tok.substr(0, eq)) +
         " could match " + names + " (type more of the option name)");
  }
  if (tuples.size() == 1) return tuples.front();
  if (looks_like_negative_number(tok)) return std::nullopt;
  if (tok.find(' ') != std::string::npos) return std::nullopt;
  return Match{nullptr, tok, std::nullopt};
}

void Parser::check_value(const OptionSpec& opt, const std::string& value,
                         const std::string& where_prefix, const std::string& fix) const {
  if (opt.type == ValueType::kInt && !detail::python_int(value)) {
    fail(where_prefix + ": invalid int value: " + py_repr(value) + " (expected an integer" + fix +
         ")");
  }
  if (opt.type == ValueType::kFloat && !detail::python_float(value)) {
    fail(where_prefix + ": invalid float value: " + py_repr(value) + " (expected a number" + fix +
         ")");
  }
  if (!opt.choices.empty() &&
      std::find(opt.choices.begin(), opt.choices.end(), value) == opt.choices.end()) {
    std::string list;
    for (const auto& c : opt.choices) list += (list.empty() ? "" : ", ") + py_repr(c);
    fail(where_prefix + ": invalid choice: " + py_repr(value) + " (choose from " + list + fix +
         ")");
  }
}

void Parser::store_cli(const OptionSpec& opt, const std::string& value) {
  check_value(opt, value, "argument " + opt.display(), "");
  values_[opt.dest] = Raw{value, false, "", ""};
  cli_seen_.insert(opt.dest);
}

/// Consumes one optional (and its value, or a cluster of short flags). Returns
/// true when parsing must stop because help/version was requested.
bool Parser::consume(const Match& first, std::size_t& next, ParseOutcome& out) {
  // argparse consume_optional: first collect the actions, then take them in order.
  std::vector<std::pair<const OptionSpec*, std::optional<std::string>>> actions;
  Match cur = first;
  while (true) {
    const OptionSpec& opt = *cur.opt;
    if (opt.arity == Arity::kValue) {
      std::string value;
      if (cur.explicit_arg) {
        value = *cur.explicit_arg;
      } else {
        const bool missing =
            next >= args_.size() || args_[next] == "--" || (classify(args_[next]).has_value());
        if (missing) {
          fail("argument " + opt.display() + ": expected one argument (write " + cur.option_string +
               " VALUE, or " + cur.option_string + "=VALUE for a value that starts with '-')");
        }
        value = args_[next++];
      }
      actions.emplace_back(&opt, std::move(value));
      break;
    }
    if (!cur.explicit_arg) {
      actions.emplace_back(&opt, std::nullopt);
      break;
    }
    const std::string& arg = *cur.explicit_arg;
    const bool short_option = cur.option_string.size() == 2 && cur.option_string[1] != '-';
    if (short_option && !arg.empty()) {
      actions.emplace_back(&opt, std::nullopt);
      const std::string next_option = std::string("-") + arg[0];
      if (const auto* nopt = exact(next_option)) {
        cur = Match{nopt, next_option,
                    arg.size() > 1 ? std::optional<std::string>(arg.substr(1)) : std::nullopt};
        continue;
      }
    }
    fail("argument " + opt.display() + ": ignored explicit argument " + py_repr(arg) + " (" +
         cur.option_string + " takes no value)");
  }
  for (auto& [opt, value] : actions) {
    switch (opt->arity) {
      case Arity::kHelp:
        out.kind = ParseOutcome::Kind::kHelp;
        out.text = detail::render_help(format_width(env_));
        return true;
      case Arity::kVersion:
        out.kind = ParseOutcome::Kind::kVersion;
        out.text = version_string() + "\n";
        return true;
      case Arity::kFlag:
        flags_.insert(opt->dest);
        cli_seen_.insert(opt->dest);
        break;
      case Arity::kValue:
        store_cli(*opt, *value);
        break;
    }
  }
  return false;
}

void Parser::apply_env_defaults() {
  // argparse_util.env / check_env: PET_<DEST> replaces the built-in default.
  for (const auto& opt : detail::options()) {
    if (!opt.pet || cli_seen_.count(opt.dest)) continue;
    const std::string name = opt.pet_name();
    auto it = env_.find(name);
    if (it == env_.end()) continue;
    const std::string& value = it->second;
    const std::string prefix =
        "environment variable " + name + " (default for " + opt.strings.front() + ")";
    if (opt.arity == Arity::kFlag) {
      const std::string v = lower(detail::strip(value));
      if (v.empty() || v == "true" || v == "yes" || v == "on") {
        flags_.insert(opt.dest);
      } else if (v == "false" || v == "no" || v == "off") {
        flags_.erase(opt.dest);
      } else if (auto n = detail::python_int(v)) {
        if (*n != 0) flags_.insert(opt.dest);
      } else {
        fail(prefix + ": invalid boolean value: " + py_repr(value) +
             " (use 1/true/yes/on to enable or 0/false/no/off to disable, or unset " + name + ")");
      }
      env_seen_.insert(opt.dest);
      continue;
    }
    if (value.empty()) continue;  // tzrun: an empty PET_ value means "unset"
    check_value(opt, value, prefix, "; fix or unset " + name);
    values_[opt.dest] = Raw{value, true, name, ""};
    env_seen_.insert(opt.dest);
  }
}

std::string Parser::where(const std::string& dest) const {
  const OptionSpec* spec = nullptr;
  for (const auto& opt : detail::options()) {
    if (opt.dest == dest) spec = &opt;
  }
  const std::string display = spec ? spec->display() : dest;
  const Raw* r = raw(dest);
  if (r && !r->origin.empty()) return r->origin;
  if (r && r->from_env) {
    return "environment variable " + r->env_name + " (default for " + spec->strings.front() + ")";
  }
  return "argument " + display;
}

void Parser::bad(const std::string& dest, const std::string& why, const std::string& fix) const {
  const Raw* r = raw(dest);
  std::string msg = where(dest) + ": ";
  if (r) msg += "invalid value " + py_repr(r->value) + ": ";
  msg += why;
  if (!fix.empty()) msg += " (" + fix + ")";
  fail(msg);
}

void Parser::apply_job_shape() {
  // tzrun extension: TorchX `dist.ddp -j [[MIN:]MAX x]NPROC` sets --nnodes and
  // --nproc-per-node at once; like any flag it wins over PET_NNODES/PET_NPROC_PER_NODE.
  const Raw* j = raw("job_shape");
  if (j == nullptr) return;
  for (const char* dest : {"nnodes", "nproc_per_node"}) {
    if (cli_seen_.count(dest) != 0) {
      const std::string flag = dest == std::string("nnodes") ? "--nnodes" : "--nproc-per-node";
      fail("argument -j: not allowed with argument " + flag + " (-j " + j->value +
           " already sets --nnodes and --nproc-per-node; drop one of them)");
    }
  }
  platform::JobShape shape;
  try {
    shape = platform::parse_job_shape(j->value);
  } catch (const std::invalid_argument& e) {
    fail(std::string("argument -j: ") + e.what());
  }
  const std::string origin = "argument -j " + py_repr(j->value);
  values_["nnodes"] = Raw{shape.nnodes(), false, "", origin};
  values_["nproc_per_node"] = Raw{std::to_string(shape.nproc_per_node), false, "", origin};
  cli_seen_.insert("nnodes");
  cli_seen_.insert("nproc_per_node");
}

void Parser::apply_platform(ParseOutcome& out) {
  // Platform variables are defaults below PET_<DEST> (docs/multinode.md).
  platform::Request req;
  req.platform = value_or("platform", "auto");
  req.explicit_dests = cli_seen_;
  req.explicit_dests.insert(env_seen_.begin(), env_seen_.end());
  req.standalone = flag("standalone");
  req.rdzv_backend = req.standalone ? "c10d" : value_or("rdzv_backend", "static");
  try {
    out.platform = platform::detect(req, env_);
  } catch (const platform::PlatformError& e) {
    fail(e.what());
  }
  for (const auto& [dest, v] : out.platform.defaults) {
    if (values_.count(dest) != 0) continue;
    const OptionSpec* spec_of = nullptr;
    for (const auto& opt : detail::options()) {
      if (opt.dest == dest) spec_of = &opt;
    }
    const std::string flag_name = spec_of ? spec_of->strings.front() : dest;
    values_[dest] = Raw{v.value, true, v.source,
                        "environment variable " + v.source + " (" +
                            std::string(platform::name(out.platform.kind)) +
                            " platform, default for " + flag_name + ")"};
  }
  out.warnings.insert(out.warnings.end(), out.platform.warnings.begin(),
                      out.platform.warnings.end());
}

ParseOutcome Parser::run() {
  ParseOutcome out;
  std::size_t i = 0;
  bool dashdash = false;
  while (i < args_.size()) {
    const std::string& tok = args_[i];
    if (!dashdash && tok == "--") {
      // argparse: '--' ends the options; Python 3.11 drops this first '--'.
      dashdash = true;
      ++i;
      continue;
    }
    std::optional<Match> m;
    if (!dashdash) m = classify(tok);
    if (!m) {
      script_ = tok;
      script_args_.assign(args_.begin() + static_cast<std::ptrdiff_t>(i) + 1, args_.end());
      // Python 3.11 argparse also drops a '--' right after the script (REMAINDER
      // quirk); later ones reach the worker.
      if (!dashdash && !script_args_.empty() && script_args_.front() == "--") {
        script_args_.erase(script_args_.begin());
      }
      break;
    }
    ++i;
    if (!m->opt) {
      extras_.push_back(tok);
      continue;
    }
    if (consume(*m, i, out)) return out;
  }

  apply_env_defaults();
  apply_job_shape();

  if (!script_) {
    fail(
        "the following arguments are required: training_script, training_script_args (name "
        "the program to launch after the options, e.g. 'tzrun --nproc-per-node=2 train.py')");
  }
  if (!extras_.empty()) {
    std::string list;
    for (const auto& e : extras_) list += (list.empty() ? "" : " ") + e;
    fail("unrecognized arguments: " + list + " (options must come before the training script; " +
         std::string(kHelpHint) + ")");
  }
  apply_platform(out);
  build(out.config, out.warnings);
  return out;
}

int Parser::resolve_nproc(const std::string& spec) const {
  // torch/distributed/run.py::determine_local_world_size.
  if (auto n = detail::python_int(spec)) {
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

StdSpec Parser::std_spec(const std::string& dest) const {
  try {
    return parse_std_spec(value_or(dest, "0"));
  } catch (const std::invalid_argument& e) {
    bad(dest, e.what(),
        "use 0 (none), 1 (stdout), 2 (stderr), 3 (both) for all local ranks, or a map like "
        "0:1,1:2");
  }
}

void Parser::build(LaunchConfig& c, std::vector<std::string>& warnings) const {
  c.training_script = *script_;
  c.training_script_args = script_args_;
  if (c.training_script.empty()) {
    fail("training_script is empty (name the program to launch after the options)");
  }

  c.standalone = flag("standalone");
  c.rdzv_backend = value_or("rdzv_backend", "static");
  c.rdzv_endpoint = value_or("rdzv_endpoint", "");
  c.rdzv_id = value_or("rdzv_id", "none");
  if (c.standalone) {
    // run.py::run: values given for these three are silently overwritten.
    c.rdzv_backend = "c10d";
    c.rdzv_endpoint = "localhost:0";
    c.rdzv_id = uuid4();
  }
  if (c.rdzv_backend.empty()) {
    bad("rdzv_backend", "the rendezvous backend is empty", "use static or c10d");
  }

  // --nnodes N | MIN:MAX (run.py::parse_min_max_nnodes + the 0 < min <= max check).
  {
    const std::string nnodes = value_or("nnodes", "1:1");
    const auto parts = detail::split(nnodes, ':');
    const char* fix = "use N or MIN:MAX with integers 0 < MIN <= MAX, e.g. --nnodes=2 or 1:4";
    if (parts.size() > 2) bad("nnodes", "not in \"MIN:MAX\" format", fix);
    std::vector<std::int64_t> n;
    for (const auto& p : parts) {
      auto v = detail::python_int(p);
      if (!v) bad("nnodes", "invalid int " + py_repr(p), fix);
      n.push_back(*v);
    }
    const auto lo = n.front();
    const auto hi = n.back();
    if (!(0 < lo && lo <= hi) || hi > std::numeric_limits<int>::max()) {
      bad("nnodes",
          "min_nodes must be > 0 and <= max_nodes, got min_nodes=" + std::to_string(lo) +
              ", max_nodes=" + std::to_string(hi),
          fix);
    }
    c.min_nodes = static_cast<int>(lo);
    c.max_nodes = static_cast<int>(hi);
  }

  auto int_value = [&](const std::string& dest, int def, std::int64_t lo, std::int64_t hi,
                       const std::string& rule) {
    const Raw* r = raw(dest);
    if (!r) return def;
    const auto v = *detail::python_int(r->value);  // type already checked
    if (v < lo || v > hi) bad(dest, rule, "");
    return static_cast<int>(v);
  };
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  c.max_restarts = int_value("max_restarts", 0, 0, kIntMax, "max_restarts must be >= 0");
  {
    const Raw* r = raw("monitor_interval");
    c.monitor_interval = r ? *detail::python_float(r->value) : 0.1;
    if (!(c.monitor_interval > 0)) bad("monitor_interval", "monitor-interval must be > 0", "");
  }

  c.nproc_per_node_spec = value_or("nproc_per_node", "1");
  c.nproc_per_node = resolve_nproc(c.nproc_per_node_spec);

  try {
    c.rdzv_conf = parse_rdzv_conf(value_or("rdzv_conf", ""));
  } catch (const std::invalid_argument& e) {
    bad("rdzv_conf", e.what(), "use key1=value1,key2=value2");
  }

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
    c.rdzv_id = uuid4();
    warnings.emplace_back("config has no run_id, generated a random run_id: " + c.rdzv_id);
  }

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

  c.redirects = std_spec("redirects");
  c.tee = std_spec("tee");

  if (const std::string f = value_or("local_ranks_filter", ""); !f.empty()) {
    for (const auto& item : detail::split(f, ',')) {
      auto v = detail::python_int(item);
      if (!v || *v < 0 || *v > kIntMax) {
        bad("local_ranks_filter",
            "--local_ranks_filter must be a comma-separated list of non-negative integers",
            "e.g. --local_ranks_filter=0,1,2");
      }
      c.local_ranks_filter.insert(static_cast<int>(*v));
    }
  }

  // run.py comma_separated_list: ',,' escapes a literal comma. tzrun drops empty
  // items (an empty filter would otherwise match every line).
  auto filters = [&](const std::string& dest) {
    std::vector<std::string> out;
    const Raw* r = raw(dest);
    if (!r) return out;
    static constexpr std::string_view kPlaceholder = "\x01";
    std::string v = r->value;
    for (auto pos = v.find(",,"); pos != std::string::npos; pos = v.find(",,", pos + 1)) {
      v.replace(pos, 2, kPlaceholder);
    }
    for (auto item : detail::split(v, ',')) {
      for (auto pos = item.find(kPlaceholder); pos != std::string::npos;
           pos = item.find(kPlaceholder)) {
        item.replace(pos, 1, ",");
      }
      if (!item.empty()) out.push_back(std::move(item));
    }
    return out;
  };
  c.duplicate_stdout_filters = filters("duplicate_stdout_filters");
  c.duplicate_stderr_filters = filters("duplicate_stderr_filters");

  if (const Raw* r = raw("local_addr")) c.local_addr = r->value;
  if (const Raw* r = raw("logs_specs")) c.logs_specs = r->value;
  if (const Raw* r = raw("numa_binding")) c.numa_binding = r->value;

  if (const Raw* r = raw("signals_to_handle")) {
    c.signals_to_handle.clear();
    for (const auto& item : detail::split(r->value, ',')) {
      const std::string name(detail::strip(item));
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
  c.virtual_local_rank = flag("virtual_local_rank");

  // --- tzrun extensions ---
  {
    const Raw* r = raw("shutdown_timeout");
    std::string text;
    std::string source;
    if (r) {
      text = r->value;
    } else if (auto it = env_.find("TORCH_ELASTIC_SHUTDOWN_TIMEOUT");
               it != env_.end() && !detail::strip(it->second).empty()) {
      text = it->second;
      source = "environment variable TORCH_ELASTIC_SHUTDOWN_TIMEOUT";
    }
    if (!text.empty()) {
      const auto v = detail::python_float(text);
      const char* fix = "use a number of seconds >= 0, e.g. 30";
      if (!v || !std::isfinite(*v) || *v < 0) {
        if (source.empty()) bad("shutdown_timeout", "shutdown-timeout must be >= 0", fix);
        fail(source + ": invalid value " + py_repr(text) + ": shutdown timeout must be >= 0 (" +
             fix + ", or unset it)");
      }
      c.shutdown_timeout = *v;
    }
  }
  if (const Raw* r = raw("summary_json")) c.summary_json = r->value;
  c.dry_run = flag("dry_run");
  {
    std::string level = "warning";
    std::string source;
    if (const Raw* r = raw("log_level")) {
      level = r->value;
    } else if (auto it = env_.find("LOGLEVEL");
               it != env_.end() && !detail::strip(it->second).empty()) {
      level = it->second;
      source = "environment variable LOGLEVEL";
    }
    std::string l = lower(detail::strip(level));
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
  c.platform = value_or("platform", "auto");
}

}  // namespace

UsageError::UsageError(const std::string& message, const std::string& usage)
    : Error(usage + "tzrun: error: " + message, ::tzrun::exit_code::kUsage), message_(message) {}

ParseOutcome parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, const HostProbe& host) {
  return Parser(args, env, host).run();
}

ParseOutcome parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env) {
  return parse(args, env, HostProbe{});
}

std::map<std::string, std::string> environ_map() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    out.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return out;
}

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
      py_repr(text) + " is neither a single value 0-3 nor a map <local_rank>:<0-3>,...";
  if (text.empty()) throw std::invalid_argument(err);
  for (const auto& item : detail::split(text, ',')) {
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
  const auto stripped = detail::strip(text);
  if (stripped.empty()) return out;
  for (const auto& kv : detail::split(stripped, ',')) {
    const auto eq = kv.find('=');
    const std::string key(detail::strip(std::string_view(kv).substr(0, eq)));
    if (key.empty()) {
      throw std::invalid_argument(
          "The rendezvous configuration string must be in format "
          "<key1>=<value1>,...,<keyN>=<valueN>.");
    }
    const std::string value = eq == std::string::npos
                                  ? std::string()
                                  : std::string(detail::strip(std::string_view(kv).substr(eq + 1)));
    if (value.empty()) {
      throw std::invalid_argument("The rendezvous configuration option '" + key +
                                  "' must have a value specified.");
    }
    out[key] = value;
  }
  return out;
}

std::string help_text(int columns) {
  return detail::render_help(columns > 2 ? columns - 2 : 1);
}

std::string version_string() {
  return std::string("tzrun ") + TZRUN_VERSION + " (torchrun 2.11 compatible)";
}

}  // namespace tzrun::cli
