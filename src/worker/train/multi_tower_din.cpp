// MultiTowerDIN's dense part (include/tzrec/train/model.hpp; TorchEasyRec
// tzrec/models/multi_tower_din.py): one MLP tower per DEEP group, one DINEncoder per din_towers
// entry over its SEQUENCE group (query: the group's non-sequence features; sequence: its
// sequence features, model_parts.hpp GroupInput::DinTower), final_mlp over the concatenated
// outputs (towers first, then the DIN towers, upstream's order), Linear → logit. Tensor names:
// "towers.<group>.mlp...", "din_towers.<i>.mlp..." / "din_towers.<i>.linear...", "final_mlp...",
// "output...".
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <string>
#include <vector>

#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class MultiTowerDin final : public DenseModel {
 public:
  MultiTowerDin(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().multi_tower_din();
    if (mc.towers().empty() && mc.din_towers().empty())
      throw ConfigError("multi_tower_din: towers and din_towers are empty; add a tower");
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const GroupInput::EncoderBuilder encoders{&b, &parameters_, &buffers_};
    std::int64_t in = 0;
    for (const auto& tower : mc.towers()) {
      inputs_.emplace_back(config, layout, tower.input(), &encoders);
      towers_.emplace_back(b, "towers." + tower.input(), inputs_.back().Dim(),
                           FromProto(tower.mlp()));
      in += towers_.back().OutDim();
    }
    for (int i = 0; i < mc.din_towers_size(); ++i) {
      const auto& tower = mc.din_towers(i);
      din_.push_back(GroupInput::DinTower(config, layout, tower.input(), tower.attn_mlp(),
                                          "din_towers." + std::to_string(i), encoders));
      in += din_.back().Dim();
    }
    final_ = Mlp(b, "final_mlp", in, FromProto(mc.final()));
    out_ = b.AddLinear("output", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    std::vector<at::Tensor> outs;
    for (std::size_t i = 0; i < towers_.size(); ++i)
      outs.push_back(towers_[i].Forward(inputs_[i].Forward(sparse, dense, training), training));
    for (const auto& d : din_) outs.push_back(d.Forward(sparse, dense, training));
    return Output(out_, final_.Forward(at::cat(outs, 1), training));
  }

 private:
  std::vector<GroupInput> inputs_;
  std::vector<Mlp> towers_;
  std::vector<GroupInput> din_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeMultiTowerDin(const PipelineConfig& config, std::uint64_t seed,
                                              const at::Device& device) {
  return std::make_unique<MultiTowerDin>(config, seed, device);
}

}  // namespace tzrec::model_internal
