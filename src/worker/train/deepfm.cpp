// DeepFM's dense part (include/tzrec/train/model.hpp).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model_parts.hpp"

namespace tzrec::model_internal {
namespace {

// TorchEasyRec's DeepFM (tzrec/models/deepfm.py, FM from tzrec/modules/fm.py).
class DeepFm final : public DenseModel {
 public:
  DeepFm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().deepfm();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const protos::FeatureGroupConfig& wide = Group(config, "wide");
    if (wide.group_type() != protos::WIDE)
      throw ConfigError("deepfm: group 'wide' must have group_type: WIDE");
    for (const auto& f : wide.feature_names()) {
      if (layout.sparse_dim.count(f) == 0U) {
        throw ConfigError("deepfm: wide group feature '" + f + "' must be a sparse feature");
      }
      wide_names_.push_back(f + kWideSuffix);
    }
    deep_ = GroupInput(config, layout, "deep");
    fm_from_deep_ = !HasGroup(config, "fm");
    if (!fm_from_deep_) fm_ = GroupInput(config, layout, "fm");
    const GroupInput& fm = fm_from_deep_ ? deep_ : fm_;
    for (const auto& [name, width] : fm.Widths()) {
      if (fm_dim_ != 0 && width != fm_dim_) {
        throw ConfigError("deepfm: the FM part needs one dim for every feature of group '" +
                          std::string(fm_from_deep_ ? "deep" : "fm") + "'; feature '" + name +
                          "' has " + std::to_string(width) + ", others " + std::to_string(fm_dim_) +
                          " (add a group 'fm' of equal-dim sparse features)");
      }
      fm_dim_ = width;
    }
    fm_num_ = static_cast<std::int64_t>(fm.Widths().size());
    deep_mlp_ = Mlp(b, "deep_mlp", deep_.Dim(), FromProto(mc.deep()));
    has_final_ = mc.has_final();
    std::int64_t out_in = deep_mlp_.OutDim();
    if (has_final_) {
      final_ = Mlp(b, "final_mlp", 1 + fm_dim_ + deep_mlp_.OutDim(), FromProto(mc.final()));
      out_in = final_.OutDim();
    }
    out_ = b.AddLinear("output", out_in, 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor deep_in = deep_.Forward(sparse, dense);
    at::Tensor y_wide;  // [B, 1]: the wide embeddings summed over features and dims
    if (wide_names_.empty()) {
      y_wide = at::zeros({deep_in.size(0), 1}, deep_in.options());
    } else {
      std::vector<at::Tensor> ws;
      for (const auto& f : wide_names_) ws.push_back(sparse[f]);
      y_wide = at::cat(ws, 1).sum(1, /*keepdim=*/true);
    }
    const at::Tensor y_deep = deep_mlp_.Forward(deep_in, training);
    const at::Tensor e =
        (fm_from_deep_ ? deep_in : fm_.Forward(sparse, dense)).reshape({-1, fm_num_, fm_dim_});
    const at::Tensor sum = e.sum(1);
    const at::Tensor y_fm = 0.5 * (sum * sum - (e * e).sum(1));  // [B, d]
    if (has_final_)
      return Output(out_, final_.Forward(at::cat({y_wide, y_fm, y_deep}, 1), training));
    return y_wide.view({-1}) + y_fm.sum(1) + Output(out_, y_deep);
  }

 private:
  GroupInput deep_;
  GroupInput fm_;
  bool fm_from_deep_ = true;
  std::vector<std::string> wide_names_;
  std::int64_t fm_dim_ = 0;
  std::int64_t fm_num_ = 0;
  Mlp deep_mlp_;
  bool has_final_ = false;
  Mlp final_;
  Linear out_;
};

}  // namespace

std::unique_ptr<DenseModel> MakeDeepFm(const PipelineConfig& config, std::uint64_t seed,
                                       const at::Device& device) {
  return std::make_unique<DeepFm>(config, seed, device);
}

}  // namespace tzrec::model_internal
