// DLRM, DeepFM and MultiTower dense parts (see include/tzrec/train/model.hpp).
#include "tzrec/train/model.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/triu_indices.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "mlp.hpp"
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

// tzrec.protos.MLP → the module's options (every field; validated by the Mlp constructor).
MlpOptions FromProto(const protos::MLP& cfg) {
  MlpOptions o;
  o.hidden_units.assign(cfg.hidden_units().begin(), cfg.hidden_units().end());
  o.dropout_ratio.assign(cfg.dropout_ratio().begin(), cfg.dropout_ratio().end());
  o.activation = cfg.activation();
  o.use_bn = cfg.use_bn();
  o.bias = cfg.bias();
  o.use_ln = cfg.use_ln();
  return o;
}

using Linear = ParamBuilder::Linear;

at::Tensor Output(const Linear& out, const at::Tensor& h) {
  return at::linear(h, out.weight, out.bias).view({-1});
}

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
  std::vector<std::string> SparseNames() const {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      if (p.offset < 0) out.push_back(p.name);
    }
    return out;
  }
  // {feature, width} in group order (embedding_dim or value_dim).
  std::vector<std::pair<std::string, std::int64_t>> Widths() const {
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (const auto& p : parts_) out.emplace_back(p.name, p.width);
    return out;
  }
  std::int64_t Dim() const { return dim_; }

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

bool HasGroup(const PipelineConfig& config, const std::string& name) {
  for (const auto& g : config.model_config().feature_groups()) {
    if (g.group_name() == name) return true;
  }
  return false;
}

// The upper triangle (i < j, row-major as torch.triu_indices(F, F, 1)) of S·Sᵀ: [B, F, d] →
// [B, F(F-1)/2] (TorchEasyRec's InteractionArch on the sparse features alone).
// `flat` holds i·F + j for those pairs.
at::Tensor SparseOnlyInteraction(const at::Tensor& s, const at::Tensor& flat) {
  const at::Tensor z = at::bmm(s, s.transpose(1, 2));  // [B, F, F]
  return z.reshape({s.size(0), -1}).index_select(1, flat);
}

class Dlrm final : public DenseModel {
 public:
  Dlrm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().dlrm();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    has_dense_ = HasGroup(config, "dense");
    sparse_ = GroupInput(config, layout, "sparse");
    sparse_names_ = sparse_.SparseNames();
    if (sparse_names_.empty())
      throw ConfigError("dlrm: group 'sparse' has no sparse (id) features");
    const std::int64_t d = layout.sparse_dim.at(sparse_names_.front());
    dim_ = d;
    const auto f = static_cast<std::int64_t>(sparse_names_.size());
    const std::int64_t n = has_dense_ ? f + 1 : f;  // vectors in the interaction
    std::int64_t in = n * (n - 1) / 2;
    if (has_dense_) {
      dense_ = GroupInput(config, layout, "dense");
      dense_mlp_ = Mlp(b, "dense_mlp", dense_.Dim(), FromProto(mc.dense_mlp()));
      if (dense_mlp_.OutDim() != d) {
        throw ConfigError(
            "dlrm: dense_mlp's last hidden unit is " + std::to_string(dense_mlp_.OutDim()) +
            " but the sparse embedding dim is " + std::to_string(d) + "; make them equal");
      }
      in += d;
      interaction_.emplace(f, device);
    } else {
      const at::Tensor tri =
          at::triu_indices(f, f, 1, at::TensorOptions().dtype(at::kLong).device(device));
      tri_ = tri[0] * f + tri[1];
    }
    with_sparse_ = mc.arch_with_sparse();
    if (with_sparse_) in += d * f;
    if (in == 0)
      throw ConfigError(
          "dlrm: without a 'dense' group one sparse feature and arch_with_sparse "
          "false leave final_mlp no input; add sparse features or a dense group");
    final_ = Mlp(b, "final_mlp", in, FromProto(mc.final()));
    out_ = b.AddLinear("output", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor emb = SparseBlock(sparse);  // [B, F, d]
    at::Tensor z;
    if (has_dense_) {
      const at::Tensor x = dense_mlp_.Forward(dense_.Forward(sparse, dense), training);  // [B, d]
      z = (*interaction_)(x, emb, with_sparse_);  // [x, triu, (emb)]
    } else {
      z = SparseOnlyInteraction(emb, tri_);  // [triu]
      if (with_sparse_) z = at::cat({z, emb.reshape({emb.size(0), -1})}, 1);
    }
    return Output(out_, final_.Forward(z, training));
  }

  // The sparse features as [B, F, d]: one view of the EBC output when they are adjacent columns in
  // order (the usual case: features in config order), else a stack of per-feature slices. One view
  // keeps autograd from materialising a full-width zero gradient per feature.
  at::Tensor SparseBlock(const KeyedTensor& sparse) {
    if (block_offset_ == -2) {  // first call: find the layout
      block_offset_ = -1;
      const auto& keys = sparse.Keys();
      const auto offsets = sparse.OffsetPerKey();
      for (std::size_t k = 0; k + sparse_names_.size() <= keys.size(); ++k) {
        if (keys[k] != sparse_names_.front()) continue;
        bool adjacent = true;
        for (std::size_t i = 0; i < sparse_names_.size(); ++i) {
          adjacent =
              adjacent && keys[k + i] == sparse_names_[i] && sparse.LengthPerKey()[k + i] == dim_;
        }
        if (adjacent) block_offset_ = offsets[k];
        break;
      }
    }
    const auto n = static_cast<std::int64_t>(sparse_names_.size());
    if (block_offset_ >= 0) {
      return sparse.Values()
          .narrow(1, block_offset_, n * dim_)
          .view({sparse.Values().size(0), n, dim_});
    }
    std::vector<at::Tensor> vs;
    for (const auto& f : sparse_names_) vs.push_back(sparse[f]);
    return at::stack(vs, 1);
  }

 private:
  bool has_dense_ = true;
  GroupInput dense_;
  GroupInput sparse_;
  std::vector<std::string> sparse_names_;
  std::int64_t dim_ = 0;
  std::int64_t block_offset_ = -2;  // -2 unknown, -1 not adjacent, else the first column
  Mlp dense_mlp_;
  Mlp final_;
  Linear out_;
  bool with_sparse_ = true;
  std::optional<DotInteraction> interaction_;
  at::Tensor tri_;  // [F(F-1)/2] flat pair indices, without a dense group
};

// TorchEasyRec's DeepFM (tzrec/models/deepfm.py, FM from tzrec/modules/fm.py).
class DeepFm final : public DenseModel {
 public:
  DeepFm(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().deepfm();
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    const protos::FeatureGroupConfig& wide = Group(config, "wide");
    if (wide.group_type() != protos::WIDE)
      throw ConfigError("deepfm: group 'wide' must have group_type: WIDE");
    for (const auto& f : wide.feature_names()) {
      if (layout.sparse_dim.count(f) == 0U) {
        throw ConfigError("deepfm: wide group feature '" + f + "' must be a sparse feature");
      }
      wide_names_.push_back(f + kWideSuffix);
    }
    deep_ = GroupInput(config, layout, "deep");
    fm_from_deep_ = !HasGroup(config, "fm");
    if (!fm_from_deep_) fm_ = GroupInput(config, layout, "fm");
    const GroupInput& fm = fm_from_deep_ ? deep_ : fm_;
    for (const auto& [name, width] : fm.Widths()) {
      if (fm_dim_ != 0 && width != fm_dim_) {
        throw ConfigError("deepfm: the FM part needs one dim for every feature of group '" +
                          std::string(fm_from_deep_ ? "deep" : "fm") + "'; feature '" + name +
                          "' has " + std::to_string(width) + ", others " + std::to_string(fm_dim_) +
                          " (add a group 'fm' of equal-dim sparse features)");
      }
      fm_dim_ = width;
    }
    fm_num_ = static_cast<std::int64_t>(fm.Widths().size());
    deep_mlp_ = Mlp(b, "deep_mlp", deep_.Dim(), FromProto(mc.deep()));
    has_final_ = mc.has_final();
    std::int64_t out_in = deep_mlp_.OutDim();
    if (has_final_) {
      final_ = Mlp(b, "final_mlp", 1 + fm_dim_ + deep_mlp_.OutDim(), FromProto(mc.final()));
      out_in = final_.OutDim();
    }
    out_ = b.AddLinear("output", out_in, 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    const at::Tensor deep_in = deep_.Forward(sparse, dense);
    at::Tensor y_wide;  // [B, 1]: the wide embeddings summed over features and dims
    if (wide_names_.empty()) {
      y_wide = at::zeros({deep_in.size(0), 1}, deep_in.options());
    } else {
      std::vector<at::Tensor> ws;
      for (const auto& f : wide_names_) ws.push_back(sparse[f]);
      y_wide = at::cat(ws, 1).sum(1, /*keepdim=*/true);
    }
    const at::Tensor y_deep = deep_mlp_.Forward(deep_in, training);
    const at::Tensor e =
        (fm_from_deep_ ? deep_in : fm_.Forward(sparse, dense)).reshape({-1, fm_num_, fm_dim_});
    const at::Tensor sum = e.sum(1);
    const at::Tensor y_fm = 0.5 * (sum * sum - (e * e).sum(1));  // [B, d]
    if (has_final_)
      return Output(out_, final_.Forward(at::cat({y_wide, y_fm, y_deep}, 1), training));
    return y_wide.view({-1}) + y_fm.sum(1) + Output(out_, y_deep);
  }

 private:
  GroupInput deep_;
  GroupInput fm_;
  bool fm_from_deep_ = true;
  std::vector<std::string> wide_names_;
  std::int64_t fm_dim_ = 0;
  std::int64_t fm_num_ = 0;
  Mlp deep_mlp_;
  bool has_final_ = false;
  Mlp final_;
  Linear out_;
};

class MultiTower final : public DenseModel {
 public:
  MultiTower(const PipelineConfig& config, std::uint64_t seed, const at::Device& device) {
    const Layout layout = MakeLayout(config);
    const auto& mc = config.model_config().multi_tower();
    if (mc.towers().empty())
      throw ConfigError("multi_tower: towers is empty; add at least one tower");
    ParamBuilder b(&parameters_, &buffers_, seed, device);
    std::int64_t in = 0;
    for (const auto& tower : mc.towers()) {
      inputs_.emplace_back(config, layout, tower.input());
      towers_.emplace_back(b, "towers." + tower.input(), inputs_.back().Dim(),
                           FromProto(tower.mlp()));
      in += towers_.back().OutDim();
    }
    final_ = Mlp(b, "final_mlp", in, FromProto(mc.final()));
    out_ = b.AddLinear("output", final_.OutDim(), 1);
  }
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense, bool training) override {
    std::vector<at::Tensor> outs;
    for (std::size_t i = 0; i < towers_.size(); ++i)
      outs.push_back(towers_[i].Forward(inputs_[i].Forward(sparse, dense), training));
    return Output(out_, final_.Forward(at::cat(outs, 1), training));
  }

 private:
  std::vector<GroupInput> inputs_;
  std::vector<Mlp> towers_;
  Mlp final_;
  Linear out_;
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

std::int64_t DenseModel::NumParameters() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_) n += p.tensor.numel();
  return n;
}

}  // namespace tzrec
