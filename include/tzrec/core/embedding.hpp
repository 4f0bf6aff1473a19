// tzrec/core/embedding.hpp — EmbeddingBagConfig, deterministic table initialisation, the
// embedding optimizers FBGEMM fuses into the TBE backward, and the unsharded
// EmbeddingBagCollection (torchrec/modules/embedding_modules.py semantics).
//
// Semantics followed:
//   * EBC output: a KeyedTensor [B, sum D] whose keys are the feature names, in table order and,
//     within a table, in that table's feature_names order (TorchRec EBC). A table listed for
//     several features (a shared table, tzrec `embedding_name`) is looked up once per feature.
//   * Pooling: SUM, or MEAN = sum / number of ids (an empty bag pools to zeros).
//     Weighted features multiply each row by its weight before pooling.
//   * Fused optimizers (FBGEMM SplitTableBatchedEmbeddingBagsCodegen, optimizer in backward):
//     gradients of one step are first summed per unique row over the whole batch, then only the
//     rows that occurred are updated:
//       SGD:              w -= lr * g
//       Adagrad:          s += g*g;            w -= lr * g / (sqrt(s) + eps)
//       RowWiseAdagrad:   s_row += mean(g*g);  w -= lr * g / (sqrt(s_row) + eps)   (one s per row
//                         of the shard: a column-wise shard keeps its own s, as FBGEMM does)
//       Adam:             t += 1 (one step counter per table shard);
//                         m = b1 m + (1-b1) g; v = b2 v + (1-b2) g*g;
//                         w -= lr * ((m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd * w)
//     weight_decay: Adam decoupled as above (FBGEMM's adam: m and v see the raw g); RowWiseAdagrad
//     by weight_decay_mode (FBGEMM): kNone ignores it, kL2 adds wd*w to g (in s too), kDecoupled
//     scales w by (1 - lr*wd) before subtracting lr*g/(sqrt(s)+eps); SGD/Adagrad (FBGEMM has none,
//     TorchEasyRec's FusedSGD/FusedAdagrad have no field): L2 added to g. gradient_clipping (FBGEMM
//     TBE backward, TorchEasyRec Fused*Optimizer.gradient_clipping/max_gradient): every element of
//     the pooled output gradient is clamped to [-max_gradient, max_gradient] before the pooling
//     backward, i.e. before the per-row sums (ApplyPooled does it; callers of Apply clip the pooled
//     gradient with ClipPooledGradient first). The embedding weight never gets a .grad.
//   * Initialisation: uniform(-sqrt(1/num_embeddings), sqrt(1/num_embeddings)) (TorchRec default),
//     generated in fixed chunks of kInitChunkRows rows from (seed, table name, chunk index), so any
//     shard [rows × cols] of a table is bit-identical to the same slice of the whole table, at any
//     world size.
// Thread-safety: an EmbeddingBagCollection is not thread-safe; free functions are.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/core/kjt.hpp"
#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

enum class PoolingType { kSum, kMean };

struct EmbeddingBagConfig {
  std::string name;  // table name
  std::int64_t num_embeddings = 0;
  std::int64_t embedding_dim = 0;
  std::vector<std::string> feature_names;
  PoolingType pooling = PoolingType::kSum;
};

// FBGEMM's WeightDecayMode (TorchEasyRec optimizer.proto WeightDecayMode NONE / L2 / DECOUPLE).
enum class WeightDecayMode { kNone, kL2, kDecoupled };

struct EmbeddingOptimizerConfig {
  EmbeddingOptimizerKind kind = EmbeddingOptimizerKind::kRowWiseAdagrad;
  double lr = 0.01;
  double eps = 1e-8;
  double beta1 = 0.9;    // Adam
  double beta2 = 0.999;  // Adam
  double weight_decay = 0.0;
  // RowWiseAdagrad only (FBGEMM WeightDecayMode). TorchEasyRec's FusedRowWiseAdagradOptimizer
  // defaults to NONE; kL2 here keeps the callers that predate the field unchanged.
  WeightDecayMode weight_decay_mode = WeightDecayMode::kL2;
  bool gradient_clipping = false;          // clamp the pooled output gradient to ±max_gradient
  double max_gradient = 1.0;               // > 0 when gradient_clipping
  double initial_accumulator_value = 0.0;  // Adagrad / RowWiseAdagrad state start
  // RowWiseAdagrad: columns per accumulator, 0 = the whole row (one accumulator per row, the
  // default). A column_wise shard keeps one accumulator per row of its own columns (FBGEMM), so the
  // unsharded reference of a column-wise table sets this to the column block to match it.
  std::int64_t rowwise_block_cols = 0;
};

inline constexpr std::int64_t kInitChunkRows = 4096;

// The pooled output gradient as FBGEMM's TBE backward sees it: clamped element-wise to
// [-max_gradient, max_gradient] when config.gradient_clipping, else `grad_out` itself. Throws
// std::invalid_argument when clipping with max_gradient <= 0.
at::Tensor ClipPooledGradient(const EmbeddingOptimizerConfig& config, const at::Tensor& grad_out);

// Rows [row_begin, row_end) × cols [col_begin, col_end) of table `config` initialised from `seed`
// (float32, on `device`). Identical to slicing InitTableSlice(config, seed, 0, rows, 0, dim).
at::Tensor InitTableSlice(const EmbeddingBagConfig& config, std::uint64_t seed,
                          std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                          std::int64_t col_end, const at::Device& device);

// Sums gradient rows with equal ids: ids int64 [N], grads [N, C] → (unique ids [U] ascending,
// summed grads [U, C]). Bit-deterministic on CPU (sums in batch order); on CUDA index_add_'s
// atomics may change the last bits between runs. N = 0 gives empty results.
std::pair<at::Tensor, at::Tensor> AggregateRowGradients(const at::Tensor& ids,
                                                        const at::Tensor& grads);

// The optimizer state of one table shard [rows × cols] and the fused update.
class EmbeddingOptimizerState {
 public:
  EmbeddingOptimizerState(const EmbeddingOptimizerConfig& config, std::int64_t rows,
                          std::int64_t cols, const at::Device& device);
  // One lookup's share of a backward: `ids` (local rows, int64 [N]) pooled into bags `offsets`
  // (int64 [S+1]) with optional `weights` [N]; `grad_out` [S, cols] is the gradient of the pooled
  // sums (any row stride, e.g. a column slice of a wider gradient).
  struct PooledGrad {
    at::Tensor ids;
    at::Tensor offsets;
    at::Tensor grad_out;
    at::Tensor weights;
  };
  // The fused backward + update (FBGEMM's TBE backward): equal to
  //   Apply(weight, AggregateRowGradients(cat ids, cat PooledSumBackward(...)))
  // but on CPU float32 it sums each row's gradient straight from grad_out and updates the row in
  // place, without the [N, cols] temporaries (other devices/dtypes take the tensor path): rows are
  // grouped by an LSD radix sort of (row, occurrence) keys, so each row sums in occurrence order.
  // Counts one step like Apply, also when `parts` hold no ids.
  void ApplyPooled(at::Tensor& weight, const std::vector<PooledGrad>& parts);
  // Updates `weight` [rows, cols] in place at `rows` (unique local row ids, int64 [U]) with the
  // summed gradients `grads` [U, cols]. Not differentiable; call under NoGradGuard.
  // One call = one optimizer step: Adam's step counter advances even when U = 0 (FBGEMM advances
  // its iteration on every backward), so call it once per backward for every shard.
  // Throws std::invalid_argument on shape/dtype/device mismatches and std::out_of_range when a
  // row id is outside [0, rows).
  void Apply(at::Tensor& weight, const at::Tensor& rows, const at::Tensor& grads);
  // State tensors by name for checkpoints: "momentum1" ([rows, cols] or [rows]), "momentum2"
  // (Adam), "step" (int64 scalar tensor, Adam). Empty for SGD. The momentum tensors share
  // storage with the state (copy_ into them restores them); "step" is a copy.
  std::vector<std::pair<std::string, at::Tensor>> StateTensors() const;
  // Restores state from StateTensors()-style pairs (names as above; shapes must match; any device).
  // Unknown names or wrong shapes throw std::invalid_argument.
  void LoadStateTensors(const std::vector<std::pair<std::string, at::Tensor>>& state);
  const EmbeddingOptimizerConfig& Config() const { return config_; }
  // The lr of the following updates (an LrSchedule's value for the sparse optimizer); >= 0.
  void SetLearningRate(double lr);
  std::int64_t Rows() const { return rows_; }
  std::int64_t Cols() const { return cols_; }
  std::int64_t Step() const { return step_; }  // Apply calls so far (all kinds)

 private:
  EmbeddingOptimizerConfig config_;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  at::Tensor momentum1_;
  at::Tensor momentum2_;
  std::int64_t step_ = 0;
};

// Pooled lookup of one table slice: `weight` [R, C]; `ids` int64 [N] local row ids (must be in
// [0, R)); `offsets` int64 [S+1] bag boundaries; `per_sample_weights` [N] or undefined.
// Returns [S, C] sums (no mean division; callers divide) on weight's device (ids, offsets and
// weights are moved there); empty bags give zero rows; S = 0 or N = 0 are allowed.
// Differentiable w.r.t. `weight` through at::embedding_bag when it requires grad (a dense,
// data-parallel table); the fused path (EmbeddingBagCollection) uses PooledSumBackward instead.
// Errors: std::invalid_argument for wrong dtypes/shapes, std::out_of_range for an id outside
// [0, R) (checked with one device sync).
at::Tensor PooledSum(const at::Tensor& weight, const at::Tensor& ids, const at::Tensor& offsets,
                     const at::Tensor& per_sample_weights);
// PooledSum written into `out` [S, C] (any row stride, unit column stride: e.g. a column slice of
// the sharded EBC's all-to-all buffer), bitwise equal to PooledSum, with prefetches of the rows
// ahead. CPU float32 without autograd on `weight` only: returns false, `out` untouched, for other
// devices or dtypes, a weight that needs grad or offsets that are not [0 .. N] non-decreasing
// (PooledSum then applies or reports). std::out_of_range for an id outside [0, R).
bool PooledSumInto(const at::Tensor& weight, const at::Tensor& ids, const at::Tensor& offsets,
                   const at::Tensor& per_sample_weights, at::Tensor& out);
// Backward of PooledSum w.r.t. the weight rows: grad_out [S, C] → per-id gradient rows [N, C]
// (row i of the result = grad_out[bag of id i] * weight_i), on grad_out's device.
// std::invalid_argument when shapes disagree (offsets[S] != num_ids is checked for CPU offsets).
at::Tensor PooledSumBackward(const at::Tensor& grad_out, const at::Tensor& offsets,
                             std::int64_t num_ids, const at::Tensor& per_sample_weights);

// Unsharded EBC with fused optimizer: the single-process reference of the sharded one and the
// building block of data-parallel tables.
class EmbeddingBagCollection {
 public:
  // Tables are initialised with InitTableSlice(config, seed, whole table). Throws
  // std::invalid_argument for duplicate table names, a feature listed by two tables, or a
  // non-positive num_embeddings / embedding_dim.
  EmbeddingBagCollection(std::vector<EmbeddingBagConfig> tables,
                         const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed,
                         const at::Device& device);
  ~EmbeddingBagCollection();
  EmbeddingBagCollection(EmbeddingBagCollection&&) noexcept;
  EmbeddingBagCollection& operator=(EmbeddingBagCollection&&) noexcept;

  // Differentiable in the autograd sense: backward of the returned values applies the fused
  // optimizer to the touched rows (once per backward; every table's EmbeddingOptimizerState::Apply
  // is called, with no rows for a table absent from the batch). `features` must hold every feature
  // name of the configs (extra keys are ignored; a KJT on another device is copied to this one);
  // ids must be in [0, num_embeddings) — std::out_of_range names the feature, the offending id and
  // num_embeddings otherwise. Under at::NoGradGuard the output does not require grad and no update
  // happens. A pending backward keeps the tables alive (it stays valid if the EBC is moved).
  // Output: float32 [B, sum D] on the EBC's device.
  KeyedTensor Forward(const KeyedJaggedTensor& features);
  const std::vector<EmbeddingBagConfig>& Tables() const;
  // The table's weight [num_embeddings, dim]; std::out_of_range if unknown.
  at::Tensor& Weight(const std::string& table);
  EmbeddingOptimizerState& OptimizerState(const std::string& table);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzrec
