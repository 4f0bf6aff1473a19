// tzrun::cli::parse — torchrun 2.11's argparse front end (torch/distributed/run.py,
// torch/distributed/argparse_util.py): the argv scanner and the defaults below the command
// line (PET_<DEST>, -j, the platform). resolve.cpp turns the result into the LaunchConfig.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "options.hpp"
#include "parser.hpp"
#include "text.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/cli/cli.hpp"
#include "tzrun/platform/platform.hpp"

#ifndef TZRUN_VERSION
#define TZRUN_VERSION "0.0.0"
#endif

namespace tzrun::cli {
namespace detail {
namespace {

constexpr std::string_view kHelpHint = "see 'tzrun --help'";

/// argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$'.
bool LooksLikeNegativeNumber(std::string_view s) {
  if (s.size() < 2 || s[0] != '-') return false;
  s.remove_prefix(1);
  const auto dot = s.find('.');
  auto all_digits = [](std::string_view d) {
    return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return all_digits(s);
  return all_digits(s.substr(0, dot)) && dot + 1 < s.size() && all_digits(s.substr(dot + 1));
}

}  // namespace

int FormatWidth(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("COLUMNS"); it != env.end()) {
    if (auto n = PythonInt(it->second); n && *n > 2 && *n < 10000) {
      return static_cast<int>(*n) - 2;
    }
  }
  return 78;
}

const OptionSpec* Parser::Exact(std::string_view s) const {
  for (const auto& opt : Options()) {
    if (std::find(opt.strings.begin(), opt.strings.end(), s) != opt.strings.end()) return &opt;
  }
  return nullptr;
}

std::vector<Match> Parser::OptionTuples(const std::string& tok) const {
  // argparse 3.11 ArgumentParser._get_option_tuples (allow_abbrev=True).
  std::vector<Match> out;
  if (tok.size() >= 2 && tok[0] == '-' && tok[1] == '-') {
    std::string prefix = tok;
    std::optional<std::string> explicit_arg;
    if (auto eq = tok.find('='); eq != std::string::npos) {
      prefix = tok.substr(0, eq);
      explicit_arg = tok.substr(eq + 1);
    }
    for (const auto& opt : Options()) {
      for (const auto& s : opt.strings) {
        if (s.rfind(prefix, 0) == 0) out.push_back({&opt, s, explicit_arg});
      }
    }
  } else if (tok.size() >= 2 && tok[0] == '-') {
    const std::string short_prefix = tok.substr(0, 2);
    const std::string short_explicit = tok.substr(2);
    for (const auto& opt : Options()) {
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

std::optional<Match> Parser::Classify(const std::string& tok) const {
  // argparse 3.11 ArgumentParser._parse_optional: nullopt means "positional".
  if (tok.empty() || tok[0] != '-') return std::nullopt;
  if (const auto* opt = Exact(tok)) return Match{opt, tok, std::nullopt};
  if (tok.size() == 1) return std::nullopt;
  if (auto eq = tok.find('='); eq != std::string::npos) {
    if (const auto* opt = Exact(tok.substr(0, eq))) {
      return Match{opt, tok.substr(0, eq), tok.substr(eq + 1)};
    }
  }
  auto tuples = OptionTuples(tok);
  if (tuples.size() > 1) {
    // tzrun: a prefix that names exactly one torchrun option string keeps meaning
    // it even where a tzrun extension shares the prefix (e.g. --log- = --log-dir).
    std::vector<Match> native;
    for (const auto& m : tuples) {
      if (!m.opt->extension) native.push_back(m);
    }
    if (native.size() == 1) return native.front();
    std::vector<std::string> names;
    for (const auto& m : tuples) names.push_back(m.option_string);
    const auto eq = tok.find('=');
    Fail("ambiguous option: " + (eq == std::string::npos ? tok : tok.substr(0, eq)) +
         " could match " + base::Join(names, ", ") + " (type more of the option name)");
  }
  if (tuples.size() == 1) return tuples.front();
  if (LooksLikeNegativeNumber(tok)) return std::nullopt;
  if (tok.find(' ') != std::string::npos) return std::nullopt;
  return Match{nullptr, tok, std::nullopt};
}

void Parser::CheckValue(const OptionSpec& opt, const std::string& value,
                        const std::string& where_prefix, const std::string& fix) const {
  if (opt.type == ValueType::kInt && !PythonInt(value)) {
    Fail(where_prefix + ": invalid int value: " + PyRepr(value) + " (expected an integer" + fix +
         ")");
  }
  if (opt.type == ValueType::kFloat && !PythonFloat(value)) {
    Fail(where_prefix + ": invalid float value: " + PyRepr(value) + " (expected a number" + fix +
         ")");
  }
  if (!opt.choices.empty() &&
      std::find(opt.choices.begin(), opt.choices.end(), value) == opt.choices.end()) {
    std::vector<std::string> shown;
    for (const auto& c : opt.choices) shown.push_back(PyRepr(c));
    const std::string list = base::Join(shown, ", ");
    Fail(where_prefix + ": invalid choice: " + PyRepr(value) + " (choose from " + list + fix + ")");
  }
}

void Parser::StoreCli(const OptionSpec& opt, const std::string& value) {
  CheckValue(opt, value, "argument " + opt.Display(), "");
  values_[opt.dest] = Raw{value, false, "", ""};
  cli_seen_.insert(opt.dest);
}

/// Consumes one optional (and its value, or a cluster of short flags). Returns
/// true when parsing must stop because help/version was requested.
bool Parser::Consume(const Match& first, std::size_t& next, ParseOutcome& out) {
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
            next >= args_.size() || args_[next] == "--" || (Classify(args_[next]).has_value());
        if (missing) {
          Fail("argument " + opt.Display() + ": expected one argument (write " + cur.option_string +
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
      if (const auto* nopt = Exact(next_option)) {
        cur = Match{nopt, next_option,
                    arg.size() > 1 ? std::optional<std::string>(arg.substr(1)) : std::nullopt};
        continue;
      }
    }
    Fail("argument " + opt.Display() + ": ignored explicit argument " + PyRepr(arg) + " (" +
         cur.option_string + " takes no value)");
  }
  for (auto& [opt, value] : actions) {
    switch (opt->arity) {
      case Arity::kHelp:
        out.kind = ParseOutcome::Kind::kHelp;
        out.text = RenderHelp(FormatWidth(env_));
        return true;
      case Arity::kVersion:
        out.kind = ParseOutcome::Kind::kVersion;
        out.text = VersionString() + "\n";
        return true;
      case Arity::kFlag:
        flags_.insert(opt->dest);
        cli_seen_.insert(opt->dest);
        break;
      case Arity::kValue:
        StoreCli(*opt, *value);
        break;
    }
  }
  return false;
}

void Parser::ApplyEnvDefaults() {
  // argparse_util.env / check_env: PET_<DEST> replaces the built-in default.
  for (const auto& opt : Options()) {
    if (!opt.pet || cli_seen_.count(opt.dest)) continue;
    const std::string name = opt.PetName();
    auto it = env_.find(name);
    if (it == env_.end()) continue;
    const std::string& value = it->second;
    const std::string prefix =
        "environment variable " + name + " (default for " + opt.strings.front() + ")";
    if (opt.arity == Arity::kFlag) {
      const std::string v = base::Lower(base::Strip(value));
      if (v.empty() || v == "true" || v == "yes" || v == "on") {
        flags_.insert(opt.dest);
      } else if (v == "false" || v == "no" || v == "off") {
        flags_.erase(opt.dest);
      } else if (auto n = PythonInt(v)) {
        if (*n != 0) flags_.insert(opt.dest);
      } else {
        Fail(prefix + ": invalid boolean value: " + PyRepr(value) +
             " (use 1/true/yes/on to enable or 0/false/no/off to disable, or unset " + name + ")");
      }
      env_seen_.insert(opt.dest);
      continue;
    }
    if (value.empty()) continue;  // tzrun: an empty PET_ value means "unset"
    CheckValue(opt, value, prefix, "; fix or unset " + name);
    values_[opt.dest] = Raw{value, true, name, ""};
    env_seen_.insert(opt.dest);
  }
}

std::string Parser::Where(const std::string& dest) const {
  const OptionSpec* spec = nullptr;
  for (const auto& opt : Options()) {
    if (opt.dest == dest) spec = &opt;
  }
  const std::string display = spec ? spec->Display() : dest;
  const Raw* r = FindRaw(dest);
  if (r && !r->origin.empty()) return r->origin;
  if (r && r->from_env) {
    return "environment variable " + r->env_name + " (default for " + spec->strings.front() + ")";
  }
  return "argument " + display;
}

void Parser::Bad(const std::string& dest, const std::string& why, const std::string& fix) const {
  const Raw* r = FindRaw(dest);
  std::string msg = Where(dest) + ": ";
  if (r) msg += "invalid value " + PyRepr(r->value) + ": ";
  msg += why;
  if (!fix.empty()) msg += " (" + fix + ")";
  Fail(msg);
}

void Parser::ApplyJobShape() {
  // tzrun extension: TorchX `dist.ddp -j [[MIN:]MAX x]NPROC` sets --nnodes and
  // --nproc-per-node at once; like any flag it wins over PET_NNODES/PET_NPROC_PER_NODE.
  const Raw* j = FindRaw("job_shape");
  if (j == nullptr) return;
  for (const char* dest : {"nnodes", "nproc_per_node"}) {
    if (cli_seen_.count(dest) != 0) {
      const std::string flag = dest == std::string("nnodes") ? "--nnodes" : "--nproc-per-node";
      Fail("argument -j: not allowed with argument " + flag + " (-j " + j->value +
           " already sets --nnodes and --nproc-per-node; drop one of them)");
    }
  }
  platform::JobShape shape;
  try {
    shape = platform::ParseJobShape(j->value);
  } catch (const std::invalid_argument& e) {
    Fail(std::string("argument -j: ") + e.what());
  }
  const std::string origin = "argument -j " + PyRepr(j->value);
  values_["nnodes"] = Raw{shape.Nnodes(), false, "", origin};
  values_["nproc_per_node"] = Raw{std::to_string(shape.nproc_per_node), false, "", origin};
  cli_seen_.insert("nnodes");
  cli_seen_.insert("nproc_per_node");
}

void Parser::ApplyPlatform(ParseOutcome& out) {
  // Platform variables are defaults below PET_<DEST> (docs/multinode.md).
  platform::Request req;
  req.platform = ValueOr("platform", "auto");
  req.explicit_dests = cli_seen_;
  req.explicit_dests.insert(env_seen_.begin(), env_seen_.end());
  req.standalone = Flag("standalone");
  req.rdzv_backend = req.standalone ? "c10d" : ValueOr("rdzv_backend", "static");
  try {
    out.platform = platform::Detect(req, env_);
  } catch (const platform::PlatformError& e) {
    Fail(e.what());
  }
  for (const auto& [dest, v] : out.platform.defaults) {
    if (values_.count(dest) != 0) continue;
    const OptionSpec* spec_of = nullptr;
    for (const auto& opt : Options()) {
      if (opt.dest == dest) spec_of = &opt;
    }
    const std::string flag_name = spec_of ? spec_of->strings.front() : dest;
    values_[dest] = Raw{v.value, true, v.source,
                        "environment variable " + v.source + " (" +
                            std::string(platform::Name(out.platform.kind)) +
                            " platform, default for " + flag_name + ")"};
  }
  out.warnings.insert(out.warnings.end(), out.platform.warnings.begin(),
                      out.platform.warnings.end());
}

ParseOutcome Parser::Run() {
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
    if (!dashdash) m = Classify(tok);
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
    if (Consume(*m, i, out)) return out;
  }

  ApplyEnvDefaults();
  ApplyJobShape();

  if (!script_) {
    Fail(
        "the following arguments are required: training_script, training_script_args (name "
        "the program to launch after the options, e.g. 'tzrun --nproc-per-node=2 train.py')");
  }
  if (!extras_.empty()) {
    Fail("unrecognized arguments: " + base::Join(extras_, " ") +
         " (options must come before the training script; " + std::string(kHelpHint) + ")");
  }
  ApplyPlatform(out);
  Resolve(out.config, out.warnings);
  return out;
}

}  // namespace detail

UsageError::UsageError(const std::string& message, const std::string& usage)
    : Error(usage + "tzrun: error: " + message, ::tzrun::exit_code::kUsage), message_(message) {}

ParseOutcome Parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, const HostProbe& host) {
  return detail::Parser(args, env, host).Run();
}

ParseOutcome Parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env) {
  return Parse(args, env, HostProbe{});
}

std::string HelpText(int columns) {
  return detail::RenderHelp(columns > 2 ? columns - 2 : 1);
}

std::string VersionString() {
  return std::string("tzrun ") + TZRUN_VERSION + " (torchrun 2.11 compatible)";
}

}  // namespace tzrun::cli
