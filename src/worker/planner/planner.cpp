// Plan: the top level of the TorchRec-style planner (torchrec/distributed/planner/planners.py
// EmbeddingShardingPlanner.plan): validate, reserve storage (storage_reservations.cpp), enumerate
// one option per allowed type and table (enumerator.cpp, estimators.cpp), propose and partition
// (proposers.cpp, partitioner.cpp), keep the best-rated feasible plan, or explain why none fits
// (diagnosis.cpp). Stages and their shared types: src/worker/planner/planner_internal.hpp.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec {
namespace {

using planner_detail::Option;

// The ParameterSharding of one table from its chosen option and placed shards.
ParameterSharding MakeSharding(const TableSpec& table, const Option& option,
                               std::vector<Shard> shards) {
  ParameterSharding sharding;
  sharding.table = table.name;
  sharding.sharding_type = option.type;
  sharding.compute_kernel = option.type == ShardingType::kDataParallel ? "dense" : "fused";
  sharding.shards = std::move(shards);
  for (const Shard& shard : sharding.shards) {
    if (std::find(sharding.ranks.begin(), sharding.ranks.end(), shard.rank) ==
            sharding.ranks.end() ||
        option.type == ShardingType::kColumnWise) {
      sharding.ranks.push_back(shard.rank);
    }
  }
  return sharding;
}

}  // namespace

ShardingPlan Plan(const Topology& topology, const std::vector<TableSpec>& tables,
                  const PlannerOptions& options) {
  topology.Validate();
  planner_detail::ValidateTables(tables);
  planner_detail::ValidateOptions(options);
  const StorageCapacity capacity = ReservedCapacity(topology, tables, options);

  ShardingPlan plan;
  plan.world_size = topology.world_size;
  plan.local_world_size = topology.local_world_size;
  if (tables.empty()) return plan;

  const std::size_t count = tables.size();
  std::vector<std::vector<Option>> options_by_table(count);
  for (std::size_t t = 0; t < count; ++t) {
    options_by_table[t] = planner_detail::TableOptions(
        tables[t], planner_detail::AllowedTypes(tables[t]), topology, options);
  }

  std::optional<planner_detail::Proposal> best =
      planner_detail::BestProposal(options_by_table, topology, capacity);
  if (!best) planner_detail::ThrowNoPlan(topology, tables, options, capacity, options_by_table);
  for (std::size_t t = 0; t < count; ++t) {
    plan.tables.push_back(
        MakeSharding(tables[t], options_by_table[t][best->index[t]], best->partitioned.shards[t]));
  }
  return plan;
}

}  // namespace tzrec
