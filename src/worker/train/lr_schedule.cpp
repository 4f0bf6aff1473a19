// LrSchedule (include/tzrec/train/lr_schedule.hpp): tzrec/optim/lr_scheduler.py's `_get_lr`
// formulas in double precision, Python's operation order (math.pow, math.floor, math.log(x, b)).
#include "tzrec/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <sstream>
#include <string>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

std::string Num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void Require(bool ok, LrScheduleKind kind, const std::string& field, const std::string& why) {
  if (!ok) {
    throw ConfigError(std::string("learning rate schedule option ") + LrScheduleKindName(kind) +
                      "." + field + ": " + why + "; fix the optimizer's learning_rate");
  }
}

void ValidateWarmup(const LrScheduleOptions& o) {
  Require(o.warmup_size >= 0, o.kind, "warmup_size",
          "must be >= 0, got " + std::to_string(o.warmup_size));
  Require(o.warmup_learning_rate >= 0, o.kind, "warmup_learning_rate",
          "must be >= 0, got " + Num(o.warmup_learning_rate));
  Require(o.min_learning_rate >= 0, o.kind, "min_learning_rate",
          "must be >= 0, got " + Num(o.min_learning_rate));
}

void ValidateManualStep(const LrScheduleOptions& o) {
  const auto& sizes = o.schedule_sizes;
  Require(sizes.size() == o.learning_rates.size(), o.kind, "learning_rates",
          "needs one rate per schedule size: " + std::to_string(o.learning_rates.size()) +
              " rates for " + std::to_string(sizes.size()) + " sizes");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    Require(sizes[i] >= 0, o.kind, "schedule_sizes",
            "must be >= 0, got " + std::to_string(sizes[i]));
    Require(i == 0 || sizes[i] > sizes[i - 1], o.kind, "schedule_sizes",
            "must be strictly increasing, got " + std::to_string(sizes[i - (i > 0 ? 1 : 0)]) +
                " then " + std::to_string(sizes[i]));
    Require(o.learning_rates[i] >= 0, o.kind, "learning_rates",
            "must be >= 0, got " + Num(o.learning_rates[i]));
  }
  Require(!o.warmup || (!sizes.empty() && sizes[0] > 0), o.kind, "warmup",
          "needs a first schedule size > 0 to interpolate over");
}

void Validate(const LrScheduleOptions& o) {
  switch (o.kind) {
    case LrScheduleKind::kConstant:
      return;
    case LrScheduleKind::kExponentialDecay:
      ValidateWarmup(o);
      Require(o.decay_size > 0, o.kind, "decay_size",
              "must be > 0, got " + std::to_string(o.decay_size));
      Require(o.decay_factor >= 0, o.kind, "decay_factor",
              "must be >= 0, got " + Num(o.decay_factor));
      return;
    case LrScheduleKind::kManualStep:
      ValidateManualStep(o);
      return;
    case LrScheduleKind::kLinearDecay:
      ValidateWarmup(o);
      Require(o.total_size > 0, o.kind, "total_size",
              "must be > 0, got " + std::to_string(o.total_size));
      Require(o.warmup_size < o.total_size, o.kind, "warmup_size",
              "must be < total_size (" + std::to_string(o.total_size) + "), got " +
                  std::to_string(o.warmup_size));
      return;
    case LrScheduleKind::kCosineAnnealing:
      ValidateWarmup(o);
      Require(o.t_max > 0, o.kind, "T_max", "must be > 0, got " + std::to_string(o.t_max));
      return;
    case LrScheduleKind::kCosineAnnealingWarmRestarts:
      ValidateWarmup(o);
      Require(o.t_0 > 0, o.kind, "T_0", "must be > 0, got " + std::to_string(o.t_0));
      Require(o.t_mult >= 1, o.kind, "T_mult", "must be >= 1, got " + std::to_string(o.t_mult));
      return;
  }
}

std::int64_t IntPow(std::int64_t base, std::int64_t exp) {
  std::int64_t r = 1;
  for (std::int64_t i = 0; i < exp; ++i) r *= base;
  return r;
}

}  // namespace

const char* LrScheduleKindName(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::kConstant:
      return "ConstantLR";
    case LrScheduleKind::kExponentialDecay:
      return "ExponentialDecayLR";
    case LrScheduleKind::kManualStep:
      return "ManualStepLR";
    case LrScheduleKind::kLinearDecay:
      return "LinearDecayLR";
    case LrScheduleKind::kCosineAnnealing:
      return "CosineAnnealingLR";
    case LrScheduleKind::kCosineAnnealingWarmRestarts:
      return "CosineAnnealingWarmRestartsLR";
  }
  return "?";
}

LrSchedule::LrSchedule(const LrScheduleOptions& options, double base_lr)
    : options_(options), base_lr_(base_lr) {
  Require(base_lr >= 0 && std::isfinite(base_lr), options.kind, "lr",
          "the optimizer's lr must be finite and >= 0, got " + Num(base_lr));
  Validate(options_);
}

bool LrSchedule::ByEpoch() const {
  return options_.kind == LrScheduleKind::kConstant || options_.by_epoch;
}

double LrSchedule::Warmup(std::int64_t count) const {
  const double scale = static_cast<double>(count) / static_cast<double>(options_.warmup_size);
  return (base_lr_ - options_.warmup_learning_rate) * scale + options_.warmup_learning_rate;
}

double LrSchedule::Cosine(double t, double period) const {
  const double cos_scale = 0.5 * (1 + std::cos(std::numbers::pi * t / period));
  return options_.min_learning_rate + (base_lr_ - options_.min_learning_rate) * cos_scale;
}

double LrSchedule::Scheduled(std::int64_t count) const {
  const auto& o = options_;
  const bool warms = o.kind != LrScheduleKind::kConstant && o.kind != LrScheduleKind::kManualStep;
  if (warms && count < o.warmup_size) return Warmup(count);
  const std::int64_t elapsed = count - o.warmup_size;
  switch (o.kind) {
    case LrScheduleKind::kConstant:
      return base_lr_;
    case LrScheduleKind::kExponentialDecay: {
      double p = static_cast<double>(elapsed) / static_cast<double>(o.decay_size);
      if (o.staircase) p = std::floor(p);
      return std::max(base_lr_ * std::pow(o.decay_factor, p), o.min_learning_rate);
    }
    case LrScheduleKind::kManualStep: {
      const auto& sizes = o.schedule_sizes;
      const auto idx = std::lower_bound(sizes.begin(), sizes.end(), count) - sizes.begin();
      if (idx > 0) return o.learning_rates[static_cast<std::size_t>(idx - 1)];
      if (o.warmup) {
        const double scale = static_cast<double>(count) / static_cast<double>(sizes[0]);
        return (o.learning_rates[0] - base_lr_) * scale + base_lr_;
      }
      return base_lr_;
    }
    case LrScheduleKind::kLinearDecay: {
      const std::int64_t span = o.total_size - o.warmup_size;
      const double t = static_cast<double>(std::min(elapsed, span));
      const double decay_scale = 1.0 - t / static_cast<double>(span);
      return o.min_learning_rate + (base_lr_ - o.min_learning_rate) * decay_scale;
    }
    case LrScheduleKind::kCosineAnnealing:
      return Cosine(static_cast<double>(std::min(elapsed, o.t_max)), static_cast<double>(o.t_max));
    case LrScheduleKind::kCosineAnnealingWarmRestarts: {
      if (o.t_mult == 1) {
        return Cosine(static_cast<double>(elapsed % o.t_0), static_cast<double>(o.t_0));
      }
      const double x = static_cast<double>(elapsed) / static_cast<double>(o.t_0) *
                           static_cast<double>(o.t_mult - 1) +
                       1;
      const auto n = static_cast<std::int64_t>(
          std::floor(std::log(x) / std::log(static_cast<double>(o.t_mult))));
      const std::int64_t mult_n = IntPow(o.t_mult, n);
      const std::int64_t cycle_start = o.t_0 * (mult_n - 1) / (o.t_mult - 1);
      return Cosine(static_cast<double>(elapsed - cycle_start),
                    static_cast<double>(o.t_0 * mult_n));
    }
  }
  return base_lr_;
}

double LrSchedule::LearningRate(std::int64_t step, std::int64_t epoch) const {
  if (step < 0 || epoch < 0) {
    throw InternalError("LrSchedule::LearningRate: step " + std::to_string(step) + " and epoch " +
                        std::to_string(epoch) + " must be >= 0");
  }
  if (base_lr_ == 0) return 0.0;  // BaseLR.get_lr freezes a zero base lr
  return Scheduled(ByEpoch() ? epoch : step);
}

}  // namespace tzrec
