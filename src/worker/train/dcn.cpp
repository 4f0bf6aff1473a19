// DCNV1's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/dcn.py, Cross from
// tzrec/modules/interaction.py, see cross.hpp): x = the model's one feature group; logit =
// output_linear(final_dnn([cross(x), deep(x)])), output_linear without bias. Tensor names:
// cross.w.<l>.weight, cross.b.<l>, deep.*, final_dnn.*, output_linear.weight.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>

#include "cross.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class DcnV1 final : public DenseModel {
 public:
  DcnV1(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().dcn_v1();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    // Upstream reads the first group (embedding_group.group_names()[0]); validation allows one.
    input_ = GroupInput(config, layout, config.model_config().feature_groups(0).group_name());
    cross_ = Cross(b, "cross", input_.Dim(), mc.cross().cross_num());
    deep_ = Mlp(b, "deep", input_.Dim(), FromProto(mc.deep()));
    final_ = Mlp(b, "final_dnn", cross_.OutDim() + deep_.OutDim(), FromProto(mc.final()));
    out_ = b.AddLinear("output_linear", final_.OutDim(), 1, /*bias=*/false);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor x = input_.Forward(sparse, dense);
    const at::Tensor z = at::cat({cross_.Forward(x), deep_.Forward(x, training)}, 1);
    return Output(out_, final_.Forward(z, training));
  }

 private:
  GroupInput input_;
  Cross cross_;
  Mlp deep_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeDcnV1(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device) {
  return std::make_unique<DcnV1>(config, seed, device);
}

}  // namespace tzrec::model_internal
