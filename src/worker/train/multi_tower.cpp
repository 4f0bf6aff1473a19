// MultiTower's dense part (include/tzrec/train/model.hpp; TorchEasyRec
// tzrec/models/multi_tower.py).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class MultiTower final : public DenseModel {
 public:
  MultiTower(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().multi_tower();
    if (mc.towers().empty())
      throw ConfigError("multi_tower: towers is empty; add at least one tower");
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const GroupInput::EncoderBuilder encoders{&b, &parameters_, &buffers_};
    std::int64_t in = 0;
    for (const auto& tower : mc.towers()) {
      inputs_.emplace_back(config, layout, tower.input(), &encoders);
      towers_.emplace_back(b, "towers." + tower.input(), inputs_.back().Dim(),
                           FromProto(tower.mlp()));
      in += towers_.back().OutDim();
    }
    final_ = Mlp(b, "final_mlp", in, FromProto(mc.final()));
    out_ = b.AddLinear("output", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    std::vector<at::Tensor> outs;
    for (std::size_t i = 0; i < towers_.size(); ++i)
      outs.push_back(towers_[i].Forward(inputs_[i].Forward(sparse, dense, training), training));
    return Output(out_, final_.Forward(at::cat(outs, 1), training));
  }

 private:
  std::vector<GroupInput> inputs_;
  std::vector<Mlp> towers_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeMultiTower(const PipelineConfig& config, std::uint64_t seed,
                                           const at::Device& device) {
  return std::make_unique<MultiTower>(config, seed, device);
}

}  // namespace tzrec::model_internal
