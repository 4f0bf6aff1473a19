// tzrun/cli/cli.hpp — the launcher's command line (torchrun 2.11 parity).
//
// parse() turns argv (without argv[0]) plus the process environment into a
// validated tzrun::LaunchConfig, reproducing the argparse behaviour of
// torch/distributed/run.py (get_args_parser, config_from_args, run) and
// torch/distributed/argparse_util.py (the `env` / `check_env` actions):
//
//   * `--opt value`, `--opt=value`, `-r 3`, `-r3`, `-r=3`, clustered short flags
//     (`-mt3`), dash and underscore spellings, unique-prefix abbreviations of
//     long options (argparse allow_abbrev; an ambiguous prefix is an error that
//     lists the candidates), last occurrence wins;
//   * options must precede the training script; everything after it is passed
//     to the worker verbatim (argparse REMAINDER). Like Python 3.11 argparse,
//     one `--` before the script or directly after it is dropped;
//   * `PET_<DEST>` environment fallback: flag > PET_ env > built-in default.
//     No PET_ fallback for --logs-specs and --numa-binding (as upstream).
//
// Differences from torchrun (all documented in docs/launcher.md, "Flags"):
// semantic errors that torchrun raises as Python exceptions (exit 1) are
// UsageErrors here (exit 2); tokens after the script are never inspected
// (torchrun rejects `torchrun train.py --n 3` as an ambiguous option); empty
// PET_ values of value options mean "unset"; -r/-t maps accept multi-digit
// local ranks; see docs for the full list.
//
// Thread-safety: parse() and the helpers are reentrant; they only read the
// filesystem (/proc, /dev, /sys) and never modify global state.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrun/error.hpp"
#include "tzrun/launch_config.hpp"
#include "tzrun/platform/platform.hpp"

namespace tzrun::cli {

/// A bad command line or PET_ value. ExitCode() is ExitCode::kUsage (2), as
/// argparse's `parser.error`. what() is the complete argparse-shaped text to
/// print on stderr: the usage block, then `tzrun: error: <message>`;
/// message() is just the one-line reason, which names the flag (or the PET_
/// variable), the bad value and how to fix it.
class UsageError : public tzrun::Error {
 public:
  UsageError(const std::string& message, const std::string& usage);
  [[nodiscard]] const std::string& Message() const noexcept { return message_; }

 private:
  std::string message_;
};

struct ParseOutcome {
  enum class Kind { kRun, kHelp, kVersion };
  Kind kind = Kind::kRun;
  std::string text;     ///< kHelp/kVersion: text for stdout, ends with '\n'
  LaunchConfig config;  ///< kRun: the validated configuration
  /// Non-fatal remarks torchrun logs as warnings (e.g. --master-addr given with a
  /// non-static backend). The caller prints them at warning level.
  std::vector<std::string> warnings;
  /// kRun: the cluster platform found in the environment (--platform) and the
  /// defaults it supplied; they sit below flags and PET_* (see platform.hpp).
  platform::Detection platform;
};

/// How the host is probed when resolving --nproc-per-node cpu|gpu|auto.
/// Tests inject a fake sysroot (containing proc/driver/nvidia/gpus/<id>/ or
/// dev/nvidia<N>) and a fixed CPU count.
struct HostProbe {
  std::filesystem::path sysroot = "/";
  int cpu_count = 0;  ///< 0 => CountCpus()
};

/// Parses `args` (argv without argv[0]) with PET_* / LOGLEVEL /
/// TORCH_ELASTIC_SHUTDOWN_TIMEOUT / CUDA_VISIBLE_DEVICES / COLUMNS read from `env`.
/// Throws UsageError for every invalid input; never exits the process.
ParseOutcome Parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env);
ParseOutcome Parse(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, const HostProbe& host);

/// Number of NVIDIA GPUs visible to workers, without any CUDA library:
/// physical = entries of <sysroot>/proc/driver/nvidia/gpus/ (fallback: files
/// <sysroot>/dev/nvidia<N>). CUDA_VISIBLE_DEVICES in `env`:
///   unset => physical; "" , "-1" or "NoDevFiles" => 0; otherwise the list is
///   read like the CUDA runtime does: entries up to the first invalid one
///   (an int outside [0, physical), a repeated int, or a token that is neither an
///   int nor a GPU-/MIG- UUID) are counted, and the result is capped at physical.
int CountGpus(const std::map<std::string, std::string>& env);
int CountGpus(const std::map<std::string, std::string>& env, const std::filesystem::path& sysroot);

/// CPUs this process may run on (sched_getaffinity), else online CPUs; >= 1.
int CountCpus();

/// `-r/--redirects`, `-t/--tee` syntax: "0".."3" or "<local_rank>:<0-3>,..."
/// (multi-digit ranks allowed). Throws std::invalid_argument with the reason.
StdSpec ParseStdSpec(const std::string& text);

/// torch/distributed/elastic/rendezvous/utils.py::_parse_rendezvous_config:
/// "k1=v1,k2=v2": split on ',', then on the first '='; key and value stripped;
/// empty key or value => std::invalid_argument. Empty/blank input => {}.
std::map<std::string, std::string> ParseRdzvConf(const std::string& text);

/// The full `--help` text for a terminal of `columns` columns (argparse uses
/// $COLUMNS, default 80).
std::string HelpText(int columns = 80);

/// "tzrun <PROJECT_VERSION> (torchrun 2.11 compatible)".
std::string VersionString();

}  // namespace tzrun::cli
