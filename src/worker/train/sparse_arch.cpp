// The model's embedding modules: EBC + the sequences' EC (src/worker/train/sparse_arch.hpp).
#include "sparse_arch.hpp"

#include <ATen/ops/cat.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tzrec/error.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

PoolingType PoolingOf(const PipelineConfig& config, const std::string& feature) {
  return EffectivePooling(config, Feature(config, feature)) == "mean" ? PoolingType::kMean
                                                                      : PoolingType::kSum;
}

// The plan's entries of the given tables (the EBC's part of the model's plan).
ShardingPlan PlanOf(const ShardingPlan& plan, const std::vector<EmbeddingBagConfig>& tables) {
  ShardingPlan out;
  out.world_size = plan.world_size;
  out.local_world_size = plan.local_world_size;
  for (const auto& p : plan.tables) {
    for (const auto& t : tables) {
      if (t.name == p.table) out.tables.push_back(p);
    }
  }
  return out;
}

}  // namespace

std::vector<EmbeddingConfig> SequenceTables(const PipelineConfig& config) {
  const std::vector<std::string> names = SequenceTableNames(config);
  std::vector<EmbeddingConfig> out;
  if (names.empty()) return out;
  for (const auto& t : AllEmbeddingTables(config)) {
    if (!Contains(names, t.name)) continue;
    for (const auto& f : t.feature_names) {
      const protos::FeatureConfig& fc = Feature(config, f);
      if (fc.has_id_feature() && fc.id_feature().weighted()) {
        throw ConfigError("feature '" + f + "' is weighted and shares table '" + t.name +
                          "' with a sequence an attention encoder reads; that table is looked up "
                          "per id (an EmbeddingCollection, which reads no weights): give '" +
                          f + "' its own embedding_name");
      }
    }
    out.push_back(EmbeddingConfig{t.name, t.num_embeddings, t.embedding_dim, t.feature_names});
  }
  return out;
}

std::vector<TableSpec> SparseTableSpecs(
    const PipelineConfig& config, const std::optional<ParameterConstraints>& override_constraints) {
  auto constraints = [&](const std::string& table) {
    return override_constraints ? *override_constraints : TableConstraints(config, table);
  };
  std::vector<TableSpec> specs;
  for (const auto& t : EmbeddingTables(config))
    specs.push_back(ToTableSpec(t, constraints(t.name)));
  for (const auto& t : SequenceTables(config)) {
    try {
      specs.push_back(ToEcTableSpec(t, constraints(t.name)));
    } catch (const std::invalid_argument& e) {
      throw ConfigError("sequence table sharding: " + std::string(e.what()) +
                        " (the table of a sequence an attention encoder reads is an "
                        "EmbeddingCollection's; set its features' "
                        "embedding_constraints.sharding_types or "
                        "train_config.global_embedding_constraints)");
    }
  }
  return specs;
}

SequenceSpec MakeSequenceSpec(const PipelineConfig& config) {
  SequenceSpec spec;
  const std::vector<std::string> attention = AttentionSequenceFeatures(config);
  for (const auto& t : SequenceTables(config)) {
    for (const auto& f : t.feature_names) {
      spec.keys.push_back(f);
      spec.pooling.push_back(PoolingOf(config, f));
      spec.length.push_back(Contains(attention, f) ? SequenceLength(Feature(config, f)) : 0);
    }
  }
  return spec;
}

KeyedTensor SequenceInputs(const SequenceSpec& spec, const KeyedTensor& pooled,
                           const std::vector<JaggedEmbedding>& jagged) {
  if (jagged.size() != spec.keys.size()) {
    throw InternalError("SequenceInputs: " + std::to_string(jagged.size()) + " EC outputs for " +
                        std::to_string(spec.keys.size()) + " EC features");
  }
  std::vector<std::string> keys = pooled.Keys();
  std::vector<std::int64_t> widths = pooled.LengthPerKey();
  std::vector<at::Tensor> columns = {pooled.Values()};
  for (std::size_t i = 0; i < jagged.size(); ++i) {
    keys.push_back(spec.keys[i]);
    widths.push_back(jagged[i].values.size(1));
    columns.push_back(PoolJagged(jagged[i], spec.pooling[i]));
  }
  for (std::size_t i = 0; i < jagged.size(); ++i) {
    if (spec.length[i] == 0) continue;
    const JaggedEmbedding& e = jagged[i];
    const std::int64_t width = spec.length[i] * e.values.size(1);
    keys.push_back(SequenceKey(spec.keys[i]));
    widths.push_back(width);
    columns.push_back(PadJagged(e, spec.length[i]).view({e.lengths.numel(), width}));
    keys.push_back(SequenceLengthKey(spec.keys[i]));
    widths.push_back(1);
    columns.push_back(
        e.lengths.to(e.values.device(), e.values.scalar_type()).view({e.lengths.numel(), 1}));
  }
  return KeyedTensor(std::move(keys), std::move(widths), at::cat(columns, 1));
}

SparseArch::SparseArch(const PipelineConfig& config, const ShardingPlan& plan,
                       const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed,
                       std::shared_ptr<Comm> comm)
    : config_(config), spec_(MakeSequenceSpec(config)) {
  std::vector<EmbeddingBagConfig> bags = EmbeddingTables(config);
  std::vector<EmbeddingConfig> sequences = SequenceTables(config);
  for (const auto& t : bags) shapes_.push_back({t.name, t.num_embeddings, t.embedding_dim});
  for (const auto& t : sequences) shapes_.push_back({t.name, t.num_embeddings, t.embedding_dim});
  ShardingPlan bag_plan = PlanOf(plan, bags);
  ebc_ = std::make_unique<ShardedEmbeddingBagCollection>(std::move(bags), std::move(bag_plan),
                                                         optimizer, seed, comm);
  if (!sequences.empty()) {
    ec_ = std::make_unique<ShardedEmbeddingCollection>(std::move(sequences), plan, optimizer, seed,
                                                       std::move(comm));
  }
}

SparseArch::~SparseArch() = default;

SparseArch::Dist SparseArch::InputDist(const KeyedJaggedTensor& sparse) {
  Dist d;
  d.bags = ebc_->InputDist(AddDerivedFeatures(config_, sparse));
  if (ec_) d.sequences = ec_->InputDist(sparse);
  return d;
}

std::optional<int> SparseArch::RanksWithSamples(const Dist& dist) const {
  return ebc_->RanksWithSamples(dist.bags);
}

KeyedTensor SparseArch::Compute(const Dist& dist) {
  KeyedTensor pooled = ebc_->Compute(dist.bags);
  if (!ec_) return pooled;
  return SequenceInputs(spec_, pooled, ec_->Compute(dist.sequences));
}

void SparseArch::Drain(const Dist& dist) {
  ebc_->Drain(dist.bags);
  if (ec_ && dist.sequences) ec_->Drain(dist.sequences);
}

std::vector<ShardedEmbeddingBagCollection::LocalShard> SparseArch::LocalShards() {
  std::vector<ShardedEmbeddingBagCollection::LocalShard> out = ebc_->LocalShards();
  if (ec_) {
    for (auto& s : ec_->LocalShards()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tzrec
