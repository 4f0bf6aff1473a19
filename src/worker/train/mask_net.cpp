// MaskNet's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/masknet.py):
// the one feature group → MaskNetModule (masknet_module.hpp) → Linear without bias → logit.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "masknet_module.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

MaskNetOptions MaskNetFromProto(const protos::MaskNetModule& m) {
  MaskNetOptions o;
  o.n_mask_blocks = m.n_mask_blocks();
  o.reduction_ratio = m.mask_block().reduction_ratio();
  o.aggregation_dim = m.mask_block().aggregation_dim();
  o.hidden_dim = m.mask_block().hidden_dim();
  if (m.has_top_mlp()) o.top_mlp = FromProto(m.top_mlp());
  o.use_parallel = m.use_parallel();
  return o;
}

class MaskNet final : public DenseModel {
 public:
  MaskNet(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const auto& model = config.model_config();
    if (model.feature_groups_size() != 1)
      throw ConfigError("mask_net: reads exactly one feature group");
    input_ = GroupInput(config, layout, model.feature_groups(0).group_name());
    const MaskNetOptions o = MaskNetFromProto(model.mask_net().mask_net_module());
    if (!o.top_mlp) throw ConfigError("mask_net: mask_net_module.top_mlp is required");
    net_ = MaskNetModule(b, "mask_net_layer", input_.Dim(), o);
    out_ = b.AddLinear("output_linear", net_.OutDim(), 1, /*bias=*/false);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    return Output(out_, net_.Forward(input_.Forward(sparse, dense), training));
  }

 private:
  GroupInput input_;
  MaskNetModule net_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeMaskNet(const PipelineConfig& config, std::uint64_t seed,
                                        const at::Device& device) {
  return std::make_unique<MaskNet>(config, seed, device);
}

}  // namespace tzrec::model_internal
