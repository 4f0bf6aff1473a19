// Shared parts of the dense models (src/worker/train/model_parts.hpp).
#include "model_parts.hpp"

#include <ATen/ops/linear.h>

namespace tzrec::model_internal {

Layout MakeLayout(const PipelineConfig& config) {
  Layout l;
  std::int64_t col = 0;
  for (const auto& f : config.feature_configs()) {
    if (IsSequence(f)) l.sequence_length[FeatureName(f)] = SequenceLength(f);
    if (IsSparse(f)) {
      l.sparse_dim[FeatureName(f)] = EmbeddingDim(f);
    } else {
      l.dense_offset[FeatureName(f)] = col;
      l.dense_width[FeatureName(f)] = ValueDim(f);
      col += ValueDim(f);
    }
  }
  return l;
}

const protos::FeatureGroupConfig& Group(const PipelineConfig& config, const std::string& name) {
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_name() == name) return g;
  }
  throw ConfigError("model_config: feature group '" + name +
                    "' is not defined; add it to model_config.feature_groups");
}

MlpOptions FromProto(const protos::MLP& cfg) {
  MlpOptions o;
  o.hidden_units.assign(cfg.hidden_units().begin(), cfg.hidden_units().end());
  o.dropout_ratio.assign(cfg.dropout_ratio().begin(), cfg.dropout_ratio().end());
  o.activation = cfg.activation();
  o.use_bn = cfg.use_bn();
  o.bias = cfg.bias();
  o.use_ln = cfg.use_ln();
  return o;
}

at::Tensor Output(const Linear& out, const at::Tensor& h) {
  return at::linear(h, out.weight, out.bias).view({-1});
}

bool HasGroup(const PipelineConfig& config, const std::string& name) {
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_name() == name) return true;
  }
  return false;
}

std::optional<std::int64_t> WideEmbeddingDim(const protos::ModelConfig& model) {
  if (model.has_deepfm()) return model.deepfm().wide_embedding_dim();
  if (model.has_wide_and_deep()) return model.wide_and_deep().wide_embedding_dim();
  if (model.has_xdeepfm()) return model.xdeepfm().wide_embedding_dim();
  return std::nullopt;
}

}  // namespace tzrec::model_internal
