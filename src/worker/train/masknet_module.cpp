// MaskNetModule (src/worker/train/masknet_module.hpp; TorchEasyRec tzrec/modules/masknet.py).
#include "masknet_module.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/relu.h>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

constexpr double kLnEps = 1e-5;

}  // namespace

MaskNetModule::MaskNetModule(ParamBuilder& b, const std::string& name, std::int64_t feature_dim,
                             const MaskNetOptions& o)
    : parallel_(o.use_parallel) {
  if (o.n_mask_blocks < 1 || o.hidden_dim < 1) {
    throw ConfigError(name + ": n_mask_blocks and mask_block.hidden_dim must be > 0, got " +
                      std::to_string(o.n_mask_blocks) + " and " + std::to_string(o.hidden_dim));
  }
  auto add_norm = [&](const std::string& n, std::int64_t dim) {
    return Norm{b.AddFilled(n + ".weight", dim, 1.0), b.AddFilled(n + ".bias", dim, 0.0)};
  };
  ln_emb_ = add_norm(name + ".ln_emb", feature_dim);
  std::int64_t in = feature_dim;
  for (std::int64_t i = 0; i < o.n_mask_blocks; ++i) {
    const std::int64_t agg =
        o.reduction_ratio != 0
            ? static_cast<std::int64_t>(static_cast<double>(in) * o.reduction_ratio)
            : o.aggregation_dim;
    const std::string p = name + ".mask_blocks." + std::to_string(i);
    if (agg < 1) {
      throw ConfigError(p + ": the aggregation dim is " + std::to_string(agg) +
                        "; raise reduction_ratio or aggregation_dim");
    }
    Block blk;
    blk.agg = b.AddLinear(p + ".mask_generator.0", feature_dim, agg);
    blk.proj = b.AddLinear(p + ".mask_generator.2", agg, in);
    blk.hidden = b.AddLinear(p + ".ffn.0", in, o.hidden_dim);
    blk.ln = add_norm(p + ".ffn.1", o.hidden_dim);
    blocks_.push_back(blk);
    if (!parallel_) in = o.hidden_dim;
  }
  out_dim_ = parallel_ ? o.hidden_dim * o.n_mask_blocks : o.hidden_dim;
  if (o.top_mlp) {
    has_top_ = true;
    top_ = Mlp(b, name + ".top_mlp", out_dim_, *o.top_mlp);
    out_dim_ = top_.OutDim();
  }
}

at::Tensor MaskNetModule::BlockForward(const Block& blk, const at::Tensor& x,
                                       const at::Tensor& m) const {
  const at::Tensor weights = at::linear(at::relu(at::linear(m, blk.agg.weight, blk.agg.bias)),
                                        blk.proj.weight, blk.proj.bias);
  const at::Tensor h = at::linear(x * weights, blk.hidden.weight, blk.hidden.bias);
  return at::relu(at::layer_norm(h, {h.size(1)}, blk.ln.weight, blk.ln.bias, kLnEps));
}

at::Tensor MaskNetModule::Forward(const at::Tensor& e, bool training) const {
  const at::Tensor ln = at::layer_norm(e, {e.size(1)}, ln_emb_.weight, ln_emb_.bias, kLnEps);
  at::Tensor hidden;
  if (parallel_) {
    std::vector<at::Tensor> outs;
    for (const Block& blk : blocks_) outs.push_back(BlockForward(blk, ln, e));
    hidden = at::cat(outs, 1);
  } else {
    hidden = BlockForward(blocks_.front(), ln, e);
    for (std::size_t i = 1; i < blocks_.size(); ++i) hidden = BlockForward(blocks_[i], hidden, e);
  }
  return has_top_ ? top_.Forward(hidden, training) : hidden;
}

}  // namespace tzrec
