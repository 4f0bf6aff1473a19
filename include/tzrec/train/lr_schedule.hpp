// tzrec/train/lr_schedule.hpp — TorchEasyRec's learning-rate schedules
// (tzrec/optim/lr_scheduler.py, tzrec/protos/optimizer.proto `oneof learning_rate`) as a pure
// function of the step/epoch count.
//
// TorchEasyRec builds one scheduler per optimizer (torch LRScheduler subclasses); constructing it
// runs one step(), so the first training step uses count 0; tzrec/main.py then calls step() after
// every training step (by_epoch false) or after every epoch (by_epoch true). So the lr of an update
// is LearningRate(step, epoch) with step = optimizer steps already taken, epoch = epochs already
// completed (both from 0). `count` below is epoch when by_epoch, else step; base = the optimizer's
// lr. A base of 0 freezes the lr at 0 (BaseLR.get_lr).
//   ConstantLR          base (TorchEasyRec marks it by_epoch; the value never changes).
//   ExponentialDecayLR  count < warmup_size: warmup_learning_rate + (base − warmup_learning_rate)
//                       · count/warmup_size; else p = (count − warmup_size)/decay_size (floored
//                       when staircase), lr = max(base · decay_factor^p, min_learning_rate).
//   ManualStepLR        i = #{schedule_sizes < count} (bisect_left): i > 0: learning_rates[i−1];
//                       else warmup: base + (learning_rates[0] − base) · count/schedule_sizes[0];
//                       else base. (At count == schedule_sizes[k] the previous rate still holds.)
//   LinearDecayLR       warmup as above; t = min(count − warmup, total − warmup);
//                       lr = min_lr + (base − min_lr)·(1 − t/(total − warmup)).
//   CosineAnnealingLR   warmup as above; t = min(count − warmup, T_max);
//                       lr = min_lr + (base − min_lr)·(1 + cos(π t/T_max))/2.
//   CosineAnnealingWarmRestartsLR  warmup as above; e = count − warmup; T_mult = 1: T_cur = e mod
//                       T_0, T_i = T_0; else n = ⌊log_{T_mult}(e/T_0·(T_mult−1) + 1)⌋,
//                       T_i = T_0·T_mult^n, T_cur = e − T_0·(T_mult^n − 1)/(T_mult − 1) (integer
//                       division); lr = min_lr + (base − min_lr)·(1 + cos(π T_cur/T_i))/2.
// The last three are in lr_scheduler.py (newest stored version) but not in any stored
// optimizer.proto; their option names follow the Python kwargs (T_max, T_0, T_mult, total_size).
// Errors: the constructor throws ConfigError naming the option for values the Python classes crash
// on or would silently ignore: decay_size 0, negative sizes/rates/factor, schedule_sizes not
// strictly increasing, learning_rates and schedule_sizes of different lengths, warmup with no or a
// zero first schedule size, total_size <= warmup_size, T_max/T_0 <= 0, T_mult < 1.
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tzrec {

enum class LrScheduleKind {
  kConstant,
  kExponentialDecay,
  kManualStep,
  kLinearDecay,
  kCosineAnnealing,
  kCosineAnnealingWarmRestarts,
};

// Defaults as optimizer.proto / the Python kwargs. Only the kind's fields are read.
struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  bool by_epoch = false;  // every kind but constant
  // ExponentialDecayLR
  std::int64_t decay_size = 0;  // required > 0
  double decay_factor = 0.95;
  bool staircase = true;
  // ExponentialDecayLR, LinearDecayLR, CosineAnnealingLR, CosineAnnealingWarmRestartsLR
  double warmup_learning_rate = 0.0;
  std::int64_t warmup_size = 0;
  double min_learning_rate = 0.0;
  // ManualStepLR
  std::vector<std::int64_t> schedule_sizes;
  std::vector<double> learning_rates;
  bool warmup = false;
  // LinearDecayLR
  std::int64_t total_size = 0;
  // CosineAnnealingLR
  std::int64_t t_max = 0;
  // CosineAnnealingWarmRestartsLR
  std::int64_t t_0 = 0;
  std::int64_t t_mult = 1;
};

const char* LrScheduleKindName(LrScheduleKind kind);  // the proto message name, e.g. "ManualStepLR"

class LrSchedule {
 public:
  // base_lr: the optimizer's lr (>= 0). Validates the options (see above).
  LrSchedule(const LrScheduleOptions& options, double base_lr);
  // The lr of the update after `step` optimizer steps and `epoch` completed epochs (both >= 0).
  double LearningRate(std::int64_t step, std::int64_t epoch) const;
  bool ByEpoch() const;
  double BaseLr() const { return base_lr_; }
  const LrScheduleOptions& Options() const { return options_; }

 private:
  double Warmup(std::int64_t count) const;
  double Cosine(double t, double period) const;
  double Scheduled(std::int64_t count) const;

  LrScheduleOptions options_;
  double base_lr_;
};

}  // namespace tzrec
