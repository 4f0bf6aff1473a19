// ShardedEmbeddingCollection as a virtual batch over a ShardedEmbeddingBagCollection (see
// include/tzrec/sharding/sharded_ec.hpp): every id of an EC feature becomes a one-id bag.
#include "tzrec/sharding/sharded_ec.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_copy.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/zeros.h>

#include <stdexcept>
#include <unordered_set>
#include <utility>

namespace tzrec {

const std::vector<ShardingType>& EcShardingTypes() {
  static const std::vector<ShardingType> kTypes = {
      ShardingType::kDataParallel, ShardingType::kTableWise, ShardingType::kColumnWise,
      ShardingType::kRowWise};
  return kTypes;
}

namespace {

EmbeddingBagConfig AsBagConfig(const EmbeddingConfig& c) {
  EmbeddingBagConfig b;
  b.name = c.name;
  b.num_embeddings = c.num_embeddings;
  b.embedding_dim = c.embedding_dim;
  b.feature_names = c.feature_names;
  b.pooling = PoolingType::kSum;
  return b;
}

// The inner EBC's tables: each with one virtual feature named after the table, whose bags are
// the ids of all the table's EC features (so the pooled output holds each id's row once).
std::vector<EmbeddingBagConfig> VirtualBagConfigs(const std::vector<EmbeddingConfig>& tables) {
  std::vector<EmbeddingBagConfig> out;
  out.reserve(tables.size());
  for (const auto& t : tables) {
    EmbeddingBagConfig b = AsBagConfig(t);
    b.feature_names = {t.name};
    out.push_back(std::move(b));
  }
  return out;
}

// The plan entries of `tables`, in table order; refuses table_row_wise (TorchRec's EC has none).
ShardingPlan SubPlan(const ShardingPlan& plan, const std::vector<EmbeddingConfig>& tables) {
  ShardingPlan out;
  out.world_size = plan.world_size;
  out.local_world_size = plan.local_world_size;
  for (const auto& t : tables) {
    const ParameterSharding* ps = nullptr;
    for (const auto& p : plan.tables) {
      if (p.table == t.name) ps = &p;
    }
    if (ps == nullptr) {
      throw std::invalid_argument("ShardedEmbeddingCollection: the plan has no entry for table '" +
                                  t.name + "'; plan every EC table (ToEcTableSpec)");
    }
    if (ps->sharding_type == ShardingType::kTableRowWise) {
      throw std::invalid_argument(
          "ShardedEmbeddingCollection: table '" + t.name +
          "' is planned table_row_wise, which an EmbeddingCollection does not support (TorchRec); "
          "use one of " +
          JoinTypes(EcShardingTypes()));
    }
    out.tables.push_back(*ps);
  }
  return out;
}

}  // namespace

TableSpec ToEcTableSpec(const EmbeddingConfig& config, const ParameterConstraints& constraints) {
  TableSpec spec = ToTableSpec(AsBagConfig(config), constraints);
  std::vector<ShardingType> allowed;
  for (ShardingType t : EcShardingTypes()) {
    bool asked = constraints.sharding_types.empty();
    for (ShardingType c : constraints.sharding_types) asked = asked || c == t;
    if (asked) allowed.push_back(t);
  }
  if (allowed.empty()) {
    throw std::invalid_argument("EC table '" + config.name + "' is constrained to " +
                                JoinTypes(constraints.sharding_types) +
                                ", none of which an EmbeddingCollection supports; allow one of " +
                                JoinTypes(EcShardingTypes()));
  }
  spec.constraints.sharding_types = std::move(allowed);
  return spec;
}

at::Tensor PoolJagged(const JaggedEmbedding& e, PoolingType pooling) {
  const std::int64_t batch = e.lengths.numel();
  const at::Tensor lengths = e.lengths.to(e.values.device(), at::kLong);
  const at::Tensor segment =
      at::repeat_interleave(at::arange(batch, lengths.options()), lengths, 0, e.values.size(0));
  at::Tensor out =
      at::zeros({batch, e.values.size(1)}, e.values.options()).index_add(0, segment, e.values);
  if (pooling == PoolingType::kMean) {
    out = out / lengths.clamp_min(1).to(out.scalar_type()).unsqueeze(1);
  }
  return out;
}

at::Tensor PadJagged(const JaggedEmbedding& e, std::int64_t length) {
  const std::int64_t batch = e.lengths.numel();
  const std::int64_t dim = e.values.size(1);
  const at::Tensor lengths = e.lengths.to(e.values.device(), at::kLong);
  const std::int64_t total = e.values.size(0);
  const at::Tensor row =
      at::repeat_interleave(at::arange(batch, lengths.options()), lengths, 0, total);
  const at::Tensor starts = at::cumsum(lengths, 0) - lengths;
  at::Tensor item = at::arange(total, lengths.options()) - starts.index_select(0, row);
  at::Tensor index = row * length + item;
  at::Tensor values = e.values;
  if (batch > 0 && lengths.max().item<std::int64_t>() > length) {
    const at::Tensor keep = at::nonzero(item < length).view({-1});
    index = index.index_select(0, keep);
    values = values.index_select(0, keep);
  }
  return at::zeros({batch * length, dim}, e.values.options())
      .index_copy(0, index, values)
      .view({batch, length, dim});
}

struct ShardedEmbeddingCollection::Dist {
  std::shared_ptr<ShardedEmbeddingBagCollection::Dist> bags;
  std::vector<at::Tensor> lengths;   // per EC feature [B_local]
  std::vector<std::int64_t> counts;  // N_f per EC feature
};

struct ShardedEmbeddingCollection::Impl {
  std::vector<EmbeddingConfig> tables;
  std::vector<std::string> keys;       // EC features in output order (table by table)
  std::vector<std::int64_t> dims;      // their embedding dims
  std::vector<std::int64_t> columns;   // their table's first column in the virtual pooled output
  std::vector<std::string> bag_keys;   // the inner EBC's features: one per table
  std::vector<std::size_t> table_end;  // per table: one past its last EC feature in `keys`
  std::unique_ptr<ShardedEmbeddingBagCollection> bags;
};

ShardedEmbeddingCollection::ShardedEmbeddingCollection(std::vector<EmbeddingConfig> tables,
                                                       const ShardingPlan& plan,
                                                       const EmbeddingOptimizerConfig& optimizer,
                                                       std::uint64_t seed,
                                                       std::shared_ptr<Comm> comm)
    : impl_(std::make_unique<Impl>()) {
  ShardingPlan sub = SubPlan(plan, tables);
  std::int64_t col = 0;
  for (const auto& t : tables) {
    for (const auto& f : t.feature_names) {
      impl_->keys.push_back(f);
      impl_->dims.push_back(t.embedding_dim);
      impl_->columns.push_back(col);
    }
    col += t.embedding_dim;
    impl_->bag_keys.push_back(t.name);
    impl_->table_end.push_back(impl_->keys.size());
  }
  impl_->bags = std::make_unique<ShardedEmbeddingBagCollection>(
      VirtualBagConfigs(tables), std::move(sub), optimizer, seed, std::move(comm));
  impl_->tables = std::move(tables);
}

ShardedEmbeddingCollection::~ShardedEmbeddingCollection() = default;

std::shared_ptr<ShardedEmbeddingCollection::Dist> ShardedEmbeddingCollection::InputDist(
    const KeyedJaggedTensor& features) {
  auto dist = std::make_shared<Dist>();
  std::vector<at::Tensor> values;
  std::int64_t total = 0;
  for (const auto& key : impl_->keys) {
    const JaggedTensor jt = features[key];
    dist->lengths.push_back(jt.lengths);
    dist->counts.push_back(jt.values.numel());
    values.push_back(jt.values);
    total += jt.values.numel();
  }
  // Virtual batch of `total` one-id bags: table t's virtual feature has length 1 on the rows of
  // its EC features (contiguous: keys go table by table), 0 elsewhere.
  const auto opts = at::TensorOptions().dtype(at::kLong).device(features.Values().device());
  const auto num_tables = static_cast<std::int64_t>(impl_->bag_keys.size());
  at::Tensor lengths = at::zeros({num_tables, total}, opts);
  std::int64_t off = 0;
  std::size_t f = 0;
  for (std::int64_t t = 0; t < num_tables; ++t) {
    std::int64_t rows = 0;
    for (; f < impl_->table_end[static_cast<std::size_t>(t)]; ++f) rows += dist->counts[f];
    lengths[t].narrow(0, off, rows).fill_(1);
    off += rows;
  }
  at::Tensor ids = values.empty() ? at::empty({0}, opts) : at::cat(values);
  KeyedJaggedTensor kjt(impl_->bag_keys, ids, lengths.reshape({-1}), std::nullopt, total);
  dist->bags = impl_->bags->InputDist(kjt);
  return dist;
}

std::vector<JaggedEmbedding> ShardedEmbeddingCollection::Compute(
    const std::shared_ptr<Dist>& dist) {
  const KeyedTensor pooled = impl_->bags->Compute(dist->bags);
  std::vector<JaggedEmbedding> out;
  std::int64_t row = 0;
  for (std::size_t f = 0; f < impl_->keys.size(); ++f) {
    out.push_back(JaggedEmbedding{pooled.Values()
                                      .narrow(0, row, dist->counts[f])
                                      .narrow(1, impl_->columns[f], impl_->dims[f]),
                                  dist->lengths[f]});
    row += dist->counts[f];
  }
  return out;
}

void ShardedEmbeddingCollection::Drain(const std::shared_ptr<Dist>& dist) {
  impl_->bags->Drain(dist->bags);
}
const std::vector<std::string>& ShardedEmbeddingCollection::Keys() const {
  return impl_->keys;
}
const std::vector<EmbeddingConfig>& ShardedEmbeddingCollection::Tables() const {
  return impl_->tables;
}
const ShardingPlan& ShardedEmbeddingCollection::Plan() const {
  return impl_->bags->Plan();
}
std::vector<ShardedEmbeddingCollection::LocalShard> ShardedEmbeddingCollection::LocalShards() {
  return impl_->bags->LocalShards();
}
at::Tensor ShardedEmbeddingCollection::GatherTable(const std::string& table) {
  return impl_->bags->GatherTable(table);
}

}  // namespace tzrec
