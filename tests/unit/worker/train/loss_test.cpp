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

}  // namespace
}  // namespace tzrec
