// ShardedEmbeddingBagCollection lookup, output dist and backward (steps 2 and 3 of the data path
// in include/tzrec/sharding/sharded_ebc.hpp, and the mirrored backward with the fused optimizer).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/autograd.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "sharded_ebc_impl.hpp"

namespace tzrec {

using sharded_ebc_detail::I64;
using sharded_ebc_detail::StepState;
using sharded_ebc_detail::Sum;

namespace {

class ShardedLookupFunction : public torch::autograd::Function<ShardedLookupFunction> {
 public:
  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& /*dummy*/,
                            const at::Tensor& output, const c10::intrusive_ptr<StepState>& state) {
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return output.view(output.sizes());
  }
  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto state =
        c10::static_intrusive_pointer_cast<StepState>(ctx->saved_data["state"].toCapsule());
    state->backward(*state, grads.at(0));
    return {at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The received lengths, ids and weights (undefined when unweighted), order (source, route,
// sample): waits for the input dist's all-to-alls and unpacks the [lengths, ids] blocks.
void ReceiveBags(ShardedEmbeddingBagCollection::Dist& dist, at::Tensor& lengths, at::Tensor& values,
                 at::Tensor& weights) {
  if (dist.packed.Valid()) {
    const at::Tensor recv = dist.packed.Wait();
    std::vector<at::Tensor> ls;
    std::vector<at::Tensor> vs;
    std::int64_t at_elem = 0;
    for (std::size_t q = 0; q < dist.packed_len.size(); ++q) {
      ls.push_back(recv.narrow(0, at_elem, dist.packed_len[q]));
      vs.push_back(recv.narrow(0, at_elem + dist.packed_len[q], dist.packed_val[q]));
      at_elem += dist.packed_len[q] + dist.packed_val[q];
    }
    lengths = at::cat(ls);
    values = at::cat(vs);
  } else {
    lengths = dist.lengths.Wait();
    values = dist.values.Wait();
  }
  weights = dist.weighted ? dist.weights.Wait() : at::Tensor();
}

// One source's received bags on the host: route-major lengths [routes * bs], then its ids (and
// weights), the route blocks one after another.
struct HostBags {
  const std::int64_t* lengths = nullptr;
  const std::int64_t* ids = nullptr;
  const float* weights = nullptr;
  std::int64_t bs = 0;
  std::int64_t num_ids = 0;
};

// The received blocks of every source, on the host (contiguous CPU tensors kept in `hold`).
std::vector<HostBags> ReceiveHostBags(ShardedEmbeddingBagCollection::Dist& dist,
                                      std::int64_t num_routes, std::vector<at::Tensor>& hold) {
  const auto world = dist.batch_per_rank.size();
  std::vector<HostBags> src(world);
  if (dist.packed.Valid()) {
    hold.push_back(dist.packed.Wait().contiguous());
    const auto* p = hold.back().data_ptr<std::int64_t>();
    for (std::size_t q = 0; q < world; ++q) {
      src[q] = {p, p + dist.packed_len[q], nullptr, dist.batch_per_rank[q], dist.packed_val[q]};
      p += dist.packed_len[q] + dist.packed_val[q];
    }
    return src;
  }
  hold.push_back(dist.lengths.Wait().contiguous());
  hold.push_back(dist.values.Wait().contiguous());
  if (dist.weighted) hold.push_back(dist.weights.Wait().contiguous());
  const auto* lp = hold[0].data_ptr<std::int64_t>();
  const auto* ip = hold[1].data_ptr<std::int64_t>();
  const float* wp = dist.weighted ? hold[2].data_ptr<float>() : nullptr;
  for (std::size_t q = 0; q < world; ++q) {
    const std::int64_t n_len = num_routes * dist.batch_per_rank[q];
    const std::int64_t n_ids = std::accumulate(lp, lp + n_len, std::int64_t{0});
    src[q] = {lp, ip, wp, dist.batch_per_rank[q], n_ids};
    lp += n_len;
    ip += n_ids;
    if (wp != nullptr) wp += n_ids;
  }
  return src;
}

// The recat on the host in one pass of copies: per route, the sources' bags in (source, sample)
// order, as the device path's permutation; ids, offsets and weights are views of one buffer each.
void RecatOnHost(const std::vector<HostBags>& src, std::int64_t num_routes,
                 std::int64_t global_batch, StepState& state) {
  std::int64_t total = 0;
  for (const HostBags& s : src) total += s.num_ids;
  const bool weighted = !src.empty() && src[0].weights != nullptr;
  const at::Tensor ids = at::empty({total}, at::kLong);
  const at::Tensor offsets = at::empty({num_routes * (global_batch + 1)}, at::kLong);
  const at::Tensor weights = weighted ? at::empty({total}, at::kFloat) : at::Tensor();
  auto* ip = ids.data_ptr<std::int64_t>();
  auto* op = offsets.data_ptr<std::int64_t>();
  float* wp = weighted ? weights.data_ptr<float>() : nullptr;
  std::vector<std::int64_t> cursor(src.size(), 0);  // next id of each source
  std::int64_t at_id = 0;
  for (std::int64_t ro = 0; ro < num_routes; ++ro) {
    std::int64_t* o = op + ro * (global_batch + 1);
    const std::int64_t first = at_id;
    std::int64_t run = 0;
    *o++ = 0;
    for (std::size_t q = 0; q < src.size(); ++q) {
      const HostBags& s = src[q];
      const std::int64_t* l = s.lengths + ro * s.bs;
      const std::int64_t start = run;
      for (std::int64_t b = 0; b < s.bs; ++b) *o++ = (run += l[b]);
      const std::int64_t n = run - start;
      if (n < 0 || cursor[q] + n > s.num_ids) {
        throw std::logic_error("ShardedEmbeddingBagCollection: received bag lengths of source " +
                               std::to_string(q) + " exceed its " + std::to_string(s.num_ids) +
                               " ids");
      }
      std::copy_n(s.ids + cursor[q], n, ip + at_id);
      if (wp != nullptr) std::copy_n(s.weights + cursor[q], n, wp + at_id);
      cursor[q] += n;
      at_id += n;
    }
    state.route_ids.push_back(ids.narrow(0, first, at_id - first));
    state.route_offsets.push_back(offsets.narrow(0, ro * (global_batch + 1), global_batch + 1));
    state.route_weights.push_back(weighted ? weights.narrow(0, first, at_id - first)
                                           : at::Tensor());
  }
}

}  // namespace

// Recat: received bags are (source, route, sample); make them (route, source, sample) and record
// each local route's ids, offsets [B_global+1] and weights in `state`. On CPU one pass of copies
// (RecatOnHost); elsewhere tensor ops (a permutation of the bags, then a gather of the ids).
void ShardedEmbeddingBagCollection::Impl::RecatRoutes(Dist& dist, StepState& state) const {
  const auto num_routes = static_cast<std::int64_t>(routes[static_cast<std::size_t>(rank)].size());
  if (device.is_cpu()) {
    std::vector<at::Tensor> hold;
    RecatOnHost(ReceiveHostBags(dist, num_routes, hold), num_routes, dist.global_batch, state);
    return;
  }
  at::Tensor lengths;
  at::Tensor values;
  at::Tensor weights;
  ReceiveBags(dist, lengths, values, weights);
  const std::int64_t global_batch = dist.global_batch;
  std::vector<std::int64_t> perm;
  perm.reserve(static_cast<std::size_t>(num_routes * global_batch));
  std::vector<std::int64_t> base(static_cast<std::size_t>(world), 0);
  for (int s = 1; s < world; ++s) {
    base[static_cast<std::size_t>(s)] =
        base[static_cast<std::size_t>(s - 1)] +
        num_routes * dist.batch_per_rank[static_cast<std::size_t>(s - 1)];
  }
  for (std::int64_t ro = 0; ro < num_routes; ++ro) {
    for (int s = 0; s < world; ++s) {
      const std::int64_t bs = dist.batch_per_rank[static_cast<std::size_t>(s)];
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
  const at::Tensor weights_p = weights.defined() ? weights.index_select(0, gather) : at::Tensor();
  // Route boundaries on the host.
  const at::Tensor bounds =
      offsets_p
          .index_select(0, at::arange(0, num_routes * global_batch + 1, global_batch, I64(device)))
          .to(at::kCPU);
  const auto* bp = bounds.data_ptr<std::int64_t>();
  for (std::int64_t ro = 0; ro < num_routes; ++ro) {
    state.route_ids.push_back(values_p.narrow(0, bp[ro], bp[ro + 1] - bp[ro]));
    state.route_offsets.push_back(offsets_p.narrow(0, ro * global_batch, global_batch + 1) -
                                  bp[ro]);
    state.route_weights.push_back(
        weights_p.defined() ? weights_p.narrow(0, bp[ro], bp[ro + 1] - bp[ro]) : at::Tensor());
  }
}

// Local pooled sums of every route, then the output dist into `out` [B_local, total_dim].
void ShardedEmbeddingBagCollection::Impl::LookupAndOutputDist(const Dist& dist,
                                                              const StepState& state,
                                                              at::Tensor& out) {
  const std::int64_t batch = dist.batch;
  const std::int64_t global_batch = dist.global_batch;
  const auto& my_routes = routes[static_cast<std::size_t>(rank)];
  const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
  const std::int64_t my_cols = any_a2a ? a2a_cols_per_rank[static_cast<std::size_t>(rank)] : 0;
  // The all-to-all routes pool straight into their columns of the send buffer.
  at::Tensor send = at::empty({global_batch, my_cols}, fdev);
  std::int64_t send_col = 0;
  std::vector<at::Tensor> rs_parts;
  for (std::size_t ro = 0; ro < my_routes.size(); ++ro) {
    const Unit& u = units[static_cast<std::size_t>(my_routes[ro].unit)];
    const at::Tensor& weight = local_weights[static_cast<std::size_t>(u.local)];
    if (u.group != OutGroup::kAllToAll) {
      rs_parts.push_back(
          PooledSum(weight, state.route_ids[ro], state.route_offsets[ro], state.route_weights[ro]));
      continue;
    }
    at::Tensor cols = send.narrow(1, send_col, weight.size(1));
    send_col += weight.size(1);
    if (!PooledSumInto(weight, state.route_ids[ro], state.route_offsets[ro],
                       state.route_weights[ro], cols)) {
      cols.copy_(
          PooledSum(weight, state.route_ids[ro], state.route_offsets[ro], state.route_weights[ro]));
    }
  }
  if (send_col != my_cols) {
    throw std::logic_error("ShardedEmbeddingBagCollection: the all-to-all routes pooled " +
                           std::to_string(send_col) + " columns, the plan has " +
                           std::to_string(my_cols));
  }
  if (a2a_identity) {  // world 1, columns in order: the pooled sums are the output
    out = send;
    return;
  }
  if (any_a2a) {
    std::vector<std::int64_t> in_splits(static_cast<std::size_t>(world));
    std::vector<std::int64_t> out_splits(static_cast<std::size_t>(world));
    for (int q = 0; q < world; ++q) {
      in_splits[static_cast<std::size_t>(q)] =
          dist.batch_per_rank[static_cast<std::size_t>(q)] * my_cols;
      out_splits[static_cast<std::size_t>(q)] =
          batch * a2a_cols_per_rank[static_cast<std::size_t>(q)];
    }
    at::Tensor recv = comm->AllToAll(send.contiguous().view({-1}), in_splits, out_splits);
    const std::vector<at::Tensor> blocks = A2aBlocks(recv, batch);
    if (a2a_fills_output) {  // one pass of column runs
      out = at::empty({batch, total_dim}, fdev);
      CopyColumnRuns(blocks, &out);
    } else {
      out.index_add_(1, a2a_colmap_tensor, at::cat(blocks, 1));
    }
  }
  if (rs_cols > 0) {
    const at::Tensor rs_send = at::cat(rs_parts, 1).contiguous();
    out.index_add_(1, rs_colmap_tensor, comm->ReduceScatterV(rs_send, dist.batch_per_rank));
  }
}

void ShardedEmbeddingBagCollection::Impl::AddDataParallel(const Dist& dist, at::Tensor& out) const {
  for (std::size_t i = 0; i < dp_features.size(); ++i) {
    const Feature& f = features[static_cast<std::size_t>(dp_features[i])];
    const int di = dp_index.at(f.table);
    at::Tensor pooled = PooledSum(dp_weights[static_cast<std::size_t>(di)], dist.dp_ids[i],
                                  dist.dp_offsets[i], dist.dp_weights[i]);
    out.narrow(1, f.col_base, pooled.size(1)).add_(pooled);
  }
}

// Hooks the backward into autograd, divides MEAN features by their bag lengths and keys the
// output.
KeyedTensor ShardedEmbeddingBagCollection::Impl::Finish(
    const Dist& dist, const at::Tensor& out, const c10::intrusive_ptr<StepState>& state) const {
  const std::int64_t batch = dist.batch;
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
              ? dist.local_lengths[fi].clamp_min(1).to(at::kFloat)
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

KeyedTensor ShardedEmbeddingBagCollection::Impl::Compute(const std::shared_ptr<Dist>& dist) {
  auto state = c10::make_intrusive<StepState>();
  state->dist = dist;
  state->backward = [this](StepState& st, const at::Tensor& grad) { Backward(st, grad); };
  at::Tensor out = any_a2a && a2a_fills_output
                       ? at::Tensor()
                       : at::zeros({dist->batch, total_dim},
                                   at::TensorOptions().dtype(at::kFloat).device(device));
  {
    at::NoGradGuard no_grad;
    if (any_sharded) {
      RecatRoutes(*dist, *state);
      LookupAndOutputDist(*dist, *state, out);
    }
    AddDataParallel(*dist, out);
  }
  return Finish(*dist, out, state);
}

// The output dist backward: this rank's pooled-sum gradients [B_global, C_rank] by the pooled
// all-to-all back, and [B_global, rs_cols] by the all-gather mirroring the reduce-scatter.
// `grad` is divided by `divisor` in the CPU copy into the all-to-all blocks; any other path is
// given a gradient divided already (divisor 1: Backward divides in the copy only when
// a2a_fills_output, i.e. on CPU without a reduce-scatter).
void ShardedEmbeddingBagCollection::Impl::OutputDistBackward(const Dist& dist,
                                                             const at::Tensor& grad, double divisor,
                                                             at::Tensor& a2a_grad,
                                                             at::Tensor& rs_grad) {
  const std::int64_t batch = dist.batch;
  const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
  if (a2a_identity && divisor == 1.0 && grad.is_contiguous()) {  // world 1, columns in order
    a2a_grad = grad;
    return;
  }
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
      GradToBlocks(grad, static_cast<float>(divisor), A2aBlocks(send, batch));
    } else {
      const at::Tensor g = grad.index_select(1, a2a_colmap_tensor);
      std::vector<at::Tensor> parts;
      std::int64_t col = 0;
      for (int q = 0; q < world; ++q) {
        const std::int64_t cq = a2a_cols_per_rank[static_cast<std::size_t>(q)];
        parts.push_back(g.narrow(1, col, cq).contiguous().view({-1}));
        col += cq;
      }
      send = at::cat(parts);
    }
    a2a_grad = (a2a_identity ? send : comm->AllToAll(send, in_splits, out_splits))
                   .view({dist.global_batch, my_cols});
  }
  if (rs_cols > 0) {
    rs_grad =
        comm->AllGatherV(grad.index_select(1, rs_colmap_tensor).contiguous(), dist.batch_per_rank);
  }
}

// Per local unit: the pooled gradients of every route, then the fused backward + update. Every
// shard counts a step each backward, rows or not (Adam's step counter, as FBGEMM).
void ShardedEmbeddingBagCollection::Impl::ApplyShards(const StepState& st,
                                                      const at::Tensor& a2a_grad,
                                                      const at::Tensor& rs_grad) {
  const auto& my_routes = routes[static_cast<std::size_t>(rank)];
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
}

// Data-parallel tables: all-reduce [rows, D+1] (gradient sums | occurrence counts), then update
// the rows that occurred anywhere, identically on every rank.
void ShardedEmbeddingBagCollection::Impl::ApplyDataParallel(const Dist& dist,
                                                            const at::Tensor& grad) {
  const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
  std::vector<std::vector<at::Tensor>> dp_ids(dp_tables.size());
  std::vector<std::vector<at::Tensor>> dp_grads(dp_tables.size());
  for (std::size_t i = 0; i < dp_features.size(); ++i) {
    const Feature& f = features[static_cast<std::size_t>(dp_features[i])];
    const auto di = static_cast<std::size_t>(dp_index.at(f.table));
    const at::Tensor& ids = dist.dp_ids[i];
    const std::int64_t dim = tables[static_cast<std::size_t>(f.table)].embedding_dim;
    dp_ids[di].push_back(ids);
    const at::Tensor pooled =
        ClipPooledGradient(dp_states[di]->Config(), grad.narrow(1, f.col_base, dim));
    dp_grads[di].push_back(PooledSumBackward(pooled.contiguous(), dist.dp_offsets[i], ids.numel(),
                                             dist.dp_weights[i]));
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

void ShardedEmbeddingBagCollection::Impl::Backward(StepState& st, const at::Tensor& grad_in) {
  at::NoGradGuard no_grad;
  const Dist& dist = *st.dist;
  const auto fdev = at::TensorOptions().dtype(at::kFloat).device(device);
  // TorchRec's gradient division: every rank's loss is a mean over its own batch. When the
  // all-to-all alone reads the gradient (a2a_fills_output: no reduce-scatter, no DP tables), the
  // division happens in its one copy, reading a broadcast gradient (a sum loss's) in place.
  const double divisor = static_cast<double>(world);
  const bool divide_in_copy = a2a_fills_output && grad_in.defined() &&
                              grad_in.scalar_type() == at::kFloat && grad_in.dim() == 2 &&
                              (grad_in.stride(1) == 0 || grad_in.stride(1) == 1);
  const at::Tensor grad = !grad_in.defined() ? at::zeros({dist.batch, total_dim}, fdev)
                          : divide_in_copy   ? grad_in
                                             : (grad_in / divisor).contiguous();
  at::Tensor a2a_grad;  // [B_global, C_rank]
  at::Tensor rs_grad;   // [B_global, rs_cols]
  OutputDistBackward(dist, grad, divide_in_copy ? divisor : 1.0, a2a_grad, rs_grad);
  ApplyShards(st, a2a_grad, rs_grad);
  ApplyDataParallel(dist, grad);
}

}  // namespace tzrec
