// Unit tests of the output dist's row copies (src/worker/sharding/column_runs.hpp): the forward
// copy places every block column where its run says, and the backward's divided copy is
// bitwise ATen's `grad / divisor` followed by the same placement, for contiguous and broadcast
// gradients and power-of-two and other divisors.
#include "column_runs.hpp"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tzrec {
namespace {

using ::testing::HasSubstr;
using Run = ShardingLayout::ColumnRun;

// Output width 7; block 0 (4 columns) fills output columns 2-3 then 5-6, block 1 (3 columns)
// fills 0-1 then 4 — interleaved, as a column-wise or multi-rank layout is.
const ColumnRuns kRuns = {{{0, 2, 2}, {2, 5, 2}}, {{0, 0, 2}, {2, 4, 1}}};
constexpr std::int64_t kWidth = 7;
constexpr std::int64_t kRows = 300;  // more than one 256-row chunk of the caller's split

std::vector<at::Tensor> Blocks() {
  return {at::empty({kRows, 4}, at::kFloat), at::empty({kRows, 3}, at::kFloat)};
}

std::vector<BlockRows> Pointers(const std::vector<at::Tensor>& blocks) {
  std::vector<BlockRows> out;
  for (const auto& b : blocks) out.push_back({b.data_ptr<float>(), b.size(1)});
  return out;
}

// The reference placement: block q's column src + i is output column dst + i.
at::Tensor Gather(const std::vector<at::Tensor>& blocks) {
  at::Tensor full = at::full({kRows, kWidth}, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t q = 0; q < kRuns.size(); ++q) {
    for (const Run& r : kRuns[q]) {
      full.narrow(1, r.dst, r.len).copy_(blocks[q].narrow(1, r.src, r.len));
    }
  }
  return full;
}

// Values that exercise rounding: normals over a wide range and some subnormals.
at::Tensor Values(std::int64_t rows, std::int64_t cols) {
  at::manual_seed(7);
  at::Tensor g = at::randn({rows, cols}) * at::exp(at::randn({rows, cols}) * 20.0);
  g.view({-1}).narrow(0, 0, 5).fill_(1e-40F);
  return g;
}

TEST(ColumnRuns, ForwardPlacesEveryRunAndRoundTrips) {
  std::vector<at::Tensor> blocks = Blocks();
  blocks[0].copy_(Values(kRows, 4));
  blocks[1].copy_(Values(kRows, 3) + 1.0);
  at::Tensor full = at::empty({kRows, kWidth});
  CopyRowsFromBlocks(kRuns, Pointers(blocks), full.data_ptr<float>(), kWidth, 0, 100);
  CopyRowsFromBlocks(kRuns, Pointers(blocks), full.data_ptr<float>(), kWidth, 100, kRows);
  EXPECT_TRUE(at::equal(full, Gather(blocks)));
  std::vector<at::Tensor> back = Blocks();
  DivideRowsIntoBlocks({full.const_data_ptr<float>(), kWidth, 1}, 1.0F, kRuns, Pointers(back), 0,
                       kRows);
  EXPECT_TRUE(at::equal(back[0], blocks[0]));
  EXPECT_TRUE(at::equal(back[1], blocks[1]));
}

// Divides `grad` (any strides with column stride 0 or 1) into fresh blocks and compares with
// ATen's division, placed by the reference gather.
void ExpectBitwiseDivision(const at::Tensor& grad, float divisor) {
  std::vector<at::Tensor> blocks = Blocks();
  DivideRowsIntoBlocks({grad.const_data_ptr<float>(), grad.stride(0), grad.stride(1)}, divisor,
                       kRuns, Pointers(blocks), 0, kRows);
  const at::Tensor expected = grad / static_cast<double>(divisor);
  const at::Tensor got = Gather(blocks);
  // Bitwise: compare the bit patterns (NaN-free inputs; equal() would also accept -0 == +0).
  EXPECT_TRUE(at::equal(got.view(at::kInt), expected.contiguous().view(at::kInt)))
      << "divisor " << divisor << ", strides " << grad.stride(0) << "," << grad.stride(1)
      << ": max difference " << (got - expected).abs().max().item<float>();
}

TEST(ColumnRuns, DividedCopyIsBitwiseAtenDivision) {
  const at::Tensor grad = Values(kRows, kWidth);
  for (const float divisor : {1.0F, 2.0F, 4.0F, 0.5F, 3.0F, 6.0F, 0.75F, 2.1F}) {
    ExpectBitwiseDivision(grad, divisor);
  }
}

TEST(ColumnRuns, BroadcastGradientsAreReadInPlace) {
  // A sum loss's gradient: one scalar expanded (strides 0, 0); a per-column gradient expanded
  // over rows (strides 0, 1).
  const at::Tensor scalar = at::full({}, 0.3F).expand({kRows, kWidth});
  const at::Tensor per_column = Values(1, kWidth).view({kWidth}).expand({kRows, kWidth});
  ASSERT_EQ(scalar.stride(0), 0);
  ASSERT_EQ(per_column.stride(1), 1);
  for (const float divisor : {1.0F, 2.0F, 3.0F}) {
    ExpectBitwiseDivision(scalar, divisor);
    ExpectBitwiseDivision(per_column, divisor);
  }
}

TEST(ColumnRuns, RefusesOtherStridesAndDivisors) {
  const at::Tensor grad = at::zeros({kRows, kWidth * 2});
  std::vector<at::Tensor> blocks = Blocks();
  const GradRows strided{grad.const_data_ptr<float>(), kWidth * 2, 2};
  EXPECT_THAT([&] { DivideRowsIntoBlocks(strided, 1.0F, kRuns, Pointers(blocks), 0, 1); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("column stride 2")));
  const GradRows rows{grad.const_data_ptr<float>(), kWidth, 1};
  for (const float bad : {0.0F, -2.0F, std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_THAT([&] { DivideRowsIntoBlocks(rows, bad, kRuns, Pointers(blocks), 0, 1); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("divisor")));
  }
}

}  // namespace
}  // namespace tzrec
