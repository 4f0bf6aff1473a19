// ExtractionNet (src/worker/train/extraction_net.hpp; TorchEasyRec
// tzrec/modules/extraction_net.py).
#include "extraction_net.hpp"

#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>

namespace tzrec::model_internal {
namespace {

// softmax(gate(selector)) over the stacked experts: [B, n] · [B, n, H] → [B, H].
at::Tensor Gate(const at::Tensor& selector, const std::vector<at::Tensor>& experts,
                const ParamBuilder::Linear& gate) {
  const at::Tensor w = at::softmax(at::linear(selector, gate.weight, gate.bias), 1).unsqueeze(1);
  return at::matmul(w, at::stack(experts, 1)).squeeze(1);
}

}  // namespace

ExtractionNetModule::ExtractionNetModule(ParamBuilder& b, const std::string& name,
                                         const std::vector<std::int64_t>& task_in,
                                         std::int64_t shared_in, const Options& options) {
  const auto n_tasks = static_cast<std::int64_t>(task_in.size());
  for (std::int64_t s = 0; s < options.share_num; ++s) {
    shared_experts_.emplace_back(b, name + "._shared_layers." + std::to_string(s), shared_in,
                                 options.share_expert_net);
  }
  if (!options.final_layer) {
    shared_gate_ = b.AddLinear(name + "._shared_gate", shared_in,
                               n_tasks * options.experts_per_task + options.share_num);
  }
  for (std::int64_t t = 0; t < n_tasks; ++t) {
    const std::string prefix = name + "._task_layers." + std::to_string(t) + ".";
    std::vector<Mlp> experts;
    for (std::int64_t e = 0; e < options.experts_per_task; ++e) {
      experts.emplace_back(b, prefix + std::to_string(e), task_in[static_cast<std::size_t>(t)],
                           options.task_expert_net);
    }
    task_experts_.push_back(std::move(experts));
    task_gates_.push_back(b.AddLinear(name + "._task_gates." + std::to_string(t),
                                      task_in[static_cast<std::size_t>(t)],
                                      options.experts_per_task + options.share_num));
  }
}

ExtractionNetModule::Output ExtractionNetModule::Forward(const std::vector<at::Tensor>& task_in,
                                                         const at::Tensor& shared_in,
                                                         bool training) const {
  std::vector<at::Tensor> shared;
  for (const Mlp& m : shared_experts_) shared.push_back(m.Forward(shared_in, training));
  Output out;
  std::vector<at::Tensor> all_task;
  for (std::size_t t = 0; t < task_experts_.size(); ++t) {
    std::vector<at::Tensor> experts;
    for (const Mlp& m : task_experts_[t]) experts.push_back(m.Forward(task_in[t], training));
    all_task.insert(all_task.end(), experts.begin(), experts.end());
    experts.insert(experts.end(), shared.begin(), shared.end());
    out.task.push_back(Gate(task_in[t], experts, task_gates_[t]));
  }
  if (shared_gate_) {
    all_task.insert(all_task.end(), shared.begin(), shared.end());
    out.shared = Gate(shared_in, all_task, *shared_gate_);
  }
  return out;
}

}  // namespace tzrec::model_internal
