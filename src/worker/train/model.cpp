// DLRM, DeepFM and MultiTower dense parts (see include/tzrec/train/model.hpp).
#include "tzrec/train/model.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "tzrec/core/interaction.hpp"

namespace tzrec {
namespace {

constexpr const char* kWideSuffix = "__wide";

// Where each feature's values come from.
struct Layout {
  std::map<std::string, std::int64_t>
      dense_offset;  // raw dense feature → first column in Batch.dense
  std::map<std::string, std::int64_t> dense_width;
  std::map<std::string, std::int64_t> sparse_dim;  // sparse feature → embedding dim
};

Layout MakeLayout(const PipelineConfig& config) {
  Layout l;
  std::int64_t col = 0;
  for (const auto& f : config.feature_configs()) {
    if (IsSparse(f)) {
      l.sparse_dim[FeatureName(f)] = EmbeddingDim(f);
    } else {
      l.dense_offset[FeatureName(f)] = col;
      l.dense_width[FeatureName(f)] = ValueDim(f);
      col += ValueDim(f);
    }
  }
  return l;
}

const protos::FeatureGroupConfig& Group(const PipelineConfig& config, const std::string& name) {
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_name() == name) return g;
  }
  throw ConfigError("model_config: feature group '" + name +
                    "' is not defined; add it to model_config.feature_groups");
}

class Builder {
 public:
  Builder(std::vector<Parameter>* params, std::uint64_t seed, at::Device device)
      : params_(params), gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), device_(device) {}

  // torch.nn.Linear default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
  std::pair<at::Tensor, at::Tensor> Linear(const std::string& name, std::int64_t in,
                                           std::int64_t out) {
    const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    at::Tensor w =
        ((at::rand({out, in}, gen_) * 2 - 1) * bound).to(device_).set_requires_grad(true);
    at::Tensor b = ((at::rand({out}, gen_) * 2 - 1) * bound).to(device_).set_requires_grad(true);
    params_->push_back({name + ".weight", w});
    params_->push_back({name + ".bias", b});
    return {w, b};
  }

 private:
  std::vector<Parameter>* params_;
  at::Generator gen_;
  at::Device device_;
};

class Mlp {
 public:
  Mlp() = default;
  Mlp(Builder& b, const std::string& name, std::int64_t in, const protos::MLP& cfg) {
    for (int i = 0; i < cfg.hidden_units_size(); ++i) {
      layers_.push_back(b.Linear(name + "." + std::to_string(i), in, cfg.hidden_units(i)));
      in = cfg.hidden_units(i);
    }
    out_dim_ = in;
  }
  at::Tensor Forward(at::Tensor x) const {
    for (const auto& [w, b] : layers_) x = at::relu(at::linear(x, w, b));
    return x;
  }
  std::int64_t out_dim() const { return out_dim_; }

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> layers_;
  std::int64_t out_dim_ = 0;
};

// Concatenates a group's features: pooled embeddings and dense columns.
class GroupInput {
 public:
  GroupInput() = default;
  GroupInput(const PipelineConfig& config, const Layout& layout, const std::string& group) {
    for (const auto& f : Group(config, group).feature_names()) {
      if (layout.sparse_dim.count(f) != 0U) {
        parts_.push_back({f, -1, layout.sparse_dim.at(f)});
      } else if (layout.dense_offset.count(f) != 0U) {
        parts_.push_back({f, layout.dense_offset.at(f), layout.dense_width.at(f)});
      } else {
        throw ConfigError("feature group '" + group + "' names feature '" + f +
                          "' which is not in feature_configs");
      }
      dim_ += parts_.back().width;
    }
    // Only dense columns, adjacent and in order (DLRM's "dense" group): one view, no concat.
    std::int64_t next = parts_.empty() ? -1 : parts_.front().offset;
    for (const auto& p : parts_) {
      if (p.offset < 0 || p.offset != next) next = -1;
      if (next < 0) break;
      next += p.width;
    }
    dense_view_ = next >= 0;
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense) const {
    if (dense_view_) return dense.narrow(1, parts_.front().offset, dim_);
    std::vector<at::Tensor> xs;
    for (const auto& p : parts_)
      xs.push_back(p.offset < 0 ? sparse[p.name] : dense.narrow(1, p.offset, p.width));
    return at::cat(xs, 1);
  }
  std::vector<std::string> sparse_names() const {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      if (p.offset < 0) out.push_back(p.name);
    }
    return out;
  }
  std::int64_t dim() const { return dim_; }

 private:
  struct Part {
    std::string name;
    std::int64_t offset;  // -1: sparse
    std::int64_t width;
  };
  std::vector<Part> parts_;
  std::int64_t dim_ = 0;
  bool dense_view_ = false;
};

class Dlrm final : public DenseModel {
 public:
  Dlrm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().dlrm();
    Builder b(&parameters_, seed, device);
    dense_ = GroupInput(config, layout, "dense");
    sparse_ = GroupInput(config, layout, "sparse");
    sparse_names_ = sparse_.sparse_names();
    if (sparse_names_.empty())
      throw ConfigError("dlrm: group 'sparse' has no sparse (id) features");
    const std::int64_t d = layout.sparse_dim.at(sparse_names_.front());
    dim_ = d;
    dense_mlp_ = Mlp(b, "dense_mlp", dense_.dim(), mc.dense_mlp());
    if (dense_mlp_.out_dim() != d) {
      throw ConfigError("dlrm: dense_mlp's last hidden unit is " +
                        std::to_string(dense_mlp_.out_dim()) + " but the sparse embedding dim is " +
                        std::to_string(d) + "; make them equal");
    }
    const auto n = static_cast<std::int64_t>(sparse_names_.size()) + 1;
    std::int64_t in = d + n * (n - 1) / 2;
    if (mc.arch_with_sparse()) in += d * (n - 1);
    with_sparse_ = mc.arch_with_sparse();
    final_ = Mlp(b, "final_mlp", in, mc.final());
    out_ = b.Linear("output", final_.out_dim(), 1);
    interaction_.emplace(n - 1, device);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense) override {
    const at::Tensor x = dense_mlp_.Forward(dense_.Forward(sparse, dense));      // [B, d]
    const at::Tensor emb = SparseBlock(sparse);                                  // [B, F, d]
    const at::Tensor h = final_.Forward((*interaction_)(x, emb, with_sparse_));  // [x, triu, (emb)]
    return at::linear(h, out_.first, out_.second).view({-1});
  }

  // The sparse features as [B, F, d]: one view of the EBC output when they are adjacent columns in
  // order (the usual case: features in config order), else a stack of per-feature slices. One view
  // keeps autograd from materialising a full-width zero gradient per feature.
  at::Tensor SparseBlock(const KeyedTensor& sparse) {
    if (block_offset_ == -2) {  // first call: find the layout
      block_offset_ = -1;
      const auto& keys = sparse.keys();
      const auto offsets = sparse.offset_per_key();
      for (std::size_t k = 0; k + sparse_names_.size() <= keys.size(); ++k) {
        if (keys[k] != sparse_names_.front()) continue;
        bool adjacent = true;
        for (std::size_t i = 0; i < sparse_names_.size(); ++i) {
          adjacent =
              adjacent && keys[k + i] == sparse_names_[i] && sparse.length_per_key()[k + i] == dim_;
        }
        if (adjacent) block_offset_ = offsets[k];
        break;
      }
    }
    const auto n = static_cast<std::int64_t>(sparse_names_.size());
    if (block_offset_ >= 0) {
      return sparse.values()
          .narrow(1, block_offset_, n * dim_)
          .view({sparse.values().size(0), n, dim_});
    }
    std::vector<at::Tensor> vs;
    for (const auto& f : sparse_names_) vs.push_back(sparse[f]);
    return at::stack(vs, 1);
  }

 private:
  GroupInput dense_;
  GroupInput sparse_;
  std::vector<std::string> sparse_names_;
  std::int64_t dim_ = 0;
  std::int64_t block_offset_ = -2;  // -2 unknown, -1 not adjacent, else the first column
  Mlp dense_mlp_;
  Mlp final_;
  std::pair<at::Tensor, at::Tensor> out_;
  bool with_sparse_ = true;
  std::optional<DotInteraction> interaction_;
};

class DeepFm final : public DenseModel {
 public:
  DeepFm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().deepfm();
    Builder b(&parameters_, seed, device);
    for (const auto& g : config.model_config().feature_groups()) {
      if (g.group_type() == protos::WIDE) {
        for (const auto& f : g.feature_names()) {
          if (layout.sparse_dim.count(f) == 0U) {
            throw ConfigError("deepfm: wide group '" + g.group_name() + "' feature '" + f +
                              "' must be an id feature");
          }
          wide_names_.push_back(f + kWideSuffix);
        }
      }
    }
    deep_ = GroupInput(config, layout, "deep");
    fm_names_ = deep_.sparse_names();
    std::int64_t fm_dim = 0;
    for (const auto& f : fm_names_) {
      const std::int64_t d = layout.sparse_dim.at(f);
      if (fm_dim != 0 && d != fm_dim) {
        throw ConfigError(
            "deepfm: the FM part needs equal embedding dims in group 'deep'; feature '" + f +
            "' has " + std::to_string(d) + ", others " + std::to_string(fm_dim));
      }
      fm_dim = d;
    }
    fm_dim_ = fm_dim;
    deep_mlp_ = Mlp(b, "deep_mlp", deep_.dim(), mc.deep());
    final_ = Mlp(b, "final_mlp", deep_mlp_.out_dim() + fm_dim_, mc.final());
    out_ = b.Linear("output", final_.out_dim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense) override {
    const at::Tensor deep = deep_mlp_.Forward(deep_.Forward(sparse, dense));
    std::vector<at::Tensor> parts{deep};
    if (fm_dim_ > 0) {
      std::vector<at::Tensor> es;
      for (const auto& f : fm_names_) es.push_back(sparse[f]);
      const at::Tensor e = at::stack(es, 1);  // [B, F, d]
      const at::Tensor sum = e.sum(1);
      parts.push_back(0.5 * (sum * sum - (e * e).sum(1)));
    }
    at::Tensor logit =
        at::linear(final_.Forward(at::cat(parts, 1)), out_.first, out_.second).view({-1});
    if (!wide_names_.empty()) {
      std::vector<at::Tensor> ws;
      for (const auto& f : wide_names_) ws.push_back(sparse[f]);
      logit = logit + at::cat(ws, 1).sum(1);
    }
    return logit;
  }

 private:
  GroupInput deep_;
  std::vector<std::string> fm_names_;
  std::vector<std::string> wide_names_;
  std::int64_t fm_dim_ = 0;
  Mlp deep_mlp_;
  Mlp final_;
  std::pair<at::Tensor, at::Tensor> out_;
};

class MultiTower final : public DenseModel {
 public:
  MultiTower(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().multi_tower();
    if (mc.towers().empty())
      throw ConfigError("multi_tower: towers is empty; add at least one tower");
    Builder b(&parameters_, seed, device);
    std::int64_t in = 0;
    for (const auto& tower : mc.towers()) {
      inputs_.emplace_back(config, layout, tower.input());
      towers_.emplace_back(b, "towers." + tower.input(), inputs_.back().dim(), tower.mlp());
      in += towers_.back().out_dim();
    }
    final_ = Mlp(b, "final_mlp", in, mc.final());
    out_ = b.Linear("output", final_.out_dim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense) override {
    std::vector<at::Tensor> outs;
    for (std::size_t i = 0; i < towers_.size(); ++i)
      outs.push_back(towers_[i].Forward(inputs_[i].Forward(sparse, dense)));
    return at::linear(final_.Forward(at::cat(outs, 1)), out_.first, out_.second).view({-1});
  }

 private:
  std::vector<GroupInput> inputs_;
  std::vector<Mlp> towers_;
  Mlp final_;
  std::pair<at::Tensor, at::Tensor> out_;
};

}  // namespace

std::vector<EmbeddingBagConfig> EmbeddingTables(const PipelineConfig& config) {
  std::vector<EmbeddingBagConfig> tables;
  std::map<std::string, std::size_t> index;
  auto add = [&](const std::string& table, const std::string& feature, std::int64_t rows,
                 std::int64_t dim, PoolingType pooling) {
    auto it = index.find(table);
    if (it == index.end()) {
      index[table] = tables.size();
      tables.push_back(EmbeddingBagConfig{table, rows, dim, {feature}, pooling});
      return;
    }
    EmbeddingBagConfig& t = tables[it->second];
    if (t.embedding_dim != dim || t.num_embeddings != rows) {
      throw ConfigError("feature '" + feature + "' shares table '" + table + "' (" +
                        std::to_string(t.num_embeddings) + " x " + std::to_string(t.embedding_dim) +
                        ") but asks for " + std::to_string(rows) + " x " + std::to_string(dim) +
                        "; give shared features the same size and embedding_dim");
    }
    t.feature_names.push_back(feature);
  };
  for (const auto& f : config.feature_configs()) {
    if (!IsSparse(f)) continue;
    add(TableName(f), FeatureName(f), NumEmbeddings(f), EmbeddingDim(f),
        Pooling(f) == "mean" ? PoolingType::kMean : PoolingType::kSum);
  }
  if (config.model_config().has_deepfm()) {
    for (const auto& g : config.model_config().feature_groups()) {
      if (g.group_type() != protos::WIDE) continue;
      for (const auto& name : g.feature_names()) {
        const protos::FeatureConfig& f = Feature(config, name);
        add(TableName(f) + kWideSuffix, name + kWideSuffix, NumEmbeddings(f),
            config.model_config().deepfm().wide_embedding_dim(), PoolingType::kSum);
      }
    }
  }
  return tables;
}

KeyedJaggedTensor AddDerivedFeatures(const PipelineConfig& config,
                                     const KeyedJaggedTensor& sparse) {
  if (!config.model_config().has_deepfm()) return sparse;
  std::vector<std::string> keys;
  std::vector<JaggedTensor> jts;
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_type() != protos::WIDE) continue;
    for (const auto& name : g.feature_names()) {
      keys.push_back(name + kWideSuffix);
      jts.push_back(sparse[name]);
    }
  }
  if (keys.empty()) return sparse;
  return KeyedJaggedTensor::Concat({sparse, KeyedJaggedTensor::FromJaggedTensors(keys, jts)});
}

ParameterConstraints TableConstraints(const PipelineConfig& config, const std::string& table) {
  ParameterConstraints c;
  for (const auto& f : config.feature_configs()) {
    const auto& constraints = IsIdFeature(f) ? f.id_feature().embedding_constraints()
                                             : f.raw_feature().embedding_constraints();
    if (IsSparse(f) && (TableName(f) == table || TableName(f) + kWideSuffix == table) &&
        constraints.sharding_types_size() > 0) {
      c.sharding_types = ShardingTypes(constraints);
    }
  }
  if (c.sharding_types.empty()) {
    c.sharding_types = ShardingTypes(config.train_config().global_embedding_constraints());
  }
  return c;
}

std::unique_ptr<DenseModel> DenseModel::Create(const PipelineConfig& config, std::uint64_t seed,
                                               const at::Device& device) {
  const std::string type = ModelType(config);
  if (type == "dlrm") return std::make_unique<Dlrm>(config, seed, device);
  if (type == "deepfm") return std::make_unique<DeepFm>(config, seed, device);
  if (type == "multi_tower") return std::make_unique<MultiTower>(config, seed, device);
  throw ConfigError("model_config: no model; set one of dlrm, deepfm, multi_tower");
}

std::int64_t DenseModel::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_) n += p.tensor.numel();
  return n;
}

}  // namespace tzrec
