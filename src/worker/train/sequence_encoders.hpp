// src/worker/train/sequence_encoders.hpp — TorchEasyRec's sequence encoders DINEncoder,
// SimpleAttention and PoolingEncoder (tzrec/modules/sequence.py; options from
// tzrec/protos/seq_encoder.proto messages DINEncoder, SimpleAttention, PoolingEncoder) as libtorch
// modules that register their tensors into a model's lists. The config's pooling_encoder is
// computed by the embedding tables' pooling (model_parts.hpp GroupInput; the test
// train.Model.PoolingEncoderAppendsPooledSequences checks it against PoolingEncoder here);
// din_encoder and simple_attention run in multi_tower's groups over the unpooled per-item
// embeddings (model_parts.hpp GroupInput; the EmbeddingCollection of sparse_arch.hpp).
//
// Inputs, as upstream's "<group>.query", "<group>.sequence", "<group>.sequence_length":
//   query           [B, Dq] float32 (DIN, SimpleAttention)
//   sequence        [B, L, Ds] float32, padded after each row's length
//   sequence_length [B] int64 (any integer dtype is accepted and compared as is)
// With max_seq_length > 0 every encoder first keeps sequence[:, :max_seq_length] and clamps the
// lengths to at most max_seq_length. mask[b, t] = t < sequence_length[b].
//
// DinEncoder (Dq <= Ds): q = query zero-padded to Ds, broadcast to [B, L, Ds];
//   a = Linear(H → 1)(attn_mlp(cat[q, s, q - s, q * s]))   attn_mlp on the last dim (4·Ds → H)
//   scores = softmax_t(where(mask, a, -(2^31) + 1))        [B, L]
//   out = sum_t scores[b, t] · s[b, t]                     [B, Ds]
// A row with length 0 gets uniform weights 1/L over its padding (upstream's result).
// attn_mlp is the MLP (mlp.hpp) upstream builds with dim=3: its BatchNorm (use_bn, Dice) uses
// statistics over all B·L positions, padding included, as upstream's. With use_bn, upstream's
// dim=3 Perceptron wraps the BatchNorm in two Transpose modules, so its BatchNorm is
// "perceptron.2" and its activation "perceptron.4" (not 1 and 2 as in a 2-d MLP): DinEncoder
// renames the tensors the Mlp registered accordingly.
// SimpleAttention (Dq == Ds): a[b, t] = <s[b, t], query[b]>, then scores and out as DIN.
// PoolingEncoder: sum = sum over all L positions (padding included: upstream does not mask, it
//   relies on zero padding); "mean" divides by max(sequence_length, 1).
// Every encoder's OutDim() is Ds.
//
// Tensor names (creation order = torch's named_parameters order; "<name>" the attribute, e.g.
// "seq_encoder.0"): DinEncoder "<name>.mlp.mlp.<i>.perceptron..." (mlp.hpp), then
// "<name>.linear.weight" [1, H] and "<name>.linear.bias" [1]; init as torch.nn.Linear
// (ParamBuilder). SimpleAttention and PoolingEncoder have no tensors.
//
// Errors: ConfigError from the constructors (DIN: query_dim > sequence_dim, empty
// attn_mlp.hidden_units, a PReLU with num_parameters > 1 — torch would apply it over the
// sequence axis of the 3-d input; SimpleAttention: query_dim != sequence_dim; Pooling: a
// pooling_type other than "mean"/"sum"; any dim < 1, max_seq_length < 0). Forward throws
// InputError for shapes that disagree with the constructor's dims or with each other. Forward:
// as Mlp (BatchNorm in attn_mlp needs B·L > 1 when training; one thread per module at a time).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlp.hpp"

namespace tzrec {

struct DinEncoderOptions {
  MlpOptions attn_mlp;              // DINEncoder.attn_mlp (required upstream)
  std::int64_t max_seq_length = 0;  // 0 = the whole padded sequence
};

class DinEncoder {
 public:
  DinEncoder() = default;
  // `parameters` and `buffers` are the lists `b` appends to (the names are rewritten there).
  DinEncoder(ParamBuilder& b, std::vector<Parameter>* parameters, std::vector<Parameter>* buffers,
             const std::string& name, std::int64_t sequence_dim, std::int64_t query_dim,
             const DinEncoderOptions& options);
  // query [B, Dq], sequence [B, L, Ds], sequence_length [B] → [B, Ds].
  at::Tensor Forward(const at::Tensor& query, const at::Tensor& sequence,
                     const at::Tensor& sequence_length, bool training) const;
  std::int64_t OutDim() const { return sequence_dim_; }

 private:
  std::string name_;
  std::int64_t sequence_dim_ = 0, query_dim_ = 0, max_seq_length_ = 0;
  Mlp mlp_;
  ParamBuilder::Linear linear_;
};

class SimpleAttention {
 public:
  SimpleAttention() = default;
  SimpleAttention(const std::string& name, std::int64_t sequence_dim, std::int64_t query_dim,
                  std::int64_t max_seq_length = 0);
  // query [B, Ds], sequence [B, L, Ds], sequence_length [B] → [B, Ds]. Pure; any thread.
  at::Tensor Forward(const at::Tensor& query, const at::Tensor& sequence,
                     const at::Tensor& sequence_length) const;
  std::int64_t OutDim() const { return sequence_dim_; }

 private:
  std::string name_;
  std::int64_t sequence_dim_ = 0, max_seq_length_ = 0;
};

class PoolingEncoder {
 public:
  PoolingEncoder() = default;
  // pooling_type: "mean" (the proto's default) or "sum".
  PoolingEncoder(const std::string& name, std::int64_t sequence_dim,
                 const std::string& pooling_type = "mean", std::int64_t max_seq_length = 0);
  // sequence [B, L, Ds], sequence_length [B] (read only for "mean") → [B, Ds]. Pure; any thread.
  at::Tensor Forward(const at::Tensor& sequence, const at::Tensor& sequence_length) const;
  std::int64_t OutDim() const { return sequence_dim_; }

 private:
  std::string name_;
  std::int64_t sequence_dim_ = 0, max_seq_length_ = 0;
  bool mean_ = true;
};

}  // namespace tzrec
