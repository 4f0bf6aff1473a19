// A feature group's input (src/worker/train/model_parts.hpp GroupInput): its features, pooled
// sequences and attention encoders (TorchEasyRec tzrec/modules/embedding.py EmbeddingGroup and
// tzrec/modules/sequence.py DINEncoder / SimpleAttention / MultiWindowDINEncoder).
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/max.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model_parts.hpp"

namespace tzrec::model_internal {

GroupInput::Part GroupInput::FeaturePart(const Layout& layout, const std::string& group,
                                         const std::string& f) {
  if (layout.sparse_dim.count(f) != 0U) return {f, -1, layout.sparse_dim.at(f)};
  if (layout.dense_offset.count(f) != 0U)
    return {f, layout.dense_offset.at(f), layout.dense_width.at(f)};
  throw ConfigError("feature group '" + group + "' names feature '" + f +
                    "' which is not in feature_configs");
}

GroupInput::GroupInput(const PipelineConfig& config, const Layout& layout, const std::string& group,
                       const EncoderBuilder* encoders) {
  const protos::FeatureGroupConfig& g = Group(config, group);
  for (const auto& f : g.feature_names()) parts_.push_back(FeaturePart(layout, group, f));
  for (int e = 0; e < g.sequence_encoders_size(); ++e) {
    const auto& encoder = g.sequence_encoders(e);
    if (AttentionInput(encoder) != nullptr) {
      AddAttention(config, layout, group, encoder, static_cast<std::size_t>(e), encoders);
      continue;
    }
    for (const auto& seq : g.sequence_groups()) {
      if (seq.group_name() != encoder.pooling_encoder().input()) continue;
      for (const auto& name : seq.feature_names()) {
        if (IsSequence(Feature(config, name))) parts_.push_back(FeaturePart(layout, group, name));
      }
    }
  }
  for (const auto& p : parts_) dim_ += p.width;
  // Only dense columns, adjacent and in order (DLRM's "dense" group): one view, no concat.
  std::int64_t next = parts_.empty() ? -1 : parts_.front().offset;
  for (const auto& p : parts_) {
    if (p.offset < 0 || p.offset != next) next = -1;
    if (next < 0) break;
    next += p.width;
  }
  dense_view_ = next >= 0;
}

void GroupInput::AddAttention(const PipelineConfig& config, const Layout& layout,
                              const std::string& group, const protos::SeqEncoderConfig& encoder,
                              std::size_t index, const EncoderBuilder* encoders) {
  const std::string path = "feature group '" + group + "' sequence_encoders[" +
                           std::to_string(index) + "]." + SeqEncoderKind(encoder);
  if (encoders == nullptr)
    throw ConfigError("attention sequence encoders are read by multi_tower only: " + path +
                      " in model_config." + ModelType(config) +
                      "; use multi_tower or a pooling_encoder");
  const std::string& input = *AttentionInput(encoder);
  std::vector<std::string> names;
  for (const auto& seq : Group(config, group).sequence_groups()) {
    if (seq.group_name() == input)
      names.assign(seq.feature_names().begin(), seq.feature_names().end());
  }
  const std::string name = "embedding_group.seq_encoders." + group + "." + std::to_string(index);
  AddAttentionPart(layout, group, path + ".input '" + input + "'", names, encoder, name,
                   "seq_encoder." + std::to_string(index), *encoders);
}

GroupInput GroupInput::DinTower(const PipelineConfig& config, const Layout& layout,
                                const std::string& group, const protos::MLP& attn_mlp,
                                const std::string& name, const EncoderBuilder& encoders) {
  GroupInput in;
  const auto& names = Group(config, group).feature_names();
  protos::SeqEncoderConfig din;
  *din.mutable_din_encoder()->mutable_attn_mlp() = attn_mlp;
  in.AddAttentionPart(layout, group, "din tower '" + group + "'",
                      std::vector<std::string>(names.begin(), names.end()), din, name, name,
                      encoders);
  in.dim_ = in.parts_.back().width;
  return in;
}

void GroupInput::AddAttentionPart(const Layout& layout, const std::string& group,
                                  const std::string& path, const std::vector<std::string>& names,
                                  const protos::SeqEncoderConfig& encoder, const std::string& name,
                                  const std::string& part_name, const EncoderBuilder& encoders) {
  Attention a;
  a.kind = encoder.seq_module_case();
  for (const auto& f : names) {
    if (layout.sequence_length.count(f) == 0U) {
      a.query.push_back(FeaturePart(layout, group, f));
      continue;
    }
    if (layout.sparse_dim.count(f) == 0U)
      throw ConfigError("an attention encoder's sequence feature has no embedding: '" + f +
                        "' in " + path + "; give it an embedding (num_buckets, boundaries)");
    a.sequence.push_back(f);
    a.dims.push_back(layout.sparse_dim.at(f));
    a.sequence_dim += layout.sparse_dim.at(f);
    a.max_length = std::max(a.max_length, layout.sequence_length.at(f));
  }
  if (a.sequence.empty() || a.query.empty())
    throw ConfigError("an attention encoder needs a query and a sequence feature: " + path +
                      " has not both");
  std::int64_t query_dim = 0;
  for (const auto& q : a.query) query_dim += q.width;
  std::int64_t width = a.sequence_dim;
  if (a.kind == protos::SeqEncoderConfig::kDinEncoder) {
    DinEncoderOptions options;
    options.attn_mlp = FromProto(encoder.din_encoder().attn_mlp());
    a.din_encoder = DinEncoder(*encoders.builder, encoders.parameters, encoders.buffers, name,
                               a.sequence_dim, query_dim, options);
  } else if (a.kind == protos::SeqEncoderConfig::kMultiWindowDinEncoder) {
    const auto& mw = encoder.multi_window_din_encoder();
    MultiWindowDinEncoderOptions options;
    options.attn_mlp = FromProto(mw.attn_mlp());
    options.windows_len.assign(mw.windows_len().begin(), mw.windows_len().end());
    a.multi_window = MultiWindowDinEncoder(*encoders.builder, encoders.parameters, encoders.buffers,
                                           name, a.sequence_dim, query_dim, options);
    width = a.multi_window.OutDim();
  } else {
    a.simple = SimpleAttention(name, a.sequence_dim, query_dim);
  }
  parts_.push_back({part_name, -2, width, attention_.size()});
  attention_.push_back(std::move(a));
}

at::Tensor GroupInput::AttentionForward(const Attention& a, const KeyedTensor& sparse,
                                        const at::Tensor& dense, bool training) const {
  std::vector<at::Tensor> qs;
  for (const auto& q : a.query)
    qs.push_back(q.offset < 0 ? sparse[q.name] : dense.narrow(1, q.offset, q.width));
  const at::Tensor query = qs.size() == 1 ? qs.front() : at::cat(qs, 1);
  const at::Tensor lengths =
      sparse[SequenceLengthKey(a.sequence.front())].select(1, 0).to(at::kLong);
  const std::int64_t rows = lengths.size(0);
  // Upstream pads to the batch's longest sequence (JaggedTensor.to_padded_dense).
  std::int64_t len = a.max_length;
  if (rows > 0) len = std::clamp<std::int64_t>(lengths.max().item<std::int64_t>(), 1, len);
  // Each feature's padded [B, L·D] column block as [B, L, D]; features side by side per item.
  std::vector<at::Tensor> items;
  for (std::size_t i = 0; i < a.sequence.size(); ++i) {
    const at::Tensor padded = sparse[SequenceKey(a.sequence[i])];
    items.push_back(padded.view({rows, padded.size(1) / a.dims[i], a.dims[i]}).narrow(1, 0, len));
  }
  const at::Tensor sequence = items.size() == 1 ? items.front() : at::cat(items, 2);
  if (a.kind == protos::SeqEncoderConfig::kDinEncoder)
    return a.din_encoder.Forward(query, sequence, lengths, training);
  if (a.kind == protos::SeqEncoderConfig::kMultiWindowDinEncoder)
    return a.multi_window.Forward(query, sequence, lengths, training);
  return a.simple.Forward(query, sequence, lengths);
}

at::Tensor GroupInput::Forward(const KeyedTensor& sparse, const at::Tensor& dense,
                               bool training) const {
  if (dense_view_) return dense.narrow(1, parts_.front().offset, dim_);
  std::vector<at::Tensor> xs;
  for (const auto& p : parts_) {
    if (p.offset == -2) {
      xs.push_back(AttentionForward(attention_[p.encoder], sparse, dense, training));
    } else {
      xs.push_back(p.offset < 0 ? sparse[p.name] : dense.narrow(1, p.offset, p.width));
    }
  }
  return at::cat(xs, 1);
}

std::vector<std::string> GroupInput::SparseNames() const {
  std::vector<std::string> out;
  for (const auto& p : parts_) {
    if (p.offset == -1) out.push_back(p.name);
  }
  return out;
}

std::vector<std::pair<std::string, std::int64_t>> GroupInput::Widths() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& p : parts_) out.emplace_back(p.name, p.width);
  return out;
}

}  // namespace tzrec::model_internal
