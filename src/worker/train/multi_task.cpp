// SimpleMultiTask and MMoE (include/tzrec/train/model.hpp; TorchEasyRec
// tzrec/models/simple_multi_task.py, tzrec/models/mmoe.py). Both read the first feature group;
// each task tower (TaskTower: optional MLP, Linear → 1) gives one logit column.
//   SimpleMultiTask  tower t over the group's concat.
//   MMoE             tower t over the MMoE module's task-t output (mmoe_module.hpp).
// Parameter names: "_task_tower.<t>.tower_mlp.mlp...", "_task_tower.<t>.linear.*",
// "mmoe.expert_mlps.<e>...", "mmoe.gate_mlps.<t>...", "mmoe.gate_finals.<t>.*".
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mmoe_module.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

template <typename Towers>
std::vector<TaskTowerModule> MakeTowers(ParamBuilder& b, std::int64_t in_dim,
                                        const Towers& towers) {
  std::vector<TaskTowerModule> out;
  for (int t = 0; t < towers.size(); ++t) {
    const auto& tower = towers.Get(t);
    out.emplace_back(
        b, "_task_tower." + std::to_string(t), in_dim,
        tower.has_mlp() ? std::optional<MlpOptions>(FromProto(tower.mlp())) : std::nullopt);
  }
  return out;
}

at::Tensor TowerLogits(const std::vector<TaskTowerModule>& towers,
                       const std::vector<at::Tensor>& inputs, bool training) {
  std::vector<at::Tensor> logits;
  for (std::size_t t = 0; t < towers.size(); ++t)
    logits.push_back(towers[t].Forward(inputs[t], training));
  return at::cat(logits, 1);  // [B, T]
}

class SimpleMultiTask final : public DenseModel {
 public:
  SimpleMultiTask(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const auto& mc = config.model_config();
    input_ = GroupInput(config, MakeLayout(config), mc.feature_groups(0).group_name());
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    towers_ = MakeTowers(b, input_.Dim(), mc.simple_multi_task().task_towers());
    tasks_ = TaskSpecs(config);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor x = input_.Forward(sparse, dense);
    return TowerLogits(towers_, std::vector<at::Tensor>(towers_.size(), x), training);
  }

 private:
  GroupInput input_;
  std::vector<TaskTowerModule> towers_;
};

class MMoE final : public DenseModel {
 public:
  MMoE(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const auto& mc = config.model_config();
    const protos::MMoE& m = mc.mmoe();
    input_ = GroupInput(config, MakeLayout(config), mc.feature_groups(0).group_name());
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    mmoe_ = MMoEModule(
        b, "mmoe", input_.Dim(), FromProto(m.expert_mlp()), m.num_expert(), m.task_towers_size(),
        m.has_gate_mlp() ? std::optional<MlpOptions>(FromProto(m.gate_mlp())) : std::nullopt);
    towers_ = MakeTowers(b, mmoe_.OutDim(), m.task_towers());
    tasks_ = TaskSpecs(config);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    return TowerLogits(towers_, mmoe_.Forward(input_.Forward(sparse, dense), training), training);
  }

 private:
  GroupInput input_;
  MMoEModule mmoe_;
  std::vector<TaskTowerModule> towers_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeSimpleMultiTask(const PipelineConfig& config, std::uint64_t seed,
                                                const at::Device& device) {
  return std::make_unique<SimpleMultiTask>(config, seed, device);
}

std::unique_ptr<DenseModel> MakeMMoE(const PipelineConfig& config, std::uint64_t seed,
                                     const at::Device& device) {
  return std::make_unique<MMoE>(config, seed, device);
}

}  // namespace tzrec::model_internal
