// Internal: the pure parts of a checkpoint — what every rank describes, how the ranks'
// descriptions merge into the metadata (who writes which shard), and the geometry of a resharding
// restore (intersections of row/column ranges, optimizer-state column blocks). No I/O, no
// collectives; unit-tested in tests/unit/worker/checkpoint/layout_test.cpp.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "files.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"

namespace tzrec::checkpoint_detail {

std::string ShapeString(at::IntArrayRef sizes);  // "[2, 3]"
std::vector<std::int64_t> ShapeVector(const at::Tensor& t);
// "<table>/<what>/<row_off>_<col_off>": the record key of a shard's tensor in a .pt file.
std::string ShardKey(const std::string& table, const std::string& what, const Shard& s);
// "table 't' shard [r, c] + [rows, cols]" for messages.
std::string ShardName(const std::string& table, const Shard& s);

// `text` as JSON ("" counts as {}); throws CheckpointError "<what> is not valid JSON ...".
Json ParseJsonOr(const std::string& text, const std::string& what);
// Cursors: objects and arrays are stored as JSON, anything else as a JSON string.
Json CursorToJson(const std::string& cursor);
std::string CursorFromJson(const Json& j);

// --- save: descriptors -------------------------------------------------------------------------

// One shard of one rank as the ranks agreed on it.
struct ShardDesc {
  std::string table;
  std::int64_t table_rows = 0, table_cols = 0;
  Shard shard;
  std::string dtype;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> states;  // name, shape
  int owner = 0;         // process rank that holds it (and writes it when `written`)
  bool written = false;  // the lowest rank holding these [offsets, sizes] writes them
};

// This rank's description: {"step", "shards": [...], "cursor"} and, on rank 0, "extra",
// "plan_hash", "dense", "dense_optimizer". Throws CheckpointError for a shard outside its table,
// a weight of the wrong shape, an unnamed or undefined tensor, extra/plan JSON that does not parse.
Json DescribeLocal(const TrainState& local, int rank);

// The same on every rank (descs[r] is rank r's DescribeLocal): checks the ranks agree on the step
// and every table's shape, and decides which rank writes which shard. Throws CheckpointError when
// they disagree, shards overlap without being replicas, or a table's shards do not cover it.
std::vector<ShardDesc> MergeDescriptors(const std::vector<Json>& descs);

// metadata.json of a checkpoint (checkpoint.hpp "Layout"): `files` lists every written file.
Json BuildMetadata(const std::vector<ShardDesc>& all, const std::vector<Json>& descs,
                   std::int64_t step, int world_size, bool has_plan, const Json& files);

// --- restore: geometry -------------------------------------------------------------------------

struct Interval {
  std::int64_t begin = 0, end = 0;
  [[nodiscard]] std::int64_t Size() const { return end > begin ? end - begin : 0; }
};
// [a0, a0+an) ∩ [b0, b0+bn) (end <= begin when disjoint).
Interval Intersect(std::int64_t a0, std::int64_t an, std::int64_t b0, std::int64_t bn);

// The cells a target shard and a saved shard of one table share, in global (row, col) offsets.
struct Overlap {
  Interval rows, cols;
  [[nodiscard]] bool Empty() const { return rows.Size() == 0 || cols.Size() == 0; }
  [[nodiscard]] std::int64_t Cells() const { return rows.Size() * cols.Size(); }
};
Overlap OverlapOf(const Shard& target, const Shard& saved);

// A rectangle copied from a saved tensor into a target tensor, both seen as [rows, units].
struct Slice {
  std::int64_t src_row = 0, src_col = 0;  // in the saved shard's tensor
  std::int64_t dst_row = 0, dst_col = 0;  // in the target shard's tensor
  std::int64_t rows = 0, cols = 0;
};
// The weight slice of `o` (units: columns).
Slice WeightSlice(const Shard& target, const Shard& saved, const Overlap& o);
// The optimizer-state slice of `o` in column blocks of `width` columns; nullopt when the overlap's
// columns are not whole blocks at both shards.
std::optional<Slice> BlockSlice(const Shard& target, const Shard& saved, const Overlap& o,
                                std::int64_t width);

// A state tensor as [rows, blocks] with block width cols/blocks ([rows] = one block).
struct BlockLayout {
  std::int64_t blocks = 0, width = 0;
  bool one_dim = false;
};
// nullopt when `shape` is not [rows] or [rows, blocks] with blocks dividing cols.
std::optional<BlockLayout> LayoutOf(const std::vector<std::int64_t>& shape, std::int64_t rows,
                                    std::int64_t cols);

}  // namespace tzrec::checkpoint_detail
