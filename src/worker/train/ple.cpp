// PLE, Progressive Layered Extraction (include/tzrec/train/model.hpp; TorchEasyRec
// tzrec/models/ple.py): the first feature group's concat x feeds every task path and the shared
// path of the first extraction layer (extraction_net.hpp); each layer's task outputs and shared
// output feed the next; the last layer has no shared gate, and task tower t (TaskTower: optional
// MLP, Linear → 1) reads its task output, one logit column per task.
// Parameter names: "_extraction_nets.<l>._shared_layers.<s>...", "._shared_gate.*",
// "._task_layers.<t>.<e>...", "._task_gates.<t>.*", "_task_tower.<t>.tower_mlp.mlp...",
// "_task_tower.<t>.linear.*".
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extraction_net.hpp"
#include "mmoe_module.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

ExtractionNetModule::Options LayerOptions(const protos::ExtractionNetwork& n, bool final_layer) {
  ExtractionNetModule::Options o;
  o.task_expert_net = FromProto(n.task_expert_net());
  o.experts_per_task = n.expert_num_per_task();
  o.share_expert_net = FromProto(n.share_expert_net());
  o.share_num = n.share_num();
  o.final_layer = final_layer;
  return o;
}

class Ple final : public DenseModel {
 public:
  Ple(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const auto& mc = config.model_config();
    const protos::PLE& m = mc.ple();
    input_ = GroupInput(config, MakeLayout(config), mc.feature_groups(0).group_name());
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const auto n_tasks = static_cast<std::size_t>(m.task_towers_size());
    std::vector<std::int64_t> task_in(n_tasks, input_.Dim());
    std::int64_t shared_in = input_.Dim();
    for (int l = 0; l < m.extraction_networks_size(); ++l) {
      layers_.emplace_back(
          b, "_extraction_nets." + std::to_string(l), task_in, shared_in,
          LayerOptions(m.extraction_networks(l), l + 1 == m.extraction_networks_size()));
      task_in.assign(n_tasks, layers_.back().TaskDim());
      shared_in = layers_.back().SharedDim();
    }
    for (int t = 0; t < m.task_towers_size(); ++t) {
      const auto& tower = m.task_towers(t);
      towers_.emplace_back(
          b, "_task_tower." + std::to_string(t), task_in[static_cast<std::size_t>(t)],
          tower.has_mlp() ? std::optional<MlpOptions>(FromProto(tower.mlp())) : std::nullopt);
    }
    tasks_ = TaskSpecs(config);
  }

  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor x = input_.Forward(sparse, dense);
    std::vector<at::Tensor> task(towers_.size(), x);
    at::Tensor shared = x;
    for (const ExtractionNetModule& layer : layers_) {
      ExtractionNetModule::Output out = layer.Forward(task, shared, training);
      task = std::move(out.task);
      shared = out.shared;
    }
    std::vector<at::Tensor> logits;
    for (std::size_t t = 0; t < towers_.size(); ++t)
      logits.push_back(towers_[t].Forward(task[t], training));
    return at::cat(logits, 1);  // [B, T]
  }

 private:
  GroupInput input_;
  std::vector<ExtractionNetModule> layers_;
  std::vector<TaskTowerModule> towers_;
};

}  // namespace

std::unique_ptr<DenseModel> MakePle(const PipelineConfig& config, std::uint64_t seed,
                                    const at::Device& device) {
  return std::make_unique<Ple>(config, seed, device);
}

}  // namespace tzrec::model_internal
