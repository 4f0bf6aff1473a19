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

#include <vector>

#include "tzrec/train/model.hpp"  // TaskSpec

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

// The losses of a multi-task model (TorchEasyRec tzrec/models/multi_task_rank.py
// MultiTaskRank.loss, multi_task_loss.cpp): per task t, binary_cross_entropy_<t> =
// BceWithLogitsLoss(logits[:, t], labels[label_index], sample weights if t.sample_weighted) ·
// (t.has_weight ? t.weight : 1) (a weight without sample weights weighs every sample 1); `total` is
// their sum (TorchEasyRec's total loss). logits [B, T] with T = tasks.size(); labels:
// Batch::all_labels; sample_weights: [B] or undefined. InternalError when a task's label or sample
// weight is missing.
struct MultiTaskLoss {
  at::Tensor total;                  // 0-dim
  std::vector<at::Tensor> per_task;  // 0-dim each, in task order
};
MultiTaskLoss MultiTaskBceLoss(const at::Tensor& logits, const std::vector<at::Tensor>& labels,
                               const at::Tensor& sample_weights,
                               const std::vector<TaskSpec>& tasks);
// The eval loss metric of task t: EvalBceLoss(probs, label, t.sample_weighted ? weights : none)
// · (t.has_weight ? t.weight : 1).
double EvalTaskBceLoss(const TaskSpec& task, const at::Tensor& probs, const at::Tensor& labels,
                       const at::Tensor& weights);

}  // namespace tzrec
