// ValidateMlpOptions (see src/worker/train/mlp.hpp); the activation string is parsed by
// ParseMlpActivation (src/worker/config/mlp_activation.cpp), shared with the config validation.
#include <string>
#include <vector>

#include "mlp.hpp"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

std::string Num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

void ValidateMlpOptions(const MlpOptions& o, const std::string& path) {
  const std::size_t n = o.hidden_units.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (o.hidden_units[i] < 1)
      throw ConfigError(path + ".hidden_units[" + std::to_string(i) + "]: must be >= 1, got " +
                        std::to_string(o.hidden_units[i]) + "; give each layer's output width");
  }
  const std::size_t d = o.dropout_ratio.size();
  if (d > 1 && d != n)
    throw ConfigError(path + ".dropout_ratio: has " + std::to_string(d) + " values but " +
                      "hidden_units has " + std::to_string(n) +
                      " layers; give none, one for every layer, or one per layer");
  for (std::size_t i = 0; i < d; ++i) {
    const double p = o.dropout_ratio[i];
    if (!(p >= 0 && p < 1))
      throw ConfigError(path + ".dropout_ratio[" + std::to_string(i) +
                        "]: must be in [0, 1), got " + Num(p));
  }
  if (o.use_bn && o.use_ln)
    throw ConfigError(path + ".use_bn and " + path +
                      ".use_ln: both true; TorchEasyRec's Perceptron allows one norm per layer, "
                      "set one of them to false");
  ValidateMlpActivation(o.activation, o.hidden_units, path);
}

}  // namespace tzrec
