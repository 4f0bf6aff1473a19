// Auc and GroupedAuc (src/worker/train/optim_metrics.cpp) against hand-computed values: the
// Mann-Whitney pair count, ties worth half a pair, single-class inputs and groups.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "tzrec/train/train.hpp"

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

TEST(GroupedAuc, WeightsGroupsBySizeAndSkipsSingleClassGroups) {
  // Group 7 (4 samples): AUC 0.75. Group 3 (3 samples): positive 0.3 below both negatives, AUC 0.
  // Group 5: positives only, skipped. Samples interleaved: the grouping does not need them sorted.
  const at::Tensor scores = Floats({0.1F, 0.3F, 0.4F, 0.6F, 0.35F, 0.2F, 0.9F, 0.8F, 0.4F});
  const at::Tensor labels = Floats({0, 1, 0, 0, 1, 1, 0, 1, 1});
  const at::Tensor groups = Longs({7, 3, 7, 3, 7, 5, 3, 7, 5});
  EXPECT_NEAR(GroupedAuc(scores, labels, groups), (0.75 * 4 + 0.0 * 3) / 7, 1e-12);
}

TEST(GroupedAuc, OneGroupEqualsAuc) {
  const at::Tensor scores = Floats({0.2F, 0.5F, 0.5F, 0.9F});
  const at::Tensor labels = Floats({0, 0, 1, 1});
  EXPECT_DOUBLE_EQ(GroupedAuc(scores, labels, Longs({4, 4, 4, 4})), 0.875);
}

TEST(GroupedAuc, NoGroupWithBothClassesIsHalf) {
  EXPECT_DOUBLE_EQ(GroupedAuc(Floats({0.1F, 0.9F, 0.4F}), Floats({1, 0, 1}), Longs({1, 2, 1})),
                   0.5);
  EXPECT_DOUBLE_EQ(GroupedAuc(Floats({}), Floats({}), Longs({})), 0.5);
}

}  // namespace
}  // namespace tzrec
