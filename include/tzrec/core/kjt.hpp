// tzrec/core/kjt.hpp — KeyedJaggedTensor, JaggedTensor and KeyedTensor with TorchRec's
// semantics (torchrec/sparse/jagged_tensor.py; notes ../shared/reference/torchrec-sharding.md
// §2.2, §2.13).
//
// Shapes (F = number of keys, B = stride = batch size, N = total number of ids):
//   keys     F strings
//   lengths  int64 [F*B], feature-major: lengths[f*B + b] = ids of feature f in sample b
//   offsets  int64 [F*B + 1], exclusive prefix sum of lengths (computed on demand)
//   values   int64 [N] ids, grouped by feature then sample
//   weights  float [N] per-id weights, optional (weighted features)
// Tensors may live on CPU or CUDA; all must share one device. int32 lengths/values/offsets are
// converted to int64. Construction checks the shapes, lengths >= 0 and sum(lengths) = N (two
// device syncs on CUDA). Slices (operator[], Split) are views of this KJT's tensors.
// Errors: std::invalid_argument naming the inconsistent field and its value.
// Thread-safety: values; const methods are safe to call concurrently.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tzrec {

// One feature's jagged ids: lengths [B], offsets [B+1], values [N], weights [N] or undefined.
struct JaggedTensor {
  at::Tensor values;
  at::Tensor lengths;
  at::Tensor offsets;
  at::Tensor weights;  // undefined when unweighted
};

class KeyedJaggedTensor {
 public:
  KeyedJaggedTensor() = default;
  // `stride` = B; when -1 it is lengths.numel() / keys.size() (0 keys: 0). Validates shapes.
  KeyedJaggedTensor(std::vector<std::string> keys, at::Tensor values, at::Tensor lengths,
                    std::optional<at::Tensor> weights = std::nullopt, std::int64_t stride = -1);
  // Builds from offsets [F*B+1] instead of lengths.
  static KeyedJaggedTensor FromOffsets(std::vector<std::string> keys, at::Tensor values,
                                       at::Tensor offsets,
                                       std::optional<at::Tensor> weights = std::nullopt,
                                       std::int64_t stride = -1);
  // From per-key jagged tensors (all with the same B).
  static KeyedJaggedTensor FromJaggedTensors(const std::vector<std::string>& keys,
                                             const std::vector<JaggedTensor>& features);
  // Concatenates along keys (same stride).
  static KeyedJaggedTensor Concat(const std::vector<KeyedJaggedTensor>& parts);

  const std::vector<std::string>& Keys() const { return keys_; }
  const at::Tensor& Values() const { return values_; }
  const at::Tensor& Lengths() const { return lengths_; }
  at::Tensor Offsets() const;  // int64 [F*B+1]
  bool HasWeights() const { return weights_.defined(); }
  const at::Tensor& Weights() const { return weights_; }  // undefined when unweighted
  std::int64_t Stride() const { return stride_; }
  std::int64_t NumKeys() const { return static_cast<std::int64_t>(keys_.size()); }
  // Index of `key`; throws std::out_of_range naming it and the available keys.
  std::int64_t KeyIndex(const std::string& key) const;
  std::vector<std::int64_t> LengthPerKey() const;  // F: ids per key
  std::vector<std::int64_t> OffsetPerKey() const;  // F+1
  JaggedTensor operator[](const std::string& key) const;
  std::vector<JaggedTensor> ToJaggedTensors() const;  // per key, in key order

  // New KJT whose key i is this KJT's key indices[i] (TorchRec permute).
  KeyedJaggedTensor Permute(const std::vector<std::int64_t>& indices) const;
  // Splits the keys into consecutive groups of the given sizes (sum = F).
  std::vector<KeyedJaggedTensor> Split(const std::vector<std::int64_t>& segments) const;
  // Samples [start, start+count) of every key (a batch slice), stride = count.
  KeyedJaggedTensor SliceBatch(std::int64_t start, std::int64_t count) const;
  KeyedJaggedTensor To(const at::Device& device) const;

 private:
  std::vector<std::string> keys_;
  at::Tensor values_;
  at::Tensor lengths_;
  at::Tensor weights_;
  std::int64_t stride_ = 0;
};

// Pooled embeddings of several keys: values [B, sum(length_per_key)], key k in columns
// [offset_per_key[k], offset_per_key[k+1]) (TorchRec KeyedTensor with key_dim 1).
class KeyedTensor {
 public:
  KeyedTensor() = default;
  KeyedTensor(std::vector<std::string> keys, std::vector<std::int64_t> length_per_key,
              at::Tensor values);
  const std::vector<std::string>& Keys() const { return keys_; }
  const std::vector<std::int64_t>& LengthPerKey() const { return length_per_key_; }
  std::vector<std::int64_t> OffsetPerKey() const;
  const at::Tensor& Values() const { return values_; }
  // [B, D_key] view of one key's columns; std::out_of_range if absent. Every key's view comes
  // from one split of the values (made on the first call, kept), so in autograd all keys share
  // one backward node: the gradient of values is assembled once, not as one zero-filled
  // [B, ΣD] tensor per key read (as per-key narrow() views would give).
  at::Tensor operator[](const std::string& key) const;
  // Concatenation of the given keys' columns in that order (TorchRec KeyedTensor.regroup for
  // one group).
  at::Tensor Regroup(const std::vector<std::string>& keys) const;

 private:
  const std::vector<at::Tensor>& Parts() const;

  std::vector<std::string> keys_;
  std::vector<std::int64_t> length_per_key_;
  at::Tensor values_;
  mutable std::vector<at::Tensor> parts_;  // values_.split_with_sizes(length_per_key_, 1), lazily
};

}  // namespace tzrec
