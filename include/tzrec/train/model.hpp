// tzrec/train/model.hpp — the dense side of tzrec_train's models and their embedding tables,
// following TorchEasyRec's DLRM, DeepFM and MultiTower (tzrec/models/{dlrm,deepfm,multi_tower}.py,
// tzrec/modules/fm.py). Every MLP is TorchEasyRec's MLP built from its tzrec.protos.MLP
// (src/worker/train/mlp.hpp: Linear, BN/LN, activation, dropout).
//
//   DLRM        group "sparse" (id features, one embedding dim d), group "dense" optional.
//               With "dense": dense_mlp(dense) → [B, d]; pairwise dot products of
//               {dense_out, e_1..e_F} (i < j); final_mlp(concat(interactions, dense_out[,
//               e_1..e_F if arch_with_sparse])), TorchEasyRec's order. Without: no dense_mlp;
//               final_mlp(concat(pairwise dots of e_1..e_F[, e_1..e_F if arch_with_sparse])).
//               Then Linear → logit.
//   DeepFM      WIDE group "wide": each feature's wide embedding (dim wide_embedding_dim, its own
//               table "<table>__wide") summed over features and dims → y_wide [B, 1]; group
//               "deep": y_deep = deep_mlp(concat of the group); FM over group "fm" if defined,
//               else "deep" (all features one dim): y_fm = 0.5·((Σe)² − Σe²) [B, d]. With final:
//               final_mlp(concat(y_wide, y_fm, y_deep)) → Linear → logit; without:
//               logit = y_wide + Σ_d y_fm + Linear(y_deep).
//   MultiTower  one MLP per tower over its group's concat; final_mlp(concat(tower outputs)) →
//               Linear → logit. A group's din_encoder / simple_attention /
//               multi_window_din_encoder: below.
//   MultiTowerDIN  MultiTower's towers over DEEP groups plus one DINEncoder per din_towers entry
//               over its SEQUENCE group; final_mlp(concat(towers, DIN towers)) → Linear → logit.
//   SimpleMultiTask, MMoE, DBMTL  multi-task models over the first feature group, one logit per
//               task tower (src/worker/train/multi_task.cpp, dbmtl.cpp; docs/training.md
//               "Multi-task models"): Forward returns [B, T], Tasks() the T tasks.
// A group's input is the concat, in the group's feature order, of pooled sparse embeddings [B, D_f]
// and dense raw values [B, value_dim]. Parameters start as torch.nn.Linear's default init
// U(±1/sqrt(fan_in)) from a seeded generator (norm weights 1, biases 0), so every rank starts
// identical even before the DenseSync broadcast. Logits are float32 [B]; the loss is BCE with
// logits, mean over the batch. Errors: ConfigError for configs the model cannot build (names the
// group/feature/MLP field). Not thread-safe (Forward in training updates BN running stats).
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

// Every embedding table of a config: one per table_name() (shared tables merged; features in
// config order), plus DeepFM's "__wide" tables. Feature names of wide tables are "<feature>__wide".
// Throws ConfigError when features sharing a table disagree on its size.
std::vector<EmbeddingBagConfig> AllEmbeddingTables(const PipelineConfig& config);
// The tables of the sequences an attention encoder reads (AttentionSequenceFeatures): they are
// the EmbeddingCollection's (src/worker/train/sparse_arch.hpp), in AllEmbeddingTables order.
std::vector<std::string> SequenceTableNames(const PipelineConfig& config);
// The EmbeddingBagCollection's tables: AllEmbeddingTables without SequenceTableNames.
std::vector<EmbeddingBagConfig> EmbeddingTables(const PipelineConfig& config);
// Adds the "<feature>__wide" keys DeepFM's wide tables read (same ids); other configs: unchanged.
KeyedJaggedTensor AddDerivedFeatures(const PipelineConfig& config, const KeyedJaggedTensor& sparse);

// Unpooled sequences for din_encoder / simple_attention / multi_window_din_encoder and
// multi_tower_din's DIN towers (issue 14). The sequence features such an encoder reads, in config
// group order. Their tables are looked up through a sharded EmbeddingCollection (sparse_arch.hpp,
// as TorchEasyRec's SequenceEmbeddingGroupImpl), which hands the dense model, for each such
// feature f, two more KeyedTensor columns: SequenceKey(f) = "<f>__seq", the padded sequence
// [B, L·D] (L = sequence_length(f), item t of row b in columns [t·D, (t+1)·D), zeros past the
// row's length), and SequenceLengthKey(f) = "<f>__seqlen", the lengths [B, 1] (float).
std::vector<std::string> AttentionSequenceFeatures(const PipelineConfig& config);
std::string SequenceKey(const std::string& feature);
std::string SequenceLengthKey(const std::string& feature);
// Per-table planner constraints: the feature's sharding_types, else the global ones.
ParameterConstraints TableConstraints(const PipelineConfig& config, const std::string& table);

// One task of a multi-task model (TorchEasyRec tzrec/models/multi_task_rank.py: the task towers
// of simple_multi_task, mmoe, dbmtl in config order). Its loss, metric and output names carry the
// suffix "_<tower_name>" (binary_cross_entropy_<t>, auc_<t>, logits_<t>, probs_<t>).
struct TaskSpec {
  std::string tower_name;
  std::string label_name;
  int label_index = -1;  // index into data_config.label_fields / Batch::all_labels; -1: not read
  // TorchEasyRec's has_weight (weight or sample_weight_name set): the loss is
  // mean(bce · w / mean(w) · weight), w the sample weights or 1; otherwise mean(bce).
  bool has_weight = false;
  double weight = 1.0;
  bool sample_weighted = false;  // sample_weight_name set: Batch::sample_weights
  bool has_auc = false;          // an auc metric ("auc_<tower_name>")
  std::int64_t auc_thresholds = 0;
};
// The tasks of the config's multi-task model, in task_towers order; empty for single-task models.
// Pure; expects a validated config (label_index -1 when label_name is not in label_fields).
std::vector<TaskSpec> TaskSpecs(const PipelineConfig& config);

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
  // pipeline builds it. Returns logits [B] (single-task models) or [B, T], one column per task of
  // Tasks() (multi-task models). training: dropout on and BatchNorm on batch
  // statistics (updating its running stats); false (eval, export, predict): running stats, no
  // dropout (torch's module.train() / eval()).
  virtual at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) = 0;
  // Trainable tensors, in creation order; names "<module>.mlp.<i>.perceptron.<j>.<tensor>"
  // (TorchEasyRec's state-dict names) and "output.weight", "output.bias".
  const std::vector<Parameter>& Parameters() const { return parameters_; }
  // Buffers without gradients (BatchNorm running_mean, running_var: float32;
  // num_batches_tracked: int64 scalar); names unique and distinct from the parameters'. Empty
  // unless an MLP uses use_bn or Dice.
  const std::vector<Parameter>& Buffers() const { return buffers_; }
  std::int64_t NumParameters() const;
  // The tasks of a multi-task model (Forward's T columns, in order); empty for single-task ones.
  virtual const std::vector<TaskSpec>& Tasks() const { return tasks_; }

 protected:
  std::vector<TaskSpec> tasks_;
  std::vector<Parameter> parameters_;
  std::vector<Parameter> buffers_;
};

}  // namespace tzrec
