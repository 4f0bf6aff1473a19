// src/worker/train/masknet_module.hpp — TorchEasyRec's MaskNetModule and MaskBlock
// (tzrec/modules/masknet.py; options from tzrec/protos/module.proto messages MaskNetModule and
// MaskBlock) as a libtorch module that registers its tensors into a model's lists.
//
// MaskBlock(input_dim, mask_input_dim) on (x [B, input_dim], m [B, mask_input_dim]):
//   weights = Linear(agg → input_dim)(ReLU(Linear(mask_input_dim → agg)(m)))   "mask_generator"
//   out     = ReLU(LayerNorm(Linear(input_dim → hidden_dim)(x * weights)))       "ffn"
//   agg = int(input_dim * reduction_ratio) when reduction_ratio != 0, else aggregation_dim.
// MaskNetModule(feature_dim) on e [B, feature_dim]: ln = LayerNorm(e) ("ln_emb"), then
//   parallel: concat_i block_i(ln, e)                  → [B, n * hidden_dim]
//   serial:   h = block_0(ln, e); h = block_i(h, e)    → [B, hidden_dim]
// then the optional top MLP (mlp.hpp). LayerNorms: eps 1e-5, affine (weight 1, bias 0).
//
// Tensor names, in creation order = torch's named_parameters order ("<name>" the attribute, e.g.
// "mask_net_layer"): "<name>.ln_emb.{weight,bias}", then per block i
// "<name>.mask_blocks.<i>.mask_generator.{0,2}.{weight,bias}",
// "<name>.mask_blocks.<i>.ffn.{0,1}.{weight,bias}", then "<name>.top_mlp.mlp...". Linear init
// as torch.nn.Linear (ParamBuilder).
//
// Errors: ConfigError (n_mask_blocks 0, hidden_dim 0, an aggregation dim < 1). Forward: as Mlp
// (BatchNorm in top_mlp needs B > 1 when training). Thread-safety: as Mlp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlp.hpp"

namespace tzrec {

struct MaskNetOptions {
  std::int64_t n_mask_blocks = 0;
  double reduction_ratio = 1.0;  // the proto's float, widened
  std::int64_t aggregation_dim = 0;
  std::int64_t hidden_dim = 0;
  std::optional<MlpOptions> top_mlp;
  bool use_parallel = true;
};

class MaskNetModule {
 public:
  MaskNetModule() = default;
  MaskNetModule(ParamBuilder& b, const std::string& name, std::int64_t feature_dim,
                const MaskNetOptions& options);
  // e [B, feature_dim] → [B, OutDim()].
  at::Tensor Forward(const at::Tensor& e, bool training) const;
  std::int64_t OutDim() const { return out_dim_; }

 private:
  struct Norm {
    at::Tensor weight, bias;
  };
  struct Block {
    ParamBuilder::Linear agg, proj, hidden;
    Norm ln;
  };
  at::Tensor BlockForward(const Block& blk, const at::Tensor& x, const at::Tensor& m) const;

  Norm ln_emb_;
  std::vector<Block> blocks_;
  bool parallel_ = true;
  bool has_top_ = false;
  Mlp top_;
  std::int64_t out_dim_ = 0;
};

}  // namespace tzrec
