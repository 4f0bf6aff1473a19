// Validation of the rank models mask_net, wukong and xdeepfm (include/tzrec/config/config.hpp),
// called from validate_model.cpp once the groups themselves are checked. The rules are the ones
// TorchEasyRec's constructors enforce (tzrec/models/masknet.py, wukong.py, xdeepfm.py;
// tzrec/modules/masknet.py, interaction.py), plus a refusal of every group or MLP the model would
// build but never read (nothing accepted and ignored).
#include <cstdint>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrun/base/strings.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

std::vector<std::string> GroupNames(const protos::ModelConfig& model) {
  std::vector<std::string> names;
  for (const auto& g : model.feature_groups()) names.push_back(g.group_name());
  return names;
}

const protos::FeatureGroupConfig* FindGroup(const protos::ModelConfig& model,
                                            const std::string& name) {
  for (const auto& g : model.feature_groups()) {
    if (g.group_name() == name) return &g;
  }
  return nullptr;
}

// Every group is one of `allowed`; the model reads no other.
void OnlyGroups(const protos::ModelConfig& model, const std::vector<std::string>& allowed,
                const std::string& path) {
  for (const auto& name : GroupNames(model)) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == name;
    Require(ok, path + ": feature group '" + name + "' is not read by the model (it reads " +
                    tzrun::base::Join(allowed, ", ") + "); remove the group or rename it");
  }
}

const protos::FeatureGroupConfig& NeedGroup(const protos::ModelConfig& model,
                                            const std::string& name, const std::string& path) {
  const protos::FeatureGroupConfig* g = FindGroup(model, name);
  Require(g != nullptr, path + ": needs a feature group '" + name +
                            "'; defined groups: " + tzrun::base::Join(GroupNames(model), ", "));
  return *g;
}

// Every group is DEEP: the model has no wide_embedding_dim for WIDE groups.
void DeepGroups(const protos::ModelConfig& model, const std::string& path) {
  for (const auto& g : model.feature_groups()) {
    Require(g.group_type() == protos::DEEP,
            path + ": group '" + g.group_name() + "' has group_type " +
                protos::FeatureGroupType_Name(g.group_type()) +
                "; this model reads DEEP groups only (set group_type: DEEP)");
  }
}

// A feature's width in its group: embedding_dim (sparse) or value_dim (dense).
std::int64_t Width(const PipelineConfig& config, const std::string& name) {
  const protos::FeatureConfig& f = Feature(config, name);
  return IsSparse(f) ? EmbeddingDim(f) : ValueDim(f);
}

void NeedMlp(bool has, const protos::MLP& mlp, const std::string& path) {
  Require(has, path + ": not set; give it hidden_units (TorchEasyRec requires it)");
  ValidateMlp(mlp, path, true);
}

std::int64_t LastUnit(const protos::MLP& mlp) {
  return mlp.hidden_units(mlp.hidden_units_size() - 1);
}

void MaskNet(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  const std::string path = "model_config.mask_net";
  Require(model.feature_groups_size() == 1,
          path + ": MaskNet reads one feature group (TorchEasyRec takes the first), but " +
              std::to_string(model.feature_groups_size()) + " are defined (" +
              tzrun::base::Join(GroupNames(model), ", ") + "); put its features in one group");
  DeepGroups(model, path);
  std::int64_t feature_dim = 0;
  for (const auto& name : model.feature_groups(0).feature_names())
    feature_dim += Width(config, name);
  const protos::MaskNet& mn = model.mask_net();
  const std::string mpath = path + ".mask_net_module";
  Require(mn.has_mask_net_module(), mpath + ": not set; give n_mask_blocks, mask_block, top_mlp");
  const protos::MaskNetModule& m = mn.mask_net_module();
  Require(m.n_mask_blocks() > 0,
          mpath + ".n_mask_blocks: must be > 0, got " + std::to_string(m.n_mask_blocks()));
  Require(m.has_mask_block(), mpath + ".mask_block: not set; give at least hidden_dim");
  const protos::MaskBlock& block = m.mask_block();
  const std::string bpath = mpath + ".mask_block";
  Require(block.hidden_dim() > 0,
          bpath + ".hidden_dim: must be > 0, got " + std::to_string(block.hidden_dim()));
  if (block.reduction_ratio() == 0.0F) {
    Require(block.aggregation_dim() > 0,
            bpath + ": reduction_ratio is 0 and aggregation_dim is 0; set one of them (> 0)");
  } else {
    Require(block.aggregation_dim() == 0,
            bpath + ".aggregation_dim: " + std::to_string(block.aggregation_dim()) +
                " has no effect while reduction_ratio is " +
                std::to_string(block.reduction_ratio()) +
                " (TorchEasyRec's reduction_ratio, default 1, wins); set reduction_ratio: 0 to "
                "use aggregation_dim, or remove aggregation_dim");
    // A block's aggregation dim is int(its input dim * ratio); serial blocks after the first
    // mask the previous block's output (hidden_dim wide).
    std::vector<std::int64_t> ins{feature_dim};
    if (!m.use_parallel() && m.n_mask_blocks() > 1) ins.push_back(block.hidden_dim());
    for (const std::int64_t in : ins) {
      const auto agg = static_cast<std::int64_t>(static_cast<double>(block.reduction_ratio()) * in);
      Require(agg > 0, bpath + ".reduction_ratio: " + std::to_string(block.reduction_ratio()) +
                           " gives an aggregation dim of int(" + std::to_string(in) +
                           " * ratio) = " + std::to_string(agg) +
                           "; it must be > 0 (raise the ratio, or set it to 0 and give "
                           "aggregation_dim)");
    }
  }
  NeedMlp(m.has_top_mlp(), m.top_mlp(), mpath + ".top_mlp");
}

void WuKong(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  const protos::WuKong& wk = model.wukong();
  const std::string path = "model_config.wukong";
  const bool one = model.feature_groups_size() == 1;
  if (!one) OnlyGroups(model, {"sparse", "dense"}, path);
  DeepGroups(model, path);
  const protos::FeatureGroupConfig& sparse =
      one ? model.feature_groups(0) : NeedGroup(model, "sparse", path);
  std::int64_t dim = 0;
  std::string first;
  for (const auto& name : sparse.feature_names()) {
    const std::int64_t d = Width(config, name);
    if (dim == 0) dim = d, first = name;
    Require(d == dim, path + ": WuKong reshapes group '" + sparse.group_name() +
                          "' to [B, N, d], so its features need one dim, but '" + first + "' has " +
                          std::to_string(dim) + " and '" + name + "' has " + std::to_string(d) +
                          "; give them one embedding_dim");
  }
  const bool has_dense = !one && FindGroup(model, "dense") != nullptr;
  if (has_dense) {
    NeedMlp(wk.has_dense_mlp(), wk.dense_mlp(), path + ".dense_mlp");
    Require(LastUnit(wk.dense_mlp()) == dim,
            path + ".dense_mlp.hidden_units: the last unit " +
                std::to_string(LastUnit(wk.dense_mlp())) + " must equal the sparse features' dim " +
                std::to_string(dim) +
                " (the dense output joins them as one more feature, as TorchEasyRec requires); "
                "set the last unit to " +
                std::to_string(dim));
  } else {
    Require(!wk.has_dense_mlp(),
            path +
                ".dense_mlp: set, but there is no feature group \"dense\" "
                "(beside \"sparse\") for it to read; add it or remove dense_mlp");
  }
  for (int i = 0; i < wk.wukong_layers_size(); ++i) {
    const protos::WuKongLayer& l = wk.wukong_layers(i);
    const std::string lpath = path + ".wukong_layers[" + std::to_string(i) + "]";
    Require(l.lcb_feature_num() > 0, lpath + ".lcb_feature_num: must be > 0");
    Require(l.fmb_feature_num() > 0, lpath + ".fmb_feature_num: must be > 0");
    Require(l.compressed_feature_num() > 0, lpath + ".compressed_feature_num: must be > 0");
    NeedMlp(l.has_feature_num_mlp(), l.feature_num_mlp(), lpath + ".feature_num_mlp");
  }
  NeedMlp(wk.has_final(), wk.final(), path + ".final");
}

void XDeepFm(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  const protos::xDeepFM& x = model.xdeepfm();
  const std::string path = "model_config.xdeepfm";
  OnlyGroups(model, {"wide", "deep"}, path);
  const protos::FeatureGroupConfig& wide = NeedGroup(model, "wide", path);
  const protos::FeatureGroupConfig& deep = NeedGroup(model, "deep", path);
  Require(wide.group_type() == protos::WIDE,
          path + ": group \"wide\" has group_type " +
              protos::FeatureGroupType_Name(wide.group_type()) +
              "; set group_type: WIDE (its features get wide_embedding_dim embeddings)");
  for (const std::string& name : wide.feature_names()) {
    Require(IsSparse(Feature(config, name)),
            path + ": group \"wide\" holds '" + name +
                "', a dense raw feature; the CIN embeds sparse features only: remove it");
  }
  // TorchEasyRec would read a WIDE "deep" group through '<table>_wide' embeddings too.
  Require(deep.group_type() == protos::DEEP,
          path + ": group \"deep\" has group_type " +
              protos::FeatureGroupType_Name(deep.group_type()) +
              "; the deep MLP reads the features' own embeddings: set group_type: DEEP");
  Require(x.wide_embedding_dim() > 0, path + ".wide_embedding_dim: must be > 0");
  Require(x.has_cin() && x.cin().cin_layer_size_size() > 0,
          path + ".cin.cin_layer_size: empty; give each CIN layer's feature maps, e.g. [64, 64]");
  for (int i = 0; i < x.cin().cin_layer_size_size(); ++i) {
    Require(x.cin().cin_layer_size(i) > 0,
            path + ".cin.cin_layer_size[" + std::to_string(i) + "]: must be > 0");
  }
  NeedMlp(x.has_deep(), x.deep(), path + ".deep");
  NeedMlp(x.has_final(), x.final(), path + ".final");
}

}  // namespace

void ValidateRankMaskModels(const PipelineConfig& config) {
  switch (config.model_config().model_case()) {
    case protos::ModelConfig::kMaskNet:
      MaskNet(config);
      break;
    case protos::ModelConfig::kWukong:
      WuKong(config);
      break;
    case protos::ModelConfig::kXdeepfm:
      XDeepFm(config);
      break;
    default:
      break;
  }
}

}  // namespace tzrec::config_internal
