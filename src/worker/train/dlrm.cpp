// DLRM's dense part (include/tzrec/train/model.hpp; TorchEasyRec tzrec/models/dlrm.py).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/triu_indices.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model_parts.hpp"
#include "tzrec/core/interaction.hpp"

namespace tzrec::model_internal {
namespace {

// The upper triangle (i < j, row-major as torch.triu_indices(F, F, 1)) of S·Sᵀ: [B, F, d] →
// [B, F(F-1)/2] (TorchEasyRec's InteractionArch on the sparse features alone).
// `flat` holds i·F + j for those pairs.
at::Tensor SparseOnlyInteraction(const at::Tensor& s, const at::Tensor& flat) {
  const at::Tensor z = at::bmm(s, s.transpose(1, 2));  // [B, F, F]
  return z.reshape({s.size(0), -1}).index_select(1, flat);
}

class Dlrm final : public DenseModel {
 public:
  Dlrm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().dlrm();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    has_dense_ = HasGroup(config, "dense");
    sparse_ = GroupInput(config, layout, "sparse");
    sparse_names_ = sparse_.SparseNames();
    if (sparse_names_.empty())
      throw ConfigError("dlrm: group 'sparse' has no sparse (id) features");
    const std::int64_t d = layout.sparse_dim.at(sparse_names_.front());
    dim_ = d;
    const auto f = static_cast<std::int64_t>(sparse_names_.size());
    const std::int64_t n = has_dense_ ? f + 1 : f;  // vectors in the interaction
    std::int64_t in = n * (n - 1) / 2;
    if (has_dense_) {
      dense_ = GroupInput(config, layout, "dense");
      dense_mlp_ = Mlp(b, "dense_mlp", dense_.Dim(), FromProto(mc.dense_mlp()));
      if (dense_mlp_.OutDim() != d) {
        throw ConfigError(
            "dlrm: dense_mlp's last hidden unit is " + std::to_string(dense_mlp_.OutDim()) +
            " but the sparse embedding dim is " + std::to_string(d) + "; make them equal");
      }
      in += d;
      interaction_.emplace(f, device);
    } else {
      const at::Tensor tri =
          at::triu_indices(f, f, 1, at::TensorOptions().dtype(at::kLong).device(device));
      tri_ = tri[0] * f + tri[1];
    }
    with_sparse_ = mc.arch_with_sparse();
    if (with_sparse_) in += d * f;
    if (in == 0)
      throw ConfigError(
          "dlrm: without a 'dense' group one sparse feature and arch_with_sparse "
          "false leave final_mlp no input; add sparse features or a dense group");
    final_ = Mlp(b, "final_mlp", in, FromProto(mc.final()));
    out_ = b.AddLinear("output", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor emb = SparseBlock(sparse);  // [B, F, d]
    at::Tensor z;
    if (has_dense_) {
      const at::Tensor x = dense_mlp_.Forward(dense_.Forward(sparse, dense), training);  // [B, d]
      z = (*interaction_)(x, emb, with_sparse_);  // [triu, x, (emb)]: TorchEasyRec's order
    } else {
      z = SparseOnlyInteraction(emb, tri_);  // [triu]
      if (with_sparse_) z = at::cat({z, emb.reshape({emb.size(0), -1})}, 1);
    }
    return Output(out_, final_.Forward(z, training));
  }

  // The sparse features as [B, F, d]: one view of the EBC output when they are adjacent columns in
  // order (the usual case: features in config order), else a stack of per-feature slices. One view
  // keeps autograd from materialising a full-width zero gradient per feature.
  at::Tensor SparseBlock(const KeyedTensor& sparse) {
    if (block_offset_ == -2) {  // first call: find the layout
      block_offset_ = -1;
      const auto& keys = sparse.Keys();
      const auto offsets = sparse.OffsetPerKey();
      for (std::size_t k = 0; k + sparse_names_.size() <= keys.size(); ++k) {
        if (keys[k] != sparse_names_.front()) continue;
        bool adjacent = true;
        for (std::size_t i = 0; i < sparse_names_.size(); ++i) {
          adjacent =
              adjacent && keys[k + i] == sparse_names_[i] && sparse.LengthPerKey()[k + i] == dim_;
        }
        if (adjacent) block_offset_ = offsets[k];
        break;
      }
    }
    const auto n = static_cast<std::int64_t>(sparse_names_.size());
    if (block_offset_ >= 0) {
      return sparse.Values()
          .narrow(1, block_offset_, n * dim_)
          .view({sparse.Values().size(0), n, dim_});
    }
    std::vector<at::Tensor> vs;
    for (const auto& f : sparse_names_) vs.push_back(sparse[f]);
    return at::stack(vs, 1);
  }

 private:
  bool has_dense_ = true;
  GroupInput dense_;
  GroupInput sparse_;
  std::vector<std::string> sparse_names_;
  std::int64_t dim_ = 0;
  std::int64_t block_offset_ = -2;  // -2 unknown, -1 not adjacent, else the first column
  Mlp dense_mlp_;
  Mlp final_;
  Linear out_;
  bool with_sparse_ = true;
  std::optional<DotInteraction> interaction_;
  at::Tensor tri_;  // [F(F-1)/2] flat pair indices, without a dense group
};

}  // namespace

std::unique_ptr<DenseModel> MakeDlrm(const PipelineConfig& config, std::uint64_t seed,
                                     const at::Device& device) {
  return std::make_unique<Dlrm>(config, seed, device);
}

}  // namespace tzrec::model_internal
