// The unsharded EmbeddingBagCollection with its optimizer fused into the backward (see
// tzrec/core/embedding.hpp). The backward is a custom autograd Function: its forward takes a
// dummy leaf that requires grad (so the pooled output is part of the graph) and its backward
// turns the output gradient into per-row gradients, sums them per unique row and applies the
// fused optimizer to the table weights in place.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

// Weights and optimizer states, shared with the autograd graph so that a pending backward stays
// valid even if the EmbeddingBagCollection is moved or destroyed.
struct TableSet {
  std::vector<EmbeddingBagConfig> configs;
  std::vector<at::Tensor> weights;
  std::vector<EmbeddingOptimizerState> states;
  std::unordered_map<std::string, std::size_t> index;
};

// One feature's lookup in one forward.
struct FeatureLookup {
  std::size_t table = 0;
  at::Tensor ids;      // int64 [N]
  at::Tensor offsets;  // int64 [B+1]
  at::Tensor lengths;  // int64 [B]
  at::Tensor weights;  // [N] or undefined
  std::int64_t dim = 0;
  bool mean = false;
};

struct LookupState : torch::CustomClassHolder {
  std::shared_ptr<TableSet> tables;
  std::vector<FeatureLookup> lookups;
  std::int64_t batch = 0;
  at::Device device = at::kCPU;
};

at::Tensor MeanDivisor(const at::Tensor& lengths, const at::Tensor& like) {
  return lengths.clamp_min(1).to(like.scalar_type()).unsqueeze(1);
}

class PooledLookupFunction : public torch::autograd::Function<PooledLookupFunction> {
 public:
  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& /*dummy*/,
                            c10::intrusive_ptr<LookupState> state) {
    std::vector<at::Tensor> pooled;
    pooled.reserve(state->lookups.size());
    for (const auto& l : state->lookups) {
      auto p = PooledSum(state->tables->weights[l.table], l.ids, l.offsets, l.weights);
      if (l.mean) p = p / MeanDivisor(l.lengths, p);
      pooled.push_back(std::move(p));
    }
    at::Tensor out = pooled.empty()
                         ? at::zeros({state->batch, 0},
                                     at::TensorOptions().dtype(at::kFloat).device(state->device))
                         : at::cat(pooled, 1);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return out;
  }

  // torch::autograd::Function calls it by this name.
  // NOLINTNEXTLINE(readability-identifier-naming)
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto state =
        c10::static_intrusive_pointer_cast<LookupState>(ctx->saved_data["state"].toCapsule());
    const at::Tensor& grad = grad_outputs.at(0);
    if (!grad.defined()) return {at::Tensor(), at::Tensor()};
    auto& tables = *state->tables;
    std::vector<std::vector<at::Tensor>> ids(tables.configs.size());
    std::vector<std::vector<at::Tensor>> rows(tables.configs.size());
    std::int64_t col = 0;
    for (const auto& l : state->lookups) {
      // FBGEMM clamps the pooled output gradient first (gradient_clipping), then divides MEAN bags.
      auto g = ClipPooledGradient(tables.states[l.table].Config(), grad.narrow(1, col, l.dim));
      col += l.dim;
      if (l.ids.numel() == 0) continue;
      if (l.mean) g = g / MeanDivisor(l.lengths, g);
      ids[l.table].push_back(l.ids);
      rows[l.table].push_back(PooledSumBackward(g, l.offsets, l.ids.numel(), l.weights));
    }
    at::NoGradGuard no_grad;
    for (std::size_t t = 0; t < tables.configs.size(); ++t) {
      auto& weight = tables.weights[t];
      at::Tensor unique;
      at::Tensor summed;
      if (ids[t].empty()) {
        unique = at::empty({0}, at::TensorOptions().dtype(at::kLong).device(weight.device()));
        summed = at::empty({0, weight.size(1)}, weight.options());
      } else {
        std::tie(unique, summed) =
            AggregateRowGradients(ids[t].size() == 1 ? ids[t][0] : at::cat(ids[t]),
                                  rows[t].size() == 1 ? rows[t][0] : at::cat(rows[t]));
      }
      tables.states[t].Apply(weight, unique, summed);
    }
    return {at::Tensor(), at::Tensor()};
  }
};

}  // namespace

struct EmbeddingBagCollection::Impl {
  std::shared_ptr<TableSet> tables;
  at::Device device = at::kCPU;
  at::Tensor dummy;  // leaf that requires grad; never receives a gradient
};

EmbeddingBagCollection::EmbeddingBagCollection(std::vector<EmbeddingBagConfig> tables,
                                               const EmbeddingOptimizerConfig& optimizer,
                                               std::uint64_t seed, const at::Device& device)
    : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->tables = std::make_shared<TableSet>();
  auto& set = *impl_->tables;
  std::unordered_map<std::string, std::string> feature_table;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const auto& c = tables[i];
    if (c.name.empty()) {
      throw std::invalid_argument("EmbeddingBagCollection: table " + std::to_string(i) +
                                  " has an empty name; give every table a unique name");
    }
    if (!set.index.emplace(c.name, i).second) {
      throw std::invalid_argument("EmbeddingBagCollection: table name '" + c.name +
                                  "' is used twice; table names must be unique");
    }
    if (c.num_embeddings <= 0 || c.embedding_dim <= 0) {
      throw std::invalid_argument("EmbeddingBagCollection: table '" + c.name +
                                  "' has num_embeddings " + std::to_string(c.num_embeddings) +
                                  " and embedding_dim " + std::to_string(c.embedding_dim) +
                                  "; both must be > 0");
    }
    for (const auto& f : c.feature_names) {
      const auto [it, inserted] = feature_table.emplace(f, c.name);
      if (!inserted) {
        throw std::invalid_argument(
            "EmbeddingBagCollection: feature '" + f + "' is listed by tables '" + it->second +
            "' and '" + c.name +
            "'; a feature may feed one table only (share a table by listing several "
            "features in one table)");
      }
    }
  }
  set.configs = std::move(tables);
  set.weights.reserve(set.configs.size());
  set.states.reserve(set.configs.size());
  for (const auto& c : set.configs) {
    set.weights.push_back(InitTableSlice(c, seed, 0, c.num_embeddings, 0, c.embedding_dim, device));
    set.states.emplace_back(optimizer, c.num_embeddings, c.embedding_dim, device);
  }
  impl_->dummy = at::empty({0}, at::TensorOptions().dtype(at::kFloat)).set_requires_grad(true);
}

EmbeddingBagCollection::~EmbeddingBagCollection() = default;
EmbeddingBagCollection::EmbeddingBagCollection(EmbeddingBagCollection&&) noexcept = default;
EmbeddingBagCollection& EmbeddingBagCollection::operator=(EmbeddingBagCollection&&) noexcept =
    default;

KeyedTensor EmbeddingBagCollection::Forward(const KeyedJaggedTensor& features) {
  const KeyedJaggedTensor kjt =
      features.Values().defined() && features.Values().device() != impl_->device
          ? features.To(impl_->device)
          : features;
  auto state = c10::make_intrusive<LookupState>();
  state->tables = impl_->tables;
  state->batch = kjt.Stride();
  state->device = impl_->device;
  std::vector<std::string> keys;
  std::vector<std::int64_t> dims;
  const auto& set = *impl_->tables;
  // Per-key views computed once (kjt[f] would recompute the key offsets for every feature).
  const auto jagged = kjt.ToJaggedTensors();
  std::unordered_map<std::string, std::size_t> position;
  for (std::size_t k = 0; k < kjt.Keys().size(); ++k) position.emplace(kjt.Keys()[k], k);
  for (std::size_t t = 0; t < set.configs.size(); ++t) {
    const auto& c = set.configs[t];
    for (const auto& f : c.feature_names) {
      const auto it = position.find(f);
      // KeyIndex throws std::out_of_range naming f and the available keys when f is absent.
      const auto k = it != position.end() ? it->second : static_cast<std::size_t>(kjt.KeyIndex(f));
      const JaggedTensor& jt = jagged[k];
      if (jt.values.numel() > 0) {
        const auto [mn, mx] = at::aminmax(jt.values);
        const auto lo = mn.item<std::int64_t>();
        const auto hi = mx.item<std::int64_t>();
        if (lo < 0 || hi >= c.num_embeddings) {
          throw std::out_of_range("EmbeddingBagCollection: feature '" + f + "' has id " +
                                  std::to_string(lo < 0 ? lo : hi) + " but table '" + c.name +
                                  "' has num_embeddings " + std::to_string(c.num_embeddings) +
                                  "; ids must be in [0, " + std::to_string(c.num_embeddings) +
                                  ") (hash or bucketize them first)");
        }
      }
      FeatureLookup l;
      l.table = t;
      l.ids = jt.values;
      l.offsets = jt.offsets;
      l.lengths = jt.lengths;
      l.weights = jt.weights;
      l.dim = c.embedding_dim;
      l.mean = c.pooling == PoolingType::kMean;
      state->lookups.push_back(std::move(l));
      keys.push_back(f);
      dims.push_back(c.embedding_dim);
    }
  }
  at::Tensor values = PooledLookupFunction::apply(impl_->dummy, std::move(state));
  return KeyedTensor(std::move(keys), std::move(dims), std::move(values));
}

const std::vector<EmbeddingBagConfig>& EmbeddingBagCollection::Tables() const {
  return impl_->tables->configs;
}

at::Tensor& EmbeddingBagCollection::Weight(const std::string& table) {
  const auto it = impl_->tables->index.find(table);
  if (it == impl_->tables->index.end()) {
    throw std::out_of_range("EmbeddingBagCollection::Weight: no table '" + table + "'");
  }
  return impl_->tables->weights[it->second];
}

EmbeddingOptimizerState& EmbeddingBagCollection::OptimizerState(const std::string& table) {
  const auto it = impl_->tables->index.find(table);
  if (it == impl_->tables->index.end()) {
    throw std::out_of_range("EmbeddingBagCollection::OptimizerState: no table '" + table + "'");
  }
  return impl_->tables->states[it->second];
}

}  // namespace tzrec
