// tzrec/sharding/sharded_ebc.hpp — TorchRec's ShardedEmbeddingBagCollection for the libtorch
// worker: input dist → local lookup → output dist, with a mirrored backward that applies the fused
// embedding optimizer to the local shards (torchrec/distributed/embeddingbag.py and
// sharding/{dp,tw,cw,rw,twrw}_sharding.py; notes ../shared/reference/torchrec-sharding.md §2.1–2.3,
// §2.12).
//
// Data path of one Forward (every rank, same collective order):
//   1. input dist, KJT all-to-all: one int64 a2a of per-destination counts [local batch, ids],
//      then one a2a of lengths and one of ids (plus one of weights for weighted features). Every
//      feature's ids go to each shard of its table that holds their rows (table_wise: the owner;
//      column_wise: every column block's rank; row_wise / table_row_wise: the rank whose row block
//      contains the id, re-based to the block). data_parallel features stay local.
//   2. local lookup: pooled sums over the received bags of all source ranks (B_global bags per
//      feature), one per (shard, feature).
//   3. output dist: table_wise, column_wise (and table_row_wise across several hosts) partials go
//      back to the sample owners by one pooled all-to-all; row_wise (and single-host
//      table_row_wise) partials by one reduce-scatter (Comm::ReduceScatterV: native on NCCL,
//      emulated on Gloo). The owner adds the pieces into [B_local, ΣD] and divides MEAN features by
//      their bag length.
//   Backward mirrors it (pooled a2a back; all-gather for the reduce-scatter), divides the gradients
//   by the world size (TorchRec GRADIENT_DIVISION, matching DDP's averaging when each rank's loss
//   is a mean over its local batch), and applies the table's EmbeddingOptimizerState to the local
//   rows that occurred, gradients summed per row over the global batch first. data_parallel tables
//   all-reduce a dense [rows, D+1] buffer (gradient sums and occurrence counts) and update the rows
//   that occurred anywhere, identically on every rank.
//
// Result: with the same seed, global batch and optimizer, outputs, losses and weights equal an
// unsharded EmbeddingBagCollection on the global batch (the `tzrec_sharding_check` test), except
// that a column_wise shard keeps its own row-wise Adagrad accumulator per row (as FBGEMM does).
//
// Thread-safety: not thread-safe; collectives must be issued in the same order on every rank.
// Errors: std::out_of_range for ids outside a table (names feature, id, rows);
// std::invalid_argument for a plan that does not match the tables or world size; CommError from the
// collectives.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/core/kjt.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {

// TableSpec (planner input) of an EmbeddingBagConfig.
TableSpec ToTableSpec(const EmbeddingBagConfig& config,
                      const ParameterConstraints& constraints = {});

class ShardedEmbeddingBagCollection {
 public:
  // Shards of `tables` that `plan` puts on this rank are initialised with InitTableSlice(seed), so
  // the sharded tables equal the unsharded ones at any world size.
  ShardedEmbeddingBagCollection(std::vector<EmbeddingBagConfig> tables, ShardingPlan plan,
                                const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed,
                                std::shared_ptr<Comm> comm);
  ~ShardedEmbeddingBagCollection();
  ShardedEmbeddingBagCollection(const ShardedEmbeddingBagCollection&) = delete;
  ShardedEmbeddingBagCollection& operator=(const ShardedEmbeddingBagCollection&) = delete;

  // The input dist of a batch, started early (TrainPipelineSparseDist overlaps it with the previous
  // step's compute). `features` holds this rank's local batch (stride may differ across ranks).
  struct Dist;
  std::shared_ptr<Dist> InputDist(const KeyedJaggedTensor& features);
  // Lookup and output dist of a distributed batch: KeyedTensor [B_local, ΣD] in EBC key order.
  // When grad mode is on the values require grad; their backward runs the output-dist backward and
  // the fused optimizer (a collective: every rank must run backward).
  KeyedTensor Compute(const std::shared_ptr<Dist>& dist);
  KeyedTensor Forward(const KeyedJaggedTensor& features) { return Compute(InputDist(features)); }
  // Waits for the input dist of a batch that will not be computed (a batch fetched ahead of the
  // last step), so no collective is left in flight.
  void Drain(const std::shared_ptr<Dist>& dist);
  // How many ranks had samples in this input dist (their local batch was not empty), known when
  // the dist exchanged batch sizes, i.e. some table is sharded; nullopt otherwise. A training loop
  // reads its has_batch agreement from here instead of running its own all-reduce.
  std::optional<int> RanksWithSamples(const std::shared_ptr<Dist>& dist) const;

  const std::vector<EmbeddingBagConfig>& Tables() const;
  const ShardingPlan& Plan() const;
  // The shards this rank holds: table name, shard placement, weight [rows, cols] (a view that can
  // be written), optimizer state.
  struct LocalShard {
    std::string table;
    Shard shard;
    at::Tensor weight;
    EmbeddingOptimizerState* state;
  };
  std::vector<LocalShard> LocalShards();
  // Collective: the whole table [rows, D] on every rank, assembled from the shards.
  at::Tensor GatherTable(const std::string& table);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzrec
