// Private to src/worker/planner: the pieces the planner's stages share (TorchRec
// torchrec/distributed/planner/ split into one file per stage):
//   validate.cpp              table / option checks (the std::invalid_argument messages)
//   topology.cpp              Topology::FromEnvironment / Validate (planner/types.py Topology)
//   enumerator.cpp            shard sizes and one Option per allowed type (enumerators.py)
//   estimators.cpp            perf and storage of a shard (shard_estimators.py)
//   storage_reservations.cpp  ReservedCapacity (HeuristicalStorageReservation)
//   partitioner.cpp           GreedyPerfPartitioner over one proposal (partitioners.py)
//   proposers.cpp             greedy, uniform, min-storage and exhaustive proposals (proposers.py)
//   diagnosis.cpp             the PlannerError message when nothing fits (planners.py)
//   planner.cpp               Plan: enumerate, reserve, propose, partition, keep the best
// Everything is pure and deterministic; nothing here is thread-unsafe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tzrec/planner/planner.hpp"

namespace tzrec::planner_detail {

// planner/constants.py
constexpr double kBigIntBytes = 8.0;  // BIGINT_DTYPE: id bytes

// --- validate.cpp ---
// The table's sharding_types constraint, or all five when it is empty.
const std::vector<ShardingType>& AllowedTypes(const TableSpec& table);
// Throw std::invalid_argument naming the table / field and the fix.
void ValidateTable(const TableSpec& table);
void ValidateTables(const std::vector<TableSpec>& tables);
void ValidateOptions(const PlannerOptions& options);

// --- enumerator.cpp ---
// Shard sizes and offsets without placement (TW/CW on rank 0).
std::vector<Shard> ShardSizes(const TableSpec& table, ShardingType type, const Topology& topo,
                              int host);
// Places table_wise / column_wise shards on `ranks` (one per shard); other types unchanged.
void PlaceShards(const TableSpec& table, ShardingType type, const Topology& topo,
                 const std::vector<int>& ranks, std::vector<Shard>& shards);

// One ShardingOption: a table with a type, its shard sizes and estimates (placement open).
struct Option {
  ShardingType type = ShardingType::kTableWise;
  std::vector<Shard> shards;
  double total_perf = 0;
  std::int64_t total_storage = 0;
  std::int64_t max_shard_storage = 0;
};
Option MakeOption(const TableSpec& table, ShardingType type, const Topology& topo,
                  const PlannerOptions& options);
// Options of one table sorted by total perf (ties: type order).
std::vector<Option> TableOptions(const TableSpec& table, const std::vector<ShardingType>& types,
                                 const Topology& topo, const PlannerOptions& options);

// --- estimators.cpp ---
// Σ_f L_f·B (ids per rank) and Σ_f B (pooled outputs per rank).
struct Workload {
  double inputs = 0;
  double outputs = 0;
};
Workload TableWorkload(const TableSpec& table, const PlannerOptions& options);
// perf_ms and hbm_bytes / ddr_bytes of every shard.
void FillEstimates(const TableSpec& table, ShardingType type, const Topology& topo,
                   const PlannerOptions& options, std::vector<Shard>& shards);

// --- partitioner.cpp ---
struct RankState {
  std::int64_t hbm = 0;
  std::int64_t ddr = 0;
  double perf = 0;
};

struct Failure {
  std::size_t table = 0;
  std::int64_t shard_bytes = 0;  // the shard that found no rank
  std::int64_t free_bytes = 0;   // free bytes of the best candidate rank at that moment
  std::int64_t missing = 0;      // shard_bytes − free_bytes (> 0)
};

struct Partitioned {
  bool ok = false;
  std::vector<std::vector<Shard>> shards;  // per table, placed
  std::vector<RankState> ranks;
  Failure failure;
  double rating = 0;      // max over ranks of Σ perf
  double total_perf = 0;  // Σ over ranks
};

// GreedyPerfPartitioner over one proposal (one option per table).
Partitioned Partition(const std::vector<const Option*>& proposal, const Topology& topo,
                      const StorageCapacity& capacity);

// --- proposers.cpp ---
std::vector<const Option*> Pick(const std::vector<std::vector<Option>>& options,
                                const std::vector<std::size_t>& index);
// Index of the option with the smallest max-shard storage (ties: total storage, perf order).
std::size_t MinStorageIndex(const std::vector<Option>& options);
// The best-rated feasible proposal: its partition and the option index per table.
struct Proposal {
  Partitioned partitioned;
  std::vector<std::size_t> index;
};
// Tries the greedy, uniform, min-storage and (when small) exhaustive proposals in that order;
// nullopt when none partitions.
std::optional<Proposal> BestProposal(const std::vector<std::vector<Option>>& options_by_table,
                                     const Topology& topo, const StorageCapacity& capacity);

// --- diagnosis.cpp ---
// "HBM" on CUDA, "DDR" on CPU.
std::string ResourceName(const Topology& topo);
// Throws the PlannerError that names the table to blame when no proposal partitions.
[[noreturn]] void ThrowNoPlan(const Topology& topo, const std::vector<TableSpec>& tables,
                              const PlannerOptions& options, const StorageCapacity& capacity,
                              const std::vector<std::vector<Option>>& options_by_table);

}  // namespace tzrec::planner_detail
