// src/worker/app/flags.hpp — how tzrec_train's commands treat the arguments they do not define
// (private to tzrec_train and its tests; target tzrec::app_flags, plain C++ without libtorch).
//
// TorchEasyRec's scripts (tzrec/train_eval.py, eval.py, export.py, predict.py) parse their flags
// with argparse's parse_known_args and drop the unknown ones silently, so a TorchEasyRec launch
// line with extra flags runs. tzrec_train accepts them too, with one warning line naming them,
// but a misspelt flag of the command is an error, since running without it would silently do
// something else. An unknown argument is a misspelling when its name (leading dashes dropped,
// '-' read as '_', case ignored) is
//   - a prefix (3 characters or more) of one of the command's flags: argparse would have taken
//     the abbreviation as that flag, tzrec_train does not guess; or
//   - within edit distance 2 of one of the command's flags (1 for flags of 5 characters or less);
// it is then a ConfigError "unknown flag '--modle_dir'; did you mean '--model_dir'?". Every other
// argument no flag took (an unknown flag, its value, a stray positional) is ignored with the
// warning "tzrec_train <command>: warning: ignoring unknown argument(s) '--foo', 'bar' (...)".
//
// TorchEasyRec flags whose behaviour does not exist in tzrec_train are declared too, never
// silently dropped: a flag with no effect on the results (e.g. predict --predict_threads) is
// accepted with a warning saying so, a flag whose behaviour is missing (e.g. train_eval
// --ignore_restore_lr_scheduler) is a ConfigError naming it.
// Warnings go to stderr on rank 0 only (RANK unset or 0). Thread-safety: one thread.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tzrec {

// The flag of `known` (names without dashes) that `argument` misspells by the rule above, or ""
// when it is no misspelling. Pure.
std::string MisspeltFlag(const std::string& argument, const std::vector<std::string>& known);

// The arguments of `remaining` (what no flag of the command took) to ignore; throws ConfigError
// for the first misspelling of a flag of `known`. Pure.
std::vector<std::string> UnknownArguments(const std::vector<std::string>& remaining,
                                          const std::vector<std::string>& known);

// "tzrec_train <command>: warning: ignoring unknown argument(s) '--a', 'b' (TorchEasyRec's scripts
// ignore them too: argparse parse_known_args)". Pure.
std::string IgnoredArgumentsWarning(const std::string& command,
                                    const std::vector<std::string>& ignored);

// A command's CLI11 parser with the rules above.
class CommandFlags {
 public:
  CommandFlags(CLI::App& app, std::string command);

  // A TorchEasyRec flag with no effect on the results: accepted, with a warning "<why>" when given.
  void NoEffect(const std::string& name, bool takes_value, const std::string& why);
  // A TorchEasyRec flag tzrec_train does not implement: a ConfigError "<name>: <why>" when given.
  void Refused(const std::string& name, bool takes_value, const std::string& why);

  // Parses argv (argv[0] is the command name). Returns the exit code to return at once (0 after
  // --help, 2 after a CLI11 usage error it printed), or nullopt to run the command. Throws
  // ConfigError for a misspelt or refused flag. Prints the warnings (rank 0).
  std::optional<int> Parse(int argc, char** argv);

  // The names (no dashes) of every long flag of the command.
  std::vector<std::string> KnownNames() const;

 private:
  struct Declared {
    std::string name;
    std::string why;
    bool refused = false;
    std::string text;    // a flag taking a value stores it here
    bool given = false;  // a switch stores here
    CLI::Option* option = nullptr;
  };
  void Declare(const std::string& name, bool takes_value, const std::string& why, bool refused);

  CLI::App& app_;
  std::string command_;
  std::vector<std::unique_ptr<Declared>> declared_;
};

// True when this process prints the launch's warnings: RANK unset or "0".
bool IsRankZero();

}  // namespace tzrec
