// Enumerator: shard sizes and offsets per sharding type and one Option per allowed type
// (torchrec/distributed/planner/enumerators.py, sharding_plan.py
// calculate_shard_sizes_and_offsets).
#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec {
namespace {

constexpr std::int64_t kMinCwDim = 128;  // MIN_CW_DIM

}  // namespace

namespace planner_detail {

// Shard sizes and offsets without placement (TW/CW on rank 0).
std::vector<Shard> ShardSizes(const TableSpec& table, ShardingType type, const Topology& topo,
                              int host) {
  const std::int64_t rows = table.num_embeddings;
  const std::int64_t dim = table.embedding_dim;
  std::vector<Shard> shards;
  auto row_blocks = [&](int parts, int first_rank) {
    const std::int64_t block = (rows + parts - 1) / parts;
    for (int i = 0; i < parts; ++i) {
      Shard shard;
      shard.row_offset = std::min<std::int64_t>(block * i, rows);
      shard.rows = std::clamp<std::int64_t>(rows - block * i, 0, block);
      shard.cols = dim;
      shard.rank = first_rank + i;
      shards.push_back(shard);
    }
  };
  switch (type) {
    case ShardingType::kDataParallel:
      for (int r = 0; r < topo.world_size; ++r) {
        Shard shard;
        shard.rows = rows;
        shard.cols = dim;
        shard.rank = r;
        shards.push_back(shard);
      }
      break;
    case ShardingType::kTableWise: {
      Shard shard;
      shard.rows = rows;
      shard.cols = dim;
      shards.push_back(shard);
      break;
    }
    case ShardingType::kColumnWise: {
      const std::int64_t block = ColumnWiseBlock(table);
      for (std::int64_t col = 0; col < dim; col += block) {
        Shard shard;
        shard.col_offset = col;
        shard.rows = rows;
        shard.cols = std::min(block, dim - col);
        shards.push_back(shard);
      }
      break;
    }
    case ShardingType::kRowWise:
      row_blocks(topo.world_size, 0);
      break;
    case ShardingType::kTableRowWise:
      if (host < 0 || host >= topo.NumHosts()) {
        throw std::invalid_argument("table '" + table.name + "': host " + std::to_string(host) +
                                    " is out of range; there are " +
                                    std::to_string(topo.NumHosts()) + " hosts");
      }
      row_blocks(topo.local_world_size, host * topo.local_world_size);
      break;
  }
  return shards;
}

void PlaceShards(const TableSpec& table, ShardingType type, const Topology& topo,
                 const std::vector<int>& ranks, std::vector<Shard>& shards) {
  if (type != ShardingType::kTableWise && type != ShardingType::kColumnWise) return;
  if (ranks.size() != shards.size()) {
    throw std::invalid_argument("table '" + table.name + "': " + std::string(ToString(type)) +
                                " has " + std::to_string(shards.size()) + " shard(s) but " +
                                std::to_string(ranks.size()) +
                                " rank(s) were given; pass one rank per shard");
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= topo.world_size) {
      throw std::invalid_argument("table '" + table.name + "': rank " + std::to_string(ranks[i]) +
                                  " is outside the world of " + std::to_string(topo.world_size) +
                                  " ranks");
    }
    shards[i].rank = ranks[i];
  }
}

Option MakeOption(const TableSpec& table, ShardingType type, const Topology& topo,
                  const PlannerOptions& options) {
  Option option;
  option.type = type;
  option.shards = ShardSizes(table, type, topo, 0);
  FillEstimates(table, type, topo, options, option.shards);
  for (const Shard& shard : option.shards) {
    const std::int64_t bytes = shard.hbm_bytes + shard.ddr_bytes;
    option.total_perf += shard.perf_ms;
    option.total_storage += bytes;
    option.max_shard_storage = std::max(option.max_shard_storage, bytes);
  }
  return option;
}

// Options of one table sorted by total perf (ties: type order).
std::vector<Option> TableOptions(const TableSpec& table, const std::vector<ShardingType>& types,
                                 const Topology& topo, const PlannerOptions& options) {
  std::vector<Option> result;
  std::set<ShardingType> seen;
  for (ShardingType type : types) {
    if (seen.insert(type).second) result.push_back(MakeOption(table, type, topo, options));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const Option& a, const Option& b) { return a.total_perf < b.total_perf; });
  return result;
}

}  // namespace planner_detail

std::int64_t ColumnWiseBlock(const TableSpec& table) {
  const std::int64_t dim = table.embedding_dim;
  const std::int64_t lower = table.constraints.min_partition.value_or(kMinCwDim);
  for (std::int64_t block = std::max<std::int64_t>(lower, 1); block < dim; ++block) {
    if (dim % block == 0 && block % 4 == 0) return block;
  }
  return dim;
}

std::vector<Shard> CalculateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                   const std::vector<int>& ranks, int host) {
  planner_detail::ValidateTable(table);
  topo.Validate();
  std::vector<Shard> shards = planner_detail::ShardSizes(table, type, topo, host);
  planner_detail::PlaceShards(table, type, topo, ranks, shards);
  return shards;
}

}  // namespace tzrec
