// The per-task losses of multi-task models (include/tzrec/train/loss.hpp; TorchEasyRec
// tzrec/models/multi_task_rank.py MultiTaskRank.loss).
#include <ATen/TensorOperators.h>

#include <string>

#include "tzrec/error.hpp"
#include "tzrec/train/loss.hpp"

namespace tzrec {

MultiTaskLoss MultiTaskBceLoss(const at::Tensor& logits, const std::vector<at::Tensor>& labels,
                               const at::Tensor& sample_weights,
                               const std::vector<TaskSpec>& tasks) {
  if (logits.dim() != 2 || logits.size(1) != static_cast<std::int64_t>(tasks.size())) {
    throw InternalError("multi-task logits must be [B, " + std::to_string(tasks.size()) +
                        "], got " + std::to_string(logits.dim()) + "-d");
  }
  MultiTaskLoss out;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const TaskSpec& task = tasks[t];
    if (task.label_index < 0 || static_cast<std::size_t>(task.label_index) >= labels.size()) {
      throw InternalError("task '" + task.tower_name + "': label '" + task.label_name +
                          "' was not read");
    }
    if (task.sample_weighted && !sample_weights.defined()) {
      throw InternalError("task '" + task.tower_name + "': its sample weights were not read");
    }
    const at::Tensor y = labels[static_cast<std::size_t>(task.label_index)].to(logits.device());
    at::Tensor loss = BceWithLogitsLoss(logits.select(1, static_cast<std::int64_t>(t)), y,
                                        task.sample_weighted ? sample_weights : at::Tensor());
    if (task.has_weight) loss = loss * task.weight;
    out.total = out.total.defined() ? out.total + loss : loss;
    out.per_task.push_back(loss);
  }
  return out;
}

double EvalTaskBceLoss(const TaskSpec& task, const at::Tensor& probs, const at::Tensor& labels,
                       const at::Tensor& weights) {
  const double loss = EvalBceLoss(probs, labels, task.sample_weighted ? weights : at::Tensor());
  return task.has_weight ? loss * task.weight : loss;
}

}  // namespace tzrec
