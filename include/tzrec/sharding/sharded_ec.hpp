// tzrec/sharding/sharded_ec.hpp — TorchRec's ShardedEmbeddingCollection for the libtorch worker:
// unpooled per-id embeddings with jagged outputs (torchrec/modules/embedding_modules.py
// EmbeddingCollection, torchrec/distributed/embedding.py ShardedEmbeddingCollection).
//
// Output: one JaggedEmbedding per EC feature, in EC key order (tables in order, each table's
// feature_names in order): values float32 [ΣL_b, D] (row i = the table row of the feature's i-th
// id in KJT order), lengths int64 [B_local] (the feature's KJT lengths). EC features are
// unweighted (TorchRec builds the EC's tables with is_weighted false): KJT weights are not read.
//
// Sharding types: data_parallel, table_wise, column_wise, row_wise — the four the pinned TorchRec's
// create_embedding_sharding accepts for an EmbeddingCollection (torchrec/distributed/embedding.py;
// no table_row_wise). A plan giving an EC table table_row_wise is refused (std::invalid_argument
// naming the table). ToEcTableSpec restricts the planner to those four types.
//
// Implementation: each id of an EC feature is a bag of one id in a "virtual batch" of M = Σ_f N_f
// rows (feature f owns rows [off_f, off_f + N_f), the features of one table adjacent); a
// ShardedEmbeddingBagCollection with SUM pooling over the same tables and plan, each table read by
// one virtual feature (named after the table) whose bags are the rows of the table's EC features,
// does the input dist, lookup, output dist, gradient division by the world size and the fused
// optimizer update (include/tzrec/sharding/sharded_ebc.hpp), so the EC inherits its equivalence
// with unsharded training. Cost: the pooled output is [M, Σ_tables D] (rows of other tables are
// zeros): with one table (DIN's shared item table) exactly the bytes of TorchRec's sequence
// all-to-all, with T tables about T times that.
//
// Shared tables (TorchEasyRec embedding_name, tzrec/modules/embedding.py): a table is stored once,
// in ONE module. TorchEasyRec's SequenceEmbeddingGroupImpl puts every sparse feature of a sequence
// group (query and sequence features) into one EmbeddingCollection whose configs are merged by
// embedding name; here the same: list every feature that reads the table in its EmbeddingConfig
// (one table, several feature_names). A non-sequence feature that shares a table with a sequence
// feature is looked up through this EC too and pooled by the caller with PoolJagged (SUM/MEAN as
// the feature's pooling), so both lookups' gradients reach the one table in one fused update per
// backward and the checkpoint holds one copy. The EBC must then not list that table.
//
// Thread-safety: not thread-safe; collectives in the same order on every rank (as the EBC).
// Errors: std::out_of_range for ids outside a table; std::invalid_argument for a plan that does not
// match the tables (or gives table_row_wise); CommError from the collectives.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/sharding/sharded_ebc.hpp"

namespace tzrec {

// One EC table (TorchRec EmbeddingConfig): no pooling; several features may read it.
struct EmbeddingConfig {
  std::string name;  // table name (unique across the EBC and the EC of a model)
  std::int64_t num_embeddings = 0;
  std::int64_t embedding_dim = 0;
  std::vector<std::string> feature_names;
};

// One feature's unpooled lookup: values [ΣL_b, D] (requires grad in grad mode), lengths [B].
struct JaggedEmbedding {
  at::Tensor values;
  at::Tensor lengths;
};

// Pools a JaggedEmbedding per sample: [B, D] sums, MEAN divides by max(length, 1) (an empty bag
// gives zeros), as the EBC pools. Differentiable w.r.t. e.values.
at::Tensor PoolJagged(const JaggedEmbedding& e, PoolingType pooling);

// A JaggedEmbedding as the padded dense [B, length, D] (TorchRec's JaggedTensor.to_padded_dense):
// row b's items first, in order, zeros after its length; items past `length` are dropped.
// Differentiable w.r.t. e.values.
at::Tensor PadJagged(const JaggedEmbedding& e, std::int64_t length);

// The sharding types an EC table may take (data_parallel, table_wise, column_wise, row_wise).
const std::vector<ShardingType>& EcShardingTypes();
// TableSpec of an EC table: constraints.sharding_types = the given ones ∩ EcShardingTypes() (all
// four when none are given); throws std::invalid_argument when the intersection is empty.
TableSpec ToEcTableSpec(const EmbeddingConfig& config,
                        const ParameterConstraints& constraints = {});

class ShardedEmbeddingCollection {
 public:
  // Like ShardedEmbeddingBagCollection's: shards initialised with InitTableSlice(seed) (the EC
  // table as an EmbeddingBagConfig of the same name and shape), equal to the unsharded table at
  // any world size. `plan` may hold other tables too (a plan of the whole model); only this EC's
  // tables are used.
  ShardedEmbeddingCollection(std::vector<EmbeddingConfig> tables, const ShardingPlan& plan,
                             const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed,
                             std::shared_ptr<Comm> comm);
  ~ShardedEmbeddingCollection();
  ShardedEmbeddingCollection(const ShardedEmbeddingCollection&) = delete;
  ShardedEmbeddingCollection& operator=(const ShardedEmbeddingCollection&) = delete;

  struct Dist;
  // `features` holds this rank's local batch and every EC feature (extra keys are ignored).
  std::shared_ptr<Dist> InputDist(const KeyedJaggedTensor& features);
  // One JaggedEmbedding per EC feature in EC key order (see the top of this file). In grad mode
  // the values require grad; backward (a collective) applies the fused optimizer.
  std::vector<JaggedEmbedding> Compute(const std::shared_ptr<Dist>& dist);
  std::vector<JaggedEmbedding> Forward(const KeyedJaggedTensor& features) {
    return Compute(InputDist(features));
  }
  void Drain(const std::shared_ptr<Dist>& dist);
  // Feature names in output order.
  const std::vector<std::string>& Keys() const;
  const std::vector<EmbeddingConfig>& Tables() const;
  const ShardingPlan& Plan() const;  // this EC's tables only
  using LocalShard = ShardedEmbeddingBagCollection::LocalShard;
  std::vector<LocalShard> LocalShards();
  at::Tensor GatherTable(const std::string& table);  // collective: [rows, D] on every rank

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzrec
