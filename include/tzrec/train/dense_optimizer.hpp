// tzrec/train/dense_optimizer.hpp — the dense optimizers of tzrec_train: torch.optim's SGD,
// Adagrad, Adam and AdamW (torch 2.11's single-tensor code paths,
// torch/optim/{sgd,adagrad,adam}.py) with TorchEasyRec's defaults. TorchEasyRec
// (tzrec/optim/optimizer_builder.py create_dense_optimizer, tzrec/protos/optimizer.proto
// DenseOptimizer) passes every proto field, defaults included, as torch.optim kwargs; what the
// proto lacks takes torch's default:
//   sgd_optimizer     lr=0.002 momentum=0.9 weight_decay=0   (torch: dampening=0 nesterov=False)
//   adagrad_optimizer lr=0.002 weight_decay=0                (torch: lr_decay=0 eps=1e-10
//                                                             initial_accumulator_value=0)
//   adam_optimizer    lr=0.002 beta1=0.9 beta2=0.999 weight_decay=0 (torch: eps=1e-8 amsgrad=False)
//   adamw_optimizer   as adam, weight_decay=0 (the proto's default, not torch's 1e-2), decoupled
// The extra torch fields (dampening, nesterov, eps, amsgrad, lr_decay, initial_accumulator_value)
// are here for configs that set them; they follow torch exactly.
//
// Update rules (g = p.grad; parameters without a gradient are skipped and keep their state, as
// torch skips grad None; all arithmetic in the parameter's dtype, in torch's operation order):
//   SGD      g += wd·p; momentum ≠ 0: buf = g on a parameter's first step, else
//            buf = momentum·buf + (1−dampening)·g; g = nesterov ? g + momentum·buf : buf; p −= lr·g
//   Adagrad  t += 1; g += wd·p; clr = lr / (1 + (t−1)·lr_decay); sum += g²; p −= clr·g/(√sum + eps)
//   Adam     t += 1; AdamW: p *= 1 − lr·wd, Adam: g += wd·p; m = lerp(m, g, 1−β1);
//            v = β2·v + (1−β2)·g²; amsgrad: v̂ = max(v̂, v) else v̂ = v;
//            p −= lr/(1−β1^t) · m / (√v̂ / √(1−β2^t) + eps)
// State (StateTensors, names as torch's optimizer state_dict entries, prefixed "<param>/"):
//   SGD momentum ≠ 0: momentum_buffer (zeros until the first step), step (float32 scalar: the
//   steps taken, 0 = buffer not initialised yet; torch keeps buffer None instead); momentum 0:
//   none. Adagrad: sum, step. Adam/AdamW: exp_avg, exp_avg_sq, [max_exp_avg_sq when amsgrad], step.
//   "step" is a float32 CPU scalar per parameter, as torch's. The tensors are the live state:
//   copy_ into them restores a checkpoint.
// Errors: ConfigError naming the option for values torch.optim rejects (negative lr, momentum,
// weight_decay, eps, lr_decay, initial_accumulator_value; betas outside [0, 1); nesterov without
// momentum or with dampening). Not thread-safe.
#pragma once

#include <ATen/Tensor.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {

enum class DenseOptimizerKind { kSgd, kAdagrad, kAdam, kAdamW };

// "sgd" | "adagrad" | "adam" | "adamw" (the proto's sgd_optimizer ... without "_optimizer").
// ConfigError for anything else (a sparse-only optimizer such as rowwise_adagrad included).
DenseOptimizerKind ParseDenseOptimizerKind(const std::string& name);
const char* DenseOptimizerKindName(DenseOptimizerKind kind);

struct DenseOptimizerOptions {
  DenseOptimizerKind kind = DenseOptimizerKind::kAdam;
  double lr = 0.002;                       // all kinds; the base lr an LrSchedule scales
  double weight_decay = 0.0;               // all kinds (AdamW: decoupled)
  double momentum = 0.9;                   // SGD
  double dampening = 0.0;                  // SGD
  bool nesterov = false;                   // SGD
  double beta1 = 0.9;                      // Adam, AdamW
  double beta2 = 0.999;                    // Adam, AdamW
  bool amsgrad = false;                    // Adam, AdamW
  double lr_decay = 0.0;                   // Adagrad
  double initial_accumulator_value = 0.0;  // Adagrad
  std::optional<double> eps;  // unset: torch's default for the kind (Adagrad 1e-10, Adam 1e-8)
};

// The eps the optimizer uses: options.eps, else torch's default for options.kind (SGD: 0).
double EffectiveEps(const DenseOptimizerOptions& options);

class DenseOptimizer {
 public:
  DenseOptimizer(const DenseOptimizerOptions& options, std::vector<Parameter> parameters);

  void Step();
  void ZeroGrad();
  // The lr of the following steps (an LrSchedule's value); starts at options.lr.
  void SetLearningRate(double lr);
  double LearningRate() const { return lr_; }
  // See the header comment for the names; the tensors are the live state.
  std::vector<std::pair<std::string, at::Tensor>> StateTensors();
  const std::vector<Parameter>& Parameters() const { return parameters_; }
  const DenseOptimizerOptions& Options() const { return options_; }

 private:
  struct State {
    at::Tensor step;  // float32 CPU scalar
    at::Tensor m1;    // momentum_buffer | sum | exp_avg
    at::Tensor m2;    // exp_avg_sq
    at::Tensor m3;    // max_exp_avg_sq
  };
  void StepSgd(const at::Tensor& p, at::Tensor g, State& s) const;
  void StepAdagrad(const at::Tensor& p, at::Tensor g, State& s) const;
  void StepAdam(const at::Tensor& p, at::Tensor g, State& s) const;

  DenseOptimizerOptions options_;
  double eps_ = 0.0;
  double lr_ = 0.0;
  std::vector<Parameter> parameters_;
  std::vector<State> states_;
};

}  // namespace tzrec
