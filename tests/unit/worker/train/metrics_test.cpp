// Auc and GroupedAuc (src/worker/train/optim_metrics.cpp) against hand-computed values: the
// Mann-Whitney pair count, ties worth half a pair, single-class inputs, torchmetrics' binned curve
// (thresholds = linspace(0, 1, T), trapezoid area) and TorchEasyRec's unweighted group mean.
#include "tzrec/train/metrics.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

at::Tensor Floats(const std::vector<float>& v) {
  return at::tensor(v, at::kFloat);
}
at::Tensor Longs(const std::vector<std::int64_t>& v) {
  return at::tensor(v, at::kLong);
}

TEST(Auc, CountsOrderedPairs) {
  // Positives 0.35, 0.8 vs negatives 0.1, 0.4: 3 of 4 pairs ordered.
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.4F, 0.35F, 0.8F}), Floats({0, 0, 1, 1})), 0.75);
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.2F, 0.8F, 0.9F}), Floats({0, 0, 1, 1})), 1.0);
  EXPECT_DOUBLE_EQ(Auc(Floats({0.9F, 0.8F, 0.2F, 0.1F}), Floats({0, 0, 1, 1})), 0.0);
}

TEST(Auc, TiesCountHalf) {
  // Pairs (pos, neg): (0.5, 0.2) 1, (0.5, 0.5) 1/2, (0.9, 0.2) 1, (0.9, 0.5) 1: 3.5 / 4.
  EXPECT_DOUBLE_EQ(Auc(Floats({0.2F, 0.5F, 0.5F, 0.9F}), Floats({0, 0, 1, 1})), 0.875);
  EXPECT_DOUBLE_EQ(Auc(Floats({0.5F, 0.5F, 0.5F, 0.5F}), Floats({0, 1, 0, 1})), 0.5);
  // Three tied at 0.3 (one positive): pos 0.3 beats neg 0.1, ties two negs; pos 0.7 beats all 3.
  EXPECT_DOUBLE_EQ(Auc(Floats({0.3F, 0.1F, 0.3F, 0.7F, 0.3F}), Floats({1, 0, 0, 1, 0})),
                   (1 + 1.0 + 3) / 6);
}

TEST(Auc, OneClassOrEmptyIsHalf) {
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.7F}), Floats({1, 1})), 0.5);
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.7F}), Floats({0, 0})), 0.5);
  EXPECT_DOUBLE_EQ(Auc(Floats({}), Floats({})), 0.5);
}

TEST(Auc, AcceptsDoubleAndIntegerInputs) {
  EXPECT_DOUBLE_EQ(Auc(at::tensor({0.1, 0.4, 0.35, 0.8}, at::kDouble), Longs({0, 0, 1, 1})), 0.75);
}

TEST(Auc, BinnedAsTorchmetrics) {
  // T = 3: thresholds 0, 0.5, 1. Scores {0.1, 0.4, 0.35, 0.8}, labels {0, 0, 1, 1}:
  //   t=1: nothing predicted (0, 0); t=0.5: only 0.8 (pos) → fpr 0, tpr 0.5; t=0: all → (1, 1).
  //   area = 0 + (1 - 0)·(0.5 + 1)/2 = 0.75 (= the exact AUC here).
  EXPECT_NEAR(Auc(Floats({0.1F, 0.4F, 0.35F, 0.8F}), Floats({0, 0, 1, 1}), 3), 0.75, 1e-7);
  // Scores {0.1, 0.2, 0.3, 0.4}, labels {0, 1, 0, 1}: exact 3/4; binned T=3 sees only (0,0) at
  // t=1 and t=0.5 and (1,1) at t=0: area 0.5.
  const at::Tensor s = Floats({0.1F, 0.2F, 0.3F, 0.4F});
  const at::Tensor l = Floats({0, 1, 0, 1});
  EXPECT_DOUBLE_EQ(Auc(s, l), 0.75);
  EXPECT_NEAR(Auc(s, l, 3), 0.5, 1e-7);
  EXPECT_DOUBLE_EQ(Auc(s, l, 0), 0.75);  // thresholds 0: exact
  // T = 5 (0, .25, .5, .75, 1): t=.25 keeps 0.3 (neg) and 0.4 (pos) → (0.5, 0.5); area 0.5.
  EXPECT_NEAR(Auc(s, l, 5), 0.5, 1e-7);
}

TEST(Auc, BinnedMapsScoresOutsideUnitIntervalBySigmoid) {
  // {-1, 2} → sigmoid {0.269, 0.881}: t=1 (0,0), t=0.5 (0,1), t=0 (1,1): area 1. Without the
  // sigmoid fpr would stay 0 (area 0).
  EXPECT_NEAR(Auc(Floats({-1.0F, 2.0F}), Floats({0, 1}), 3), 1.0, 1e-7);
}

TEST(Auc, BinnedSingleClassIsZeroAndBadThresholdsThrow) {
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.7F}), Floats({0, 0}), 200), 0.0);
  EXPECT_DOUBLE_EQ(Auc(Floats({0.1F, 0.7F}), Floats({1, 1}), 200), 0.0);
  EXPECT_THROW(Auc(Floats({0.1F}), Floats({1}), 1), ConfigError);
  EXPECT_THROW(Auc(Floats({0.1F}), Floats({1}), -3), ConfigError);
}

TEST(Auc, Binned200IsCloseToExactOnSpreadScores) {
  std::vector<float> scores;
  std::vector<float> labels;
  for (int i = 0; i < 400; ++i) {
    scores.push_back(static_cast<float>((i * 37) % 400) / 400.0F);
    labels.push_back(((i * 37) % 400 + (i % 5) * 60) % 400 > 200 ? 1.0F : 0.0F);
  }
  EXPECT_NEAR(Auc(Floats(scores), Floats(labels), 200), Auc(Floats(scores), Floats(labels)), 0.01);
}

TEST(GroupedAuc, UnweightedMeanAndSkipsSingleClassGroups) {
  // Group 7 (4 samples): AUC 0.75. Group 3 (3 samples): positive 0.3 below both negatives, AUC 0.
  // Group 5: positives only, skipped. Samples interleaved: the grouping does not need them sorted.
  // TorchEasyRec's mean over groups: (0.75 + 0) / 2 = 0.375 (size-weighted would be 3/7).
  const at::Tensor scores = Floats({0.1F, 0.3F, 0.4F, 0.6F, 0.35F, 0.2F, 0.9F, 0.8F, 0.4F});
  const at::Tensor labels = Floats({0, 1, 0, 0, 1, 1, 0, 1, 1});
  const at::Tensor groups = Longs({7, 3, 7, 3, 7, 5, 3, 7, 5});
  EXPECT_NEAR(GroupedAuc(scores, labels, groups), 0.375, 1e-12);
}

TEST(GroupedAuc, SmallGroupCountsAsMuchAsALargeOne) {
  // Group 1: 2 samples, AUC 1. Group 2: 6 samples {0.9 n, 0.8 n, 0.7 p, 0.6 n, 0.5 p, 0.4 n}:
  // pairs (pos > neg): 0.7 > {0.6, 0.4}, 0.5 > {0.4} = 3 of 2·4 = 8 → 0.375.
  // Mean (1 + 0.375)/2 = 0.6875; weighted would be (2·1 + 6·0.375)/8 = 0.53125.
  const at::Tensor scores = Floats({0.2F, 0.9F, 0.9F, 0.8F, 0.7F, 0.6F, 0.5F, 0.4F});
  const at::Tensor labels = Floats({0, 1, 0, 0, 1, 0, 1, 0});
  const at::Tensor groups = Longs({1, 1, 2, 2, 2, 2, 2, 2});
  EXPECT_NEAR(GroupedAuc(scores, labels, groups), 0.6875, 1e-12);
}

TEST(GroupedAuc, OneGroupEqualsAuc) {
  const at::Tensor scores = Floats({0.2F, 0.5F, 0.5F, 0.9F});
  const at::Tensor labels = Floats({0, 0, 1, 1});
  EXPECT_DOUBLE_EQ(GroupedAuc(scores, labels, Longs({4, 4, 4, 4})), 0.875);
}

TEST(GroupedAuc, NoGroupWithBothClassesIsNan) {
  // TorchEasyRec divides the empty sum by 0 groups.
  EXPECT_TRUE(
      std::isnan(GroupedAuc(Floats({0.1F, 0.9F, 0.4F}), Floats({1, 0, 1}), Longs({1, 2, 1}))));
  EXPECT_TRUE(std::isnan(GroupedAuc(Floats({}), Floats({}), Longs({}))));
}

}  // namespace
}  // namespace tzrec
