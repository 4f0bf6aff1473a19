// Internal to tzrec::core: the fused embedding optimizers' per-row update on CPU float32 (one
// implementation for EmbeddingOptimizerState::Apply and ApplyPooled, so sharded and unsharded
// tables round identically) and the software prefetches that keep many row misses in flight.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>

#include "tzrec/core/embedding.hpp"

namespace tzrec::core_detail {

// Rows updated together: RowWiseAdagrad's sums of squares of a block's rows run interleaved (each
// row still sums its columns in order, so results are those of one row at a time).
inline constexpr std::int64_t kRowBlock = 8;
// How many unique rows ahead of the one being updated the prefetches reach.
inline constexpr std::int64_t kPrefetchRows = 8;

// Prefetches every cache line of [p, p + bytes) (for writing when `write`).
inline void PrefetchBytes(const void* p, std::size_t bytes, bool write) {
  const auto* c = static_cast<const char*>(p);
  constexpr std::size_t kLine = 64;
  for (std::size_t off = 0; off < bytes; off += kLine) {
    if (write) {
      __builtin_prefetch(c + off, 1, 3);
    } else {
      __builtin_prefetch(c + off, 0, 3);
    }
  }
}

// What the per-row update reads: the shard's weight and optimizer state and the step's constants.
struct RowUpdateParams {
  EmbeddingOptimizerKind kind;
  std::int64_t cols;
  float* w;
  float* m1;
  float* m2;
  std::int64_t blocks;
  float lr, eps;
  float l2;          // added to g as l2 * w (SGD, Adagrad, RowWiseAdagrad kL2)
  float adam_wd;     // Adam's decoupled term lr * wd * w
  float correction;  // RowWiseAdagrad kDecoupled: w *= 1 - lr * wd
  float b1, b2, c1, c2;
};

// How weight_decay enters the update (see tzrec/core/embedding.hpp): the L2 factor added to g, and
// whether RowWiseAdagrad scales w by 1 - lr * wd (kDecoupled).
float L2Decay(const EmbeddingOptimizerConfig& c);
bool RowWiseDecoupled(const EmbeddingOptimizerConfig& c);

// The update of one step: `g` is a row's summed gradient (cols floats; weight decay is added here,
// so g is overwritten).
class RowUpdater {
 public:
  RowUpdater(const EmbeddingOptimizerConfig& config, std::int64_t step, at::Tensor& weight,
             at::Tensor& m1, at::Tensor& m2);
  // Updates rows[0, n) (n <= kRowBlock; distinct rows) with gradients g + j * cols.
  void UpdateBlock(const std::int64_t* rows, std::int64_t n, float* g) const;
  // Updates rows[begin, end) (distinct rows), row i with gradient g + i * cols, kRowBlock at a
  // time, prefetching weights and optimizer state kPrefetchRows rows ahead.
  void UpdateRows(const std::int64_t* rows, std::int64_t begin, std::int64_t end, float* g) const;
  // Prefetches the weight and optimizer state of `row` for writing.
  void Prefetch(std::int64_t row) const {
    const auto cols = static_cast<std::size_t>(p_.cols);
    PrefetchBytes(p_.w + row * p_.cols, cols * sizeof(float), true);
    if (p_.m1 == nullptr) return;
    if (p_.kind == EmbeddingOptimizerKind::kRowWiseAdagrad) {
      PrefetchBytes(p_.m1 + row * p_.blocks, static_cast<std::size_t>(p_.blocks) * sizeof(float),
                    true);
      return;
    }
    PrefetchBytes(p_.m1 + row * p_.cols, cols * sizeof(float), true);
    if (p_.m2 != nullptr) PrefetchBytes(p_.m2 + row * p_.cols, cols * sizeof(float), true);
  }

 private:
  RowUpdateParams p_;
};

}  // namespace tzrec::core_detail
