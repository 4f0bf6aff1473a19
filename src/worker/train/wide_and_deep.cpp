// WideAndDeep's dense part (include/tzrec/train/model.hpp; TorchEasyRec
// tzrec/models/wide_and_deep.py): y_wide = the WIDE group "wide"'s embeddings (each feature's own
// "<table>__wide" table of wide_embedding_dim, see model.cpp) summed over features and dims, and
// y_deep = deep_mlp(group "deep"). With `final`: output_mlp(final_mlp([y_wide, y_deep])); without:
// y_wide + output_mlp(y_deep). Tensor names: deep_mlp.*, final_mlp.*, output_mlp.{weight,bias}.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <string>
#include <vector>

#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class WideAndDeep final : public DenseModel {
 public:
  WideAndDeep(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().wide_and_deep();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const protos::FeatureGroupConfig& wide = Group(config, "wide");
    if (wide.group_type() != protos::WIDE)
      throw ConfigError("wide_and_deep: group 'wide' must have group_type: WIDE");
    for (const auto& f : wide.feature_names()) {
      if (layout.sparse_dim.count(f) == 0U)
        throw ConfigError("wide_and_deep: wide group feature '" + f + "' must be a sparse feature");
      wide_names_.push_back(f + kWideSuffix);
    }
    deep_ = GroupInput(config, layout, "deep");
    deep_mlp_ = Mlp(b, "deep_mlp", deep_.Dim(), FromProto(mc.deep()));
    has_final_ = mc.has_final();
    std::int64_t out_in = deep_mlp_.OutDim();
    if (has_final_) {
      final_ = Mlp(b, "final_mlp", 1 + deep_mlp_.OutDim(), FromProto(mc.final()));
      out_in = final_.OutDim();
    }
    out_ = b.AddLinear("output_mlp", out_in, 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    std::vector<at::Tensor> ws;
    for (const auto& f : wide_names_) ws.push_back(sparse[f]);
    const at::Tensor y_wide = at::cat(ws, 1).sum(1, /*keepdim=*/true);  // [B, 1]
    const at::Tensor y_deep = deep_mlp_.Forward(deep_.Forward(sparse, dense), training);
    if (has_final_) return Output(out_, final_.Forward(at::cat({y_wide, y_deep}, 1), training));
    return y_wide.view({-1}) + Output(out_, y_deep);
  }

 private:
  std::vector<std::string> wide_names_;
  GroupInput deep_;
  Mlp deep_mlp_;
  bool has_final_ = false;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeWideAndDeep(const PipelineConfig& config, std::uint64_t seed,
                                            const at::Device& device) {
  return std::make_unique<WideAndDeep>(config, seed, device);
}

}  // namespace tzrec::model_internal
