// column_runs.hpp — the output dist's row copies between the [B, total_dim] pooled layout of a
// ShardedEmbeddingBagCollection and the pooled all-to-all's q-major blocks ([B, C_q] each, row
// major), along ShardingLayout::a2a_runs. Pure loops over float pointers: no tensors, no
// threads (the caller splits the rows: every row is independent).
// TorchRec does the same with a permute of the received tensor and a split/cat
// (torchrec/distributed/embedding_sharding.py, the pooled output dist); here one pass of copies.
#pragma once

#include <cstdint>
#include <vector>

#include "sharding_layout.hpp"

namespace tzrec {

using ColumnRuns = std::vector<std::vector<ShardingLayout::ColumnRun>>;  // per source rank q

// One all-to-all block: its first row and its row length C_q (floats).
struct BlockRows {
  float* data = nullptr;
  std::int64_t cols = 0;
};

// Forward: rows [begin, end) of `full` (row length `width`) from the blocks.
void CopyRowsFromBlocks(const ColumnRuns& runs, const std::vector<BlockRows>& blocks, float* full,
                        std::int64_t width, std::int64_t begin, std::int64_t end);

// A [B, total_dim] float gradient with any row stride and a column stride of 0 or 1 (elements,
// not bytes): a sum loss's gradient is a broadcast scalar (strides 0, 0).
struct GradRows {
  const float* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;
};

// Backward: rows [begin, end) of `grad`, each element divided by `divisor`, into the blocks.
// Bitwise as ATen's `grad / divisor` (float32: one IEEE division per element; a power-of-two
// divisor multiplies by its exact reciprocal, which rounds the same real value) followed by a
// copy. Throws std::invalid_argument for a column stride other than 0 or 1 or a divisor that is
// 0, negative or not finite.
void DivideRowsIntoBlocks(const GradRows& grad, float divisor, const ColumnRuns& runs,
                          const std::vector<BlockRows>& blocks, std::int64_t begin,
                          std::int64_t end);

}  // namespace tzrec
