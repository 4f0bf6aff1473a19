// Why no plan exists: the PlannerError that names the table to blame, what it needs, what it
// finds and the fix (the error path of torchrec/distributed/planner/planners.py).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec::planner_detail {
namespace {

std::string DescribeTable(const TableSpec& table) {
  std::string type = table.element_bytes == 4   ? "fp32"
                     : table.element_bytes == 2 ? "fp16"
                     : table.element_bytes == 8 ? "fp64"
                                                : std::to_string(table.element_bytes) + "-byte";
  return "table '" + table.name + "' (" + std::to_string(table.num_embeddings) + " x " +
         std::to_string(table.embedding_dim) + ", " + type + ")";
}

// The usual fixes for too little storage; the reserve percentage only shrinks HBM.
std::string StorageFixes(const Topology& topo) {
  return topo.device == ComputeDevice::kCuda
             ? "add ranks, raise the per-rank HBM capacity, or lower STORAGE_RESERVE_PERCENT"
             : "add ranks or raise the per-rank DDR capacity";
}

// Throws when table `t` fits on no rank of an empty cluster with any allowed option: strict
// constraints when another type would fit, else insufficient storage. Returns when it fits.
void ThrowIfTableAloneFails(std::size_t t, const Topology& topology,
                            const std::vector<TableSpec>& tables, const PlannerOptions& options,
                            const StorageCapacity& capacity,
                            const std::vector<std::vector<Option>>& options_by_table) {
  const std::string resource = ResourceName(topology);
  // Each allowed option alone on an empty cluster.
  std::optional<Failure> allowed_best;
  for (const Option& option : options_by_table[t]) {
    std::vector<const Option*> alone = {&option};
    Partitioned result = Partition(alone, topology, capacity);
    if (result.ok) {
      allowed_best.reset();
      break;
    }
    if (!allowed_best || result.failure.missing < allowed_best->missing) {
      allowed_best = result.failure;
      allowed_best->table = t;
    }
  }
  if (!allowed_best) return;
  std::vector<ShardingType> fitting;
  for (ShardingType type : AllShardingTypes()) {
    Option option = MakeOption(tables[t], type, topology, options);
    if (Partition({&option}, topology, capacity).ok) fitting.push_back(type);
  }
  const std::string needs = "needs " + FormatBytes(allowed_best->shard_bytes) + " of " + resource +
                            " on one rank but the best rank has " +
                            FormatBytes(allowed_best->free_bytes) + " free after reservation (" +
                            FormatBytes(allowed_best->missing) + " missing)";
  if (!fitting.empty()) {
    throw PlannerError(
        PlannerError::Kind::kStrictConstraints, tables[t].name, allowed_best->missing,
        DescribeTable(tables[t]) + " allows only " + JoinTypes(AllowedTypes(tables[t])) +
            " (sharding_types constraint), and with those it " + needs + ": allow " +
            JoinTypes(fitting) + " for it in its sharding_types constraint, or add ranks");
  }
  throw PlannerError(PlannerError::Kind::kInsufficientStorage, tables[t].name,
                     allowed_best->missing,
                     DescribeTable(tables[t]) + " " + needs +
                         " even with its smallest sharding: " + StorageFixes(topology));
}

// Every table fits alone, but not all together: report the min-storage proposal's failure.
[[noreturn]] void ThrowTogetherFail(const Topology& topology, const std::vector<TableSpec>& tables,
                                    const PlannerOptions& options, const StorageCapacity& capacity,
                                    const std::vector<std::vector<Option>>& options_by_table) {
  const std::size_t count = tables.size();
  const std::string resource = ResourceName(topology);
  const std::int64_t rank_free =
      topology.device == ComputeDevice::kCuda ? capacity.hbm : capacity.ddr;
  const std::string per_rank_free = FormatBytes(rank_free);
  std::vector<std::size_t> min_storage(count);
  for (std::size_t t = 0; t < count; ++t) min_storage[t] = MinStorageIndex(options_by_table[t]);
  Partitioned constrained = Partition(Pick(options_by_table, min_storage), topology, capacity);
  const Failure failure = constrained.failure;
  const TableSpec& table = tables[failure.table];
  std::int64_t needed = 0;
  for (std::size_t t = 0; t < count; ++t) {
    needed += options_by_table[t][min_storage[t]].total_storage;
  }
  const std::int64_t total_free = rank_free * topology.world_size;
  const std::string summary =
      "the tables need at least " + FormatBytes(needed) + " of " + resource + " in all, the " +
      std::to_string(topology.world_size) + " rank(s) have " + FormatBytes(total_free) + " (" +
      per_rank_free + " each after reservation" +
      (needed > total_free ? ", " + FormatBytes(needed - total_free) + " short" : std::string()) +
      "); " + DescribeTable(table) + " is the first that no longer fits: its shard of " +
      FormatBytes(failure.shard_bytes) + " finds at most " + FormatBytes(failure.free_bytes) +
      " free (" + FormatBytes(failure.missing) + " missing)";
  // Would the tables fit without constraints?
  std::vector<std::vector<Option>> unconstrained(count);
  std::vector<std::size_t> unconstrained_min(count);
  bool constrained_any = false;
  for (std::size_t t = 0; t < count; ++t) {
    constrained_any = constrained_any || !tables[t].constraints.sharding_types.empty();
    unconstrained[t] = TableOptions(tables[t], AllShardingTypes(), topology, options);
    unconstrained_min[t] = MinStorageIndex(unconstrained[t]);
  }
  if (constrained_any && Partition(Pick(unconstrained, unconstrained_min), topology, capacity).ok) {
    throw PlannerError(PlannerError::Kind::kStrictConstraints, table.name, failure.missing,
                       summary +
                           "; without the sharding_types constraints the tables fit: allow "
                           "more sharding types (e.g. row_wise) for '" +
                           table.name + "' (allowed now: " + JoinTypes(AllowedTypes(table)) + ")");
  }
  throw PlannerError(PlannerError::Kind::kInsufficientStorage, table.name,
                     std::max(failure.missing, needed - total_free),
                     summary + ": " + StorageFixes(topology));
}

}  // namespace

std::string ResourceName(const Topology& topo) {
  return topo.device == ComputeDevice::kCuda ? "HBM" : "DDR";
}

void ThrowNoPlan(const Topology& topo, const std::vector<TableSpec>& tables,
                 const PlannerOptions& options, const StorageCapacity& capacity,
                 const std::vector<std::vector<Option>>& options_by_table) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    ThrowIfTableAloneFails(t, topo, tables, options, capacity, options_by_table);
  }
  ThrowTogetherFail(topo, tables, options, capacity, options_by_table);
}

}  // namespace tzrec::planner_detail
