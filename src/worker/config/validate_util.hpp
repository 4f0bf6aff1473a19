// Internal helpers of the config validation units.
#pragma once

#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec::config_internal {

inline void Require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

inline std::string Suggest(const std::string& name, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  return " (did you mean '" + tzrun::base::ClosestName(name, names) + "'?)";
}

void ValidateModel(const PipelineConfig& config);
// tzrec.protos.MLP at `path` (validate_model.cpp); need_units: hidden_units must not be empty.
void ValidateMlp(const protos::MLP& mlp, const std::string& path, bool need_units);
// The model rules of mask_net, wukong and xdeepfm (validate_rank_mask.cpp); no-op for others.
void ValidateRankMaskModels(const PipelineConfig& config);
void ValidateFeatures(const PipelineConfig& config);

}  // namespace tzrec::config_internal
