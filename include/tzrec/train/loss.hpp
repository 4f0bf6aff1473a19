// tzrec/train/loss.hpp — the binary cross-entropy loss of tzrec_train's rank models, with
// TorchEasyRec's sample weights (tzrec/models/rank_model.py RankModel.loss: the weight column
// data_config.sample_weight_fields[0] is divided by its batch mean — tzrec/modules/utils.py
// div_no_nan, 0 where the mean is 0 — and the loss is mean(loss_i * w_i)). TorchEasyRec's AUC
// metrics are not weighted, and neither are ours.
//
// Shapes: logits / probs / labels / weights float [B] on one device; `weights` undefined: no
// weights. Returns a 0-dim float tensor (differentiable in the logits). B == 0: NaN, as
// torch's mean of nothing. Thread-safety: pure functions.
#pragma once

#include <ATen/core/Tensor.h>

namespace tzrec {

// Training loss of one batch: mean(BCEWithLogits(logits, labels)) without weights, else
// mean(BCEWithLogits(logits, labels) * weights / mean(weights)).
at::Tensor BceWithLogitsLoss(const at::Tensor& logits, const at::Tensor& labels,
                             const at::Tensor& weights);

// Eval loss over all eval samples from probabilities (clamped to [1e-7, 1 - 1e-7]): the mean BCE,
// with weights sum(w_i * loss_i) / sum(w_i) (TorchEasyRec averages the per-batch weighted means
// instead; the two agree when every batch has the same weight sum). Returns a double; NaN for
// no samples or a zero weight sum.
double EvalBceLoss(const at::Tensor& probs, const at::Tensor& labels, const at::Tensor& weights);

}  // namespace tzrec
