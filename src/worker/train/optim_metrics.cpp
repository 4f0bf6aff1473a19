// The AUC metrics (include/tzrec/train/metrics.hpp): exact, binned as torchmetrics, grouped as
// TorchEasyRec.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/trapezoid.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "tzrec/error.hpp"
#include "tzrec/train/metrics.hpp"

namespace tzrec {

double Auc(const at::Tensor& scores_in, const at::Tensor& labels_in) {
  const at::Tensor scores = scores_in.detach().to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor labels = labels_in.detach().to(at::kCPU, at::kDouble).contiguous();
  const std::int64_t n = scores.numel();
  const auto order =
      std::get<1>(scores.sort(/*stable=*/std::optional<bool>(true), 0, /*descending=*/false));
  const auto* s = scores.data_ptr<double>();
  const auto* y = labels.data_ptr<double>();
  const auto* o = order.data_ptr<std::int64_t>();
  // Rank-sum (Mann-Whitney U) with average ranks for ties.
  double pos = 0;
  double rank_sum = 0;
  std::int64_t i = 0;
  while (i < n) {
    std::int64_t j = i;
    while (j + 1 < n && s[o[j + 1]] == s[o[i]]) ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::int64_t k = i; k <= j; ++k) {
      if (y[o[k]] > 0.5) {
        pos += 1;
        rank_sum += avg_rank;
      }
    }
    i = j + 1;
  }
  const double neg = static_cast<double>(n) - pos;
  if (pos == 0 || neg == 0) return 0.5;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

double GroupedAuc(const at::Tensor& scores, const at::Tensor& labels, const at::Tensor& groups) {
  const at::Tensor g = groups.detach().to(at::kCPU, at::kLong).contiguous();
  const auto order =
      std::get<1>(g.sort(/*stable=*/std::optional<bool>(true), 0, /*descending=*/false));
  const at::Tensor gs = g.index_select(0, order);
  const at::Tensor ss = scores.detach().to(at::kCPU).index_select(0, order);
  const at::Tensor ls = labels.detach().to(at::kCPU, at::kDouble).index_select(0, order);
  const auto* gp = gs.data_ptr<std::int64_t>();
  const auto* lp = ls.data_ptr<double>();
  const std::int64_t n = gs.numel();
  double sum = 0;
  std::int64_t count = 0;
  std::int64_t i = 0;
  while (i < n) {
    std::int64_t j = i;
    double positives = 0;
    while (j < n && gp[j] == gp[i]) positives += lp[j++] > 0.5 ? 1 : 0;
    if (positives > 0 && positives < static_cast<double>(j - i)) {  // 0 < mean label < 1
      sum += Auc(ss.narrow(0, i, j - i), ls.narrow(0, i, j - i));
      ++count;
    }
    i = j;
  }
  return count > 0 ? sum / static_cast<double>(count) : std::nan("");
}

double Auc(const at::Tensor& scores_in, const at::Tensor& labels_in, std::int64_t thresholds) {
  if (thresholds == 0) return Auc(scores_in, labels_in);
  if (thresholds < 2) {
    throw ConfigError("AUC thresholds must be 0 (exact) or > 1 (torchmetrics bins), got " +
                      std::to_string(thresholds) + "; fix the metric's auc.thresholds");
  }
  at::Tensor scores = scores_in.detach().to(at::kCPU, at::kFloat).reshape({-1});
  const at::Tensor positive = labels_in.detach().to(at::kCPU, at::kDouble).reshape({-1}) > 0.5;
  if (scores.numel() > 0 && !((scores >= 0) & (scores <= 1)).all().item<bool>()) {
    scores = scores.sigmoid();
  }
  const at::Tensor t = at::linspace(0, 1, thresholds, at::kFloat);
  const at::Tensor predicted = scores.unsqueeze(1) >= t.unsqueeze(0);  // [N, T]
  const at::Tensor pos = positive.unsqueeze(1);
  const at::Tensor tp = (predicted & pos).sum(0).to(at::kFloat);
  const at::Tensor fp = (predicted & pos.logical_not()).sum(0).to(at::kFloat);
  const at::Tensor fn = (predicted.logical_not() & pos).sum(0).to(at::kFloat);
  const at::Tensor tn = (predicted.logical_not() & pos.logical_not()).sum(0).to(at::kFloat);
  const auto safe_divide = [](const at::Tensor& num, const at::Tensor& den) {
    return at::where(den == 0, at::zeros_like(num), num / den);
  };
  const at::Tensor tpr = safe_divide(tp, tp + fn).flip({0});
  const at::Tensor fpr = safe_divide(fp, fp + tn).flip({0});
  return at::trapezoid(tpr, fpr).item<double>();
}

}  // namespace tzrec
