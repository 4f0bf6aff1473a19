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
// tzrec.protos.MLP's rules (validate_model.cpp); need_units: hidden_units must be non-empty.
void ValidateMlp(const protos::MLP& mlp, const std::string& path, bool need_units);
// wide_and_deep, dcn_v1, dcn_v2 (validate_rank_cross.cpp); groups are checked before.
void ValidateRankCross(const PipelineConfig& config);
// simple_multi_task / mmoe / dbmtl (validate_multi_task.cpp).
void ValidateMultiTask(const PipelineConfig& config);
// The model rules of mask_net, wukong and xdeepfm (validate_rank_mask.cpp); no-op for others.
void ValidateRankMaskModels(const PipelineConfig& config);
void ValidateFeatures(const PipelineConfig& config);
// lookup_feature / match_feature rules (validate_kv.cpp); `path` names the feature config.
void ValidateLookup(const protos::LookupFeature& f, const std::string& path, bool runs_fg);
void ValidateMatch(const protos::MatchFeature& f, const std::string& path, bool runs_fg);
// expr_feature rules (validate_expr.cpp): the expression is parsed (expr.hpp).
void ValidateExpr(const protos::ExprFeature& f, const std::string& path, bool runs_fg);
// The names an expr_feature's expression uses for its variables (after "side:"), checked.
std::vector<std::string> ExprVariableNames(const protos::ExprFeature& f, const std::string& path);

}  // namespace tzrec::config_internal
