// Unknown, no-effect and refused flags of tzrec_train's commands (src/worker/app/flags.hpp).
// Reference: alibaba/TorchEasyRec tzrec/train_eval.py, eval.py, export.py, predict.py (argparse
// parse_known_args; the flag names and defaults each command declares).
#include "flags.hpp"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <utility>

#include "tzrec/error.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

// "--Model-Dir=x" -> "model_dir".
std::string Normalized(const std::string& argument) {
  std::string name = argument.substr(0, argument.find('='));
  const std::size_t start = name.find_first_not_of('-');
  name = start == std::string::npos ? "" : name.substr(start);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return tzrun::base::Lower(name);
}

}  // namespace

std::string MisspeltFlag(const std::string& argument, const std::vector<std::string>& known) {
  if (argument.rfind("--", 0) != 0) return "";
  const std::string name = Normalized(argument);
  if (name.empty()) return "";
  std::size_t best_distance = std::string::npos;
  std::string best;
  for (const std::string& flag : known) {
    const std::string normal = Normalized(flag);
    if (name.size() >= 3 && normal.size() > name.size() && normal.rfind(name, 0) == 0) {
      return flag;  // an abbreviation argparse would have accepted
    }
    const std::size_t limit = normal.size() <= 5 ? 1 : 2;
    const std::size_t distance = tzrun::base::EditDistance(name, normal);
    if (distance <= limit && distance < best_distance) {
      best_distance = distance;
      best = flag;
    }
  }
  return best;
}

std::vector<std::string> UnknownArguments(const std::vector<std::string>& remaining,
                                          const std::vector<std::string>& known) {
  for (const std::string& argument : remaining) {
    const std::string flag = MisspeltFlag(argument, known);
    if (!flag.empty()) {
      throw ConfigError("unknown flag '" + argument.substr(0, argument.find('=')) +
                        "'; did you mean '--" + flag + "'? (run with --help for the flags)");
    }
  }
  return remaining;
}

std::string IgnoredArgumentsWarning(const std::string& command,
                                    const std::vector<std::string>& ignored) {
  return "tzrec_train " + command + ": warning: ignoring unknown argument(s) " +
         tzrun::base::QuotedList(ignored) +
         " (TorchEasyRec's scripts ignore them too: argparse parse_known_args)";
}

bool IsRankZero() {
  const char* rank = std::getenv("RANK");
  return rank == nullptr || std::string(rank) == "0" || std::string(rank).empty();
}

CommandFlags::CommandFlags(CLI::App& app, std::string command)
    : app_(app), command_(std::move(command)) {
  app_.allow_extras();
}

void CommandFlags::NoEffect(const std::string& name, bool takes_value, const std::string& why) {
  Declare(name, takes_value, why, /*refused=*/false);
}

void CommandFlags::Refused(const std::string& name, bool takes_value, const std::string& why) {
  Declare(name, takes_value, why, /*refused=*/true);
}

void CommandFlags::Declare(const std::string& name, bool takes_value, const std::string& why,
                           bool refused) {
  auto d = std::make_unique<Declared>();
  d->name = name;
  d->why = why;
  d->refused = refused;
  const std::string help = std::string("TorchEasyRec flag, ") +
                           (refused ? "refused: " : "accepted without effect: ") + why;
  d->option = takes_value ? app_.add_option("--" + name, d->text, help)
                          : app_.add_flag("--" + name, d->given, help);
  declared_.push_back(std::move(d));
}

std::vector<std::string> CommandFlags::KnownNames() const {
  std::vector<std::string> names;
  for (const CLI::Option* option : app_.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back(name);
  }
  return names;
}

std::optional<int> CommandFlags::Parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // "--pipline_config_path x" leaves the required flag unset: name the misspelling instead.
    UnknownArguments(app_.remaining(), KnownNames());
    return app_.exit(e) == 0 ? 0 : 2;
  } catch (const CLI::ParseError& e) {
    return app_.exit(e) == 0 ? 0 : 2;
  }
  const std::vector<std::string> ignored = UnknownArguments(app_.remaining(), KnownNames());
  for (const auto& d : declared_) {
    if (d->option->count() == 0) continue;
    if (d->refused) {
      throw ConfigError("--" + d->name + " is a TorchEasyRec flag that tzrec_train does not " +
                        "support: " + d->why);
    }
    if (IsRankZero()) {
      std::cerr << "tzrec_train " << command_ << ": warning: --" << d->name
                << " has no effect in tzrec_train: " << d->why << std::endl;
    }
  }
  if (!ignored.empty() && IsRankZero()) {
    std::cerr << IgnoredArgumentsWarning(command_, ignored) << std::endl;
  }
  return std::nullopt;
}

}  // namespace tzrec
