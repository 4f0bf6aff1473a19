// The fill and input rules of the golden generators (golden_common.py fill() and rule()), shared
// by rank_modules_golden_test.cpp and sequence_golden_test.cpp.
#pragma once

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/sin.h>

#include <cstdint>

namespace tzrec::golden {

// Parameter k (named_parameters order) shaped like `like`: 0.5 sin(0.7 e + 1.3 k + 0.1).
inline at::Tensor Fill(std::int64_t k, const at::Tensor& like) {
  const at::Tensor e = at::arange(like.numel(), at::kDouble);
  return (0.5 * at::sin(0.7 * e + 1.3 * static_cast<double>(k) + 0.1))
      .to(at::kFloat)
      .reshape(like.sizes());
}

// 2 f(scale e) over the flat index e (f = sin or cos), float32 of `shape`.
inline at::Tensor Rule(at::IntArrayRef shape, bool sine, double scale) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  const at::Tensor e = at::arange(n, at::kDouble) * scale;
  return (2 * (sine ? at::sin(e) : at::cos(e))).to(at::kFloat).reshape(shape);
}

}  // namespace tzrec::golden
