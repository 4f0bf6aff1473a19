// src/worker/train/model_parts.hpp — what every dense model of src/worker/train/ shares (see
// include/tzrec/train/model.hpp): where each feature's values are (Layout), a feature group's
// input as one [B, D] tensor (GroupInput), an MLP's options from its tzrec.protos.MLP, the final
// Linear → logit, and one factory per model. Each model lives in its own file (dlrm.cpp,
// deepfm.cpp, multi_tower.cpp, ...) and is registered in model.cpp's Create. Errors: ConfigError
// naming the group or feature. Not thread-safe.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlp.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec::model_internal {

// Feature name suffix of DeepFM's wide tables ("<feature>__wide" reads the feature's ids).
inline constexpr const char* kWideSuffix = "__wide";

// Where each feature's values come from.
struct Layout {
  std::map<std::string, std::int64_t>
      dense_offset;  // raw dense feature → first column in Batch.dense
  std::map<std::string, std::int64_t> dense_width;
  std::map<std::string, std::int64_t> sparse_dim;  // sparse feature → embedding dim
};

Layout MakeLayout(const PipelineConfig& config);
// The group named `name`; ConfigError when the config does not define it.
const protos::FeatureGroupConfig& Group(const PipelineConfig& config, const std::string& name);
bool HasGroup(const PipelineConfig& config, const std::string& name);
// tzrec.protos.MLP → the module's options (every field; validated by the Mlp constructor).
MlpOptions FromProto(const protos::MLP& cfg);

using Linear = ParamBuilder::Linear;
// The model's last Linear (out_dim 1): h [B, D] → logits [B].
at::Tensor Output(const Linear& out, const at::Tensor& h);

// Concatenates a group's features: pooled embeddings and dense columns, then each
// sequence_encoders pooling_encoder's output (TorchEasyRec's PoolingEncoder over the sequence
// group: the sequence features' embeddings pooled over the sequence, in the sequence group's
// order; the tables pool them with the encoder's pooling_type, EffectivePooling).
class GroupInput {
 public:
  GroupInput() = default;
  GroupInput(const PipelineConfig& config, const Layout& layout, const std::string& group) {
    const protos::FeatureGroupConfig& g = Group(config, group);
    std::vector<std::string> names(g.feature_names().begin(), g.feature_names().end());
    for (const auto& encoder : g.sequence_encoders()) {
      for (const auto& seq : g.sequence_groups()) {
        if (seq.group_name() != encoder.pooling_encoder().input()) continue;
        for (const auto& name : seq.feature_names()) {
          if (IsSequence(Feature(config, name))) names.push_back(name);
        }
      }
    }
    for (const auto& f : names) {
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

// The wide embedding dim of models with a WIDE group read through "<table>__wide" tables
// (DeepFM's wide_embedding_dim), or nullopt for models without wide tables.
std::optional<std::int64_t> WideEmbeddingDim(const protos::ModelConfig& model);

using ModelFactory = std::unique_ptr<DenseModel> (*)(const PipelineConfig&, std::uint64_t seed,
                                                     const at::Device&);
std::unique_ptr<DenseModel> MakeDlrm(const PipelineConfig& config, std::uint64_t seed,
                                     const at::Device& device);
std::unique_ptr<DenseModel> MakeDeepFm(const PipelineConfig& config, std::uint64_t seed,
                                       const at::Device& device);
std::unique_ptr<DenseModel> MakeMultiTower(const PipelineConfig& config, std::uint64_t seed,
                                           const at::Device& device);
std::unique_ptr<DenseModel> MakeWideAndDeep(const PipelineConfig& config, std::uint64_t seed,
                                            const at::Device& device);
std::unique_ptr<DenseModel> MakeDcnV1(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device);
std::unique_ptr<DenseModel> MakeDcnV2(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device);
std::unique_ptr<DenseModel> MakeSimpleMultiTask(const PipelineConfig& config, std::uint64_t seed,
                                                const at::Device& device);
std::unique_ptr<DenseModel> MakeMMoE(const PipelineConfig& config, std::uint64_t seed,
                                     const at::Device& device);
std::unique_ptr<DenseModel> MakeDbmtl(const PipelineConfig& config, std::uint64_t seed,
                                      const at::Device& device);
std::unique_ptr<DenseModel> MakePle(const PipelineConfig& config, std::uint64_t seed,
                                    const at::Device& device);
std::unique_ptr<DenseModel> MakeMaskNet(const PipelineConfig& config, std::uint64_t seed,
                                        const at::Device& device);
std::unique_ptr<DenseModel> MakeWuKong(const PipelineConfig& config, std::uint64_t seed,
                                       const at::Device& device);
std::unique_ptr<DenseModel> MakeXDeepFm(const PipelineConfig& config, std::uint64_t seed,
                                        const at::Device& device);

}  // namespace tzrec::model_internal
