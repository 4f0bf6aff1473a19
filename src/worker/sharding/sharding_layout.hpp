// sharding_layout.hpp — where every piece of a ShardedEmbeddingBagCollection lives, as plain data:
// which shards ("units") each rank holds, which feature's ids each rank sends to which shard
// ("routes", the KJT all-to-all order), the output columns each shard's pooled sums fill, and
// which of them travel by the pooled all-to-all or the reduce-scatter. Built once from
// (ShardingPlan, tables, rank, world size) by ShardingLayout::Build; no tensors, no collectives.
// TorchRec's equivalent is spread over the sharding classes of torchrec/distributed/sharding/
// {dp,tw,cw,rw,twrw}_sharding.py (their input/output dist splits and feature orders); the data
// path that consumes this layout is described in include/tzrec/sharding/sharded_ebc.hpp.
//
// Orders (every rank computes the same layout, so these orders are the wire order):
//   * features: output keys in EBC order (tables in order, each table's feature_names in order);
//     col_base is the feature's first column in the [B, ΣD] output.
//   * units: the shards of the non data-parallel tables, tables in order, each table's shards in
//     plan order; empty row shards of a table_row_wise table that is not one-per-rank are dropped
//     (they receive no ids and send no columns).
//   * routes[d]: the (unit, feature) pairs whose ids rank d receives, ordered (feature, unit).
//   * a2a_colmap: output column of every pooled all-to-all column, q-major (source rank q's
//     routes, each route's shard columns in order); a2a_runs is the same as runs of adjacent
//     columns per q.
//   * rs_colmap: output column of every reduce-scatter column of this rank's routes.
// Errors: std::invalid_argument for a plan that does not match the world size or the tables
// (names the table or feature and the fix).
// Thread-safety: a built layout is immutable data; Build is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tzrec/core/embedding.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {

struct ShardingLayout {
  // Where a unit's partial pooled sums travel in the output dist.
  enum class OutGroup { kAllToAll, kReduceScatter };

  // One shard of a sharded (non data-parallel) table.
  struct Unit {
    int table = 0;
    Shard shard;
    OutGroup group = OutGroup::kAllToAll;
    bool full_rows = true;  // the shard holds every row (table_wise, column_wise)
    int local = -1;         // index into local_units when the shard lives on this rank
  };

  // One output key of the EBC (a feature of a table).
  struct Feature {
    std::string name;
    int table = 0;
    std::int64_t col_base = 0;  // first column in the [B, ΣD] output
    bool mean = false;
  };

  // The ids of `feature` that go to `unit` (on the unit's rank).
  struct Route {
    int unit = 0;
    int feature = 0;
  };

  // Block q's columns [src, src + len) are output columns [dst, dst + len).
  struct ColumnRun {
    std::int64_t src, dst, len;
  };

  int rank = 0;
  int world = 1;
  std::vector<Feature> features;  // output keys in EBC order
  std::int64_t total_dim = 0;     // ΣD
  bool any_mean = false;
  std::vector<Unit> units;
  std::vector<std::vector<Route>> routes;        // per destination rank
  bool any_sharded = false;                      // some table is not data_parallel (global)
  bool any_a2a = false;                          // some pooled a2a columns exist (global)
  std::int64_t rs_cols = 0;                      // reduce-scatter columns (same on every rank)
  std::vector<std::int64_t> a2a_cols_per_rank;   // C_q
  std::vector<std::int64_t> a2a_colmap;          // [ΣC_q] target columns, q-major
  std::vector<std::vector<ColumnRun>> a2a_runs;  // per source rank q
  std::vector<std::int64_t> rs_colmap;           // [rs_cols]
  // The all-to-all alone fills every output column exactly once (no reduce-scatter, no DP
  // tables, a2a_colmap a permutation of [0, total_dim)).
  bool a2a_covers_output = false;

  std::vector<int> local_units;           // unit indices on this rank (Unit::local order)
  std::vector<int> dp_tables;             // data-parallel table indices
  std::unordered_map<int, int> dp_index;  // table → index into dp_tables
  std::vector<int> dp_features;           // feature indices of DP tables

  // Throws std::invalid_argument when plan.world_size != world_size, a table has no rows, dim or
  // features, two tables list the same feature, a table has no shard or a shard does not fit it.
  static ShardingLayout Build(const ShardingPlan& plan,
                              const std::vector<EmbeddingBagConfig>& tables, int this_rank,
                              int world_size);
};

}  // namespace tzrec
