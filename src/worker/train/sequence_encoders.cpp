// DinEncoder, MultiWindowDinEncoder, SimpleAttention and PoolingEncoder (see
// src/worker/train/sequence_encoders.hpp):
// TorchEasyRec's tzrec/modules/sequence.py encoders on libtorch ops.
#include "sequence_encoders.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/prelu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

// Upstream's padding score: torch.ones_like(a) * (-(2**31) + 1), -2147483648 in float32.
constexpr double kPaddingScore = -2147483647.0;

std::string Shape(const at::Tensor& t) {
  std::string s = "[";
  for (std::int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void RequirePositive(std::int64_t v, const std::string& field) {
  if (v < 1) throw ConfigError(field + " must be at least 1, got " + std::to_string(v));
}

void RequireMaxLength(std::int64_t v, const std::string& name) {
  if (v < 0)
    throw ConfigError(name + ".max_seq_length must be 0 (whole sequence) or positive, got " +
                      std::to_string(v));
}

// Checks sequence [B, L, dim] and sequence_length [B] (and query [B, query_dim] when defined).
void CheckInputs(const std::string& name, const at::Tensor& query, std::int64_t query_dim,
                 const at::Tensor& sequence, std::int64_t dim, const at::Tensor& lengths) {
  if (sequence.dim() != 3 || sequence.size(2) != dim)
    throw InputError(name + ": sequence must be [B, L, " + std::to_string(dim) + "], got " +
                     Shape(sequence));
  const std::int64_t b = sequence.size(0);
  if (lengths.dim() != 1 || lengths.size(0) != b)
    throw InputError(name + ": sequence_length must be [" + std::to_string(b) +
                     "] (one per row of the sequence), got " + Shape(lengths));
  if (query.defined() && (query.dim() != 2 || query.size(0) != b || query.size(1) != query_dim))
    throw InputError(name + ": query must be [" + std::to_string(b) + ", " +
                     std::to_string(query_dim) + "], got " + Shape(query));
}

// Applies max_seq_length (keep the first positions, clamp the lengths).
void Truncate(std::int64_t max_seq_length, at::Tensor* sequence, at::Tensor* lengths) {
  if (max_seq_length <= 0) return;
  *sequence = sequence->narrow(1, 0, std::min(max_seq_length, sequence->size(1)));
  *lengths = at::clamp_max(*lengths, max_seq_length);
}

// softmax over t of where(t < length, a, padding) then the weighted sum of the sequence:
// a [B, L], sequence [B, L, D] → [B, D].
at::Tensor AttentionPool(const at::Tensor& a, const at::Tensor& sequence,
                         const at::Tensor& lengths) {
  const at::Tensor positions = at::arange(sequence.size(1), lengths.options());
  const at::Tensor mask = positions.unsqueeze(0) < lengths.unsqueeze(1);
  const at::Tensor scores = at::softmax(a.masked_fill(mask.logical_not(), kPaddingScore), -1);
  return at::matmul(scores.unsqueeze(1), sequence).squeeze(1);
}

// Upstream's dim=3 Perceptron with use_bn is [Linear, Transpose, BatchNorm1d, Transpose, act,
// ...]: the Mlp's "perceptron.1" (BatchNorm) becomes "perceptron.2", "perceptron.2" (the
// activation's tensors) "perceptron.4", for the entries from `first` on.
void RenameDim3(std::vector<Parameter>* list, std::size_t first) {
  static const std::string kKey = ".perceptron.";
  for (std::size_t i = first; i < list->size(); ++i) {
    std::string& n = (*list)[i].name;
    const std::size_t at = n.find(kKey);
    if (at == std::string::npos) continue;
    const std::size_t d = at + kKey.size();
    if (n.compare(d, 2, "1.") == 0)
      n[d] = '2';
    else if (n.compare(d, 2, "2.") == 0)
      n[d] = '4';
  }
}

void RequireQueryFits(const std::string& name, std::int64_t query_dim, std::int64_t sequence_dim,
                      const std::string& upstream) {
  if (query_dim > sequence_dim)
    throw ConfigError(name + ": query_dim " + std::to_string(query_dim) + " > sequence_dim " +
                      std::to_string(sequence_dim) + " is not supported (as TorchEasyRec's " +
                      upstream +
                      "); give the query features at most the sequence's embedding width");
}

// The attention MLP of DIN and multi-window DIN: upstream's MLP(dim=3) on in_dim, registered as
// "<name>.mlp" (BatchNorm tensors renamed as the dim=3 Perceptron names them).
Mlp AttentionMlp(ParamBuilder& b, std::vector<Parameter>* parameters,
                 std::vector<Parameter>* buffers, const std::string& name, std::int64_t in_dim,
                 const MlpOptions& options) {
  if (options.hidden_units.empty())
    throw ConfigError(name + ".attn_mlp.hidden_units must not be empty (the attention score " +
                      "is Linear(hidden_units[-1] → 1))");
  const auto act = ParseMlpActivation(options.activation, name + ".attn_mlp.activation");
  if (act.kind == MlpActivation::Kind::kPReLU && act.num_parameters != 1)
    throw ConfigError(name + ".attn_mlp.activation: PReLU with num_parameters " +
                      std::to_string(act.num_parameters) +
                      " is not supported in a sequence encoder (torch applies it over the "
                      "sequence axis of the 3-d input); use num_parameters=1");
  const std::size_t first_param = parameters->size(), first_buffer = buffers->size();
  Mlp mlp(b, name + ".mlp", in_dim, options);
  if (options.use_bn) {
    RenameDim3(parameters, first_param);
    RenameDim3(buffers, first_buffer);
  }
  return mlp;
}

}  // namespace

DinEncoder::DinEncoder(ParamBuilder& b, std::vector<Parameter>* parameters,
                       std::vector<Parameter>* buffers, const std::string& name,
                       std::int64_t sequence_dim, std::int64_t query_dim,
                       const DinEncoderOptions& options)
    : name_(name),
      sequence_dim_(sequence_dim),
      query_dim_(query_dim),
      max_seq_length_(options.max_seq_length) {
  RequirePositive(sequence_dim, name + ".sequence_dim");
  RequirePositive(query_dim, name + ".query_dim");
  RequireMaxLength(max_seq_length_, name);
  RequireQueryFits(name, query_dim, sequence_dim, "DINEncoder");
  mlp_ = AttentionMlp(b, parameters, buffers, name, 4 * sequence_dim, options.attn_mlp);
  linear_ = b.AddLinear(name + ".linear", mlp_.OutDim(), 1);
}

at::Tensor DinEncoder::Forward(const at::Tensor& query, const at::Tensor& sequence,
                               const at::Tensor& sequence_length, bool training) const {
  CheckInputs(name_, query, query_dim_, sequence, sequence_dim_, sequence_length);
  at::Tensor s = sequence;
  at::Tensor lengths = sequence_length;
  Truncate(max_seq_length_, &s, &lengths);
  const std::int64_t rows = s.size(0), len = s.size(1);
  at::Tensor q = query;
  if (query_dim_ < sequence_dim_) q = at::constant_pad_nd(q, {0, sequence_dim_ - query_dim_});
  q = q.unsqueeze(1).expand({rows, len, sequence_dim_});
  const at::Tensor input = at::cat({q, s, q - s, q * s}, -1);
  // The MLP on the last dim of [B, L, 4·Ds] is the MLP on [B·L, 4·Ds] (BatchNorm over B·L too).
  const at::Tensor hidden = mlp_.Forward(input.reshape({rows * len, 4 * sequence_dim_}), training);
  const at::Tensor a = at::linear(hidden, linear_.weight, linear_.bias).reshape({rows, len});
  return AttentionPool(a, s, lengths);
}

MultiWindowDinEncoder::MultiWindowDinEncoder(ParamBuilder& b, std::vector<Parameter>* parameters,
                                             std::vector<Parameter>* buffers,
                                             const std::string& name, std::int64_t sequence_dim,
                                             std::int64_t query_dim,
                                             const MultiWindowDinEncoderOptions& options)
    : name_(name),
      sequence_dim_(sequence_dim),
      query_dim_(query_dim),
      windows_(static_cast<std::int64_t>(options.windows_len.size())) {
  RequirePositive(sequence_dim, name + ".sequence_dim");
  RequirePositive(query_dim, name + ".query_dim");
  RequireQueryFits(name, query_dim, sequence_dim, "MultiWindowDINEncoder");
  if (windows_ == 0)
    throw ConfigError(name + ".windows_len is empty; give the windows' lengths in items, e.g. " +
                      "windows_len: [2, 4, 8]");
  std::vector<std::int64_t> starts;
  for (std::size_t k = 0; k < options.windows_len.size(); ++k) {
    RequirePositive(options.windows_len[k], name + ".windows_len[" + std::to_string(k) + "]");
    starts.push_back(total_);
    total_ += options.windows_len[k];
  }
  // Registered as upstream registers them (before its children): int64 [K] each.
  windows_len_ = b.AddBuffer(name + ".windows_len", at::tensor(options.windows_len, at::kLong));
  cumsum_ = b.AddBuffer(name + ".cumsum_windows_len", at::tensor(starts, at::kLong));
  at::Tensor membership = at::zeros({windows_, total_});
  for (std::int64_t k = 0; k < windows_; ++k)
    membership[k].narrow(0, starts[k], options.windows_len[k]).fill_(1.0);
  membership_ = membership.to(b.Device());
  mlp_ = AttentionMlp(b, parameters, buffers, name, 3 * sequence_dim, options.attn_mlp);
  linear_ = b.AddLinear(name + ".linear", mlp_.OutDim(), 1);
  active_ = b.AddFilled(name + ".active.weight", 1, 0.25);
}

at::Tensor MultiWindowDinEncoder::Forward(const at::Tensor& query, const at::Tensor& sequence,
                                          const at::Tensor& sequence_length, bool training) const {
  CheckInputs(name_, query, query_dim_, sequence, sequence_dim_, sequence_length);
  const std::int64_t rows = sequence.size(0), len = sequence.size(1);
  at::Tensor q = query;
  if (query_dim_ < sequence_dim_) q = at::constant_pad_nd(q, {0, sequence_dim_ - query_dim_});
  const at::Tensor qq = q.unsqueeze(1).expand({rows, len, sequence_dim_});
  const at::Tensor input = at::cat({sequence, qq * sequence, qq}, -1);
  // The MLP on the last dim of [B, L, 3·Ds] is the MLP on [B·L, 3·Ds] (BatchNorm over B·L too).
  const at::Tensor hidden = mlp_.Forward(input.reshape({rows * len, 3 * sequence_dim_}), training);
  const at::Tensor a = at::prelu(at::linear(hidden, linear_.weight, linear_.bias), active_);
  const at::Tensor positions = at::arange(len, sequence_length.options());
  const at::Tensor mask = positions.unsqueeze(0) < sequence_length.unsqueeze(1);
  const at::Tensor v =
      a.reshape({rows, len, 1}) * mask.unsqueeze(2).to(sequence.scalar_type()) * sequence;
  // Upstream pads (or cuts) to W positions and sums each window; positions past min(L, W) add
  // nothing, so the window sums are membership[:, :n] @ v[:, :n].
  const std::int64_t n = std::min(len, total_);
  const at::Tensor sums = at::matmul(membership_.narrow(1, 0, n), v.narrow(1, 0, n));
  const at::Tensor count =
      at::minimum(sequence_length.unsqueeze(1) - cumsum_.unsqueeze(0), windows_len_.unsqueeze(0));
  const at::Tensor windows = sums / at::clamp_min(count, 1).unsqueeze(2);
  return at::cat({windows, q.unsqueeze(1)}, 1).reshape({rows, OutDim()});
}

SimpleAttention::SimpleAttention(const std::string& name, std::int64_t sequence_dim,
                                 std::int64_t query_dim, std::int64_t max_seq_length)
    : name_(name), sequence_dim_(sequence_dim), max_seq_length_(max_seq_length) {
  RequirePositive(sequence_dim, name + ".sequence_dim");
  RequireMaxLength(max_seq_length, name);
  if (query_dim != sequence_dim)
    throw ConfigError(name + ": SimpleAttention needs query_dim == sequence_dim (a dot " +
                      "product), got query_dim " + std::to_string(query_dim) +
                      " and sequence_dim " + std::to_string(sequence_dim));
}

at::Tensor SimpleAttention::Forward(const at::Tensor& query, const at::Tensor& sequence,
                                    const at::Tensor& sequence_length) const {
  CheckInputs(name_, query, sequence_dim_, sequence, sequence_dim_, sequence_length);
  at::Tensor s = sequence;
  at::Tensor lengths = sequence_length;
  Truncate(max_seq_length_, &s, &lengths);
  const at::Tensor a = at::matmul(s, query.unsqueeze(2)).squeeze(2);
  return AttentionPool(a, s, lengths);
}

PoolingEncoder::PoolingEncoder(const std::string& name, std::int64_t sequence_dim,
                               const std::string& pooling_type, std::int64_t max_seq_length)
    : name_(name), sequence_dim_(sequence_dim), max_seq_length_(max_seq_length) {
  RequirePositive(sequence_dim, name + ".sequence_dim");
  RequireMaxLength(max_seq_length, name);
  if (pooling_type != "mean" && pooling_type != "sum")
    throw ConfigError(name + ".pooling_type '" + pooling_type +
                      "' is not supported; use \"mean\" or \"sum\"");
  mean_ = pooling_type == "mean";
}

at::Tensor PoolingEncoder::Forward(const at::Tensor& sequence,
                                   const at::Tensor& sequence_length) const {
  CheckInputs(name_, at::Tensor(), 0, sequence, sequence_dim_, sequence_length);
  at::Tensor s = sequence;
  at::Tensor lengths = sequence_length;
  Truncate(max_seq_length_, &s, &lengths);
  at::Tensor out = at::sum(s, 1);
  if (mean_) out = out / at::clamp_min(lengths, 1).unsqueeze(1);
  return out;
}

}  // namespace tzrec
