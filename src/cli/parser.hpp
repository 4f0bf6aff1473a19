// Internal: the argparse-compatible scanner of tzrun's command line (parse.cpp) and the
// config_from_args-style resolution of what it collected into a LaunchConfig (resolve.cpp).
//
// Parser::run() scans argv like argparse 3.11 (classify/consume), then fills the defaults
// below the command line (PET_<DEST>, -j, the platform), and finally resolve() turns the
// collected values into the LaunchConfig, one group of options at a time, in the order
// torch/distributed/run.py::config_from_args checks them (so the first error reported is
// the same). Every invalid input throws UsageError (include/tzrun/cli/cli.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"
#include "tzrun/cli/cli.hpp"

namespace tzrun::cli::detail {

/// argparse-shaped width: $COLUMNS - 2 (argparse's HelpFormatter), default 80 - 2.
int FormatWidth(const std::map<std::string, std::string>& env);

/// A value and where it came from: the option as typed on the command line, or
/// the environment variable that supplied the default.
struct Raw {
  std::string value;
  bool from_env = false;
  std::string env_name;
  std::string origin;  ///< overrides where(): "-j" or a platform variable
};

/// One optional token as argparse's _parse_optional sees it.
struct Match {
  const OptionSpec* opt = nullptr;  ///< nullptr: an unknown optional
  std::string option_string;
  std::optional<std::string> explicit_arg;
};

class Parser {
 public:
  Parser(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
         const HostProbe& host)
      : args_(args), env_(env), host_(host), usage_(UsageText(FormatWidth(env))) {}

  ParseOutcome Run();

 private:
  [[noreturn]] void Fail(const std::string& message) const { throw UsageError(message, usage_); }

  // --- argv scanning (parse.cpp) ---
  const OptionSpec* Exact(std::string_view s) const;
  std::vector<Match> OptionTuples(const std::string& tok) const;
  std::optional<Match> Classify(const std::string& tok) const;
  bool Consume(const Match& first, std::size_t& next, ParseOutcome& out);
  void StoreCli(const OptionSpec& opt, const std::string& value);
  void ApplyEnvDefaults();
  void ApplyJobShape();
  void ApplyPlatform(ParseOutcome& out);
  void CheckValue(const OptionSpec& opt, const std::string& value, const std::string& where_prefix,
                  const std::string& fix) const;

  // --- collected values ---
  const Raw* FindRaw(const std::string& dest) const {
    auto it = values_.find(dest);
    return it == values_.end() ? nullptr : &it->second;
  }
  std::string ValueOr(const std::string& dest, const std::string& def) const {
    const Raw* r = FindRaw(dest);
    return r ? r->value : def;
  }
  bool Flag(const std::string& dest) const { return flags_.count(dest) != 0; }
  /// "argument --nnodes" or "PET_NNODES (default for --nnodes)".
  std::string Where(const std::string& dest) const;
  [[noreturn]] void Bad(const std::string& dest, const std::string& why,
                        const std::string& fix) const;
  /// An int option already type-checked at scan time: `def` when unset, else the value,
  /// which must lie in [lo, hi] (bad(dest, rule) otherwise).
  int IntValue(const std::string& dest, int def, std::int64_t lo, std::int64_t hi,
               const std::string& rule) const;

  // --- resolution into the LaunchConfig (resolve.cpp), in config_from_args order ---
  void Resolve(LaunchConfig& c, std::vector<std::string>& warnings) const;
  void ResolveBackend(LaunchConfig& c) const;
  void ResolveNnodes(LaunchConfig& c) const;
  void ResolveRestarts(LaunchConfig& c) const;
  int ResolveNproc(const std::string& spec) const;
  void ResolveNodeRank(LaunchConfig& c, std::vector<std::string>& warnings) const;
  void ResolveLaunch(LaunchConfig& c) const;
  StdSpec StdSpecOf(const std::string& dest) const;
  void ResolveLogs(LaunchConfig& c) const;
  std::vector<std::string> Filters(const std::string& dest) const;
  void ResolveSignals(LaunchConfig& c) const;
  /// The signal names of option `dest` (comma-separated, deduplicated); Bad() for names that
  /// cannot be caught or forwarded.
  std::vector<std::string> SignalList(const std::string& dest) const;
  void ResolveShutdownTimeout(LaunchConfig& c) const;
  /// The seconds value of option `dest` (>= 0, finite), else `def`; Bad() otherwise.
  double Seconds(const std::string& dest, double def) const;
  void ResolveLogLevel(LaunchConfig& c) const;

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

}  // namespace tzrun::cli::detail
