// tzrec/types/sharding_plan.hpp — ShardingPlan: where every shard of every table lives, with its
// JSON form, placement hash and human table (no libtorch, no planner).
//
// Follows torchrec 1.4 `torchrec/distributed/types.py` (ParameterSharding, ShardingPlan); the
// table ToTable prints plays the role of `torchrec/distributed/planner/stats.py`. The planner
// (include/tzrec/planner/planner.hpp) produces plans; the sharded collection and the checkpoint
// read them back from JSON and compare their hashes.
//
// Units: bytes for storage, milliseconds for perf.
// Errors: Get throws std::out_of_range, FromJson std::invalid_argument naming the bad field.
// Thread-safety: plain values; the const members are safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

// TorchRec ParameterSharding for one table.
// Shard conventions (what ShardedEmbeddingBagCollection relies on):
//   data_parallel   : one shard per rank, each the whole table ([0,0] .. [rows, dim]), rank = r.
//   table_wise      : one shard, the whole table, on ranks[0].
//   column_wise     : one shard per column block (full rows), ranks[i] = shards[i].rank.
//   row_wise        : one shard per rank 0..W-1, block ceil(rows/W), trailing shards may be empty.
//   table_row_wise  : one shard per local rank of ONE host, block ceil(rows/Lw); ranks = those
//   ranks.
struct ParameterSharding {
  std::string table;
  ShardingType sharding_type = ShardingType::kTableWise;
  std::string compute_kernel = "fused";  // "dense" for data_parallel
  std::vector<int> ranks;
  std::vector<Shard> shards;
};

struct ShardingPlan {
  int world_size = 1;
  int local_world_size = 1;
  std::vector<ParameterSharding> tables;  // in TableSpec order

  const ParameterSharding& Get(std::string_view table) const;  // throws std::out_of_range
  // JSON text: {"world_size":W,"local_world_size":L,"tables":{name:{sharding_type, compute_kernel,
  // ranks, shards:[{offsets:[r,c], sizes:[rows,cols], rank, perf_ms, ddr_bytes, hbm_bytes}]}}}
  // keyed in table order (stable, so the hash is reproducible).
  std::string ToJson(int indent = 2) const;
  // Throws std::invalid_argument naming the bad field.
  static ShardingPlan FromJson(std::string_view json);
  // 16 hex digits: FNV-1a 64 of ToJson(-1) without the estimate fields (placement only).
  std::string Hash() const;
  // Human table: table | type | kernel | ranks | shard sizes | perf | storage, plus per-rank
  // totals.
  std::string ToTable() const;
};

// "512 B", "3.0 KiB", "5.2 GiB" (binary units, one decimal) — used in messages and ToTable.
std::string FormatBytes(std::int64_t bytes);

}  // namespace tzrec
