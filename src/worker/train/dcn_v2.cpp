// DCNV2's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/dcn_v2.py, CrossV2
// from tzrec/modules/interaction.py, see cross.hpp): x = the model's one feature group;
// h = cross(backbone(x)) (backbone optional), with `deep`: h = [h, deep(x)] (deep reads x, not the
// backbone's output, as upstream); logit = output_mlp(final(h)), output_mlp without bias. Tensor
// names: backbone.*, cross.u_kernels.<l>.weight, cross.v_kernels.<l>.{weight,bias}, deep.*,
// final.*, output_mlp.weight.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>

#include "cross.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class DcnV2 final : public DenseModel {
 public:
  DcnV2(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().dcn_v2();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    // Upstream reads the first group (embedding_group.group_names()[0]); validation allows one.
    input_ = GroupInput(config, layout, config.model_config().feature_groups(0).group_name());
    std::int64_t dim = input_.Dim();
    has_backbone_ = mc.has_backbone();
    if (has_backbone_) {
      backbone_ = Mlp(b, "backbone", dim, FromProto(mc.backbone()));
      dim = backbone_.OutDim();
    }
    cross_ = CrossV2(b, "cross", dim, mc.cross().cross_num(), mc.cross().low_rank());
    std::int64_t final_in = cross_.OutDim();
    has_deep_ = mc.has_deep();
    if (has_deep_) {
      deep_ = Mlp(b, "deep", input_.Dim(), FromProto(mc.deep()));
      final_in += deep_.OutDim();
    }
    final_ = Mlp(b, "final", final_in, FromProto(mc.final()));
    out_ = b.AddLinear("output_mlp", final_.OutDim(), 1, /*bias=*/false);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor x = input_.Forward(sparse, dense);
    at::Tensor h = cross_.Forward(has_backbone_ ? backbone_.Forward(x, training) : x);
    if (has_deep_) h = at::cat({h, deep_.Forward(x, training)}, 1);
    return Output(out_, final_.Forward(h, training));
  }

 private:
  GroupInput input_;
  bool has_backbone_ = false;
  Mlp backbone_;
  CrossV2 cross_;
  bool has_deep_ = false;
  Mlp deep_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeDcnV2(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device) {
  return std::make_unique<DcnV2>(config, seed, device);
}

}  // namespace tzrec::model_internal
