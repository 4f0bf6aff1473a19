// tzrec/train/model.hpp — the dense side of tzrec_train's models and their embedding tables,
// following TorchEasyRec's DLRM, DeepFM and MultiTower (tzrec/models/{dlrm,deepfm,multi_tower}.py;
// notes ../shared/reference/torchrec-sharding.md §1.8, §4.2).
//
//   DLRM        groups "dense" (raw features) and "sparse" (id features, one embedding dim d):
//               dense_mlp(dense) → [B, d]; pairwise dot products of {dense_out, e_1..e_F} (i < j);
//               final_mlp(concat(dense_out, interactions[, e_1..e_F if arch_with_sparse])) → Linear
//               → logit.
//   DeepFM      "wide" group: each feature's wide embedding (dim wide_embedding_dim, its own table
//               "<table>__wide") summed over features and dims → wide logit; "deep" group: FM
//               second order term 0.5·((Σe)² − Σe²) over its sparse features (equal dims) and
//               deep_mlp(concat of the group); final_mlp(concat(deep_out, fm)) → Linear → logit;
//               logit = that + wide.
//   MultiTower  one MLP per tower over its group's concat; final_mlp(concat(tower outputs)) →
//   Linear → logit.
// A group's input is the concat, in the group's feature order, of pooled sparse embeddings [B, D_f]
// and dense raw values [B, value_dim]. MLP = Linear + ReLU per hidden unit (torch.nn.Linear's
// default init U(±1/sqrt(fan_in)) from a seeded generator, so every rank starts identical even
// before the DenseSync broadcast). Logits are float32 [B]; the loss is BCE with logits, mean over
// the batch. Errors: ConfigError for configs the model cannot build (names the group/feature). Not
// thread-safe.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/core/kjt.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {

// The embedding tables of a config: one per table_name() (shared tables merged; features in config
// order), plus DeepFM's "__wide" tables. Feature names of wide tables are "<feature>__wide".
std::vector<EmbeddingBagConfig> EmbeddingTables(const PipelineConfig& config);
// Adds the "<feature>__wide" keys DeepFM's wide tables read (same ids); other models: unchanged.
KeyedJaggedTensor AddDerivedFeatures(const PipelineConfig& config, const KeyedJaggedTensor& sparse);
// Per-table planner constraints: the feature's sharding_types, else the global ones.
ParameterConstraints TableConstraints(const PipelineConfig& config, const std::string& table);

struct Parameter {
  std::string name;
  at::Tensor tensor;  // requires grad
};

class DenseModel {
 public:
  static std::unique_ptr<DenseModel> Create(const PipelineConfig& config, std::uint64_t seed,
                                            const at::Device& device);
  virtual ~DenseModel() = default;
  // sparse: the EBC output (keys ⊇ the model's sparse features); dense: [B, D_dense] as the input
  // pipeline builds it. Returns logits [B]. training: dropout on and BatchNorm on batch
  // statistics (updating its running stats); false (eval, export, predict): running stats, no
  // dropout (torch's module.train() / eval()).
  virtual at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) = 0;
  // Trainable tensors, in creation order; names "<module>.mlp.<i>.perceptron.<j>.<tensor>"
  // (TorchEasyRec's state-dict names) and "output.weight", "output.bias".
  const std::vector<Parameter>& parameters() const { return parameters_; }
  // Buffers without gradients (BatchNorm running_mean, running_var: float32;
  // num_batches_tracked: int64 scalar); names unique and distinct from the parameters'. Empty
  // unless an MLP uses use_bn or Dice.
  const std::vector<Parameter>& buffers() const { return buffers_; }
  std::int64_t num_parameters() const;

 protected:
  std::vector<Parameter> parameters_;
  std::vector<Parameter> buffers_;
};

}  // namespace tzrec
