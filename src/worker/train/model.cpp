// Embedding tables, derived features, sequence keys, table constraints and the model factory
// (include/tzrec/train/model.hpp); the models are in dlrm.cpp, deepfm.cpp, multi_tower.cpp.
#include "tzrec/train/model.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model_parts.hpp"

namespace tzrec {

using model_internal::kWideSuffix;
using model_internal::WideEmbeddingDim;

std::vector<EmbeddingBagConfig> AllEmbeddingTables(const PipelineConfig& config) {
  std::vector<EmbeddingBagConfig> tables;
  std::map<std::string, std::size_t> index;
  auto add = [&](const std::string& table, const std::string& feature, std::int64_t rows,
                 std::int64_t dim, PoolingType pooling) {
    auto it = index.find(table);
    if (it == index.end()) {
      index[table] = tables.size();
      tables.push_back(EmbeddingBagConfig{table, rows, dim, {feature}, pooling});
      return;
    }
    EmbeddingBagConfig& t = tables[it->second];
    if (t.embedding_dim != dim || t.num_embeddings != rows) {
      throw ConfigError("feature '" + feature + "' shares table '" + table + "' (" +
                        std::to_string(t.num_embeddings) + " x " + std::to_string(t.embedding_dim) +
                        ") but asks for " + std::to_string(rows) + " x " + std::to_string(dim) +
                        "; give shared features the same size and embedding_dim");
    }
    t.feature_names.push_back(feature);
  };
  for (const auto& f : config.feature_configs()) {
    if (!IsSparse(f)) continue;
    add(TableName(f), FeatureName(f), NumEmbeddings(f), EmbeddingDim(f),
        EffectivePooling(config, f) == "mean" ? PoolingType::kMean : PoolingType::kSum);
  }
  const std::optional<std::int64_t> wide_dim = WideEmbeddingDim(config.model_config());
  if (wide_dim) {
    for (const auto& g : config.model_config().feature_groups()) {
      if (g.group_type() != protos::WIDE) continue;
      for (const auto& name : g.feature_names()) {
        const protos::FeatureConfig& f = Feature(config, name);
        add(TableName(f) + kWideSuffix, name + kWideSuffix, NumEmbeddings(f), *wide_dim,
            PoolingType::kSum);
      }
    }
  }
  return tables;
}

std::vector<std::string> AttentionSequenceFeatures(const PipelineConfig& config) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (IsSequence(Feature(config, name)) && std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  };
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_type() == protos::SEQUENCE && config.model_config().has_multi_tower_din()) {
      for (const auto& name : g.feature_names()) add(name);
    }
    for (const auto& encoder : g.sequence_encoders()) {
      const std::string* input = AttentionInput(encoder);
      if (input == nullptr) continue;
      for (const auto& seq : g.sequence_groups()) {
        if (seq.group_name() != *input) continue;
        for (const auto& name : seq.feature_names()) add(name);
      }
    }
  }
  return out;
}

std::vector<std::string> SequenceTableNames(const PipelineConfig& config) {
  std::vector<std::string> read;
  for (const std::string& name : AttentionSequenceFeatures(config))
    read.push_back(TableName(Feature(config, name)));
  std::vector<std::string> out;
  for (const auto& t : AllEmbeddingTables(config)) {
    if (std::find(read.begin(), read.end(), t.name) != read.end()) out.push_back(t.name);
  }
  return out;
}

std::vector<EmbeddingBagConfig> EmbeddingTables(const PipelineConfig& config) {
  const std::vector<std::string> sequence = SequenceTableNames(config);
  std::vector<EmbeddingBagConfig> out;
  for (auto& t : AllEmbeddingTables(config)) {
    if (std::find(sequence.begin(), sequence.end(), t.name) == sequence.end())
      out.push_back(std::move(t));
  }
  return out;
}

std::string SequenceKey(const std::string& feature) {
  return feature + "__seq";
}

std::string SequenceLengthKey(const std::string& feature) {
  return feature + "__seqlen";
}

KeyedJaggedTensor AddDerivedFeatures(const PipelineConfig& config,
                                     const KeyedJaggedTensor& sparse) {
  if (!WideEmbeddingDim(config.model_config())) return sparse;
  std::vector<std::string> keys;
  std::vector<JaggedTensor> jts;
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_type() != protos::WIDE) continue;
    for (const auto& name : g.feature_names()) {
      keys.push_back(name + kWideSuffix);
      jts.push_back(sparse[name]);
    }
  }
  if (keys.empty()) return sparse;
  return KeyedJaggedTensor::Concat({sparse, KeyedJaggedTensor::FromJaggedTensors(keys, jts)});
}

ParameterConstraints TableConstraints(const PipelineConfig& config, const std::string& table) {
  ParameterConstraints c;
  for (const auto& f : config.feature_configs()) {
    const auto& constraints = EmbeddingConstraints(f);
    if (IsSparse(f) && (TableName(f) == table || TableName(f) + kWideSuffix == table) &&
        constraints.sharding_types_size() > 0) {
      c.sharding_types = ShardingTypes(constraints);
    }
  }
  if (c.sharding_types.empty()) {
    c.sharding_types = ShardingTypes(config.train_config().global_embedding_constraints());
  }
  return c;
}

std::unique_ptr<DenseModel> DenseModel::Create(const PipelineConfig& config, std::uint64_t seed,
                                               const at::Device& device) {
  using protos::ModelConfig;
  // One factory per model of the ModelConfig oneof (model_parts.hpp); a model added to the proto
  // without a factory here is an InternalError, never a silent fallback.
  static const std::map<ModelConfig::ModelCase, model_internal::ModelFactory> kFactories = {
      {ModelConfig::kDlrm, &model_internal::MakeDlrm},
      {ModelConfig::kDeepfm, &model_internal::MakeDeepFm},
      {ModelConfig::kMultiTower, &model_internal::MakeMultiTower},
      {ModelConfig::kMultiTowerDin, &model_internal::MakeMultiTowerDin},
      {ModelConfig::kWideAndDeep, &model_internal::MakeWideAndDeep},
      {ModelConfig::kDcnV1, &model_internal::MakeDcnV1},
      {ModelConfig::kDcnV2, &model_internal::MakeDcnV2},
      {ModelConfig::kSimpleMultiTask, &model_internal::MakeSimpleMultiTask},
      {ModelConfig::kMmoe, &model_internal::MakeMMoE},
      {ModelConfig::kDbmtl, &model_internal::MakeDbmtl},
      {ModelConfig::kPle, &model_internal::MakePle},
      {ModelConfig::kMaskNet, &model_internal::MakeMaskNet},
      {ModelConfig::kWukong, &model_internal::MakeWuKong},
      {ModelConfig::kXdeepfm, &model_internal::MakeXDeepFm},
  };
  const auto model_case = config.model_config().model_case();
  if (model_case == ModelConfig::MODEL_NOT_SET)
    throw ConfigError(
        "model_config: no model; set one of dlrm, deepfm, multi_tower, multi_tower_din, "
        "wide_and_deep, dcn_v1, "
        "dcn_v2, mask_net, xdeepfm, wukong, simple_multi_task, mmoe, dbmtl");
  const auto it = kFactories.find(model_case);
  if (it == kFactories.end()) {
    throw InternalError("model_config." + ModelType(config) +
                        " is in the config schema but has no model factory in "
                        "src/worker/train/model.cpp");
  }
  return it->second(config, seed, device);
}

std::int64_t DenseModel::NumParameters() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_) n += p.tensor.numel();
  return n;
}

}  // namespace tzrec
