// ShardedEmbeddingBagCollection: input dist, local lookup, output dist and the mirrored backward
// with fused optimizers (see include/tzrec/sharding/sharded_ebc.hpp for the data path).
#include "tzrec/sharding/sharded_ebc.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/ivalue.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace tzrec {
namespace {

// Where a unit's partial pooled sums travel in the output dist.
enum class OutGroup { kAllToAll, kReduceScatter };

// One shard of a sharded (non data-parallel) table.
struct Unit {
  int table = 0;
  Shard shard;
  OutGroup group = OutGroup::kAllToAll;
  bool full_rows = true;  // the shard holds every row (table_wise, column_wise)
  int local = -1;         // index into Impl::local_weights when the shard lives on this rank
};

// One output key of the EBC (a feature of a table).
struct Feature {
  std::string name;
  int table = 0;
  std::int64_t col_base = 0;  // first column in the [B, ΣD] output
  bool mean = false;
};

// The ids of `feature` that go to `unit` (on the unit's rank).
struct Route {
  int unit = 0;
  int feature = 0;
};

at::TensorOptions I64(const at::Device& device) {
  return at::TensorOptions().dtype(at::kLong).device(device);
}

std::int64_t Sum(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

}  // namespace

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
  // Data-parallel features: local ids/offsets/weights per DP feature (Impl::dp_features order).
  std::vector<at::Tensor> dp_ids;
  std::vector<at::Tensor> dp_offsets;
  std::vector<at::Tensor> dp_weights;
  // Local bag lengths per output feature [B_local] (for MEAN pooling).
  std::vector<at::Tensor> local_lengths;
};

namespace {

// What the backward of one Compute needs.
struct StepState : torch::CustomClassHolder {
  std::shared_ptr<ShardedEmbeddingBagCollection::Dist> dist;
  std::vector<at::Tensor> route_ids;      // per local route: ids [N_ρ]
  std::vector<at::Tensor> route_offsets;  // per local route: offsets [B_global+1]
  std::vector<at::Tensor> route_weights;  // per local route: weights or undefined
  std::function<void(StepState&, const at::Tensor&)> backward;  // Impl::Backward
};

}  // namespace

struct ShardedEmbeddingBagCollection::Impl {
  std::vector<EmbeddingBagConfig> tables;
  ShardingPlan plan;
  EmbeddingOptimizerConfig optimizer;
  std::shared_ptr<Comm> comm;
  int rank = 0;
  int world = 1;
  at::Device device{at::kCPU};

  std::vector<Feature> features;  // output keys in EBC order
  std::int64_t total_dim = 0;
  std::vector<Unit> units;
  std::vector<std::vector<Route>> routes;       // per destination rank
  bool any_sharded = false;                     // some table is not data_parallel (global)
  bool any_a2a = false;                         // some pooled a2a columns exist (global)
  std::int64_t rs_cols = 0;                     // reduce-scatter columns (same on every rank)
  std::vector<std::int64_t> a2a_cols_per_rank;  // C_q
  at::Tensor a2a_colmap;                        // [ΣC_q] target columns, q-major
  // On CPU, when the all-to-all alone fills every output column once (no reduce-scatter, no DP
  // tables), the output is written straight from the received blocks (CopyColumnRuns) instead of
  // zero-filled and scatter-added.
  bool a2a_fills_output = false;
  // The same map as runs of adjacent columns, per source rank q: block q's columns
  // [src, src + len) are output columns [dst, dst + len). CPU copies use these instead of
  // index_select along dim 1.
  struct ColumnRun {
    std::int64_t src, dst, len;
  };
  std::vector<std::vector<ColumnRun>> a2a_runs;
  at::Tensor rs_colmap;  // [rs_cols]
  bool any_mean = false;

  // Local shard storage: one entry per unit on this rank.
  std::vector<int> local_units;
  std::vector<at::Tensor> local_weights;
  std::vector<std::unique_ptr<EmbeddingOptimizerState>> local_states;

  // Data-parallel tables: full replicas.
  std::vector<int> dp_tables;             // table indices
  std::unordered_map<int, int> dp_index;  // table → index into dp_* vectors
  std::vector<at::Tensor> dp_weights;
  std::vector<std::unique_ptr<EmbeddingOptimizerState>> dp_states;
  std::vector<int> dp_features;  // feature indices of DP tables

  at::Tensor dummy;             // requires grad: hooks the backward into autograd
  double gradient_scale = 1.0;  // GradScaler loss scale

  void Build();
  void Backward(StepState& st, const at::Tensor& grad_out);
  KeyedTensor Compute(const std::shared_ptr<Dist>& dist);
  // The q-major blocks of a flat pooled all-to-all buffer: views [batch, C_q], one per rank q.
  std::vector<at::Tensor> A2aBlocks(const at::Tensor& flat, std::int64_t batch) const {
    std::vector<at::Tensor> blocks;
    std::int64_t at_elem = 0;
    for (int q = 0; q < world; ++q) {
      const std::int64_t cq = a2a_cols_per_rank[static_cast<std::size_t>(q)];
      blocks.push_back(flat.narrow(0, at_elem, batch * cq).view({batch, cq}));
      at_elem += batch * cq;
    }
    return blocks;
  }
  // Copies between the all-to-all's q-major blocks ([B, C_q] each, contiguous) and the
  // [B, total_dim] output layout (contiguous, CPU float32) along a2a_runs: blocks → *full when
  // to_blocks is false (the forward), *full → blocks when true (the backward).
  void CopyColumnRuns(const std::vector<at::Tensor>& blocks, at::Tensor* full,
                      bool to_blocks) const {
    const std::int64_t rows = full->size(0);
    const std::int64_t width = full->size(1);
    float* fp = full->data_ptr<float>();
    std::vector<float*> bp;
    bp.reserve(blocks.size());
    for (const auto& b : blocks) bp.push_back(b.data_ptr<float>());
    at::parallel_for(0, rows, 256, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        float* row = fp + r * width;
        for (std::size_t q = 0; q < a2a_runs.size(); ++q) {
          const std::int64_t cq = blocks[q].size(1);
          float* brow = bp[q] + r * cq;
          for (const ColumnRun& run : a2a_runs[q]) {
            if (to_blocks) {
              std::memcpy(brow + run.src, row + run.dst,
                          static_cast<std::size_t>(run.len) * sizeof(float));
            } else {
              std::memcpy(row + run.dst, brow + run.src,
                          static_cast<std::size_t>(run.len) * sizeof(float));
            }
          }
        }
      }
    });
  }
  std::shared_ptr<Dist> InputDist(const KeyedJaggedTensor& kjt);
};

namespace {

class ShardedLookupFunction : public torch::autograd::Function<ShardedLookupFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& /*dummy*/,
                            const at::Tensor& output, const c10::intrusive_ptr<StepState>& state) {
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return output.view(output.sizes());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto state =
        c10::static_intrusive_pointer_cast<StepState>(ctx->saved_data["state"].toCapsule());
    state->backward(*state, grads.at(0));
    return {at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

void ShardedEmbeddingBagCollection::Impl::Build() {
  rank = comm->rank();
  world = comm->world_size();
  device = comm->device();
  if (plan.world_size != world) {
    throw std::invalid_argument("sharding plan is for world size " +
                                std::to_string(plan.world_size) + " but this job has " +
                                std::to_string(world) +
                                " ranks: re-plan for the current world size");
  }
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto& cfg = tables[t];
    if (cfg.feature_names.empty() || cfg.num_embeddings <= 0 || cfg.embedding_dim <= 0) {
      throw std::invalid_argument("table '" + cfg.name +
                                  "' needs rows > 0, dim > 0 and at least one feature");
    }
    for (const auto& f : cfg.feature_names) {
      features.push_back(
          Feature{f, static_cast<int>(t), total_dim, cfg.pooling == PoolingType::kMean});
      total_dim += cfg.embedding_dim;
      any_mean = any_mean || cfg.pooling == PoolingType::kMean;
    }
  }
  for (std::size_t i = 0; i < features.size(); ++i) {
    for (std::size_t j = i + 1; j < features.size(); ++j) {
      if (features[i].name == features[j].name) {
        throw std::invalid_argument("feature '" + features[i].name +
                                    "' is listed by two tables: give each table its own features");
      }
    }
  }

  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto& cfg = tables[t];
    const ParameterSharding& ps = plan.Get(cfg.name);
    if (ps.sharding_type == ShardingType::kDataParallel) {
      dp_index[static_cast<int>(t)] = static_cast<int>(dp_tables.size());
      dp_tables.push_back(static_cast<int>(t));
      dp_weights.emplace_back();  // initialised by the constructor
      dp_states.push_back(nullptr);
      continue;
    }
    any_sharded = true;
    // Reduce-scatter needs one shard per rank (row_wise; table_row_wise on a single host).
    bool one_per_rank = static_cast<int>(ps.shards.size()) == world;
    for (int i = 0; one_per_rank && i < world; ++i) {
      one_per_rank = ps.shards[static_cast<std::size_t>(i)].rank == i;
    }
    const bool row_split = ps.sharding_type == ShardingType::kRowWise ||
                           ps.sharding_type == ShardingType::kTableRowWise;
    if (ps.shards.empty()) {
      throw std::invalid_argument("sharding plan has no shard for table '" + cfg.name + "'");
    }
    for (const Shard& s : ps.shards) {
      if (s.rank < 0 || s.rank >= world || s.row_offset < 0 || s.col_offset < 0 ||
          s.row_offset + s.rows > cfg.num_embeddings || s.col_offset + s.cols > cfg.embedding_dim) {
        throw std::invalid_argument(
            "sharding plan shard of table '" + cfg.name + "' (rank " + std::to_string(s.rank) +
            ", offsets " + std::to_string(s.row_offset) + "," + std::to_string(s.col_offset) +
            ") does not fit the table " + std::to_string(cfg.num_embeddings) + " x " +
            std::to_string(cfg.embedding_dim) + ": re-plan for these tables");
      }
      Unit u;
      u.table = static_cast<int>(t);
      u.shard = s;
      u.group = (row_split && one_per_rank) ? OutGroup::kReduceScatter : OutGroup::kAllToAll;
      u.full_rows = s.row_offset == 0 && s.rows == cfg.num_embeddings;
      if (!row_split || one_per_rank || s.rows > 0) {
        units.push_back(u);
      }
    }
  }

  // Routes per destination, ordered (table, feature, unit).
  routes.assign(static_cast<std::size_t>(world), {});
  for (std::size_t fi = 0; fi < features.size(); ++fi) {
    for (std::size_t ui = 0; ui < units.size(); ++ui) {
      if (units[ui].table == features[fi].table) {
        routes[static_cast<std::size_t>(units[ui].shard.rank)].push_back(
            Route{static_cast<int>(ui), static_cast<int>(fi)});
      }
    }
  }
  // Route order must be (table, feature, unit): features are already in table order.

  // Local storage.
  for (std::size_t ui = 0; ui < units.size(); ++ui) {
    Unit& u = units[ui];
    if (u.shard.rank != rank) continue;
    u.local = static_cast<int>(local_units.size());
    local_units.push_back(static_cast<int>(ui));
    local_weights.emplace_back();  // initialised by the constructor
    local_states.push_back(
        std::make_unique<EmbeddingOptimizerState>(optimizer, u.shard.rows, u.shard.cols, device));
  }
  for (std::size_t i = 0; i < dp_tables.size(); ++i) {
    const auto& cfg = tables[static_cast<std::size_t>(dp_tables[i])];
    dp_states[i] = std::make_unique<EmbeddingOptimizerState>(optimizer, cfg.num_embeddings,
                                                             cfg.embedding_dim, device);
  }
  for (std::size_t fi = 0; fi < features.size(); ++fi) {
    if (dp_index.count(features[fi].table) != 0U) dp_features.push_back(static_cast<int>(fi));
  }

  // Column maps of the output dist.
  a2a_cols_per_rank.assign(static_cast<std::size_t>(world), 0);
  std::vector<std::int64_t> a2a_map;
  for (int q = 0; q < world; ++q) {
    for (const Route& ro : routes[static_cast<std::size_t>(q)]) {
      const Unit& u = units[static_cast<std::size_t>(ro.unit)];
      if (u.group != OutGroup::kAllToAll) continue;
      const Feature& f = features[static_cast<std::size_t>(ro.feature)];
      for (std::int64_t c = 0; c < u.shard.cols; ++c)
        a2a_map.push_back(f.col_base + u.shard.col_offset + c);
      a2a_cols_per_rank[static_cast<std::size_t>(q)] += u.shard.cols;
    }
  }
  any_a2a = !a2a_map.empty();
  std::vector<std::int64_t> rs_map;
  for (const Route& ro : routes[static_cast<std::size_t>(rank)]) {
    const Unit& u = units[static_cast<std::size_t>(ro.unit)];
    if (u.group != OutGroup::kReduceScatter) continue;
    const Feature& f = features[static_cast<std::size_t>(ro.feature)];
    for (std::int64_t c = 0; c < u.shard.cols; ++c)
      rs_map.push_back(f.col_base + u.shard.col_offset + c);
  }
  rs_cols = static_cast<std::int64_t>(rs_map.size());
  a2a_colmap = at::tensor(a2a_map, at::kLong).to(device);
  a2a_runs.assign(static_cast<std::size_t>(world), {});
  {
    std::size_t at_col = 0;
    for (int q = 0; q < world; ++q) {
      auto& runs = a2a_runs[static_cast<std::size_t>(q)];
      for (std::int64_t c = 0; c < a2a_cols_per_rank[static_cast<std::size_t>(q)]; ++c) {
        const std::int64_t dst = a2a_map[at_col++];
        if (!runs.empty() && runs.back().dst + runs.back().len == dst) {
          ++runs.back().len;
        } else {
          runs.push_back({c, dst, 1});
        }
      }
    }
  }
  if (device.is_cpu() && rs_map.empty() && dp_features.empty() &&
      static_cast<std::int64_t>(a2a_map.size()) == total_dim) {
    std::vector<bool> seen(a2a_map.size(), false);
    bool permutation = true;
    for (const std::int64_t c : a2a_map) {
      permutation = permutation && c >= 0 && c < total_dim && !seen[static_cast<std::size_t>(c)];
      if (permutation) seen[static_cast<std::size_t>(c)] = true;
    }
    a2a_fills_output = permutation;
  }

  rs_colmap = at::tensor(rs_map, at::kLong).to(device);
  dummy = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device));
  dummy.set_requires_grad(true);
}

std::shared_ptr<ShardedEmbeddingBagCollection::Dist> ShardedEmbeddingBagCollection::Impl::InputDist(
    const KeyedJaggedTensor& kjt_in) {
  auto dist = std::make_shared<Dist>();
  const KeyedJaggedTensor kjt = kjt_in.values().device() == device ? kjt_in : kjt_in.To(device);
  const std::int64_t batch = kjt.stride();
  dist->batch = batch;
  dist->weighted = kjt.has_weights();

  // Per output feature: its jagged ids, validated against the table size.
  std::vector<JaggedTensor> jts(features.size());
  std::vector<at::Tensor> bag_of_id(features.size());
  for (std::size_t fi = 0; fi < features.size(); ++fi) {
    const Feature& f = features[fi];
    jts[fi] = kjt[f.name];
    const auto& cfg = tables[static_cast<std::size_t>(f.table)];
    const at::Tensor& ids = jts[fi].values;
    if (ids.numel() > 0) {
      const std::int64_t lo = ids.min().item<std::int64_t>();
      const std::int64_t hi = ids.max().item<std::int64_t>();
      if (lo < 0 || hi >= cfg.num_embeddings) {
        throw std::out_of_range(
            "feature '" + f.name + "' has id " + std::to_string(lo < 0 ? lo : hi) +
            " outside table '" + cfg.name + "' of " + std::to_string(cfg.num_embeddings) +
            " rows: hash or bucketize ids into [0, " + std::to_string(cfg.num_embeddings) +
            ") (num_buckets / hash_bucket_size)");
      }
    }
    dist->local_lengths.push_back(jts[fi].lengths);
  }
  for (int fi : dp_features) {
    const JaggedTensor& jt = jts[static_cast<std::size_t>(fi)];
    dist->dp_ids.push_back(jt.values);
    dist->dp_offsets.push_back(jt.offsets);
    dist->dp_weights.push_back(jt.weights);
  }
  if (!any_sharded) {
    dist->batch_per_rank.assign(static_cast<std::size_t>(world), batch);
    dist->global_batch = batch * world;
    return dist;
  }

  // Build the send buffers, destination-major, route order within a destination.
  std::vector<at::Tensor> send_lengths;
  std::vector<at::Tensor> send_values;
  std::vector<at::Tensor> send_weights;
  std::vector<at::Tensor> send_packed;  // per destination: its routes' lengths, then their ids
  std::vector<std::int64_t> len_splits(static_cast<std::size_t>(world), 0);
  std::vector<std::int64_t> val_splits(static_cast<std::size_t>(world), 0);
  for (int d = 0; d < world; ++d) {
    const std::size_t first_route = send_values.size();
    for (const Route& ro : routes[static_cast<std::size_t>(d)]) {
      const Unit& u = units[static_cast<std::size_t>(ro.unit)];
      const JaggedTensor& jt = jts[static_cast<std::size_t>(ro.feature)];
      at::Tensor lengths = jt.lengths;
      at::Tensor values = jt.values;
      at::Tensor weights = jt.weights;
      if (!u.full_rows) {
        at::Tensor& bags = bag_of_id[static_cast<std::size_t>(ro.feature)];
        if (!bags.defined()) {
          bags =
              at::repeat_interleave(at::arange(batch, I64(device)), jt.lengths, {}, values.numel());
        }
        const at::Tensor mask =
            (values >= u.shard.row_offset) & (values < u.shard.row_offset + u.shard.rows);
        const at::Tensor kept = mask.nonzero().view({-1});
        lengths =
            at::zeros({batch}, I64(device))
                .index_add_(0, bags.index_select(0, kept), at::ones({kept.numel()}, I64(device)));
        values = values.index_select(0, kept) - u.shard.row_offset;
        if (weights.defined()) weights = weights.index_select(0, kept);
      }
      send_lengths.push_back(lengths);
      send_values.push_back(values);
      if (dist->weighted) send_weights.push_back(weights);
      len_splits[static_cast<std::size_t>(d)] += batch;
      val_splits[static_cast<std::size_t>(d)] += values.numel();
    }
    if (!dist->weighted) {
      send_packed.insert(send_packed.end(),
                         send_lengths.begin() + static_cast<std::ptrdiff_t>(first_route),
                         send_lengths.end());
      send_packed.insert(send_packed.end(),
                         send_values.begin() + static_cast<std::ptrdiff_t>(first_route),
                         send_values.end());
    }
  }
  // Phase 1: counts [W, 2] = (local batch, ids) per destination.
  at::Tensor counts = at::empty({world, 2}, at::kLong);
  auto* c = counts.data_ptr<std::int64_t>();
  for (int d = 0; d < world; ++d) {
    c[2 * d] = batch;
    c[2 * d + 1] = val_splits[static_cast<std::size_t>(d)];
  }
  const std::vector<std::int64_t> ones(static_cast<std::size_t>(world), 1);
  at::Tensor recv_counts = comm->AllToAll(counts.to(device), ones, ones).to(at::kCPU);
  dist->batch_per_rank.resize(static_cast<std::size_t>(world));
  dist->exchanged = true;
  std::vector<std::int64_t> out_len(static_cast<std::size_t>(world));
  std::vector<std::int64_t> out_val(static_cast<std::size_t>(world));
  const auto* rc = recv_counts.data_ptr<std::int64_t>();
  const auto local_routes =
      static_cast<std::int64_t>(routes[static_cast<std::size_t>(rank)].size());
  for (int s = 0; s < world; ++s) {
    dist->batch_per_rank[static_cast<std::size_t>(s)] = rc[2 * s];
    out_len[static_cast<std::size_t>(s)] = local_routes * rc[2 * s];
    out_val[static_cast<std::size_t>(s)] = rc[2 * s + 1];
  }
  dist->global_batch = Sum(dist->batch_per_rank);
  // Phase 2: lengths, ids, weights.
  auto cat_or_empty = [&](const std::vector<at::Tensor>& parts, at::ScalarType type) {
    return parts.empty() ? at::empty({0}, at::TensorOptions().dtype(type).device(device))
                         : at::cat(parts);
  };
  if (!dist->weighted) {  // one collective instead of two
    std::vector<std::int64_t> splits(static_cast<std::size_t>(world));
    std::vector<std::int64_t> outs(static_cast<std::size_t>(world));
    for (std::size_t q = 0; q < splits.size(); ++q) {
      splits[q] = len_splits[q] + val_splits[q];
      outs[q] = out_len[q] + out_val[q];
    }
    dist->packed_len = out_len;
    dist->packed_val = out_val;
    dist->packed = comm->AllToAllAsync(cat_or_empty(send_packed, at::kLong), splits, outs);
    return dist;
  }
  dist->lengths = comm->AllToAllAsync(cat_or_empty(send_lengths, at::kLong), len_splits, out_len);
  dist->values = comm->AllToAllAsync(cat_or_empty(send_values, at::kLong), val_splits, out_val);
  dist->weights = comm->AllToAllAsync(cat_or_empty(send_weights, at::kFloat), val_splits, out_val);
  return dist;
}

KeyedTensor ShardedEmbeddingBagCollection::Impl::Compute(const std::shared_ptr<Dist>& dist) {
  auto state = c10::make_intrusive<StepState>();
  state->dist = dist;
  state->backward = [this](StepState& st, const at::Tensor& grad) { Backward(st, grad); };
  const std::int64_t batch = dist->batch;
  const std::int64_t global_batch = dist->global_batch;
  const auto& my_routes = routes[static_cast<std::size_t>(rank)];
  const auto num_routes = static_cast<std::int64_t>(my_routes.size());

  at::Tensor out =
      any_a2a && a2a_fills_output
          ? at::Tensor()
          : at::zeros({batch, total_dim}, at::TensorOptions().dtype(at::kFloat).device(device));
  {
    at::NoGradGuard no_grad;
    if (any_sharded) {
      at::Tensor lengths;
      at::Tensor values;
      if (dist->packed.valid()) {
        const at::Tensor recv = dist->packed.Wait();
        std::vector<at::Tensor> ls;
        std::vector<at::Tensor> vs;
        std::int64_t at_elem = 0;
        for (std::size_t q = 0; q < dist->packed_len.size(); ++q) {
          ls.push_back(recv.narrow(0, at_elem, dist->packed_len[q]));
          vs.push_back(recv.narrow(0, at_elem + dist->packed_len[q], dist->packed_val[q]));
          at_elem += dist->packed_len[q] + dist->packed_val[q];
        }
        lengths = at::cat(ls);
        values = at::cat(vs);
      } else {
        lengths = dist->lengths.Wait();
        values = dist->values.Wait();
      }
      at::Tensor weights = dist->weighted ? dist->weights.Wait() : at::Tensor();
      // Recat: received bags are (source, route, sample); make them (route, source, sample).
      std::vector<std::int64_t> perm;
      perm.reserve(static_cast<std::size_t>(num_routes * global_batch));
      std::vector<std::int64_t> base(static_cast<std::size_t>(world), 0);
      for (int s = 1; s < world; ++s) {
        base[static_cast<std::size_t>(s)] =
            base[static_cast<std::size_t>(s - 1)] +
            num_routes * dist->batch_per_rank[static_cast<std::size_t>(s - 1)];
      }
      for (std::int64_t ro = 0; ro < num_routes; ++ro) {
        for (int s = 0; s < world; ++s) {
          const std::int64_t bs = dist->batch_per_rank[static_cast<std::size_t>(s)];
          const std::int64_t start = base[static_cast<std::size_t>(s)] + ro * bs;
          for (std::int64_t b = 0; b < bs; ++b) perm.push_back(start + b);
        }
      }
      const at::Tensor perm_t = at::tensor(perm, at::kLong).to(device);
      const at::Tensor offsets = at::cat({at::zeros({1}, I64(device)), lengths.cumsum(0)});
      const at::Tensor lengths_p = lengths.index_select(0, perm_t);
      const at::Tensor starts_p = offsets.index_select(0, perm_t);
      const at::Tensor offsets_p = at::cat({at::zeros({1}, I64(device)), lengths_p.cumsum(0)});
      const std::int64_t total = values.numel();
      const at::Tensor shift = at::repeat_interleave(
          starts_p - offsets_p.narrow(0, 0, lengths_p.numel()), lengths_p, {}, total);
      const at::Tensor gather = shift + at::arange(total, I64(device));
      const at::Tensor values_p = values.index_select(0, gather);
      const at::Tensor weights_p =
          weights.defined() ? weights.index_select(0, gather) : at::Tensor();
      // Route boundaries on the host.
      const at::Tensor bounds = offsets_p
                                    .index_select(0, at::arange(0, num_routes * global_batch + 1,
                                                                global_batch, I64(device)))
                                    .to(at::kCPU);
      const auto* bp = bounds.data_ptr<std::int64_t>();

      std::vector<at::Tensor> a2a_parts;
      std::vector<at::Tensor> rs_parts;
      for (std::int64_t ro = 0; ro < num_routes; ++ro) {
        const Route& route = my_routes[static_cast<std::size_t>(ro)];
        const Unit& u = units[static_cast<std::size_t>(route.unit)];
        const at::Tensor ids = values_p.narrow(0, bp[ro], bp[ro + 1] - bp[ro]);
        const at::Tensor offs = offsets_p.narrow(0, ro * global_batch, global_batch + 1) - bp[ro];
        const at::Tensor w =
            weights_p.defined() ? weights_p.narrow(0, bp[ro], bp[ro + 1] - bp[ro]) : at::Tensor();
        state->route_ids.push_back(ids);
        state->route_offsets.push_back(offs);
        state->route_weights.push_back(w);
        at::Tensor partial =
            PooledSum(local_weights[static_cast<std::size_t>(u.local)], ids, offs, w);
        (u.group == OutGroup::kAllToAll ? a2a_parts : rs_parts).push_back(partial);
      }
      const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
      if (any_a2a) {
        const std::int64_t my_cols = a2a_cols_per_rank[static_cast<std::size_t>(rank)];
        at::Tensor send =
            a2a_parts.empty() ? at::zeros({global_batch, 0}, fdev) : at::cat(a2a_parts, 1);
        std::vector<std::int64_t> in_splits(static_cast<std::size_t>(world));
        std::vector<std::int64_t> out_splits(static_cast<std::size_t>(world));
        for (int q = 0; q < world; ++q) {
          in_splits[static_cast<std::size_t>(q)] =
              dist->batch_per_rank[static_cast<std::size_t>(q)] * my_cols;
          out_splits[static_cast<std::size_t>(q)] =
              batch * a2a_cols_per_rank[static_cast<std::size_t>(q)];
        }
        at::Tensor recv = comm->AllToAll(send.contiguous().view({-1}), in_splits, out_splits);
        const std::vector<at::Tensor> blocks = A2aBlocks(recv, batch);
        if (a2a_fills_output) {  // one pass of column runs
          out = at::empty({batch, total_dim}, fdev);
          CopyColumnRuns(blocks, &out, /*to_blocks=*/false);
        } else {
          out.index_add_(1, a2a_colmap, at::cat(blocks, 1));
        }
      }
      if (rs_cols > 0) {
        at::Tensor send = at::cat(rs_parts, 1).contiguous();
        out.index_add_(1, rs_colmap, comm->ReduceScatterV(send, dist->batch_per_rank));
      }
    }
    for (std::size_t i = 0; i < dp_features.size(); ++i) {
      const Feature& f = features[static_cast<std::size_t>(dp_features[i])];
      const int di = dp_index.at(f.table);
      at::Tensor pooled = PooledSum(dp_weights[static_cast<std::size_t>(di)], dist->dp_ids[i],
                                    dist->dp_offsets[i], dist->dp_weights[i]);
      out.narrow(1, f.col_base, pooled.size(1)).add_(pooled);
    }
  }

  at::Tensor values_out = out;
  if (at::GradMode::is_enabled()) {
    values_out = ShardedLookupFunction::apply(dummy, out, state);
  }
  if (any_mean) {
    std::vector<at::Tensor> divisors;
    for (std::size_t fi = 0; fi < features.size(); ++fi) {
      const auto& cfg = tables[static_cast<std::size_t>(features[fi].table)];
      at::Tensor col =
          features[fi].mean
              ? dist->local_lengths[fi].clamp_min(1).to(at::kFloat)
              : at::ones({batch}, at::TensorOptions().dtype(at::kFloat).device(device));
      divisors.push_back(col.view({batch, 1}).expand({batch, cfg.embedding_dim}));
    }
    values_out = values_out / at::cat(divisors, 1);
  }
  std::vector<std::string> keys;
  std::vector<std::int64_t> dims;
  for (const Feature& f : features) {
    keys.push_back(f.name);
    dims.push_back(tables[static_cast<std::size_t>(f.table)].embedding_dim);
  }
  return KeyedTensor(std::move(keys), std::move(dims), values_out);
}

void ShardedEmbeddingBagCollection::Impl::Backward(StepState& st, const at::Tensor& grad_in) {
  at::NoGradGuard no_grad;
  const Dist& dist = *st.dist;
  const std::int64_t batch = dist.batch;
  const std::int64_t global_batch = dist.global_batch;
  const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
  // TorchRec's gradient division: every rank's loss is a mean over its own batch.
  const at::Tensor grad =
      grad_in.defined() ? (grad_in / (static_cast<double>(world) * gradient_scale)).contiguous()
                        : at::zeros({batch, total_dim}, fdev);
  const auto& my_routes = routes[static_cast<std::size_t>(rank)];

  at::Tensor a2a_grad;  // [B_global, C_rank]
  at::Tensor rs_grad;   // [B_global, rs_cols]
  if (any_a2a) {
    std::vector<std::int64_t> in_splits(static_cast<std::size_t>(world));
    std::vector<std::int64_t> out_splits(static_cast<std::size_t>(world));
    const std::int64_t my_cols = a2a_cols_per_rank[static_cast<std::size_t>(rank)];
    for (int q = 0; q < world; ++q) {
      in_splits[static_cast<std::size_t>(q)] =
          batch * a2a_cols_per_rank[static_cast<std::size_t>(q)];
      out_splits[static_cast<std::size_t>(q)] =
          dist.batch_per_rank[static_cast<std::size_t>(q)] * my_cols;
    }
    at::Tensor send;
    if (device.is_cpu() && grad.scalar_type() == at::kFloat) {  // q-major [B, C_q] blocks, one pass
      send = at::empty({Sum(in_splits)}, fdev);
      at::Tensor source = grad;
      CopyColumnRuns(A2aBlocks(send, batch), &source, /*to_blocks=*/true);
    } else {
      const at::Tensor g = grad.index_select(1, a2a_colmap);
      std::vector<at::Tensor> parts;
      std::int64_t col = 0;
      for (int q = 0; q < world; ++q) {
        const std::int64_t cq = a2a_cols_per_rank[static_cast<std::size_t>(q)];
        parts.push_back(g.narrow(1, col, cq).contiguous().view({-1}));
        col += cq;
      }
      send = at::cat(parts);
    }
    a2a_grad = comm->AllToAll(send, in_splits, out_splits).view({global_batch, my_cols});
  }
  if (rs_cols > 0) {
    rs_grad = comm->AllGatherV(grad.index_select(1, rs_colmap).contiguous(), dist.batch_per_rank);
  }

  // Per local unit: the pooled gradients of every route, then the fused backward + update. Every
  // shard counts a step each backward, rows or not (Adam's step counter, as FBGEMM).
  std::vector<std::vector<EmbeddingOptimizerState::PooledGrad>> unit_parts(local_units.size());
  std::int64_t a2a_col = 0;
  std::int64_t rs_col = 0;
  for (std::size_t ro = 0; ro < my_routes.size(); ++ro) {
    const Unit& u = units[static_cast<std::size_t>(my_routes[ro].unit)];
    at::Tensor g;
    if (u.group == OutGroup::kAllToAll) {
      g = a2a_grad.narrow(1, a2a_col, u.shard.cols);
      a2a_col += u.shard.cols;
    } else {
      g = rs_grad.narrow(1, rs_col, u.shard.cols);
      rs_col += u.shard.cols;
    }
    if (st.route_ids[ro].numel() == 0) continue;
    unit_parts[static_cast<std::size_t>(u.local)].push_back(
        {st.route_ids[ro], st.route_offsets[ro], g, st.route_weights[ro]});  // rows strided
  }
  for (std::size_t li = 0; li < local_units.size(); ++li) {
    local_states[li]->ApplyPooled(local_weights[li], unit_parts[li]);
  }

  // Data-parallel tables: all-reduce [rows, D+1] (gradient sums | occurrence counts).
  std::vector<std::vector<at::Tensor>> dp_ids(dp_tables.size());
  std::vector<std::vector<at::Tensor>> dp_grads(dp_tables.size());
  for (std::size_t i = 0; i < dp_features.size(); ++i) {
    const Feature& f = features[static_cast<std::size_t>(dp_features[i])];
    const auto di = static_cast<std::size_t>(dp_index.at(f.table));
    const at::Tensor& ids = dist.dp_ids[i];
    const std::int64_t dim = tables[static_cast<std::size_t>(f.table)].embedding_dim;
    dp_ids[di].push_back(ids);
    dp_grads[di].push_back(PooledSumBackward(grad.narrow(1, f.col_base, dim).contiguous(),
                                             dist.dp_offsets[i], ids.numel(), dist.dp_weights[i]));
  }
  for (std::size_t di = 0; di < dp_tables.size(); ++di) {
    const auto& cfg = tables[static_cast<std::size_t>(dp_tables[di])];
    at::Tensor buffer = at::zeros({cfg.num_embeddings, cfg.embedding_dim + 1}, fdev);
    if (!dp_ids[di].empty()) {
      const at::Tensor ids = at::cat(dp_ids[di]);
      const at::Tensor g = at::cat(dp_grads[di]);
      buffer.index_add_(0, ids, at::cat({g, at::ones({ids.numel(), 1}, fdev)}, 1));
    }
    comm->AllReduceSum(buffer);
    const at::Tensor rows = (buffer.select(1, cfg.embedding_dim) > 0).nonzero().view({-1});
    const at::Tensor grads =
        buffer.index_select(0, rows).narrow(1, 0, cfg.embedding_dim).contiguous();
    dp_states[di]->Apply(dp_weights[di], rows, grads);
  }
}

TableSpec ToTableSpec(const EmbeddingBagConfig& config, const ParameterConstraints& constraints) {
  TableSpec spec;
  spec.name = config.name;
  spec.num_embeddings = config.num_embeddings;
  spec.embedding_dim = config.embedding_dim;
  spec.feature_names = config.feature_names;
  spec.constraints = constraints;
  return spec;
}

ShardedEmbeddingBagCollection::ShardedEmbeddingBagCollection(
    std::vector<EmbeddingBagConfig> tables, ShardingPlan plan,
    const EmbeddingOptimizerConfig& optimizer, std::uint64_t seed, std::shared_ptr<Comm> comm)
    : impl_(std::make_unique<Impl>()) {
  impl_->tables = std::move(tables);
  impl_->plan = std::move(plan);
  impl_->optimizer = optimizer;
  impl_->comm = std::move(comm);
  impl_->Build();
  for (std::size_t li = 0; li < impl_->local_units.size(); ++li) {
    const Unit& u = impl_->units[static_cast<std::size_t>(impl_->local_units[li])];
    const auto& cfg = impl_->tables[static_cast<std::size_t>(u.table)];
    impl_->local_weights[li] =
        InitTableSlice(cfg, seed, u.shard.row_offset, u.shard.row_offset + u.shard.rows,
                       u.shard.col_offset, u.shard.col_offset + u.shard.cols, impl_->device);
  }
  for (std::size_t di = 0; di < impl_->dp_tables.size(); ++di) {
    const auto& cfg = impl_->tables[static_cast<std::size_t>(impl_->dp_tables[di])];
    impl_->dp_weights[di] =
        InitTableSlice(cfg, seed, 0, cfg.num_embeddings, 0, cfg.embedding_dim, impl_->device);
  }
}

ShardedEmbeddingBagCollection::~ShardedEmbeddingBagCollection() = default;

std::shared_ptr<ShardedEmbeddingBagCollection::Dist> ShardedEmbeddingBagCollection::InputDist(
    const KeyedJaggedTensor& features) {
  return impl_->InputDist(features);
}

KeyedTensor ShardedEmbeddingBagCollection::Compute(const std::shared_ptr<Dist>& dist) {
  return impl_->Compute(dist);
}

void ShardedEmbeddingBagCollection::Drain(const std::shared_ptr<Dist>& dist) {
  if (!dist) return;
  if (dist->lengths.valid()) dist->lengths.Wait();
  if (dist->values.valid()) dist->values.Wait();
  if (dist->weights.valid()) dist->weights.Wait();
  if (dist->packed.valid()) dist->packed.Wait();
}

std::optional<int> ShardedEmbeddingBagCollection::RanksWithSamples(
    const std::shared_ptr<Dist>& dist) const {
  if (!dist || !dist->exchanged) return std::nullopt;
  return static_cast<int>(std::count_if(dist->batch_per_rank.begin(), dist->batch_per_rank.end(),
                                        [](std::int64_t b) { return b > 0; }));
}

void ShardedEmbeddingBagCollection::set_gradient_scale(double scale) {
  impl_->gradient_scale = scale;
}

const std::vector<EmbeddingBagConfig>& ShardedEmbeddingBagCollection::tables() const {
  return impl_->tables;
}
const ShardingPlan& ShardedEmbeddingBagCollection::plan() const {
  return impl_->plan;
}

std::vector<ShardedEmbeddingBagCollection::LocalShard>
ShardedEmbeddingBagCollection::LocalShards() {
  std::vector<LocalShard> out;
  for (std::size_t li = 0; li < impl_->local_units.size(); ++li) {
    const Unit& u = impl_->units[static_cast<std::size_t>(impl_->local_units[li])];
    out.push_back(LocalShard{impl_->tables[static_cast<std::size_t>(u.table)].name, u.shard,
                             impl_->local_weights[li], impl_->local_states[li].get()});
  }
  for (std::size_t di = 0; di < impl_->dp_tables.size(); ++di) {
    const auto& cfg = impl_->tables[static_cast<std::size_t>(impl_->dp_tables[di])];
    Shard s;
    s.rows = cfg.num_embeddings;
    s.cols = cfg.embedding_dim;
    s.rank = impl_->rank;
    out.push_back(LocalShard{cfg.name, s, impl_->dp_weights[di], impl_->dp_states[di].get()});
  }
  return out;
}

at::Tensor ShardedEmbeddingBagCollection::GatherTable(const std::string& table) {
  for (std::size_t di = 0; di < impl_->dp_tables.size(); ++di) {
    if (impl_->tables[static_cast<std::size_t>(impl_->dp_tables[di])].name == table) {
      return impl_->dp_weights[di].clone();
    }
  }
  const EmbeddingBagConfig* cfg = nullptr;
  for (const auto& t : impl_->tables) {
    if (t.name == table) cfg = &t;
  }
  if (cfg == nullptr) throw std::out_of_range("GatherTable: no table named '" + table + "'");
  at::Tensor full = at::zeros({cfg->num_embeddings, cfg->embedding_dim},
                              at::TensorOptions().dtype(at::kFloat).device(impl_->device));
  for (std::size_t li = 0; li < impl_->local_units.size(); ++li) {
    const Unit& u = impl_->units[static_cast<std::size_t>(impl_->local_units[li])];
    if (impl_->tables[static_cast<std::size_t>(u.table)].name != table) continue;
    full.narrow(0, u.shard.row_offset, u.shard.rows)
        .narrow(1, u.shard.col_offset, u.shard.cols)
        .copy_(impl_->local_weights[li]);
  }
  impl_->comm->AllReduceSum(full);
  return full;
}

}  // namespace tzrec
