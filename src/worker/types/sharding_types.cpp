// ShardingType / EmbeddingOptimizerKind names (include/tzrec/types/sharding_types.hpp).
#include "tzrec/types/sharding_types.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tzrec {

std::string JoinTypes(const std::vector<ShardingType>& types) {
  std::string out;
  for (ShardingType type : types) {
    if (!out.empty()) out += ", ";
    out += ToString(type);
  }
  return out;
}

std::string_view ToString(ShardingType type) {
  switch (type) {
    case ShardingType::kDataParallel:
      return "data_parallel";
    case ShardingType::kTableWise:
      return "table_wise";
    case ShardingType::kColumnWise:
      return "column_wise";
    case ShardingType::kRowWise:
      return "row_wise";
    case ShardingType::kTableRowWise:
      return "table_row_wise";
  }
  return "unknown";
}

ShardingType ParseShardingType(std::string_view text) {
  for (ShardingType type : AllShardingTypes()) {
    if (ToString(type) == text) return type;
  }
  throw std::invalid_argument("unknown sharding type '" + std::string(text) +
                              "'; valid: " + JoinTypes(AllShardingTypes()));
}

const std::vector<ShardingType>& AllShardingTypes() {
  static const std::vector<ShardingType> kAll = {
      ShardingType::kDataParallel, ShardingType::kTableWise, ShardingType::kColumnWise,
      ShardingType::kRowWise, ShardingType::kTableRowWise};
  return kAll;
}

std::string_view ToString(EmbeddingOptimizerKind kind) {
  switch (kind) {
    case EmbeddingOptimizerKind::kSgd:
      return "sgd";
    case EmbeddingOptimizerKind::kAdagrad:
      return "adagrad";
    case EmbeddingOptimizerKind::kRowWiseAdagrad:
      return "rowwise_adagrad";
    case EmbeddingOptimizerKind::kAdam:
      return "adam";
  }
  return "unknown";
}

EmbeddingOptimizerKind ParseEmbeddingOptimizerKind(std::string_view text) {
  for (auto kind : {EmbeddingOptimizerKind::kSgd, EmbeddingOptimizerKind::kAdagrad,
                    EmbeddingOptimizerKind::kRowWiseAdagrad, EmbeddingOptimizerKind::kAdam}) {
    if (ToString(kind) == text) return kind;
  }
  throw std::invalid_argument("unknown embedding optimizer '" + std::string(text) +
                              "'; valid: sgd, adagrad, rowwise_adagrad, adam");
}

}  // namespace tzrec
