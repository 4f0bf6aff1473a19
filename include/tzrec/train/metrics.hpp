// tzrec/train/metrics.hpp — the eval metrics of tzrec_train, as TorchEasyRec computes them
// (tzrec/models/rank_model.py _init_metric_impl; tzrec/protos/metric.proto).
//
// metric.proto `AUC { thresholds = 200 }` becomes torchmetrics.AUROC(task="binary",
// thresholds=200): a BINNED AUC over thresholds = linspace(0, 1, 200) (float32), not the exact
// one. Auc(scores, labels, thresholds) reproduces it: scores outside [0, 1] are first mapped by a
// sigmoid (as torchmetrics does when any pred lies outside [0, 1]); for every threshold t the
// counts TP/FP/FN/TN of "score >= t"; tpr = TP/(TP+FN), fpr = FP/(FP+TN) (0 when the denominator is
// 0); the curve runs from the highest threshold to the lowest and the AUC is its trapezoid area
// (float32, torch.trapezoid). The curve only has the T threshold points: with scores equal to 1.0
// it does not start at (0, 0). One class only gives 0 (tpr or fpr all 0), as torchmetrics.
// thresholds = 0 gives the exact AUC below.
//
// GroupedAUC (tzrec/metrics/grouped_auc.py) is the UNWEIGHTED mean, over the groups of
// `grouping_key`, of each group's exact AUC (torchmetrics _binary_auroc_compute, thresholds None).
// A group is skipped unless the mean of its labels is strictly between 0 and 1 (both classes
// present). No group left: NaN (TorchEasyRec divides 0 by 0). Multi-rank: TorchEasyRec sends each
// group to one rank and sums (sum of AUCs, count) over ranks, which equals this mean over the
// gathered samples.
//
// Inputs are 1-D tensors of equal length on any device (copied to the CPU); labels are 0/1 (any
// dtype, > 0.5 is positive). Pure functions; thread-safe.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>

namespace tzrec {

// Exact ROC AUC (ties get half credit, as sklearn and torchmetrics' exact curve): the Mann-Whitney
// U statistic. 0.5 when one class is absent (unlike torchmetrics' 0; GroupedAuc skips such groups).
double Auc(const at::Tensor& scores, const at::Tensor& labels);
// torchmetrics BinaryAUROC(thresholds=T) (see above); T = 0: Auc(scores, labels). T = 1 or < 0:
// ConfigError (torchmetrics needs T > 1).
double Auc(const at::Tensor& scores, const at::Tensor& labels, std::int64_t thresholds);
// TorchEasyRec's GroupedAUC: the unweighted mean of exact per-group AUCs over the groups (int64
// ids) that hold both classes; NaN when none does.
double GroupedAuc(const at::Tensor& scores, const at::Tensor& labels, const at::Tensor& groups);

}  // namespace tzrec
