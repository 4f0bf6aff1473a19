// tzrun/worker/interaction.hpp — DLRM's dot interaction fused with the concat its over arch reads.
//
// Follows TorchRec's torchrec.models.dlrm.InteractionArch (and TorchEasyRec's
// tzrec/modules/interaction.py InteractionArch): S = [dense; sparse_1 .. sparse_F] is [B, n, d]
// with n = F + 1, and the interaction is the strict upper triangle of S·Sᵀ per sample, pairs in
// the row-major order of torch.triu_indices(n, n, 1): (0,1), (0,2), .., (0,n-1), (1,2), ...
//
//   DotInteraction(dense, sparse, with_sparse) =
//       cat([dense, triu(S·Sᵀ), flatten(sparse) if with_sparse], dim 1)
//
// Shapes: dense [B, d]; sparse [B, F, d] (any strides, e.g. a view of a KeyedTensor's values);
// result [B, d + n(n-1)/2 (+ F·d)], contiguous, differentiable in dense and sparse.
// Errors: std::invalid_argument naming the shapes when they do not fit.
//
// On CPU float32 without autocast this is one autograd node: the forward is a bmm for S·Sᵀ and one
// pass that writes the triangle between the copies; the backward builds the symmetric gradient G
// (G[i][j] = G[j][i] = dL/d out_(i,j), zero diagonal) and takes one bmm G·S. That replaces
// cat + bmm + advanced indexing + cat (whose backward is index_put_ with accumulate, two bmm and
// the slices' zero-filled gradients). Other devices, dtypes and autocast use the composed ATen
// ops (DotInteractionReference); results agree to float rounding. Thread-safety: a pure function.
#pragma once

#include <ATen/Tensor.h>

namespace tzrec {

at::Tensor DotInteraction(const at::Tensor& dense, const at::Tensor& sparse, bool with_sparse);

// The same function from composed ATen ops (cat, bmm, index with triu_indices, cat).
at::Tensor DotInteractionReference(const at::Tensor& dense, const at::Tensor& sparse,
                                   bool with_sparse);

}  // namespace tzrec
