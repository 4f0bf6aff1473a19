// DBMTL (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/dbmtl.py): the first feature
// group → optional bottom_mlp → optional MMoE (expert_mlp set; one input per task, else the same
// input for every task) → per task an optional task MLP ("task_mlps.<tower>") → for a task with
// relation_mlp, relation_mlp(concat(task net, relation nets of relation_tower_names, in order))
// ("relation_mlps.<tower>"; a named tower without relation_mlp contributes its task net) →
// Linear → 1 logit ("task_outputs.<t>"). relation_tower_names name earlier towers (validated).
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/linear.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mmoe_module.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class Dbmtl final : public DenseModel {
 public:
  Dbmtl(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const auto& mc = config.model_config();
    const protos::DBMTL& m = mc.dbmtl();
    input_ = GroupInput(config, MakeLayout(config), mc.feature_groups(0).group_name());
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    std::int64_t in = input_.Dim();
    if (m.has_bottom_mlp()) {
      bottom_.emplace(b, "bottom_mlp", in, FromProto(m.bottom_mlp()));
      in = bottom_->OutDim();
    }
    if (m.has_expert_mlp()) {
      mmoe_.emplace(
          b, "mmoe", in, FromProto(m.expert_mlp()), m.num_expert(), m.task_towers_size(),
          m.has_gate_mlp() ? std::optional<MlpOptions>(FromProto(m.gate_mlp())) : std::nullopt);
      in = mmoe_->OutDim();
    }
    std::map<std::string, std::int64_t> net_dim;  // tower → dim of its relation net
    for (const auto& t : m.task_towers()) {
      Tower tower;
      std::int64_t dim = in;
      if (t.has_mlp()) {
        tower.mlp.emplace(b, "task_mlps." + t.tower_name(), in, FromProto(t.mlp()));
        dim = tower.mlp->OutDim();
      }
      net_dim[t.tower_name()] = dim;
      towers_.push_back(std::move(tower));
    }
    for (int i = 0; i < m.task_towers_size(); ++i) {
      const auto& t = m.task_towers(i);
      if (!t.has_relation_mlp()) continue;
      std::int64_t dim = net_dim.at(t.tower_name());
      for (const auto& r : t.relation_tower_names()) {
        dim += net_dim.at(r);
        towers_[static_cast<std::size_t>(i)].relations.push_back(IndexOf(m, r));
      }
      towers_[static_cast<std::size_t>(i)].relation_mlp.emplace(
          b, "relation_mlps." + t.tower_name(), dim, FromProto(t.relation_mlp()));
      net_dim[t.tower_name()] = towers_[static_cast<std::size_t>(i)].relation_mlp->OutDim();
    }
    for (int i = 0; i < m.task_towers_size(); ++i) {
      towers_[static_cast<std::size_t>(i)].output = b.AddLinear(
          "task_outputs." + std::to_string(i), net_dim.at(m.task_towers(i).tower_name()), 1);
    }
    tasks_ = TaskSpecs(config);
  }

  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    at::Tensor net = input_.Forward(sparse, dense);
    if (bottom_) net = bottom_->Forward(net, training);
    const std::vector<at::Tensor> inputs =
        mmoe_ ? mmoe_->Forward(net, training) : std::vector<at::Tensor>(towers_.size(), net);
    std::vector<at::Tensor> relation_net;
    std::vector<at::Tensor> logits;
    for (std::size_t i = 0; i < towers_.size(); ++i) {
      const Tower& t = towers_[i];
      at::Tensor h = t.mlp ? t.mlp->Forward(inputs[i], training) : inputs[i];
      if (t.relation_mlp) {
        std::vector<at::Tensor> parts = {h};
        for (const std::size_t r : t.relations) parts.push_back(relation_net[r]);
        h = t.relation_mlp->Forward(at::cat(parts, 1), training);
      }
      relation_net.push_back(h);
      logits.push_back(at::linear(h, t.output.weight, t.output.bias));
    }
    return at::cat(logits, 1);  // [B, T]
  }

 private:
  struct Tower {
    std::optional<Mlp> mlp;
    std::optional<Mlp> relation_mlp;
    std::vector<std::size_t> relations;  // indices of relation_tower_names (earlier towers)
    ParamBuilder::Linear output;
  };
  static std::size_t IndexOf(const protos::DBMTL& m, const std::string& name) {
    for (int i = 0; i < m.task_towers_size(); ++i) {
      if (m.task_towers(i).tower_name() == name) return static_cast<std::size_t>(i);
    }
    throw InternalError("model_config.dbmtl: relation_tower_names names unknown tower '" + name +
                        "' (validate_multi_task.cpp refuses it)");
  }

  GroupInput input_;
  std::optional<Mlp> bottom_;
  std::optional<MMoEModule> mmoe_;
  std::vector<Tower> towers_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeDbmtl(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device) {
  return std::make_unique<Dbmtl>(config, seed, device);
}

}  // namespace tzrec::model_internal
