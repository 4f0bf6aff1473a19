// tzrec/config/mlp_activation.hpp — the activation of TorchEasyRec's MLP (tzrec.protos.MLP
// activation; tzrec/modules/activation.py create_activation and Dice), parsed without libtorch so
// the config validation (src/worker/config/validate_model.cpp) refuses a bad string before
// training starts and src/worker/train/mlp.cpp builds the same thing.
//
// Accepted: "" (no activation), "Dice", and the torch.nn classes of MlpActivationNames() written
// "nn.X" or "torch.nn.X", with keyword arguments in parentheses ("nn.LeakyReLU(negative_slope=
// 0.1)"; Python literals: True/False, numbers, 'none'/'tanh'). Errors: ConfigError naming `field`,
// the text and the accepted names or arguments. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tzrec {

struct MlpActivation {
  enum class Kind {
    kNone,
    kReLU,
    kReLU6,
    kLeakyReLU,
    kELU,
    kSELU,
    kGELU,
    kSigmoid,
    kTanh,
    kSiLU,
    kMish,
    kSoftplus,
    kPReLU,
    kIdentity,
    kHardswish,
    kHardsigmoid,
    kHardtanh,
    kSoftsign,
    kTanhshrink,
    kCELU,
    kLogSigmoid,
    kDice
  };
  Kind kind = Kind::kNone;
  double a = 0;                     // negative_slope / alpha / beta / init / min_val
  double b = 0;                     // Softplus threshold / Hardtanh max_val
  bool tanh_approximate = false;    // GELU(approximate='tanh')
  std::int64_t num_parameters = 1;  // PReLU
};

// The accepted class names ("nn.ReLU", ..., "Dice").
const std::vector<std::string>& MlpActivationNames();

// Parses `text` with torch's defaults for absent arguments; ConfigError naming `field` (e.g.
// "model_config.dlrm.final.activation").
MlpActivation ParseMlpActivation(const std::string& text, const std::string& field);

// ParseMlpActivation(activation, path + ".activation"), and a PReLU num_parameters that is
// neither 1 nor every layer's width is refused.
void ValidateMlpActivation(const std::string& activation,
                           const std::vector<std::int64_t>& hidden_units, const std::string& path);

}  // namespace tzrec
