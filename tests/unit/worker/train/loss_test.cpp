// BCE with sample weights (include/tzrec/train/loss.hpp) against values computed by hand from
// the formula of TorchEasyRec's RankModel.loss: l_i = max(x, 0) - x*y + log(1 + exp(-|x|)),
// w_i / mean(w) (0 when the mean is 0), mean(l_i * w_i / mean(w)).
#include "tzrec/train/loss.hpp"

#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tzrec {
namespace {

double Bce(double x, double y) {
  return std::max(x, 0.0) - x * y + std::log(1 + std::exp(-std::abs(x)));
}

TEST(Loss, SampleWeightedBceMatchesHandComputed) {
  const std::vector<double> x = {0, 2, -1, 0.5};
  const std::vector<double> y = {1, 0, 1, 0};
  const std::vector<double> w = {1, 2, 3, 0};
  const auto logits = at::tensor(std::vector<float>(x.begin(), x.end()));
  const auto labels = at::tensor(std::vector<float>(y.begin(), y.end()));
  const auto weights = at::tensor(std::vector<float>(w.begin(), w.end()));
  double mean_w = 0;
  for (double v : w) mean_w += v / 4;
  double weighted = 0;
  double plain = 0;
  double eval_num = 0;
  double eval_den = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    weighted += Bce(x[i], y[i]) * w[i] / mean_w / 4;
    plain += Bce(x[i], y[i]) / 4;
    eval_num += Bce(x[i], y[i]) * w[i];
    eval_den += w[i];
  }
  EXPECT_NEAR(BceWithLogitsLoss(logits, labels, weights).item<double>(), weighted, 1e-6);
  EXPECT_NEAR(BceWithLogitsLoss(logits, labels, at::Tensor()).item<double>(), plain, 1e-6);
  // All weights 0: div_no_nan makes every weight 0, the loss 0.
  EXPECT_EQ(BceWithLogitsLoss(logits, labels, at::zeros({4})).item<double>(), 0.0);
  // The gradient flows through the weighted loss: d/dx_i = (sigmoid(x_i) - y_i) * w_i/mean/B.
  auto x_grad = logits.clone().requires_grad_(true);
  BceWithLogitsLoss(x_grad, labels, weights).backward();
  for (std::size_t i = 0; i < 4; ++i) {
    const double s = 1 / (1 + std::exp(-x[i]));
    EXPECT_NEAR(x_grad.grad()[static_cast<std::int64_t>(i)].item<double>(),
                (s - y[i]) * w[i] / mean_w / 4, 1e-6);
  }
  // Eval: sum(w * l) / sum(w) over all samples, from probabilities.
  const auto probs = at::sigmoid(logits);
  EXPECT_NEAR(EvalBceLoss(probs, labels, weights), eval_num / eval_den, 1e-5);
  EXPECT_NEAR(EvalBceLoss(probs, labels, at::Tensor()), plain, 1e-5);
  EXPECT_TRUE(std::isnan(EvalBceLoss(probs, labels, at::zeros({4}))));
  EXPECT_TRUE(std::isnan(EvalBceLoss(at::zeros({0}), at::zeros({0}), at::Tensor())));
}

// MultiTaskRank.loss (TorchEasyRec tzrec/models/multi_task_rank.py): task "a" unweighted (mean
// BCE), "b" weight 0.5 with sample weights (mean(l·w/mean(w))·0.5), "c" weight 2 without sample
// weights (mean(l)·2, has_weight via weight alone); total = their sum. Eval: weight · weighted
// mean.
TEST(MultiTaskLoss, WeightsAndSampleWeights) {
  const std::vector<std::vector<double>> x = {{0, 1, -2}, {2, -1, 0.5}, {-1, 0.3, 1}, {0.5, 2, -1}};
  const std::vector<std::vector<double>> y = {{1, 0, 1, 0}, {0, 0, 1, 1}};  // labels l0, l1
  const std::vector<double> w = {1, 2, 3, 0};
  std::vector<float> flat;
  for (const auto& row : x) flat.insert(flat.end(), row.begin(), row.end());
  const at::Tensor logits = at::tensor(flat).reshape({4, 3}).set_requires_grad(true);
  const std::vector<at::Tensor> labels = {at::tensor(std::vector<float>(y[0].begin(), y[0].end())),
                                          at::tensor(std::vector<float>(y[1].begin(), y[1].end()))};
  const at::Tensor weights = at::tensor(std::vector<float>(w.begin(), w.end()));
  std::vector<TaskSpec> tasks(3);
  tasks[0].tower_name = "a";
  tasks[0].label_index = 0;
  tasks[1].tower_name = "b";
  tasks[1].label_index = 1;
  tasks[1].has_weight = tasks[1].sample_weighted = true;
  tasks[1].weight = 0.5;
  tasks[2].tower_name = "c";
  tasks[2].label_index = 0;
  tasks[2].has_weight = true;
  tasks[2].weight = 2;
  const double mean_w = 1.5;
  double a = 0, b = 0, c = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    a += Bce(x[i][0], y[0][i]) / 4;
    b += Bce(x[i][1], y[1][i]) * w[i] / mean_w / 4 * 0.5;
    c += Bce(x[i][2], y[0][i]) / 4 * 2;
  }
  const MultiTaskLoss loss = MultiTaskBceLoss(logits, labels, weights, tasks);
  ASSERT_EQ(loss.per_task.size(), 3U);
  EXPECT_NEAR(loss.per_task[0].item<double>(), a, 1e-6);
  EXPECT_NEAR(loss.per_task[1].item<double>(), b, 1e-6);
  EXPECT_NEAR(loss.per_task[2].item<double>(), c, 1e-6);
  EXPECT_NEAR(loss.total.item<double>(), a + b + c, 1e-6);
  // Eval loss metric of "b": 0.5 · Σ w·l / Σ w over probabilities.
  const at::Tensor probs = at::sigmoid(logits.detach().select(1, 1));
  double num = 0;
  for (std::size_t i = 0; i < 4; ++i) num += Bce(x[i][1], y[1][i]) * w[i];
  EXPECT_NEAR(EvalTaskBceLoss(tasks[1], probs, labels[1], weights), 0.5 * num / 6, 1e-5);
  EXPECT_NEAR(
      EvalTaskBceLoss(tasks[0], at::sigmoid(logits.detach().select(1, 0)), labels[0], weights), a,
      1e-5);
}

}  // namespace
}  // namespace tzrec
