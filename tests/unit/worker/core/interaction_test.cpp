// DotInteraction (fused autograd node) against the composed-ops reference and a hand-computed
// example: values, gradients, strided inputs, with and without the flattened embeddings.
#include "tzrec/core/interaction.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace tzrec {
namespace {

void ExpectClose(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_TRUE(at::allclose(a, b, tol, tol))
      << "max abs diff " << (a - b).abs().max().item<double>();
}

TEST(DotInteraction, HandComputedExample) {
  // n = 3 (dense + 2 features), d = 2: pairs (0,1), (0,2), (1,2).
  const at::Tensor dense = at::tensor({1.0F, 2.0F}).view({1, 2});
  const at::Tensor sparse = at::tensor({3.0F, 4.0F, 5.0F, 6.0F}).view({1, 2, 2});
  const DotInteraction interaction(2, at::kCPU);
  const at::Tensor out = interaction(dense, sparse, /*with_sparse=*/true);
  const at::Tensor want =
      at::tensor({11.0F, 17.0F, 39.0F, 1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F}).view({1, 9});
  ExpectClose(out, want, 0);
  ExpectClose(interaction(dense, sparse, false), want.narrow(1, 0, 5), 0);
}

class DotInteractionGrad : public ::testing::TestWithParam<bool> {};

TEST_P(DotInteractionGrad, MatchesComposedOps) {
  const bool with_sparse = GetParam();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const std::int64_t b = 130;  // more than one parallel_for grain
  const std::int64_t f = 26;
  const std::int64_t d = 16;
  // The sparse input as the model passes it: a strided view of a wider KeyedTensor values block.
  const at::Tensor values = at::randn({b, 8 + f * d}, gen);
  const at::Tensor dense_base = at::randn({b, d}, gen);
  const at::Tensor upstream = at::randn({b, d + (f + 1) * f / 2 + (with_sparse ? f * d : 0)}, gen);

  auto run = [&](bool fused) {
    at::Tensor v = values.clone().set_requires_grad(true);
    at::Tensor x = dense_base.clone().set_requires_grad(true);
    const at::Tensor sparse = v.narrow(1, 8, f * d).view({b, f, d});
    const DotInteraction interaction(f, at::kCPU);
    const at::Tensor out = fused ? interaction(x * 2, sparse, with_sparse)
                                 : interaction.Reference(x * 2, sparse, with_sparse);
    (out * upstream).sum().backward();
    return std::make_tuple(out.detach(), x.grad(), v.grad());
  };
  const auto [out_f, gx_f, gv_f] = run(true);
  const auto [out_r, gx_r, gv_r] = run(false);
  EXPECT_TRUE(out_f.is_contiguous());
  ExpectClose(out_f, out_r);
  ExpectClose(gx_f, gx_r, 1e-4);
  ExpectClose(gv_f, gv_r, 1e-4);
  EXPECT_EQ(gv_f.narrow(1, 0, 8).abs().sum().item<float>(), 0.0F);  // columns outside the view
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutSparse, DotInteractionGrad, ::testing::Bool());

TEST(DotInteraction, ShapeMismatchNamesBothShapes) {
  try {
    DotInteraction(3, at::kCPU)(at::zeros({4, 8}), at::zeros({4, 3, 16}), false);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 8]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 3, 16]"), std::string::npos) << e.what();
  }
}

TEST(DotInteraction, NonFloatTakesTheComposedPath) {
  const at::Tensor dense = at::randn({5, 4}).to(at::kDouble);
  const at::Tensor sparse = at::randn({5, 3, 4}).to(at::kDouble);
  const DotInteraction interaction(3, at::kCPU);
  ExpectClose(interaction(dense, sparse, true), interaction.Reference(dense, sparse, true), 1e-12);
}

}  // namespace
}  // namespace tzrec
