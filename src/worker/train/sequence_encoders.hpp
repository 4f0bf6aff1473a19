// src/worker/train/sequence_encoders.hpp — TorchEasyRec's sequence encoders DINEncoder,
// SimpleAttention, PoolingEncoder and MultiWindowDINEncoder (tzrec/modules/sequence.py; options
// from tzrec/protos/seq_encoder.proto messages of the same names) as libtorch modules that
// register their tensors into a model's lists. The config's pooling_encoder is
// computed by the embedding tables' pooling (model_parts.hpp GroupInput; the test
// train.Model.PoolingEncoderAppendsPooledSequences checks it against PoolingEncoder here);
// din_encoder, simple_attention and multi_window_din_encoder run in multi_tower's groups over the
// unpooled per-item embeddings (model_parts.hpp GroupInput; the EmbeddingCollection of
// sparse_arch.hpp).
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
// MultiWindowDinEncoder (Dq <= Ds; windows_len w_0..w_{K-1} >= 1, c_k = w_0 + ... + w_{k-1},
//   W = c_K): q = query zero-padded to Ds, broadcast to [B, L, Ds];
//   a = PReLU(Linear(H → 1)(attn_mlp(cat[s, q * s, q])))    [B, L, 1], no softmax
//   v[b, t] = a[b, t] · mask[b, t] · s[b, t], zero-padded (or cut) to W positions
//   r[b, k] = sum_{c_k <= t < c_k + w_k} v[b, t] / max(min(len_b - c_k, w_k), 1)   [B, K, Ds]
//   out = cat[r, q] over the window axis, flattened                  [B, (K + 1)·Ds]
// so items past W are dropped and a window past the row's length gives zeros. attn_mlp is the
// dim=3 MLP as DIN's (BatchNorm over all B·L positions; the same renames); its PReLU ("active")
// has one weight, 0.25 at init (torch.nn.PReLU()).
// Every other encoder's OutDim() is Ds; MultiWindowDinEncoder's is (K + 1)·Ds.
//
// Tensor names (creation order = torch's named_parameters order; "<name>" the attribute, e.g.
// "seq_encoder.0"): DinEncoder "<name>.mlp.mlp.<i>.perceptron..." (mlp.hpp), then
// "<name>.linear.weight" [1, H] and "<name>.linear.bias" [1]; init as torch.nn.Linear
// (ParamBuilder). MultiWindowDinEncoder: the buffers "<name>.windows_len" [K] and
// "<name>.cumsum_windows_len" [K] (int64, c_0..c_{K-1}), then the parameters as DIN's plus
// "<name>.active.weight" [1]. SimpleAttention and PoolingEncoder have no tensors.
//
// Errors: ConfigError from the constructors (DIN: query_dim > sequence_dim, empty
// attn_mlp.hidden_units, a PReLU with num_parameters > 1 — torch would apply it over the
// sequence axis of the 3-d input; SimpleAttention: query_dim != sequence_dim; Pooling: a
// pooling_type other than "mean"/"sum"; MultiWindow: as DIN, and an empty windows_len or a
// window < 1; any dim < 1, max_seq_length < 0). Forward throws
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

struct MultiWindowDinEncoderOptions {
  MlpOptions attn_mlp;                    // MultiWindowDINEncoder.attn_mlp (required upstream)
  std::vector<std::int64_t> windows_len;  // MultiWindowDINEncoder.windows_len, each >= 1
};

class MultiWindowDinEncoder {
 public:
  MultiWindowDinEncoder() = default;
  // As DinEncoder's; the buffers are created on the builder's device.
  MultiWindowDinEncoder(ParamBuilder& b, std::vector<Parameter>* parameters,
                        std::vector<Parameter>* buffers, const std::string& name,
                        std::int64_t sequence_dim, std::int64_t query_dim,
                        const MultiWindowDinEncoderOptions& options);
  // query [B, Dq], sequence [B, L, Ds], sequence_length [B] → [B, (K + 1)·Ds].
  at::Tensor Forward(const at::Tensor& query, const at::Tensor& sequence,
                     const at::Tensor& sequence_length, bool training) const;
  std::int64_t OutDim() const { return sequence_dim_ * (windows_ + 1); }

 private:
  std::string name_;
  std::int64_t sequence_dim_ = 0, query_dim_ = 0, windows_ = 0, total_ = 0;
  Mlp mlp_;
  ParamBuilder::Linear linear_;
  at::Tensor active_;                // PReLU weight [1]
  at::Tensor windows_len_, cumsum_;  // the buffers, int64 [K]
  at::Tensor membership_;            // [K, W] float32: 1 where position t is in window k
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
