// ParseMlpActivation and the accepted activation names (include/tzrec/config/mlp_activation.hpp).
// The accepted strings follow TorchEasyRec's create_activation (tzrec/modules/activation.py):
// "Dice", or a torch.nn class path ("nn.X" or "torch.nn.X") with keyword arguments
// "nn.X(k=v, ...)". Plain C++: the config validation and src/worker/train/mlp.cpp both use it.
#include "tzrec/config/mlp_activation.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "tzrec/error.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

using Kind = MlpActivation::Kind;
namespace base = tzrun::base;

enum class ArgType { kBool, kNumber, kPositiveInt, kApproximate };
struct ArgSpec {
  const char* name;
  ArgType type;
};
struct ActivationSpec {
  const char* name;
  Kind kind;
  std::vector<ArgSpec> args;
};

// Data table: every activation implemented, with the torch.nn constructor arguments that change
// its result ("inplace" is accepted and has no effect on the values).
const std::vector<ActivationSpec>& Specs() {
  static const std::vector<ActivationSpec> kSpecs = {
      {"nn.ReLU", Kind::kReLU, {{"inplace", ArgType::kBool}}},
      {"nn.ReLU6", Kind::kReLU6, {{"inplace", ArgType::kBool}}},
      {"nn.LeakyReLU",
       Kind::kLeakyReLU,
       {{"negative_slope", ArgType::kNumber}, {"inplace", ArgType::kBool}}},
      {"nn.ELU", Kind::kELU, {{"alpha", ArgType::kNumber}, {"inplace", ArgType::kBool}}},
      {"nn.SELU", Kind::kSELU, {{"inplace", ArgType::kBool}}},
      {"nn.GELU", Kind::kGELU, {{"approximate", ArgType::kApproximate}}},
      {"nn.Sigmoid", Kind::kSigmoid, {}},
      {"nn.Tanh", Kind::kTanh, {}},
      {"nn.SiLU", Kind::kSiLU, {{"inplace", ArgType::kBool}}},
      {"nn.Mish", Kind::kMish, {{"inplace", ArgType::kBool}}},
      {"nn.Softplus",
       Kind::kSoftplus,
       {{"beta", ArgType::kNumber}, {"threshold", ArgType::kNumber}}},
      {"nn.PReLU",
       Kind::kPReLU,
       {{"num_parameters", ArgType::kPositiveInt}, {"init", ArgType::kNumber}}},
      {"nn.Identity", Kind::kIdentity, {}},
      {"nn.Hardswish", Kind::kHardswish, {{"inplace", ArgType::kBool}}},
      {"nn.Hardsigmoid", Kind::kHardsigmoid, {{"inplace", ArgType::kBool}}},
      {"nn.Hardtanh",
       Kind::kHardtanh,
       {{"min_val", ArgType::kNumber}, {"max_val", ArgType::kNumber}, {"inplace", ArgType::kBool}}},
      {"nn.Softsign", Kind::kSoftsign, {}},
      {"nn.Tanhshrink", Kind::kTanhshrink, {}},
      {"nn.CELU", Kind::kCELU, {{"alpha", ArgType::kNumber}, {"inplace", ArgType::kBool}}},
      {"nn.LogSigmoid", Kind::kLogSigmoid, {}},
      {"Dice", Kind::kDice, {}},
  };
  return kSpecs;
}

std::string Accepted() {
  return "accepted: " + base::QuotedList(MlpActivationNames()) +
         " (\"nn.X\" may be written \"torch.nn.X\"; keyword arguments in parentheses, e.g. "
         "'nn.LeakyReLU(negative_slope=0.1)'), or '' for none";
}

const ActivationSpec& FindSpec(const std::string& name, const std::string& text,
                               const std::string& field) {
  std::string key = name;
  if (key.rfind("torch.nn.", 0) == 0) key = key.substr(6);
  for (const auto& spec : Specs()) {
    if (key == spec.name) return spec;
  }
  throw ConfigError(field + ": unknown activation '" + text + "'; did you mean '" +
                    base::ClosestName(key, MlpActivationNames()) + "'? " + Accepted());
}

// Python-literal value of one keyword argument.
void ApplyArg(const ArgSpec& arg, const std::string& value, const std::string& where,
              MlpActivation& act) {
  const std::string bad = where + "=" + value + ": ";
  if (arg.type == ArgType::kBool) {
    if (value != "True" && value != "False") throw ConfigError(bad + "write True or False");
    return;  // inplace: no effect on the values
  }
  if (arg.type == ArgType::kApproximate) {
    if (value != "'none'" && value != "'tanh'" && value != "\"none\"" && value != "\"tanh\"")
      throw ConfigError(bad + "write 'none' or 'tanh'");
    act.tanh_approximate = value.find("tanh") != std::string::npos;
    return;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || errno != 0 || v != v)
    throw ConfigError(bad + "not a number");
  const std::string name = arg.name;
  if (arg.type == ArgType::kPositiveInt) {
    if (v < 1 || v != static_cast<double>(static_cast<std::int64_t>(v)) ||
        value.find_first_of(".eE") != std::string::npos)
      throw ConfigError(bad + "must be an integer >= 1");
    act.num_parameters = static_cast<std::int64_t>(v);
  } else if (name == "threshold" || name == "max_val") {
    act.b = v;
  } else {
    act.a = v;  // negative_slope, alpha, beta, init, min_val
  }
}

void ApplyArgs(const ActivationSpec& spec, const std::string& args, const std::string& text,
               const std::string& field, MlpActivation& act) {
  if (base::Strip(args).empty()) return;
  for (const auto& kv : base::Split(args, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw ConfigError(field + ": '" + text + "': argument '" + base::Strip(kv) +
                        "' is not key=value; write e.g. 'nn.LeakyReLU(negative_slope=0.1)'");
    const std::string key = base::Strip(kv.substr(0, eq));
    const std::string value = base::Strip(kv.substr(eq + 1));
    const ArgSpec* found = nullptr;
    std::vector<std::string> names;
    for (const auto& a : spec.args) {
      names.emplace_back(a.name);
      if (key == a.name) found = &a;
    }
    if (found == nullptr)
      throw ConfigError(
          field + ": '" + text + "': unknown argument '" + key + "' of " + spec.name +
          "; accepted: " + (names.empty() ? std::string("none") : base::QuotedList(names)));
    ApplyArg(*found, value, field + ": '" + text + "': " + key, act);
  }
}

}  // namespace

const std::vector<std::string>& MlpActivationNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> out;
    for (const auto& s : Specs()) out.emplace_back(s.name);
    return out;
  }();
  return kNames;
}

MlpActivation ParseMlpActivation(const std::string& text, const std::string& field) {
  MlpActivation act;
  if (text.empty()) return act;  // upstream Perceptron: no activation module
  const std::string s = base::Strip(text);
  const auto open = s.find('(');
  std::string name = base::Strip(s.substr(0, open));
  std::string args;
  if (open != std::string::npos) {
    if (s.back() != ')')
      throw ConfigError(field + ": '" + text + "': missing ')' after the arguments");
    args = s.substr(open + 1, s.size() - open - 2);
  }
  const ActivationSpec& spec = FindSpec(name, text, field);
  if (spec.kind == Kind::kDice && open != std::string::npos)
    throw ConfigError(field + ": '" + text + "': Dice takes no arguments; write 'Dice'");
  act.kind = spec.kind;
  if (spec.kind == Kind::kLeakyReLU) act.a = 0.01;
  if (spec.kind == Kind::kELU || spec.kind == Kind::kSoftplus || spec.kind == Kind::kCELU)
    act.a = 1.0;
  if (spec.kind == Kind::kHardtanh) act.a = -1.0, act.b = 1.0;
  if (spec.kind == Kind::kSoftplus) act.b = 20.0;
  if (spec.kind == Kind::kPReLU) act.a = 0.25;
  ApplyArgs(spec, args, text, field, act);
  if (spec.kind == Kind::kHardtanh && !(act.b > act.a))
    throw ConfigError(field + ": '" + text + "': max_val must be greater than min_val");
  if (spec.kind == Kind::kCELU && act.a == 0)
    throw ConfigError(field + ": '" + text + "': alpha must not be 0 (CELU divides by it)");
  return act;
}

void ValidateMlpActivation(const std::string& activation,
                           const std::vector<std::int64_t>& hidden_units, const std::string& path) {
  const MlpActivation act = ParseMlpActivation(activation, path + ".activation");
  if (act.kind != MlpActivation::Kind::kPReLU || act.num_parameters == 1) return;
  for (std::size_t i = 0; i < hidden_units.size(); ++i) {
    if (hidden_units[i] != act.num_parameters)
      throw ConfigError(path + ".activation: '" + activation + "': num_parameters " +
                        std::to_string(act.num_parameters) +
                        " must be 1 or the width of "
                        "every layer, but hidden_units[" +
                        std::to_string(i) + "] is " + std::to_string(hidden_units[i]));
  }
}

}  // namespace tzrec
