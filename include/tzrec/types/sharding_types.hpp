// tzrec/types/sharding_types.hpp — the sharding vocabulary every worker library speaks: sharding
// types, embedding optimizer kinds and the shard of a table (no libtorch, no planner).
//
// Follows torchrec 1.4 `torchrec/distributed/types.py` (ShardingType, ShardMetadata) and FBGEMM's
// EmbOptimType names. The planner (include/tzrec/planner/planner.hpp) decides shards; the
// embedding kernels (include/tzrec/core/embedding.hpp), the config
// (include/tzrec/config/config.hpp) and the checkpoint (include/tzrec/checkpoint/checkpoint.hpp)
// only name them.
//
// Errors: the Parse* functions throw std::invalid_argument naming the valid values.
// Thread-safety: all functions are pure; types are values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tzrec {

// TorchRec ShardingType values, spelled as TorchRec spells them in plans and constraints.
enum class ShardingType { kDataParallel, kTableWise, kColumnWise, kRowWise, kTableRowWise };

std::string_view ToString(ShardingType type);  // "data_parallel", "table_wise", ...
// "table_wise, row_wise": the names of `types`, comma separated, for messages.
std::string JoinTypes(const std::vector<ShardingType>& types);
// Parses TorchRec's spelling; throws std::invalid_argument naming the valid values.
ShardingType ParseShardingType(std::string_view text);
// All five, in the order above.
const std::vector<ShardingType>& AllShardingTypes();

// The embedding optimizer decides the optimizer-state storage multiplier
// (TorchRec: SGD 0, Adam 2, row-wise Adagrad 1/D, Adagrad 1).
enum class EmbeddingOptimizerKind { kSgd, kAdagrad, kRowWiseAdagrad, kAdam };
std::string_view ToString(
    EmbeddingOptimizerKind kind);  // "sgd", "adagrad", "rowwise_adagrad", "adam"
EmbeddingOptimizerKind ParseEmbeddingOptimizerKind(std::string_view text);

// One shard of a table: rows [row_offset, row_offset+rows) × cols [col_offset, col_offset+cols)
// living on `rank`. TorchRec ShardMetadata(shard_offsets, shard_sizes, placement).
struct Shard {
  std::int64_t row_offset = 0;
  std::int64_t col_offset = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int rank = 0;
  double perf_ms = 0;          // estimated Perf.total of this shard
  std::int64_t ddr_bytes = 0;  // estimated storage
  std::int64_t hbm_bytes = 0;
};

}  // namespace tzrec
