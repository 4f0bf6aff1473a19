// src/worker/train/mmoe_module.hpp — TorchEasyRec's multi-task building blocks
// (tzrec/modules/mmoe.py MMoE, tzrec/modules/task_tower.py TaskTower), used by the models of
// multi_task.cpp and dbmtl.cpp.
//
//   MMoE       num_expert expert MLPs over the input x [B, D] (stacked [B, E, H]); per task t a
//              gate g_t = softmax(Linear_t(gate_mlp_t(x) or x), dim 1) [B, E]; task input
//              g_t · experts → [B, H] (H = the expert MLP's last unit).
//              Names: <name>.expert_mlps.<e>.mlp..., <name>.gate_mlps.<t>.mlp...,
//              <name>.gate_finals.<t>.{weight,bias}.
//   TaskTower  optional MLP then Linear → 1 logit: x [B, D] → [B, 1].
//              Names: <name>.tower_mlp.mlp..., <name>.linear.{weight,bias}.
// Errors: ConfigError from the MLP options (naming the module). Not thread-safe (BN stats).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlp.hpp"

namespace tzrec::model_internal {

class MMoEModule {
 public:
  MMoEModule() = default;
  MMoEModule(ParamBuilder& b, const std::string& name, std::int64_t in_dim,
             const MlpOptions& expert_mlp, std::int64_t num_expert, std::int64_t num_task,
             const std::optional<MlpOptions>& gate_mlp);
  // x [B, in_dim] → num_task tensors [B, OutDim()].
  std::vector<at::Tensor> Forward(const at::Tensor& x, bool training) const;
  std::int64_t OutDim() const { return experts_.front().OutDim(); }

 private:
  std::vector<Mlp> experts_;
  std::vector<Mlp> gate_mlps_;  // empty without gate_mlp
  std::vector<ParamBuilder::Linear> gate_finals_;
};

class TaskTowerModule {
 public:
  TaskTowerModule() = default;
  TaskTowerModule(ParamBuilder& b, const std::string& name, std::int64_t in_dim,
                  const std::optional<MlpOptions>& mlp);
  // x [B, in_dim] → logits [B, 1].
  at::Tensor Forward(const at::Tensor& x, bool training) const;

 private:
  std::optional<Mlp> mlp_;
  ParamBuilder::Linear linear_;
};

}  // namespace tzrec::model_internal
