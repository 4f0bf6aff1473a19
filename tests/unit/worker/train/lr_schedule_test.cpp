// LrSchedule (src/worker/train/lr_schedule.cpp) against TorchEasyRec's schedules
// (tzrec/optim/lr_scheduler.py): golden lrs from optim_golden.py, where each schedule is written
// independently from its formula as a torch LRScheduler subclass and stepped on a real torch.optim
// optimizer as tzrec/main.py does; plus hand-computed values and the validation errors.
#include "tzrec/train/lr_schedule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "optim_golden.inc"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

TEST(LrSchedule, MatchesTorchSchedulerGolden) {
  for (const auto& c : golden::kLrCases) {
    SCOPED_TRACE(c.name);
    const LrSchedule schedule(c.options, c.base_lr);
    ASSERT_EQ(c.lrs.size(), static_cast<std::size_t>(golden::kLrEpochs * golden::kLrStepsPerEpoch));
    for (std::size_t i = 0; i < c.lrs.size(); ++i) {
      const auto step = static_cast<std::int64_t>(i);
      const std::int64_t epoch = step / golden::kLrStepsPerEpoch;
      EXPECT_NEAR(schedule.LearningRate(step, epoch), c.lrs[i], 1e-15) << "training step " << i;
    }
  }
}

TEST(LrSchedule, ExponentialDecayByHand) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponentialDecay;
  o.decay_size = 10;
  o.decay_factor = 0.5;
  o.warmup_size = 4;
  o.warmup_learning_rate = 0.2;
  o.min_learning_rate = 0.1;
  const LrSchedule s(o, 1.0);
  EXPECT_DOUBLE_EQ(s.LearningRate(0, 0), 0.2);                // warmup start
  EXPECT_DOUBLE_EQ(s.LearningRate(2, 0), 0.2 + 0.8 * 2 / 4);  // 0.6
  EXPECT_DOUBLE_EQ(s.LearningRate(4, 0), 1.0);                // p = 0
  EXPECT_DOUBLE_EQ(s.LearningRate(13, 0), 1.0);               // floor(9/10) = 0
  EXPECT_DOUBLE_EQ(s.LearningRate(14, 0), 0.5);               // p = 1
  EXPECT_DOUBLE_EQ(s.LearningRate(24, 0), 0.25);              // p = 2
  EXPECT_DOUBLE_EQ(s.LearningRate(44, 0), 0.1);               // 0.0625 < min 0.1
  o.staircase = false;
  EXPECT_DOUBLE_EQ(LrSchedule(o, 1.0).LearningRate(9, 0), std::pow(0.5, 0.5));  // p = 5/10
  EXPECT_FALSE(s.ByEpoch());
}

TEST(LrSchedule, ManualStepByHandAndByEpoch) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kManualStep;
  o.schedule_sizes = {2, 4};
  o.learning_rates = {0.5, 0.25};
  o.by_epoch = true;
  const LrSchedule s(o, 1.0);
  // bisect_left: at count == 2 the base still holds; from 3 on the first rate.
  EXPECT_DOUBLE_EQ(s.LearningRate(100, 2), 1.0);
  EXPECT_DOUBLE_EQ(s.LearningRate(0, 3), 0.5);
  EXPECT_DOUBLE_EQ(s.LearningRate(0, 5), 0.25);
  o.by_epoch = false;
  o.warmup = true;
  const LrSchedule w(o, 1.0);
  EXPECT_DOUBLE_EQ(w.LearningRate(1, 9), 1.0 + (0.5 - 1.0) * 1 / 2);  // 0.75
  EXPECT_DOUBLE_EQ(w.LearningRate(2, 9), 0.5);
}

TEST(LrSchedule, CosineAndLinearByHand) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kCosineAnnealing;
  o.t_max = 4;
  o.min_learning_rate = 0.1;
  const LrSchedule c(o, 1.1);
  EXPECT_DOUBLE_EQ(c.LearningRate(0, 0), 1.1);
  EXPECT_NEAR(c.LearningRate(2, 0), 0.1 + 1.0 * 0.5, 1e-15);  // cos(pi/2) = 0
  EXPECT_DOUBLE_EQ(c.LearningRate(4, 0), 0.1);
  EXPECT_DOUBLE_EQ(c.LearningRate(9, 0), 0.1);  // t capped at T_max
  o.kind = LrScheduleKind::kLinearDecay;
  o.total_size = 5;
  o.warmup_size = 1;
  const LrSchedule l(o, 1.1);
  EXPECT_DOUBLE_EQ(l.LearningRate(0, 0), 0.0);                        // warmup from 0
  EXPECT_DOUBLE_EQ(l.LearningRate(3, 0), 0.1 + 1.0 * (1 - 2.0 / 4));  // 0.6
  EXPECT_DOUBLE_EQ(l.LearningRate(7, 0), 0.1);
}

TEST(LrSchedule, ZeroBaseLrStaysZeroAndConstantIsByEpoch) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kManualStep;
  o.schedule_sizes = {1};
  o.learning_rates = {0.5};
  EXPECT_DOUBLE_EQ(LrSchedule(o, 0.0).LearningRate(5, 0), 0.0);
  const LrSchedule constant(LrScheduleOptions{}, 0.3);
  EXPECT_TRUE(constant.ByEpoch());
  EXPECT_DOUBLE_EQ(constant.LearningRate(1000, 7), 0.3);
}

void ExpectConfigError(const LrScheduleOptions& o, const std::string& fragment) {
  try {
    LrSchedule s(o, 0.1);
    FAIL() << "accepted; wanted an error naming " << fragment;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(LrSchedule, RejectsBadOptionsNamingThem) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponentialDecay;
  ExpectConfigError(o, "ExponentialDecayLR.decay_size");  // 0: ZeroDivisionError in Python
  o = {};
  o.kind = LrScheduleKind::kManualStep;
  o.schedule_sizes = {5, 3};
  o.learning_rates = {0.1, 0.2};
  ExpectConfigError(o, "ManualStepLR.schedule_sizes: must be strictly increasing");
  o.schedule_sizes = {3, 5};
  o.learning_rates = {0.1};
  ExpectConfigError(o, "ManualStepLR.learning_rates");
  o.schedule_sizes = {0};
  o.warmup = true;
  ExpectConfigError(o, "ManualStepLR.warmup");
  o = {};
  o.kind = LrScheduleKind::kLinearDecay;
  o.total_size = 3;
  o.warmup_size = 3;
  ExpectConfigError(o, "LinearDecayLR.warmup_size");
  o = {};
  o.kind = LrScheduleKind::kCosineAnnealing;
  ExpectConfigError(o, "CosineAnnealingLR.T_max");
  o = {};
  o.kind = LrScheduleKind::kCosineAnnealingWarmRestarts;
  o.t_0 = 2;
  o.t_mult = 0;
  ExpectConfigError(o, "CosineAnnealingWarmRestartsLR.T_mult");
}

}  // namespace
}  // namespace tzrec
