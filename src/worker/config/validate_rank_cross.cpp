// Validation of the rank models wide_and_deep, dcn_v1 and dcn_v2 (TorchEasyRec
// tzrec/models/wide_and_deep.py, dcn.py, dcn_v2.py; messages WideAndDeep, DCNV1, DCNV2 of
// tzrec/protos/models/rank_model.proto, Cross/CrossV2 of module.proto). Called from
// validate_model.cpp after the groups' own checks (names unique, features defined). Upstream's
// `required` fields are required here too; a group the model would not read is refused.
#include <string>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

const protos::FeatureGroupConfig* FindGroup(const protos::ModelConfig& model,
                                            const std::string& name) {
  for (const auto& g : model.feature_groups()) {
    if (g.group_name() == name) return &g;
  }
  return nullptr;
}

bool IsSparseFeature(const PipelineConfig& config, const std::string& name) {
  for (const auto& f : config.feature_configs()) {
    if (FeatureName(f) == name) return IsSparse(f);
  }
  return false;
}

void RequireMlp(bool has, const protos::MLP& mlp, const std::string& path) {
  Require(has, path + ": not set; TorchEasyRec requires it (e.g. " +
                   path.substr(path.rfind('.') + 1) + " { hidden_units: [64, 32] })");
  ValidateMlp(mlp, path, true);
}

// TorchEasyRec's wide_and_deep.py: WIDE group "wide" (summed wide embeddings), DEEP group "deep".
void WideAndDeep(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  const protos::WideAndDeep& wd = model.wide_and_deep();
  const std::string path = "model_config.wide_and_deep";
  const auto* wide = FindGroup(model, "wide");
  Require(wide != nullptr, path +
                               ": feature group \"wide\" is not defined; add a group "
                               "\"wide\" with group_type: WIDE (its features' wide embeddings "
                               "are summed into the logit)");
  Require(wide->group_type() == protos::WIDE,
          path + ": group \"wide\" has group_type " +
              protos::FeatureGroupType_Name(wide->group_type()) + "; set group_type: WIDE");
  for (const std::string& name : wide->feature_names()) {
    Require(IsSparseFeature(config, name),
            path + ": group \"wide\" holds '" + name +
                "', a dense raw feature; the wide part embeds sparse features only: remove it "
                "from \"wide\"");
  }
  const auto* deep = FindGroup(model, "deep");
  Require(deep != nullptr, path +
                               ": feature group \"deep\" is not defined; add a group \"deep\" "
                               "(group_type: DEEP) for the deep MLP");
  Require(deep->group_type() == protos::DEEP,
          path + ": group \"deep\" has group_type WIDE; set group_type: DEEP");
  for (const auto& g : model.feature_groups()) {
    Require(g.group_name() == "wide" || g.group_name() == "deep",
            path + ": group '" + g.group_name() +
                "' is not read by WideAndDeep (it reads \"wide\" and \"deep\"); move its "
                "features into one of them or remove it");
  }
  Require(wd.wide_embedding_dim() > 0, path + ".wide_embedding_dim: must be > 0, got 0");
  RequireMlp(wd.has_deep(), wd.deep(), path + ".deep");
  if (wd.has_final()) ValidateMlp(wd.final(), path + ".final", true);
}

// DCN v1 / v2 read the first feature group only (upstream: embedding_group.group_names()[0]).
void OneDeepGroup(const protos::ModelConfig& model, const std::string& path) {
  const auto& first = model.feature_groups(0);
  Require(model.feature_groups_size() == 1,
          path + ": " + std::to_string(model.feature_groups_size()) +
              " feature groups, but the model reads only the first ('" + first.group_name() +
              "'); put every feature into one group");
  Require(first.group_type() == protos::DEEP,
          path + ": group '" + first.group_name() + "' has group_type " +
              protos::FeatureGroupType_Name(first.group_type()) + "; set group_type: DEEP");
}

void RequireCrossNum(std::uint32_t cross_num, const std::string& path) {
  Require(cross_num > 0, path + ".cross_num: must be > 0, got 0 (the number of cross layers)");
}

void DcnV1(const protos::ModelConfig& model) {
  const protos::DCNV1& dcn = model.dcn_v1();
  const std::string path = "model_config.dcn_v1";
  OneDeepGroup(model, path);
  Require(dcn.has_cross(), path +
                               ".cross: not set; TorchEasyRec requires it (e.g. cross { "
                               "cross_num: 3 })");
  RequireCrossNum(dcn.cross().cross_num(), path + ".cross");
  RequireMlp(dcn.has_deep(), dcn.deep(), path + ".deep");
  RequireMlp(dcn.has_final(), dcn.final(), path + ".final");
}

void DcnV2(const protos::ModelConfig& model) {
  const protos::DCNV2& dcn = model.dcn_v2();
  const std::string path = "model_config.dcn_v2";
  OneDeepGroup(model, path);
  if (dcn.has_backbone()) ValidateMlp(dcn.backbone(), path + ".backbone", true);
  Require(dcn.has_cross(), path +
                               ".cross: not set; TorchEasyRec requires it (e.g. cross { "
                               "cross_num: 3 low_rank: 32 })");
  RequireCrossNum(dcn.cross().cross_num(), path + ".cross");
  Require(dcn.cross().low_rank() > 0,
          path +
              ".cross.low_rank: must be > 0, got 0 (the rank of each layer's factorised "
              "matrix)");
  if (dcn.has_deep()) ValidateMlp(dcn.deep(), path + ".deep", true);
  RequireMlp(dcn.has_final(), dcn.final(), path + ".final");
}

}  // namespace

void ValidateRankCross(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  if (model.has_wide_and_deep()) WideAndDeep(config);
  if (model.has_dcn_v1()) DcnV1(model);
  if (model.has_dcn_v2()) DcnV2(model);
}

}  // namespace tzrec::config_internal
