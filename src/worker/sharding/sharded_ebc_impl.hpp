// sharded_ebc_impl.hpp — the private state of ShardedEmbeddingBagCollection, shared by its
// translation units: sharded_ebc.cpp (construction, column-run copies, the public methods),
// input_dist.cpp (the KJT all-to-all) and sharded_lookup.cpp (lookup, output dist, backward).
// The data path is described in include/tzrec/sharding/sharded_ebc.hpp; the layout (units,
// routes, column maps) in sharding_layout.hpp.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/autograd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "column_runs.hpp"
#include "sharding_layout.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"

namespace tzrec {

struct ShardedEmbeddingBagCollection::Dist {
  std::int64_t batch = 0;                    // local batch
  std::vector<std::int64_t> batch_per_rank;  // B_s of every rank
  std::int64_t global_batch = 0;             // Σ B_s
  PendingTensor lengths;                     // received lengths, order (source, route, sample)
  PendingTensor values;                      // received ids (re-based to the shard)
  PendingTensor weights;                     // received weights or invalid
  // Unweighted features: lengths and ids travel in one all-to-all, each source's block
  // [lengths, ids]; packed_len / packed_val are the received sizes per source.
  PendingTensor packed;
  std::vector<std::int64_t> packed_len;
  std::vector<std::int64_t> packed_val;
  bool weighted = false;
  bool exchanged = false;  // batch_per_rank came from the counts all-to-all
  // Data-parallel features: local ids/offsets/weights per DP feature (dp_features order).
  std::vector<at::Tensor> dp_ids;
  std::vector<at::Tensor> dp_offsets;
  std::vector<at::Tensor> dp_weights;
  // Local bag lengths per output feature [B_local] (for MEAN pooling).
  std::vector<at::Tensor> local_lengths;
};

namespace sharded_ebc_detail {

// What the backward of one Compute needs.
struct StepState : torch::CustomClassHolder {
  std::shared_ptr<ShardedEmbeddingBagCollection::Dist> dist;
  std::vector<at::Tensor> route_ids;      // per local route: ids [N_ρ]
  std::vector<at::Tensor> route_offsets;  // per local route: offsets [B_global+1]
  std::vector<at::Tensor> route_weights;  // per local route: weights or undefined
  std::function<void(StepState&, const at::Tensor&)> backward;  // Impl::Backward
};

inline at::TensorOptions I64(const at::Device& device) {
  return at::TensorOptions().dtype(at::kLong).device(device);
}

inline std::int64_t Sum(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

}  // namespace sharded_ebc_detail

// The layout (ShardingLayout's fields: units, routes, column maps) plus this rank's tensors.
struct ShardedEmbeddingBagCollection::Impl : ShardingLayout {
  using StepState = sharded_ebc_detail::StepState;

  std::vector<EmbeddingBagConfig> tables;
  ShardingPlan plan;
  EmbeddingOptimizerConfig optimizer;
  std::shared_ptr<Comm> comm;
  at::Device device{at::kCPU};

  // On CPU, when the all-to-all alone fills every output column once (no reduce-scatter, no DP
  // tables), the output is written straight from the received blocks (CopyColumnRuns) instead of
  // zero-filled and scatter-added.
  bool a2a_fills_output = false;
  // World 1 and a2a_runs one run over every column in order: the pooled all-to-all and the
  // column-run copies are the identity, so the send buffer is the output (and the gradient the
  // backward's receive buffer).
  bool a2a_identity = false;
  at::Tensor a2a_colmap_tensor;  // a2a_colmap on the device
  at::Tensor rs_colmap_tensor;   // rs_colmap on the device

  // Local shard storage: one entry per local unit.
  std::vector<at::Tensor> local_weights;
  std::vector<std::unique_ptr<EmbeddingOptimizerState>> local_states;
  // Data-parallel tables: full replicas, one per dp_tables entry.
  std::vector<at::Tensor> dp_weights;
  std::vector<std::unique_ptr<EmbeddingOptimizerState>> dp_states;

  at::Tensor dummy;  // requires grad: hooks the backward into autograd

  // The layout for this rank, optimizer states and device tensors (weights are initialised by
  // the constructor).
  void Build();

  // The q-major blocks of a flat pooled all-to-all buffer: views [batch, C_q], one per rank q.
  std::vector<at::Tensor> A2aBlocks(const at::Tensor& flat, std::int64_t batch) const;
  // Each block's first row and row length (CopyColumnRuns / GradToBlocks, column_runs.hpp).
  static std::vector<BlockRows> BlockPointers(const std::vector<at::Tensor>& blocks);
  // The forward's copy from the all-to-all's q-major blocks ([B, C_q] each, contiguous) into
  // the [B, total_dim] output layout (contiguous, CPU float32) along a2a_runs.
  void CopyColumnRuns(const std::vector<at::Tensor>& blocks, at::Tensor* full) const;
  // The backward's copy the other way: `grad` [B, total_dim] (CPU float32, column stride 0 or 1,
  // any row stride: a sum loss's gradient is an expanded scalar) divided by `divisor` into the
  // blocks, each element exactly as ATen's `grad / divisor` followed by a copy.
  void GradToBlocks(const at::Tensor& grad, float divisor,
                    const std::vector<at::Tensor>& blocks) const;

  // input_dist.cpp
  std::shared_ptr<Dist> InputDist(const KeyedJaggedTensor& kjt);
  struct SendBuffers;
  std::vector<JaggedTensor> FeatureBags(const KeyedJaggedTensor& kjt, Dist& dist) const;
  SendBuffers BuildSendBuffers(const std::vector<JaggedTensor>& jts, std::int64_t batch,
                               bool weighted) const;
  void ExchangeCounts(Dist& dist, const std::vector<std::int64_t>& val_splits,
                      std::vector<std::int64_t>& out_len, std::vector<std::int64_t>& out_val);

  // sharded_lookup.cpp
  KeyedTensor Compute(const std::shared_ptr<Dist>& dist);
  void RecatRoutes(Dist& dist, StepState& state) const;
  void LookupAndOutputDist(const Dist& dist, const StepState& state, at::Tensor& out);
  void AddDataParallel(const Dist& dist, at::Tensor& out) const;
  KeyedTensor Finish(const Dist& dist, const at::Tensor& out,
                     const c10::intrusive_ptr<StepState>& state) const;
  void Backward(StepState& st, const at::Tensor& grad_out);
  void OutputDistBackward(const Dist& dist, const at::Tensor& grad, double divisor,
                          at::Tensor& a2a_grad, at::Tensor& rs_grad);
  void ApplyShards(const StepState& st, const at::Tensor& a2a_grad, const at::Tensor& rs_grad);
  void ApplyDataParallel(const Dist& dist, const at::Tensor& grad);
};

}  // namespace tzrec
