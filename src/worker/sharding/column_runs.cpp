// The output dist's row copies (column_runs.hpp).
#include "column_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tzrec {
namespace {

// dst[i] = src[i * step] / divisor for i < n; `inverse` is 1 / divisor when that is exact
// (a power of two), else 0.
void DivideRun(const float* src, std::int64_t step, float divisor, float inverse, float* dst,
               std::int64_t n) {
  if (step == 0) {
    std::fill(dst, dst + n, src[0] / divisor);
  } else if (divisor == 1.0F) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else if (inverse != 0.0F) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] * inverse;
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] / divisor;
  }
}

}  // namespace

void CopyRowsFromBlocks(const ColumnRuns& runs, const std::vector<BlockRows>& blocks, float* full,
                        std::int64_t width, std::int64_t begin, std::int64_t end) {
  for (std::int64_t r = begin; r < end; ++r) {
    float* row = full + r * width;
    for (std::size_t q = 0; q < runs.size(); ++q) {
      const float* brow = blocks[q].data + r * blocks[q].cols;
      for (const auto& run : runs[q]) {
        std::memcpy(row + run.dst, brow + run.src,
                    static_cast<std::size_t>(run.len) * sizeof(float));
      }
    }
  }
}

void DivideRowsIntoBlocks(const GradRows& grad, float divisor, const ColumnRuns& runs,
                          const std::vector<BlockRows>& blocks, std::int64_t begin,
                          std::int64_t end) {
  if (grad.col_stride != 0 && grad.col_stride != 1) {
    throw std::invalid_argument("DivideRowsIntoBlocks: column stride " +
                                std::to_string(grad.col_stride) + " (0 or 1 expected)");
  }
  if (!(divisor > 0.0F) || !std::isfinite(divisor)) {
    throw std::invalid_argument("DivideRowsIntoBlocks: divisor " + std::to_string(divisor) +
                                " (a positive finite number expected)");
  }
  int exponent = 0;
  const float inverse = std::frexp(divisor, &exponent) == 0.5F ? 1.0F / divisor : 0.0F;
  for (std::int64_t r = begin; r < end; ++r) {
    const float* row = grad.data + r * grad.row_stride;
    for (std::size_t q = 0; q < runs.size(); ++q) {
      float* brow = blocks[q].data + r * blocks[q].cols;
      for (const auto& run : runs[q]) {
        DivideRun(row + run.dst * grad.col_stride, grad.col_stride, divisor, inverse,
                  brow + run.src, run.len);
      }
    }
  }
}

}  // namespace tzrec
