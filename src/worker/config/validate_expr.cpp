// Validation of expr_feature (include/tzrec/config/config.hpp, expr.hpp): the expression is parsed
// at load, so that a part of the language tzrec_train does not implement is refused by name before
// any data is read, and every field's combination is checked.
#include <cctype>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/config/expr.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

bool IsNumber(const std::string& text) {
  try {
    std::size_t used = 0;
    (void)std::stod(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool IsName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) return false;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> ExprVariableNames(const protos::ExprFeature& f, const std::string& path) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (int i = 0; i < f.variables_size(); ++i) {
    const std::string& v = f.variables(i);
    const std::string name = v.substr(v.rfind(':') == std::string::npos ? 0 : v.rfind(':') + 1);
    const std::string where = path + ".variables[" + std::to_string(i) + "]: \"" + v + "\"";
    Require(IsName(name), where + ": '" + name +
                              "' is not a name the expression can use (letters, digits and _, "
                              "not starting with a digit); rename the column");
    Require(name != "_pi" && name != "_e",
            where + ": '" + name + "' is a constant of the expression language; rename the column");
    Require(seen.insert(name).second, where + ": '" + name + "' is listed twice; list it once");
    names.push_back(name);
  }
  return names;
}

void ValidateExpr(const protos::ExprFeature& f, const std::string& path, bool runs_fg) {
  const bool sparse = f.boundaries_size() > 0;
  for (int i = 1; i < f.boundaries_size(); ++i) {
    Require(f.boundaries(i) > f.boundaries(i - 1),
            path + ".boundaries: must be strictly increasing, but [" + std::to_string(i - 1) +
                "] and [" + std::to_string(i) + "] are not");
  }
  if (sparse) {
    Require(f.embedding_dim() > 0,
            path + ".embedding_dim: must be > 0 (the width of the table of boundaries)");
  } else {
    Require(f.embedding_dim() == 0,
            path + ".embedding_dim: " + std::to_string(f.embedding_dim()) +
                " on a numeric (dense) expr_feature, which has no table: add boundaries or "
                "remove embedding_dim");
    Require(f.value_dim() <= 1,
            path + ".value_dim: " + std::to_string(f.value_dim()) +
                "; a dense expr_feature gives one value (value_dim 0 or 1); add boundaries for "
                "one id per value, or remove value_dim");
  }
  Require(f.pooling() == "sum" || f.pooling() == "mean",
          path + ".pooling: \"" + f.pooling() + "\"; use \"sum\" or \"mean\"");
  if (!runs_fg) return;
  Require(!f.separator().empty(), path + ".separator: empty; give the multi-value separator");
  Require(IsNumber(f.default_value()) || (sparse && f.default_value().empty()),
          path + ".default_value: \"" + f.default_value() +
              "\" is not a number (the value when an input is missing); give a number such as "
              "\"0\"" +
              (sparse ? std::string(", or \"\" for no id") : std::string()));
  Require(f.variables_size() > 0,
          path + ".variables: empty; list the expression's inputs, e.g. [\"user:age\"]");
  std::vector<std::string> names = ExprVariableNames(f, path);
  try {
    Expression(f.expression(), std::move(names));
  } catch (const ConfigError& error) {
    throw ConfigError(path + ".expression: " + error.what());
  }
}

}  // namespace tzrec::config_internal
