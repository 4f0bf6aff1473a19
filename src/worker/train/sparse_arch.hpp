// src/worker/train/sparse_arch.hpp — a model's embedding modules (TorchEasyRec's EmbeddingGroup,
// tzrec/modules/embedding.py): the sharded EmbeddingBagCollection of the pooled tables
// (EmbeddingTables) and, when an attention encoder reads a sequence, the sharded
// EmbeddingCollection of the sequences' tables (SequenceTableNames), as upstream's
// SequenceEmbeddingGroupImpl: every feature that reads such a table is looked up unpooled through
// the EC (the sequence features and the query features sharing their tables), one table stored
// once. Both are planned in one ShardingPlan (EC tables through ToEcTableSpec) and their shards
// are checkpointed alike, by table name (include/tzrec/checkpoint/checkpoint.hpp).
//
// The dense model's input (SequenceInputs): the EBC's pooled KeyedTensor, then for each EC feature
// its pooled embedding [B, D] (PoolJagged with the feature's EffectivePooling, as the EBC would
// pool it), then for each attention sequence feature f SequenceKey(f) = PadJagged(f, L) as
// [B, L·D] (L = sequence_length(f)) and SequenceLengthKey(f) = its lengths [B, 1] float
// (include/tzrec/train/model.hpp).
//
// Collectives: InputDist, Compute, the backward and Drain run the EBC's collectives, then the EC's
// (every rank, same order). Errors: ConfigError for a weighted feature sharing an EC table (the
// EC reads no weights) or an EC table constrained to table_row_wise only. Not thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"
#include "tzrec/sharding/sharded_ec.hpp"

namespace tzrec {

// The EmbeddingCollection's tables (SequenceTableNames, with every feature reading them in config
// order); empty when no attention encoder reads a sequence.
std::vector<EmbeddingConfig> SequenceTables(const PipelineConfig& config);
// The planner's input: the EBC's tables (ToTableSpec), then the EC's (ToEcTableSpec), each with
// TableConstraints(config, table); `override_constraints`, when given, replaces them (export
// plans everything table_wise).
std::vector<TableSpec> SparseTableSpecs(
    const PipelineConfig& config,
    const std::optional<ParameterConstraints>& override_constraints = std::nullopt);
// How SequenceInputs turns the EC's outputs into the dense model's columns.
struct SequenceSpec {
  std::vector<std::string> keys;     // the EC's features, in EC order (tables, then features)
  std::vector<PoolingType> pooling;  // each one's EffectivePooling
  std::vector<std::int64_t> length;  // sequence_length of an attention sequence feature, else 0
};
SequenceSpec MakeSequenceSpec(const PipelineConfig& config);
// The dense model's input from the EBC output `pooled` and the EC output `jagged` (one per
// spec.keys); see the top of this file. Pure.
KeyedTensor SequenceInputs(const SequenceSpec& spec, const KeyedTensor& pooled,
                           const std::vector<JaggedEmbedding>& jagged);

class SparseArch {
 public:
  // Shards initialised with InitTableSlice(seed), as each module's. Collective.
  SparseArch(const PipelineConfig& config, const ShardingPlan& plan,
             const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed,
             std::shared_ptr<Comm> comm);
  ~SparseArch();
  SparseArch(const SparseArch&) = delete;
  SparseArch& operator=(const SparseArch&) = delete;

  struct Dist {
    std::shared_ptr<ShardedEmbeddingBagCollection::Dist> bags;
    std::shared_ptr<ShardedEmbeddingCollection::Dist> sequences;  // null without an EC
  };
  // The input dists of this rank's local batch `sparse` (the dataset's features).
  Dist InputDist(const KeyedJaggedTensor& sparse);
  // The EBC's RanksWithSamples (nullopt when it exchanged no batch sizes).
  std::optional<int> RanksWithSamples(const Dist& dist) const;
  // The dense model's input (SequenceInputs). In grad mode the backward applies both modules'
  // fused optimizers (a collective).
  KeyedTensor Compute(const Dist& dist);
  KeyedTensor Forward(const KeyedJaggedTensor& sparse) { return Compute(InputDist(sparse)); }
  void Drain(const Dist& dist);
  // The EBC's shards, then the EC's.
  std::vector<ShardedEmbeddingBagCollection::LocalShard> LocalShards();
  // Every table's name and [rows, dim], EBC's then EC's.
  struct TableShape {
    std::string name;
    std::int64_t rows = 0, dim = 0;
  };
  const std::vector<TableShape>& Tables() const { return shapes_; }

 private:
  PipelineConfig config_;  // AddDerivedFeatures' wide keys
  SequenceSpec spec_;
  std::unique_ptr<ShardedEmbeddingBagCollection> ebc_;
  std::unique_ptr<ShardedEmbeddingCollection> ec_;
  std::vector<TableShape> shapes_;
};

}  // namespace tzrec
