// Internal: the option table of tzrun's launcher CLI (torchrun 2.11 + extensions)
// and the argparse-shaped usage/help rendering.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace tzrun::cli::detail {

enum class Arity {
  kFlag,     ///< nargs=0 (store_true / check_env)
  kValue,    ///< exactly one value
  kHelp,     ///< -h/--help: print help, exit 0
  kVersion,  ///< -V/--version: print version, exit 0
};

enum class ValueType { kString, kInt, kFloat };

struct OptionSpec {
  std::vector<std::string> strings;  ///< option strings in display order ("-r", "--redirects")
  std::string dest;                  ///< argparse destination, e.g. "nproc_per_node"
  Arity arity = Arity::kValue;
  ValueType type = ValueType::kString;
  bool pet = true;                     ///< has a PET_<DEST> fallback
  bool extension = false;              ///< tzrun-only (not in torchrun 2.11)
  std::vector<std::string> choices{};  ///< validated at parse time when non-empty
  std::string help;

  [[nodiscard]] std::string PetName() const;  ///< "PET_" + upper(dest)
  [[nodiscard]] std::string Metavar() const;  ///< upper(dest) or "{a,b,c}"
  [[nodiscard]] std::string Display() const;  ///< "--nproc-per-node/--nproc_per_node"
};

/// All options, torchrun's first (in torchrun's order), then the extensions.
std::span<const OptionSpec> Options();

/// argparse usage block ("usage: tzrun [-h] ...\n") for `width` = COLUMNS - 2.
std::string UsageText(int width);

/// Complete --help text.
std::string RenderHelp(int width);

}  // namespace tzrun::cli::detail
