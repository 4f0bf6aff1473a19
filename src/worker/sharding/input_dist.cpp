// ShardedEmbeddingBagCollection input dist: the KJT all-to-all that sends every feature's ids to
// the shards holding their rows (step 1 of the data path in include/tzrec/sharding/
// sharded_ebc.hpp), in the route order of sharding_layout.hpp.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <string>
#include <utility>

#include "sharded_ebc_impl.hpp"

namespace tzrec {

using sharded_ebc_detail::I64;
using sharded_ebc_detail::Sum;

// The send buffers, destination-major, route order within a destination.
struct ShardedEmbeddingBagCollection::Impl::SendBuffers {
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> values;
  std::vector<at::Tensor> weights;
  std::vector<at::Tensor> packed;  // per destination: its routes' lengths, then their ids
  std::vector<std::int64_t> len_splits;
  std::vector<std::int64_t> val_splits;
};

namespace {

// The bags of `jt` restricted to the rows of `u`'s shard, ids re-based to the shard. `bags` caches
// the sample index of every id of the feature (computed on first use).
void KeepShardRows(const ShardingLayout::Unit& u, const JaggedTensor& jt, std::int64_t batch,
                   const at::Device& device, at::Tensor& bags, at::Tensor& lengths,
                   at::Tensor& values, at::Tensor& weights) {
  if (!bags.defined()) {
    bags = at::repeat_interleave(at::arange(batch, I64(device)), jt.lengths, {}, values.numel());
  }
  const at::Tensor mask =
      (values >= u.shard.row_offset) & (values < u.shard.row_offset + u.shard.rows);
  const at::Tensor kept = mask.nonzero().view({-1});
  lengths = at::zeros({batch}, I64(device))
                .index_add_(0, bags.index_select(0, kept), at::ones({kept.numel()}, I64(device)));
  values = values.index_select(0, kept) - u.shard.row_offset;
  if (weights.defined()) weights = weights.index_select(0, kept);
}

// The smallest and largest id of `ids` (not empty): one pass on the host for contiguous int64,
// else two reductions.
std::pair<std::int64_t, std::int64_t> IdRange(const at::Tensor& ids) {
  if (ids.device().is_cpu() && ids.scalar_type() == at::kLong && ids.is_contiguous()) {
    const auto* p = ids.const_data_ptr<std::int64_t>();
    std::int64_t lo = p[0];
    std::int64_t hi = p[0];
    for (std::int64_t i = 1; i < ids.numel(); ++i) {
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
    return {lo, hi};
  }
  return {ids.min().item<std::int64_t>(), ids.max().item<std::int64_t>()};
}

}  // namespace

// Per output feature: its jagged ids (values, lengths, weights; offsets only for the
// data-parallel features, the only ones that read them), validated against the table size, cut
// from the KJT with one per-key offset computation. Records the local bag lengths and the
// data-parallel features' bags in `dist`.
std::vector<JaggedTensor> ShardedEmbeddingBagCollection::Impl::FeatureBags(
    const KeyedJaggedTensor& kjt, Dist& dist) const {
  std::vector<JaggedTensor> jts(features.size());
  const std::vector<std::int64_t> opk = kjt.OffsetPerKey();
  const std::int64_t stride = kjt.Stride();
  for (std::size_t fi = 0; fi < features.size(); ++fi) {
    const Feature& f = features[fi];
    const std::int64_t k = kjt.KeyIndex(f.name);
    JaggedTensor& jt = jts[fi];
    jt.values = kjt.Values().narrow(0, opk[k], opk[k + 1] - opk[k]);
    jt.lengths = kjt.Lengths().narrow(0, k * stride, stride);
    if (kjt.HasWeights()) jt.weights = kjt.Weights().narrow(0, opk[k], opk[k + 1] - opk[k]);
    const auto& cfg = tables[static_cast<std::size_t>(f.table)];
    if (jt.values.numel() > 0) {
      const auto [lo, hi] = IdRange(jt.values);
      if (lo < 0 || hi >= cfg.num_embeddings) {
        throw std::out_of_range(
            "feature '" + f.name + "' has id " + std::to_string(lo < 0 ? lo : hi) +
            " outside table '" + cfg.name + "' of " + std::to_string(cfg.num_embeddings) +
            " rows: hash or bucketize ids into [0, " + std::to_string(cfg.num_embeddings) +
            ") (num_buckets / hash_bucket_size)");
      }
    }
    dist.local_lengths.push_back(jt.lengths);
  }
  for (int fi : dp_features) {
    JaggedTensor& jt = jts[static_cast<std::size_t>(fi)];
    jt.offsets = at::zeros({stride + 1}, jt.lengths.options());
    if (stride > 0) jt.offsets.narrow(0, 1, stride).copy_(at::cumsum(jt.lengths, 0));
    dist.dp_ids.push_back(jt.values);
    dist.dp_offsets.push_back(jt.offsets);
    dist.dp_weights.push_back(jt.weights);
  }
  return jts;
}

ShardedEmbeddingBagCollection::Impl::SendBuffers
ShardedEmbeddingBagCollection::Impl::BuildSendBuffers(const std::vector<JaggedTensor>& jts,
                                                      std::int64_t batch, bool weighted) const {
  SendBuffers send;
  send.len_splits.assign(static_cast<std::size_t>(world), 0);
  send.val_splits.assign(static_cast<std::size_t>(world), 0);
  std::vector<at::Tensor> bag_of_id(features.size());
  for (int d = 0; d < world; ++d) {
    const std::size_t first_route = send.values.size();
    for (const Route& ro : routes[static_cast<std::size_t>(d)]) {
      const Unit& u = units[static_cast<std::size_t>(ro.unit)];
      const JaggedTensor& jt = jts[static_cast<std::size_t>(ro.feature)];
      at::Tensor lengths = jt.lengths;
      at::Tensor values = jt.values;
      at::Tensor weights = jt.weights;
      if (!u.full_rows) {
        KeepShardRows(u, jt, batch, device, bag_of_id[static_cast<std::size_t>(ro.feature)],
                      lengths, values, weights);
      }
      send.lengths.push_back(lengths);
      send.values.push_back(values);
      if (weighted) send.weights.push_back(weights);
      send.len_splits[static_cast<std::size_t>(d)] += batch;
      send.val_splits[static_cast<std::size_t>(d)] += values.numel();
    }
    if (!weighted) {
      send.packed.insert(send.packed.end(),
                         send.lengths.begin() + static_cast<std::ptrdiff_t>(first_route),
                         send.lengths.end());
      send.packed.insert(send.packed.end(),
                         send.values.begin() + static_cast<std::ptrdiff_t>(first_route),
                         send.values.end());
    }
  }
  return send;
}

// Phase 1: counts [W, 2] = (local batch, ids) per destination; fills dist.batch_per_rank and the
// received lengths / ids sizes per source.
void ShardedEmbeddingBagCollection::Impl::ExchangeCounts(
    Dist& dist, const std::vector<std::int64_t>& val_splits, std::vector<std::int64_t>& out_len,
    std::vector<std::int64_t>& out_val) {
  at::Tensor counts = at::empty({world, 2}, at::kLong);
  auto* c = counts.data_ptr<std::int64_t>();
  for (int d = 0; d < world; ++d) {
    c[2 * d] = dist.batch;
    c[2 * d + 1] = val_splits[static_cast<std::size_t>(d)];
  }
  const std::vector<std::int64_t> ones(static_cast<std::size_t>(world), 1);
  at::Tensor recv_counts = comm->AllToAll(counts.to(device), ones, ones).to(at::kCPU);
  dist.batch_per_rank.resize(static_cast<std::size_t>(world));
  dist.exchanged = true;
  out_len.resize(static_cast<std::size_t>(world));
  out_val.resize(static_cast<std::size_t>(world));
  const auto* rc = recv_counts.data_ptr<std::int64_t>();
  const auto local_routes =
      static_cast<std::int64_t>(routes[static_cast<std::size_t>(rank)].size());
  for (int s = 0; s < world; ++s) {
    dist.batch_per_rank[static_cast<std::size_t>(s)] = rc[2 * s];
    out_len[static_cast<std::size_t>(s)] = local_routes * rc[2 * s];
    out_val[static_cast<std::size_t>(s)] = rc[2 * s + 1];
  }
  dist.global_batch = Sum(dist.batch_per_rank);
}

std::shared_ptr<ShardedEmbeddingBagCollection::Dist> ShardedEmbeddingBagCollection::Impl::InputDist(
    const KeyedJaggedTensor& kjt_in) {
  auto dist = std::make_shared<Dist>();
  const KeyedJaggedTensor kjt = kjt_in.Values().device() == device ? kjt_in : kjt_in.To(device);
  const std::int64_t batch = kjt.Stride();
  dist->batch = batch;
  dist->weighted = kjt.HasWeights();
  const std::vector<JaggedTensor> jts = FeatureBags(kjt, *dist);
  if (!any_sharded) {
    dist->batch_per_rank.assign(static_cast<std::size_t>(world), batch);
    dist->global_batch = batch * world;
    return dist;
  }
  const SendBuffers send = BuildSendBuffers(jts, batch, dist->weighted);
  std::vector<std::int64_t> out_len;
  std::vector<std::int64_t> out_val;
  ExchangeCounts(*dist, send.val_splits, out_len, out_val);
  // Phase 2: lengths, ids, weights.
  auto cat_or_empty = [&](const std::vector<at::Tensor>& parts, at::ScalarType type) {
    return parts.empty() ? at::empty({0}, at::TensorOptions().dtype(type).device(device))
                         : at::cat(parts);
  };
  if (!dist->weighted) {  // one collective instead of two
    std::vector<std::int64_t> splits(static_cast<std::size_t>(world));
    std::vector<std::int64_t> outs(static_cast<std::size_t>(world));
    for (std::size_t q = 0; q < splits.size(); ++q) {
      splits[q] = send.len_splits[q] + send.val_splits[q];
      outs[q] = out_len[q] + out_val[q];
    }
    dist->packed_len = out_len;
    dist->packed_val = out_val;
    dist->packed = comm->AllToAllAsync(cat_or_empty(send.packed, at::kLong), splits, outs);
    return dist;
  }
  dist->lengths =
      comm->AllToAllAsync(cat_or_empty(send.lengths, at::kLong), send.len_splits, out_len);
  dist->values =
      comm->AllToAllAsync(cat_or_empty(send.values, at::kLong), send.val_splits, out_val);
  dist->weights =
      comm->AllToAllAsync(cat_or_empty(send.weights, at::kFloat), send.val_splits, out_val);
  return dist;
}

}  // namespace tzrec
