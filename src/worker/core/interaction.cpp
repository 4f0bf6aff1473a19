// DLRM dot interaction, fused with its concat (see include/tzrec/core/interaction.hpp).
#include "tzrec/core/interaction.hpp"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "shape.hpp"

namespace tzrec {
namespace {

using core_detail::Shape;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Dims {
  std::int64_t b, d, f, n, pairs, width;
};

Dims Check(const at::Tensor& dense, const at::Tensor& sparse, bool with_sparse,
           std::int64_t num_sparse) {
  if (!dense.defined() || !sparse.defined() || dense.dim() != 2 || sparse.dim() != 3 ||
      sparse.size(0) != dense.size(0) || sparse.size(2) != dense.size(1) ||
      sparse.size(1) != num_sparse) {
    throw std::invalid_argument(
        "DotInteraction: dense must be [B, d] and sparse [B, F=" + std::to_string(num_sparse) +
        ", d], got " + Shape(dense) + " and " + Shape(sparse) +
        "; the dense arch's last layer must have the embedding dim d");
  }
  Dims s{};
  s.b = dense.size(0);
  s.d = dense.size(1);
  s.f = sparse.size(1);
  s.n = s.f + 1;
  s.pairs = s.n * (s.n - 1) / 2;
  s.width = s.d + s.pairs + (with_sparse ? s.f * s.d : 0);
  return s;
}

// Samples per parallel_for task: the per-sample work is about n²·d flops.
constexpr std::int64_t kGrain = 64;

// Copies `len` floats, four at a time: the pieces are short (n-1-i floats of a triangle row, d
// floats), below a memmove call's cost, and -O2 does not vectorize a plain loop of unknown trip
// count; a fixed 16-byte memcpy is one unaligned load and store.
inline float* CopyFloats(float* dst, const float* src, std::int64_t len) {
  std::int64_t k = 0;
  for (; k + 4 <= len; k += 4) std::memcpy(dst + k, src + k, 4 * sizeof(float));
  for (; k < len; ++k) dst[k] = src[k];
  return dst + len;
}

struct FusedDotInteraction : public torch::autograd::Function<FusedDotInteraction> {
  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dense, const at::Tensor& sparse,
                            bool with_sparse) {
    const Dims s = Check(dense, sparse, with_sparse, sparse.size(1));
    at::Tensor stacked = at::empty({s.b, s.n, s.d}, dense.options());  // S
    stacked.select(1, 0).copy_(dense);
    stacked.narrow(1, 1, s.f).copy_(sparse);
    const at::Tensor gram = at::bmm(stacked, stacked.transpose(1, 2)).contiguous();  // [B, n, n]
    at::Tensor out = at::empty({s.b, s.width}, dense.options());
    const float* sp = stacked.const_data_ptr<float>();
    const float* gp = gram.const_data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, s.b, kGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const float* sb = sp + b * s.n * s.d;
        const float* gb = gp + b * s.n * s.n;
        float* ob = op + b * s.width;
        float* t = ob;
        for (std::int64_t i = 0; i + 1 < s.n; ++i) {
          t = CopyFloats(t, gb + i * s.n + i + 1, s.n - 1 - i);
        }
        CopyFloats(t, sb, with_sparse ? s.n * s.d : s.d);  // x, then the embeddings
      }
    });
    ctx->save_for_backward({stacked});
    ctx->saved_data["with_sparse"] = with_sparse;
    return out;
  }

  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor stacked = ctx->get_saved_variables()[0];
    const bool with_sparse = ctx->saved_data["with_sparse"].toBool();
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor go = grads[0].to(at::kFloat).contiguous();
    const std::int64_t b_count = stacked.size(0);
    const std::int64_t n = stacked.size(1);
    const std::int64_t d = stacked.size(2);
    const std::int64_t f = n - 1;
    const std::int64_t pairs = n * (n - 1) / 2;
    const std::int64_t width = go.size(1);
    at::Tensor sym = at::empty({b_count, n, n}, stacked.options());  // G + Gᵀ
    const float* gop = go.const_data_ptr<float>();
    float* symp = sym.data_ptr<float>();
    at::parallel_for(0, b_count, kGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const float* t = gop + b * width;
        float* g = symp + b * n * n;
        for (std::int64_t i = 0; i < n; ++i) {
          g[i * n + i] = 0.0F;
          for (std::int64_t j = i + 1; j < n; ++j, ++t) {
            g[i * n + j] = *t;
            g[j * n + i] = *t;
          }
        }
      }
    });
    at::Tensor grad_stacked = at::bmm(sym, stacked);  // [B, n, d], contiguous
    float* gsp = grad_stacked.data_ptr<float>();
    at::parallel_for(0, b_count, kGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const float* row = gop + b * width + pairs;  // after the triangle
        float* gs = gsp + b * n * d;
        for (std::int64_t c = 0; c < d; ++c) gs[c] += row[c];  // the dense copy
        if (with_sparse) {
          const float* e = row + d;
          for (std::int64_t c = 0; c < f * d; ++c) gs[d + c] += e[c];
        }
      }
    });
    return {grad_stacked.select(1, 0), grad_stacked.narrow(1, 1, f), at::Tensor()};
  }
};

}  // namespace

DotInteraction::DotInteraction(std::int64_t num_sparse, const at::Device& device)
    : num_sparse_(num_sparse) {
  const at::Tensor idx =
      at::triu_indices(num_sparse + 1, num_sparse + 1, 1, at::TensorOptions().device(device));
  tri_i_ = idx[0];
  tri_j_ = idx[1];
}

at::Tensor DotInteraction::Reference(const at::Tensor& dense, const at::Tensor& sparse,
                                     bool with_sparse) const {
  const Dims s = Check(dense, sparse, with_sparse, num_sparse_);
  const at::Tensor stacked = at::cat({dense.unsqueeze(1), sparse}, 1);  // [B, n, d]
  const at::Tensor gram = at::bmm(stacked, stacked.transpose(1, 2));    // [B, n, n]
  std::vector<at::Tensor> parts{
      gram.index({at::indexing::Slice(), tri_i_.to(dense.device()), tri_j_.to(dense.device())}),
      dense};
  if (with_sparse) parts.push_back(sparse.reshape({s.b, s.f * s.d}));
  return at::cat(parts, 1);
}

at::Tensor DotInteraction::operator()(const at::Tensor& dense, const at::Tensor& sparse,
                                      bool with_sparse) const {
  Check(dense, sparse, with_sparse, num_sparse_);
  const bool fused = dense.device().is_cpu() && sparse.device().is_cpu() &&
                     dense.scalar_type() == at::kFloat && sparse.scalar_type() == at::kFloat &&
                     !at::autocast::is_autocast_enabled(at::kCPU);
  if (!fused) return Reference(dense, sparse, with_sparse);
  return FusedDotInteraction::apply(dense, sparse, with_sparse);
}

}  // namespace tzrec
