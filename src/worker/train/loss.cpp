// BCE with TorchEasyRec's sample weights (include/tzrec/train/loss.hpp).
#include "tzrec/train/loss.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/ops/binary_cross_entropy.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>

#include <cmath>

namespace tzrec {

at::Tensor BceWithLogitsLoss(const at::Tensor& logits, const at::Tensor& labels,
                             const at::Tensor& weights) {
  if (!weights.defined()) return at::binary_cross_entropy_with_logits(logits, labels);
  const at::Tensor per_sample = at::binary_cross_entropy_with_logits(
      logits, labels, /*weight=*/{}, /*pos_weight=*/{}, at::Reduction::None);
  const at::Tensor w = weights.to(per_sample.scalar_type());
  const at::Tensor mean = w.mean();
  const at::Tensor normalised = at::where(mean == 0, at::zeros_like(w), w / mean);  // div_no_nan
  return (per_sample * normalised).mean();
}

double EvalBceLoss(const at::Tensor& probs, const at::Tensor& labels, const at::Tensor& weights) {
  if (probs.numel() == 0) return NAN;
  const at::Tensor p = probs.clamp(1e-7, 1 - 1e-7);
  if (!weights.defined()) return at::binary_cross_entropy(p, labels).item<double>();
  const at::Tensor per_sample =
      at::binary_cross_entropy(p, labels, /*weight=*/{}, at::Reduction::None).to(at::kDouble);
  const at::Tensor w = weights.to(at::kDouble);
  const double total = w.sum().item<double>();
  if (total == 0) return NAN;
  return (per_sample * w).sum().item<double>() / total;
}

}  // namespace tzrec
