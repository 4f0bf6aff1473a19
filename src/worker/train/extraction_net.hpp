// src/worker/train/extraction_net.hpp — one PLE extraction layer, as TorchEasyRec's
// tzrec/modules/extraction_net.py ExtractionNet builds it (used by ple.cpp).
//
//   Inputs: one tensor per task, task_in[t] [B, Dt], and the shared path's shared_in [B, Ds].
//   Experts: per task t, experts_per_task MLPs over task_in[t] (all of width H = the task expert
//            MLP's last unit), and share_num shared MLPs over shared_in (width H too: the gates
//            stack task and shared experts, so both MLPs must end in the same unit).
//   Gates:   task t: softmax(Linear(task_in[t]) → experts_per_task + share_num) over
//            [task t's experts, shared experts] → [B, H]; shared path (every layer but the last):
//            softmax(Linear(shared_in) → T·experts_per_task + share_num) over [every task's
//            experts in task order, shared experts] → [B, H].
//   Names:   <name>._shared_layers.<s>.mlp..., <name>._shared_gate.{weight,bias},
//            <name>._task_layers.<t>.<e>.mlp..., <name>._task_gates.<t>.{weight,bias}.
// Errors: ConfigError from the MLP options. Not thread-safe (BN statistics).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlp.hpp"

namespace tzrec::model_internal {

class ExtractionNetModule {
 public:
  struct Options {
    MlpOptions task_expert_net;
    std::int64_t experts_per_task = 1;
    MlpOptions share_expert_net;
    std::int64_t share_num = 1;
    bool final_layer = false;  // the last layer has no shared gate
  };
  struct Output {
    std::vector<at::Tensor> task;  // per task [B, TaskDim()]
    at::Tensor shared;             // [B, SharedDim()]; undefined in the final layer
  };

  ExtractionNetModule(ParamBuilder& b, const std::string& name,
                      const std::vector<std::int64_t>& task_in, std::int64_t shared_in,
                      const Options& options);
  Output Forward(const std::vector<at::Tensor>& task_in, const at::Tensor& shared_in,
                 bool training) const;
  std::int64_t TaskDim() const { return task_experts_.front().front().OutDim(); }
  std::int64_t SharedDim() const { return shared_experts_.front().OutDim(); }

 private:
  std::vector<Mlp> shared_experts_;
  std::optional<ParamBuilder::Linear> shared_gate_;
  std::vector<std::vector<Mlp>> task_experts_;
  std::vector<ParamBuilder::Linear> task_gates_;
};

}  // namespace tzrec::model_internal
