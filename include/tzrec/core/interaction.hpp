// tzrec/core/interaction.hpp — DLRM's dot interaction fused with the concat its over arch reads.
//
// Follows TorchEasyRec's DLRM (tzrec/models/dlrm.py `predict` with tzrec/modules/interaction.py
// InteractionArch): S = [dense; sparse_1 .. sparse_F] is [B, n, d] with n = F + 1, and the
// interaction is the strict upper triangle of S·Sᵀ per sample, pairs in the row-major order of
// torch.triu_indices(n, n, 1): (0,1), (0,2), .., (0,n-1), (1,2), ... The final MLP reads, in
// TorchEasyRec's order (TorchRec's torchrec.models.dlrm puts the dense vector first instead):
//
//   DotInteraction(F, device)(dense, sparse, with_sparse) =
//       cat([triu(S·Sᵀ), dense, flatten(sparse) if with_sparse], dim 1)
//
// Shapes: dense [B, d]; sparse [B, F, d] (any strides, e.g. a view of a KeyedTensor's values);
// result [B, n(n-1)/2 + d (+ F·d)], contiguous, differentiable in dense and sparse.
// Errors: std::invalid_argument naming the shapes when they do not fit.
//
// On CPU float32 without autocast this is one autograd node: the forward is a bmm for S·Sᵀ and one
// pass that writes the triangle between the copies; the backward builds the symmetric gradient G
// (G[i][j] = G[j][i] = dL/d out_(i,j), zero diagonal) and takes one bmm G·S. That replaces
// cat + bmm + advanced indexing + cat (whose backward is index_put_ with accumulate, two bmm and
// the slices' zero-filled gradients). Other devices, dtypes and autocast use the composed ATen
// ops (Reference), with the triangle indices made once at construction on `device`; results agree
// to float rounding. Thread-safety: const methods may run concurrently.
#pragma once

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace tzrec {

class DotInteraction {
 public:
  // num_sparse: F, the sparse features per sample; device: where Reference's indices live.
  DotInteraction(std::int64_t num_sparse, const at::Device& device);

  at::Tensor operator()(const at::Tensor& dense, const at::Tensor& sparse, bool with_sparse) const;
  // The same function from composed ATen ops (cat, bmm, index with the triangle, cat).
  at::Tensor Reference(const at::Tensor& dense, const at::Tensor& sparse, bool with_sparse) const;

 private:
  std::int64_t num_sparse_;
  at::Tensor tri_i_;  // torch.triu_indices(F + 1, F + 1, 1) rows / columns
  at::Tensor tri_j_;
};

}  // namespace tzrec
