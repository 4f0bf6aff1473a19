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
#include "sequence_encoders.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec::model_internal {

// Feature name suffix of DeepFM's wide tables ("<feature>__wide" reads the feature's ids).
inline constexpr const char* kWideSuffix = "__wide";

// Where each feature's values come from.
struct Layout {
  std::map<std::string, std::int64_t>
      dense_offset;  // raw dense feature → first column in Batch.dense
  std::map<std::string, std::int64_t> dense_width;
  std::map<std::string, std::int64_t> sparse_dim;       // sparse feature → embedding dim
  std::map<std::string, std::int64_t> sequence_length;  // sequence feature → sequence_length
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
// sequence_encoders entry's output in order (TorchEasyRec's EmbeddingGroup):
//   pooling_encoder   the sequence group's sequence features pooled over the sequence (the tables
//                     pool them with the encoder's pooling_type, EffectivePooling);
//   din_encoder, simple_attention, multi_window_din_encoder (models passing an EncoderBuilder:
//                     multi_tower)  over
//                     query = the sequence group's non-sequence features side by side [B, Dq] and
//                     sequence = its sequence features side by side per item [B, L, Ds], L the
//                     batch's longest sequence (at least 1): item t of feature f is columns
//                     [t·D, (t+1)·D) of key SequenceKey(f) (zeros past the row's length), the
//                     lengths are key SequenceLengthKey(first sequence feature) (model.hpp).
// group_input.cpp. Errors: ConfigError naming the group, feature or encoder.
class GroupInput {
 public:
  // Where an attention encoder registers its tensors (the model's ParamBuilder and lists).
  struct EncoderBuilder {
    ParamBuilder* builder;
    std::vector<Parameter>* parameters;
    std::vector<Parameter>* buffers;
  };
  GroupInput() = default;
  // encoders: nullptr for models without attention encoders (ConfigError when the group has one).
  GroupInput(const PipelineConfig& config, const Layout& layout, const std::string& group,
             const EncoderBuilder* encoders = nullptr);
  // multi_tower_din's DIN tower over SEQUENCE group `group` (query: its non-sequence features,
  // sequence: its sequence features): a GroupInput whose one part is the DinEncoder `name`.
  static GroupInput DinTower(const PipelineConfig& config, const Layout& layout,
                             const std::string& group, const protos::MLP& attn_mlp,
                             const std::string& name, const EncoderBuilder& encoders);
  // training: the attention MLPs' BatchNorm / dropout mode (as Mlp::Forward).
  at::Tensor Forward(const KeyedTensor& sparse, const at::Tensor& dense,
                     bool training = false) const;
  std::vector<std::string> SparseNames() const;
  // {feature, width} in group order (embedding_dim or value_dim; an attention encoder: its
  // name "seq_encoder.<i>" and output width).
  std::vector<std::pair<std::string, std::int64_t>> Widths() const;
  std::int64_t Dim() const { return dim_; }

 private:
  struct Part {
    std::string name;
    std::int64_t offset;  // -1: sparse; -2: attention encoder `encoder`
    std::int64_t width;
    std::size_t encoder = 0;
  };
  struct Attention {
    std::vector<Part> query;            // features (sparse or dense)
    std::vector<std::string> sequence;  // sequence features
    std::vector<std::int64_t> dims;     // their embedding dims
    std::int64_t max_length = 0;        // their sequence_length
    std::int64_t sequence_dim = 0;
    protos::SeqEncoderConfig::SeqModuleCase kind = protos::SeqEncoderConfig::kDinEncoder;
    DinEncoder din_encoder;
    SimpleAttention simple;
    MultiWindowDinEncoder multi_window;
  };
  static Part FeaturePart(const Layout& layout, const std::string& group, const std::string& f);
  void AddAttention(const PipelineConfig& config, const Layout& layout, const std::string& group,
                    const protos::SeqEncoderConfig& encoder, std::size_t index,
                    const EncoderBuilder* encoders);
  // `encoder`: a din_encoder, simple_attention or multi_window_din_encoder (its input unread).
  void AddAttentionPart(const Layout& layout, const std::string& group, const std::string& path,
                        const std::vector<std::string>& names,
                        const protos::SeqEncoderConfig& encoder, const std::string& name,
                        const std::string& part_name, const EncoderBuilder& encoders);
  at::Tensor AttentionForward(const Attention& a, const KeyedTensor& sparse,
                              const at::Tensor& dense, bool training) const;
  std::vector<Part> parts_;
  std::vector<Attention> attention_;
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
std::unique_ptr<DenseModel> MakeMultiTowerDin(const PipelineConfig& config, std::uint64_t seed,
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
