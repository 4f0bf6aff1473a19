// WuKongLayer (src/worker/train/wukong_layer.hpp; TorchEasyRec tzrec/modules/interaction.py).
#include "wukong_layer.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>

#include <cmath>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

constexpr double kLnEps = 1e-5;

// LinearCompressBlock: [B, F, D] with w [F, L] → [B, L, D].
at::Tensor Compress(const at::Tensor& x, const at::Tensor& w) {
  return at::matmul(x.transpose(1, 2), w).transpose(1, 2);
}

}  // namespace

at::Tensor WuKongLayer::KaimingWeight(ParamBuilder& b, const std::string& name, std::int64_t rows,
                                      std::int64_t cols) {
  // AddLinear(in = cols, out = rows) draws [rows, cols] from U(±1/sqrt(cols)); kaiming_uniform_
  // (a = 0, fan_in = size(1)) is sqrt(6) times wider.
  const at::Tensor w = b.AddLinear(name, cols, rows, /*bias=*/false).weight;
  w.detach().mul_(std::sqrt(6.0));  // in place on the registered leaf
  return w;
}

WuKongLayer::WuKongLayer(ParamBuilder& b, const std::string& name, std::int64_t dim,
                         std::int64_t feature_num, const WuKongLayerOptions& o)
    : dim_(dim),
      feature_num_(feature_num),
      lcb_num_(o.lcb_feature_num),
      fmb_num_(o.fmb_feature_num),
      compressed_(o.compressed_feature_num) {
  if (lcb_num_ < 1 || fmb_num_ < 1 || compressed_ < 1) {
    throw ConfigError(name +
                      ": lcb_feature_num, fmb_feature_num and compressed_feature_num must "
                      "be > 0, got " +
                      std::to_string(lcb_num_) + ", " + std::to_string(fmb_num_) + ", " +
                      std::to_string(compressed_));
  }
  // torch.nn.Module registration order: lcb, fmb (weight, norm, mlp, feature_out_liner), norm,
  // residual_projection.
  const std::string lcb_name = name + ".lcb";
  lcb_w_ = KaimingWeight(b, lcb_name, feature_num, lcb_num_);
  const std::string fmb = name + ".fmb";
  fmb_w_ = KaimingWeight(b, fmb, feature_num, compressed_);
  const std::int64_t fc = feature_num * compressed_;
  fmb_ln_w_ = b.AddFilled(fmb + ".norm.weight", fc, 1.0);
  fmb_ln_b_ = b.AddFilled(fmb + ".norm.bias", fc, 0.0);
  fmb_mlp_ = Mlp(b, fmb + ".mlp", fc, o.feature_num_mlp);
  fmb_out_ = b.AddLinear(fmb + ".feature_out_liner", fmb_mlp_.OutDim(), fmb_num_ * dim);
  ln_w_ = b.AddFilled(name + ".norm.weight", dim, 1.0);
  ln_b_ = b.AddFilled(name + ".norm.bias", dim, 0.0);
  if (feature_num != OutFeatureNum())
    residual_w_ = KaimingWeight(b, name + ".residual_projection", feature_num, OutFeatureNum());
}

at::Tensor WuKongLayer::Forward(const at::Tensor& x, bool training) const {
  const at::Tensor lcb = Compress(x, lcb_w_);
  at::Tensor f = at::matmul(x, at::matmul(x.transpose(1, 2), fmb_w_));  // [B, F, C]
  f = f.reshape({-1, feature_num_ * compressed_});
  f = at::layer_norm(f, {f.size(1)}, fmb_ln_w_, fmb_ln_b_, kLnEps);
  f = at::linear(fmb_mlp_.Forward(f, training), fmb_out_.weight, fmb_out_.bias);
  f = f.view({-1, fmb_num_, dim_});
  const at::Tensor residual = residual_w_.defined() ? Compress(x, residual_w_) : x;
  return at::layer_norm(at::cat({f, lcb}, 1) + residual, {dim_}, ln_w_, ln_b_, kLnEps);
}

}  // namespace tzrec
