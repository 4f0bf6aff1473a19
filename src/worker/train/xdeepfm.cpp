// xDeepFM's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/xdeepfm.py):
// the WIDE group "wide" read through its "<feature>__wide" tables (wide_embedding_dim wide) as
// [B, F, wide_embedding_dim] → CIN (cin.hpp); the group "deep" → deep MLP; final MLP over
// [cin, deep] → Linear → logit.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <memory>
#include <string>
#include <vector>

#include "cin.hpp"
#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

class XDeepFm final : public DenseModel {
 public:
  XDeepFm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().xdeepfm();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const protos::FeatureGroupConfig& wide = Group(config, "wide");
    if (wide.group_type() != protos::WIDE)
      throw ConfigError("xdeepfm: group 'wide' must have group_type: WIDE");
    for (const auto& f : wide.feature_names()) {
      if (layout.sparse_dim.count(f) == 0U)
        throw ConfigError("xdeepfm: wide group feature '" + f + "' must be a sparse feature");
      wide_names_.push_back(f + kWideSuffix);
    }
    wide_dim_ = mc.wide_embedding_dim();
    deep_ = GroupInput(config, layout, "deep");
    deep_mlp_ = Mlp(b, "deep", deep_.Dim(), FromProto(mc.deep()));
    const std::vector<std::int64_t> sizes(mc.cin().cin_layer_size().begin(),
                                          mc.cin().cin_layer_size().end());
    cin_ = Cin(b, &parameters_, "cin", static_cast<std::int64_t>(wide_names_.size()), sizes);
    final_ = Mlp(b, "final", cin_.OutDim() + deep_mlp_.OutDim(), FromProto(mc.final()));
    out_ = b.AddLinear("output_mlp", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    std::vector<at::Tensor> ws;
    for (const auto& f : wide_names_) ws.push_back(sparse[f]);
    const auto n = static_cast<std::int64_t>(wide_names_.size());
    const at::Tensor cin = cin_.Forward(at::cat(ws, 1).reshape({-1, n, wide_dim_}));
    const at::Tensor deep = deep_mlp_.Forward(deep_.Forward(sparse, dense), training);
    return Output(out_, final_.Forward(at::cat({cin, deep}, 1), training));
  }

 private:
  std::vector<std::string> wide_names_;
  std::int64_t wide_dim_ = 0;
  GroupInput deep_;
  Mlp deep_mlp_;
  Cin cin_;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeXDeepFm(const PipelineConfig& config, std::uint64_t seed,
                                        const at::Device& device) {
  return std::make_unique<XDeepFm>(config, seed, device);
}

}  // namespace tzrec::model_internal
