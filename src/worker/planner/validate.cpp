// Table and option checks shared by every planner entry point
// (src/worker/planner/planner_internal.hpp).
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec::planner_detail {

const std::vector<ShardingType>& AllowedTypes(const TableSpec& table) {
  return table.constraints.sharding_types.empty() ? AllShardingTypes()
                                                  : table.constraints.sharding_types;
}

void ValidateTable(const TableSpec& table) {
  const std::string where = "table '" + table.name + "'";
  if (table.name.empty()) {
    throw std::invalid_argument("a table has an empty name: give every table a unique name");
  }
  if (table.num_embeddings <= 0) {
    throw std::invalid_argument(where + ": num_embeddings is " +
                                std::to_string(table.num_embeddings) + "; it must be > 0");
  }
  if (table.embedding_dim <= 0) {
    throw std::invalid_argument(where + ": embedding_dim is " +
                                std::to_string(table.embedding_dim) + "; it must be > 0");
  }
  if (table.element_bytes <= 0) {
    throw std::invalid_argument(where + ": element_bytes is " +
                                std::to_string(table.element_bytes) +
                                "; it must be > 0 (4 = fp32)");
  }
  if (table.feature_names.empty()) {
    throw std::invalid_argument(where + " has no feature_names; list the features pooled from it");
  }
  const auto& pf = table.constraints.pooling_factors;
  if (!pf.empty() && pf.size() != table.feature_names.size()) {
    throw std::invalid_argument(
        where + " has " + std::to_string(pf.size()) + " pooling factors for " +
        std::to_string(table.feature_names.size()) + " features; give one per feature or none");
  }
  for (double factor : pf) {
    if (!std::isfinite(factor) || factor < 0) {
      throw std::invalid_argument(where + ": pooling factor " + std::to_string(factor) +
                                  " is invalid; it must be a finite number >= 0");
    }
  }
  if (table.constraints.min_partition && *table.constraints.min_partition <= 0) {
    throw std::invalid_argument(where + ": min_partition is " +
                                std::to_string(*table.constraints.min_partition) +
                                "; it must be > 0");
  }
  for (ShardingType type : table.constraints.sharding_types) {
    const int value = static_cast<int>(type);
    if (value < 0 || value > static_cast<int>(ShardingType::kTableRowWise)) {
      throw std::invalid_argument(where + ": a constraint names unknown sharding type " +
                                  std::to_string(value) +
                                  "; valid: " + JoinTypes(AllShardingTypes()));
    }
  }
}

void ValidateTables(const std::vector<TableSpec>& tables) {
  std::unordered_set<std::string> names;
  for (const TableSpec& table : tables) {
    ValidateTable(table);
    if (!names.insert(table.name).second) {
      throw std::invalid_argument("duplicate table name '" + table.name +
                                  "': table names must be unique");
    }
  }
}

void ValidateOptions(const PlannerOptions& options) {
  if (options.batch_size <= 0) {
    throw std::invalid_argument("batch_size is " + std::to_string(options.batch_size) +
                                "; the per-rank batch must be > 0");
  }
  if (options.dense_parameter_bytes < 0) {
    throw std::invalid_argument("dense_parameter_bytes is " +
                                std::to_string(options.dense_parameter_bytes) +
                                "; it must be >= 0");
  }
}

}  // namespace tzrec::planner_detail
