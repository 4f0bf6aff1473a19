// ShardedEmbeddingBagCollection: construction from the layout, the column-run copies of the
// output dist and the public methods (see include/tzrec/sharding/sharded_ebc.hpp for the data
// path). The input dist lives in input_dist.cpp, lookup / output dist / backward in
// sharded_lookup.cpp, the pure layout in sharding_layout.cpp.
#include "tzrec/sharding/sharded_ebc.hpp"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "column_runs.hpp"
#include "sharded_ebc_impl.hpp"

namespace tzrec {
namespace {

using Unit = ShardingLayout::Unit;

}  // namespace

void ShardedEmbeddingBagCollection::Impl::Build() {
  device = comm->Device();
  static_cast<ShardingLayout&>(*this) =
      ShardingLayout::Build(plan, tables, comm->Rank(), comm->WorldSize());
  for (const int ui : local_units) {
    const Unit& u = units[static_cast<std::size_t>(ui)];
    local_weights.emplace_back();  // initialised by the constructor
    local_states.push_back(
        std::make_unique<EmbeddingOptimizerState>(optimizer, u.shard.rows, u.shard.cols, device));
  }
  for (const int t : dp_tables) {
    const auto& cfg = tables[static_cast<std::size_t>(t)];
    dp_weights.emplace_back();  // initialised by the constructor
    dp_states.push_back(std::make_unique<EmbeddingOptimizerState>(optimizer, cfg.num_embeddings,
                                                                  cfg.embedding_dim, device));
  }
  a2a_fills_output = device.is_cpu() && a2a_covers_output;
  a2a_identity = a2a_fills_output && world == 1 && a2a_runs.size() == 1 &&
                 a2a_runs[0].size() == 1 && a2a_runs[0][0].src == 0 && a2a_runs[0][0].dst == 0 &&
                 a2a_runs[0][0].len == total_dim;
  a2a_colmap_tensor = at::tensor(a2a_colmap, at::kLong).to(device);
  rs_colmap_tensor = at::tensor(rs_colmap, at::kLong).to(device);
  dummy = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device));
  dummy.set_requires_grad(true);
}

std::vector<at::Tensor> ShardedEmbeddingBagCollection::Impl::A2aBlocks(const at::Tensor& flat,
                                                                       std::int64_t batch) const {
  std::vector<at::Tensor> blocks;
  std::int64_t at_elem = 0;
  for (int q = 0; q < world; ++q) {
    const std::int64_t cq = a2a_cols_per_rank[static_cast<std::size_t>(q)];
    blocks.push_back(flat.narrow(0, at_elem, batch * cq).view({batch, cq}));
    at_elem += batch * cq;
  }
  return blocks;
}

std::vector<BlockRows> ShardedEmbeddingBagCollection::Impl::BlockPointers(
    const std::vector<at::Tensor>& blocks) {
  std::vector<BlockRows> out;
  out.reserve(blocks.size());
  for (const auto& b : blocks) out.push_back({b.data_ptr<float>(), b.size(1)});
  return out;
}

void ShardedEmbeddingBagCollection::Impl::CopyColumnRuns(const std::vector<at::Tensor>& blocks,
                                                         at::Tensor* full) const {
  const std::vector<BlockRows> bp = BlockPointers(blocks);
  float* fp = full->data_ptr<float>();
  const std::int64_t width = full->size(1);
  at::parallel_for(0, full->size(0), 256, [&](std::int64_t begin, std::int64_t end) {
    CopyRowsFromBlocks(a2a_runs, bp, fp, width, begin, end);
  });
}

void ShardedEmbeddingBagCollection::Impl::GradToBlocks(
    const at::Tensor& grad, float divisor, const std::vector<at::Tensor>& blocks) const {
  if (grad.dim() != 2 || grad.scalar_type() != at::kFloat || !grad.device().is_cpu()) {
    throw std::logic_error(
        "ShardedEmbeddingBagCollection: the output gradient must be a CPU "
        "float32 [B, total_dim]");
  }
  const std::vector<BlockRows> bp = BlockPointers(blocks);
  const GradRows rows{grad.const_data_ptr<float>(), grad.stride(0), grad.stride(1)};
  at::parallel_for(0, grad.size(0), 256, [&](std::int64_t begin, std::int64_t end) {
    DivideRowsIntoBlocks(rows, divisor, a2a_runs, bp, begin, end);
  });
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
  if (dist->lengths.Valid()) dist->lengths.Wait();
  if (dist->values.Valid()) dist->values.Wait();
  if (dist->weights.Valid()) dist->weights.Wait();
  if (dist->packed.Valid()) dist->packed.Wait();
}

std::optional<int> ShardedEmbeddingBagCollection::RanksWithSamples(
    const std::shared_ptr<Dist>& dist) const {
  if (!dist || !dist->exchanged) return std::nullopt;
  return static_cast<int>(std::count_if(dist->batch_per_rank.begin(), dist->batch_per_rank.end(),
                                        [](std::int64_t b) { return b > 0; }));
}

const std::vector<EmbeddingBagConfig>& ShardedEmbeddingBagCollection::Tables() const {
  return impl_->tables;
}
const ShardingPlan& ShardedEmbeddingBagCollection::Plan() const {
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
