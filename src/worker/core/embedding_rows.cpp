// The fused embedding optimizers' per-row update on CPU float32 (see embedding_rows.hpp),
// vectorised with omp simd and an AVX2 clone on x86-64.
#include "embedding_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tzrec::core_detail {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TZREC_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TZREC_SIMD_CLONES
#endif
// Inlined into the clones, so their loops are compiled for each clone's instruction set.
#define TZREC_INLINE inline __attribute__((always_inline))

// w -= lr * g / (sqrt(s) + eps) over columns [begin, end) of one row (RowWiseAdagrad, one
// accumulator `s` for these columns, already holding this step's mean of g*g).
TZREC_INLINE void RowWiseStep(const RowUpdateParams& u, float* w, const float* g,
                              std::int64_t begin, std::int64_t end, float s) {
  const float denom = std::sqrt(s) + u.eps;
  if (u.correction != 1.0F) {
#pragma omp simd
    for (std::int64_t c = begin; c < end; ++c) w[c] = u.correction * w[c] - u.lr * g[c] / denom;
    return;
  }
#pragma omp simd
  for (std::int64_t c = begin; c < end; ++c) w[c] -= u.lr * g[c] / denom;
}

// The per-element loops vectorise (omp simd); on x86-64 an AVX2 clone runs where the CPU has it
// (no FMA: results are identical to the baseline clone, element for element). `g` already has the
// L2 term added.
TZREC_INLINE void UpdateRow(const RowUpdateParams& u, std::int64_t row, const float* g) {
  float* w = u.w + row * u.cols;
  switch (u.kind) {
    case EmbeddingOptimizerKind::kSgd:
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) w[c] -= u.lr * g[c];
      break;
    case EmbeddingOptimizerKind::kAdagrad: {
      float* s = u.m1 + row * u.cols;
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) {
        s[c] += g[c] * g[c];
        w[c] -= u.lr * g[c] / (std::sqrt(s[c]) + u.eps);
      }
      break;
    }
    case EmbeddingOptimizerKind::kRowWiseAdagrad: {
      const std::int64_t width = u.cols / u.blocks;
      for (std::int64_t k = 0; k < u.blocks; ++k) {
        float sq = 0.0F;
        for (std::int64_t c = k * width; c < (k + 1) * width; ++c) sq += g[c] * g[c];
        float& s = u.m1[row * u.blocks + k];
        s += sq / static_cast<float>(width);
        RowWiseStep(u, w, g, k * width, (k + 1) * width, s);
      }
      break;
    }
    case EmbeddingOptimizerKind::kAdam: {
      float* m = u.m1 + row * u.cols;
      float* v = u.m2 + row * u.cols;
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) {
        m[c] = u.b1 * m[c] + (1.0F - u.b1) * g[c];
        v[c] = u.b2 * v[c] + (1.0F - u.b2) * g[c] * g[c];
        w[c] -= u.lr * ((m[c] / u.c1) / (std::sqrt(v[c] / u.c2) + u.eps) + u.adam_wd * w[c]);
      }
      break;
    }
  }
}

// Sums of squares of `n` rows (N = n, or kRowBlock with a constant bound), column by column so the
// rows' dependency chains overlap; each row sums its columns in order, as UpdateRow does.
template <std::int64_t N>
TZREC_INLINE void SumSquares(const float* g, std::int64_t cols, std::int64_t n, float* sq) {
  const std::int64_t rows = N > 0 ? N : n;
  for (std::int64_t j = 0; j < rows; ++j) sq[j] = 0.0F;
  for (std::int64_t c = 0; c < cols; ++c) {
    for (std::int64_t j = 0; j < rows; ++j) sq[j] += g[j * cols + c] * g[j * cols + c];
  }
}

TZREC_SIMD_CLONES void UpdateBlockKernel(const RowUpdateParams& u, const std::int64_t* rows,
                                         std::int64_t n, float* g) {
  if (u.l2 != 0.0F) {
    for (std::int64_t j = 0; j < n; ++j) {
      const float* w = u.w + rows[j] * u.cols;
      float* gj = g + j * u.cols;
#pragma omp simd
      for (std::int64_t c = 0; c < u.cols; ++c) gj[c] += u.l2 * w[c];
    }
  }
  if (u.kind != EmbeddingOptimizerKind::kRowWiseAdagrad || u.blocks != 1) {
    for (std::int64_t j = 0; j < n; ++j) UpdateRow(u, rows[j], g + j * u.cols);
    return;
  }
  float sq[kRowBlock];
  if (n == kRowBlock) {
    SumSquares<kRowBlock>(g, u.cols, n, sq);
  } else {
    SumSquares<0>(g, u.cols, n, sq);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    float& s = u.m1[rows[j]];
    s += sq[j] / static_cast<float>(u.cols);
    RowWiseStep(u, u.w + rows[j] * u.cols, g + j * u.cols, 0, u.cols, s);
  }
}

}  // namespace

float L2Decay(const EmbeddingOptimizerConfig& c) {
  switch (c.kind) {
    case EmbeddingOptimizerKind::kSgd:
    case EmbeddingOptimizerKind::kAdagrad:
      return static_cast<float>(c.weight_decay);
    case EmbeddingOptimizerKind::kRowWiseAdagrad:
      return c.weight_decay_mode == WeightDecayMode::kL2 ? static_cast<float>(c.weight_decay)
                                                         : 0.0F;
    case EmbeddingOptimizerKind::kAdam:
      return 0.0F;
  }
  return 0.0F;
}

bool RowWiseDecoupled(const EmbeddingOptimizerConfig& c) {
  return c.kind == EmbeddingOptimizerKind::kRowWiseAdagrad &&
         c.weight_decay_mode == WeightDecayMode::kDecoupled && c.weight_decay != 0.0;
}

RowUpdater::RowUpdater(const EmbeddingOptimizerConfig& config, std::int64_t step,
                       at::Tensor& weight, at::Tensor& m1, at::Tensor& m2)
    : p_{config.kind,
         weight.size(1),
         weight.data_ptr<float>(),
         m1.defined() ? m1.data_ptr<float>() : nullptr,
         m2.defined() ? m2.data_ptr<float>() : nullptr,
         config.kind == EmbeddingOptimizerKind::kRowWiseAdagrad && m1.defined() && m1.dim() == 2
             ? m1.size(1)
             : 1,
         static_cast<float>(config.lr),
         static_cast<float>(config.eps),
         L2Decay(config),
         config.kind == EmbeddingOptimizerKind::kAdam ? static_cast<float>(config.weight_decay)
                                                      : 0.0F,
         RowWiseDecoupled(config) ? static_cast<float>(1.0 - config.lr * config.weight_decay)
                                  : 1.0F,
         static_cast<float>(config.beta1),
         static_cast<float>(config.beta2),
         static_cast<float>(1.0 - std::pow(config.beta1, static_cast<double>(step))),
         static_cast<float>(1.0 - std::pow(config.beta2, static_cast<double>(step)))} {}

void RowUpdater::UpdateBlock(const std::int64_t* rows, std::int64_t n, float* g) const {
  UpdateBlockKernel(p_, rows, n, g);
}

void RowUpdater::UpdateRows(const std::int64_t* rows, std::int64_t begin, std::int64_t end,
                            float* g) const {
  for (std::int64_t i = begin; i < std::min(begin + kPrefetchRows, end); ++i) Prefetch(rows[i]);
  for (std::int64_t i = begin; i < end; i += kRowBlock) {
    const std::int64_t n = std::min(kRowBlock, end - i);
    for (std::int64_t k = i + kPrefetchRows; k < std::min(i + kPrefetchRows + n, end); ++k) {
      Prefetch(rows[k]);
    }
    UpdateBlock(rows + i, n, g + i * p_.cols);
  }
}

}  // namespace tzrec::core_detail
