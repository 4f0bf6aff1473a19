// MMoE and TaskTower (src/worker/train/mmoe_module.hpp; TorchEasyRec tzrec/modules/mmoe.py,
// tzrec/modules/task_tower.py).
#include "mmoe_module.hpp"

#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>

namespace tzrec::model_internal {

MMoEModule::MMoEModule(ParamBuilder& b, const std::string& name, std::int64_t in_dim,
                       const MlpOptions& expert_mlp, std::int64_t num_expert, std::int64_t num_task,
                       const std::optional<MlpOptions>& gate_mlp) {
  for (std::int64_t e = 0; e < num_expert; ++e)
    experts_.emplace_back(b, name + ".expert_mlps." + std::to_string(e), in_dim, expert_mlp);
  std::int64_t gate_in = in_dim;
  if (gate_mlp) {
    for (std::int64_t t = 0; t < num_task; ++t)
      gate_mlps_.emplace_back(b, name + ".gate_mlps." + std::to_string(t), in_dim, *gate_mlp);
    gate_in = gate_mlps_.front().OutDim();
  }
  for (std::int64_t t = 0; t < num_task; ++t)
    gate_finals_.push_back(
        b.AddLinear(name + ".gate_finals." + std::to_string(t), gate_in, num_expert));
}

std::vector<at::Tensor> MMoEModule::Forward(const at::Tensor& x, bool training) const {
  std::vector<at::Tensor> outs;
  for (const auto& e : experts_) outs.push_back(e.Forward(x, training));
  const at::Tensor experts = at::stack(outs, 1);  // [B, E, H]
  std::vector<at::Tensor> result;
  for (std::size_t t = 0; t < gate_finals_.size(); ++t) {
    const at::Tensor in = gate_mlps_.empty() ? x : gate_mlps_[t].Forward(x, training);
    const at::Tensor gate =
        at::softmax(at::linear(in, gate_finals_[t].weight, gate_finals_[t].bias), 1).unsqueeze(1);
    result.push_back(at::matmul(gate, experts).squeeze(1));
  }
  return result;
}

TaskTowerModule::TaskTowerModule(ParamBuilder& b, const std::string& name, std::int64_t in_dim,
                                 const std::optional<MlpOptions>& mlp) {
  std::int64_t linear_in = in_dim;
  if (mlp) {
    mlp_.emplace(b, name + ".tower_mlp", in_dim, *mlp);
    linear_in = mlp_->OutDim();
  }
  linear_ = b.AddLinear(name + ".linear", linear_in, 1);
}

at::Tensor TaskTowerModule::Forward(const at::Tensor& x, bool training) const {
  const at::Tensor h = mlp_ ? mlp_->Forward(x, training) : x;
  return at::linear(h, linear_.weight, linear_.bias);
}

}  // namespace tzrec::model_internal
