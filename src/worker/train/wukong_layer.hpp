// src/worker/train/wukong_layer.hpp — TorchEasyRec's WuKongLayer with its LinearCompressBlock
// (LCB) and FactorizationMachineBlock (FMB) (tzrec/modules/interaction.py; options from
// tzrec/protos/module.proto message WuKongLayer).
//
// On x [B, F, D] (F = feature_num in, D = embedding dim):
//   LCB(F → L):  (xᵀ [B, D, F] @ W [F, L])ᵀ                                      [B, L, D]
//   FMB(F → M):  y = x @ (xᵀ @ W [F, C])  [B, F, C] → view [B, F·C] → LayerNorm(F·C)
//                → MLP(feature_num_mlp) → Linear(→ M·D) → view                   [B, M, D]
//   out = LayerNorm_D(concat(FMB, LCB along features) + residual(x))          [B, M + L, D]
//   residual: identity when F == L + M, else an LCB(F → L + M).
// Tensor names (creation order = torch's), "<name>" e.g. "_wukong_layers.0": "<name>.lcb.weight"
// [F, L]; "<name>.fmb.weight" [F, C], "<name>.fmb.norm.{weight,bias}", "<name>.fmb.mlp.mlp...",
// "<name>.fmb.feature_out_liner.{weight,bias}"; "<name>.norm.{weight,bias}";
// "<name>.residual_projection.weight" [F, L + M] when F != L + M. Init: the LCB/FMB weights
// kaiming_uniform_ (U(±sqrt(6 / size(1)))), Linears as torch.nn.Linear, LayerNorms (1, 0), eps
// 1e-5.
//
// Errors: ConfigError for a zero feature num (and the MLP's own). Thread-safety: as Mlp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "mlp.hpp"

namespace tzrec {

struct WuKongLayerOptions {
  std::int64_t lcb_feature_num = 0;
  std::int64_t fmb_feature_num = 0;
  std::int64_t compressed_feature_num = 16;
  MlpOptions feature_num_mlp;
};

class WuKongLayer {
 public:
  WuKongLayer() = default;
  WuKongLayer(ParamBuilder& b, const std::string& name, std::int64_t dim, std::int64_t feature_num,
              const WuKongLayerOptions& options);
  // x [B, feature_num, dim] → [B, OutFeatureNum(), dim].
  at::Tensor Forward(const at::Tensor& x, bool training) const;
  std::int64_t OutFeatureNum() const { return lcb_num_ + fmb_num_; }

 private:
  // A [rows, cols] weight with kaiming_uniform_'s U(±sqrt(6 / cols)).
  static at::Tensor KaimingWeight(ParamBuilder& b, const std::string& name, std::int64_t rows,
                                  std::int64_t cols);

  std::int64_t dim_ = 0, feature_num_ = 0, lcb_num_ = 0, fmb_num_ = 0, compressed_ = 0;
  at::Tensor lcb_w_, fmb_w_, fmb_ln_w_, fmb_ln_b_, ln_w_, ln_b_, residual_w_;
  Mlp fmb_mlp_;
  ParamBuilder::Linear fmb_out_;
};

}  // namespace tzrec
