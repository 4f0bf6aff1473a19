// WuKong's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/wukong.py): the
// sparse group as [B, N, d] (plus the dense group through dense_mlp as one more feature, first),
// stacked WuKongLayers (wukong_layer.hpp), flattened → final MLP → Linear → logit.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <string>
#include <vector>

#include "model_parts.hpp"
#include "wukong_layer.hpp"

namespace tzrec::model_internal {
namespace {

class WuKong final : public DenseModel {
 public:
  WuKong(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& model = config.model_config();
    const auto& mc = model.wukong();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const bool one = model.feature_groups_size() == 1;
    sparse_ = GroupInput(config, layout, one ? model.feature_groups(0).group_name() : "sparse");
    for (const auto& [name, width] : sparse_.Widths()) {
      if (dim_ != 0 && width != dim_)
        throw ConfigError("wukong: the sparse group's features need one dim ('" + name + "')");
      dim_ = width;
    }
    num_ = static_cast<std::int64_t>(sparse_.Widths().size());
    has_dense_ = !one && HasGroup(config, "dense");
    std::int64_t feature_num = num_;
    if (has_dense_) {
      dense_ = GroupInput(config, layout, "dense");
      dense_mlp_ = Mlp(b, "dense_mlp", dense_.Dim(), FromProto(mc.dense_mlp()));
      if (dense_mlp_.OutDim() != dim_) {
        throw ConfigError("wukong: dense_mlp's last hidden unit " +
                          std::to_string(dense_mlp_.OutDim()) + " must equal the sparse dim " +
                          std::to_string(dim_));
      }
      ++feature_num;
    }
    for (int i = 0; i < mc.wukong_layers_size(); ++i) {
      const auto& l = mc.wukong_layers(i);
      WuKongLayerOptions o;
      o.lcb_feature_num = l.lcb_feature_num();
      o.fmb_feature_num = l.fmb_feature_num();
      o.compressed_feature_num = l.compressed_feature_num();
      o.feature_num_mlp = FromProto(l.feature_num_mlp());
      layers_.emplace_back(b, "_wukong_layers." + std::to_string(i), dim_, feature_num, o);
      feature_num = layers_.back().OutFeatureNum();
    }
    final_ = Mlp(b, "final_mlp", feature_num * dim_, FromProto(mc.final()));
    out_ = b.AddLinear("output_mlp", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    at::Tensor feat = sparse_.Forward(sparse, dense).reshape({-1, num_, dim_});
    if (has_dense_) {
      const at::Tensor d = dense_mlp_.Forward(dense_.Forward(sparse, dense), training);
      feat = at::cat({d.unsqueeze(1), feat}, 1);
    }
    for (const auto& layer : layers_) feat = layer.Forward(feat, training);
    return Output(out_, final_.Forward(feat.reshape({feat.size(0), -1}), training));
  }

 private:
  GroupInput sparse_;
  GroupInput dense_;
  bool has_dense_ = false;
  std::int64_t dim_ = 0;
  std::int64_t num_ = 0;
  Mlp dense_mlp_;
  std::vector<WuKongLayer> layers_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeWuKong(const PipelineConfig& config, std::uint64_t seed,
                                       const at::Device& device) {
  return std::make_unique<WuKong>(config, seed, device);
}

}  // namespace tzrec::model_internal
