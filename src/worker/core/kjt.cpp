// KeyedJaggedTensor, JaggedTensor and KeyedTensor (see tzrec/core/kjt.hpp).
#include "tzrec/core/kjt.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "shape.hpp"

namespace tzrec {
namespace {

using core_detail::Shape;

std::string KeyList(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    if (i == 16) {
      out += "... (" + std::to_string(keys.size()) + " keys)";
      break;
    }
    out += "'" + keys[i] + "'";
  }
  return out + "]";
}

// int64 1-D tensor from `t` (int32/int64 accepted; int32 is converted).
at::Tensor AsInt64Vector(const at::Tensor& t, const char* what) {
  if (!t.defined()) {
    throw std::invalid_argument(std::string("KeyedJaggedTensor: ") + what +
                                " is undefined; pass an int64 1-D tensor");
  }
  if (t.dim() != 1) {
    throw std::invalid_argument(std::string("KeyedJaggedTensor: ") + what +
                                " must be 1-D, got shape " + Shape(t) +
                                "; flatten it (feature-major) first");
  }
  if (t.scalar_type() == at::kLong) return t;
  if (t.scalar_type() == at::kInt) return t.to(at::kLong);
  throw std::invalid_argument(std::string("KeyedJaggedTensor: ") + what +
                              " must be int64 (or int32), got " +
                              std::string(c10::toString(t.scalar_type())));
}

// Exclusive prefix sum with a leading 0: [n] -> [n+1].
at::Tensor PrefixWithZero(const at::Tensor& lengths) {
  auto out = at::zeros({lengths.numel() + 1}, lengths.options());
  if (lengths.numel() > 0) out.narrow(0, 1, lengths.numel()).copy_(at::cumsum(lengths, 0));
  return out;
}

std::vector<std::int64_t> ToVector(const at::Tensor& t) {
  auto cpu = t.to(at::kCPU, at::kLong).contiguous();
  const auto* p = cpu.data_ptr<std::int64_t>();
  return std::vector<std::int64_t>(p, p + cpu.numel());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// KeyedJaggedTensor

KeyedJaggedTensor::KeyedJaggedTensor(std::vector<std::string> keys, at::Tensor values,
                                     at::Tensor lengths, std::optional<at::Tensor> weights,
                                     std::int64_t stride)
    : keys_(std::move(keys)) {
  values_ = AsInt64Vector(values, "values");
  lengths_ = AsInt64Vector(lengths, "lengths");
  const auto num_keys = static_cast<std::int64_t>(keys_.size());
  if (stride < -1) {
    throw std::invalid_argument(
        "KeyedJaggedTensor: stride " + std::to_string(stride) +
        " is negative; pass the batch size, or -1 to derive it from lengths");
  }
  if (stride == -1) {
    stride = num_keys == 0 ? 0 : lengths_.numel() / num_keys;
  }
  stride_ = stride;
  if (lengths_.numel() != num_keys * stride_) {
    throw std::invalid_argument("KeyedJaggedTensor: lengths has " +
                                std::to_string(lengths_.numel()) + " entries but keys * stride = " +
                                std::to_string(num_keys) + " * " + std::to_string(stride_) +
                                "; lengths must hold one entry per key per sample (feature-major)");
  }
  if (lengths_.device() != values_.device()) {
    throw std::invalid_argument("KeyedJaggedTensor: lengths are on " + lengths_.device().str() +
                                " but values on " + values_.device().str() +
                                "; move both to one device");
  }
  if (weights.has_value() && weights->defined()) {
    weights_ = *weights;
    if (weights_.dim() != 1 || weights_.numel() != values_.numel()) {
      throw std::invalid_argument("KeyedJaggedTensor: weights have shape " + Shape(weights_) +
                                  " but values " + Shape(values_) + "; pass one weight per id");
    }
    if (!at::isFloatingType(weights_.scalar_type())) {
      throw std::invalid_argument("KeyedJaggedTensor: weights must be floating point, got " +
                                  std::string(c10::toString(weights_.scalar_type())));
    }
    if (weights_.device() != values_.device()) {
      throw std::invalid_argument("KeyedJaggedTensor: weights are on " + weights_.device().str() +
                                  " but values on " + values_.device().str() +
                                  "; move both to one device");
    }
  }
  if (lengths_.numel() > 0) {
    const auto mn = lengths_.min().item<std::int64_t>();
    if (mn < 0) {
      throw std::invalid_argument("KeyedJaggedTensor: lengths contain the negative value " +
                                  std::to_string(mn) + "; every length must be >= 0");
    }
  }
  const std::int64_t total = lengths_.numel() == 0 ? 0 : lengths_.sum().item<std::int64_t>();
  if (total != values_.numel()) {
    throw std::invalid_argument("KeyedJaggedTensor: sum(lengths) = " + std::to_string(total) +
                                " but values has " + std::to_string(values_.numel()) +
                                " ids; lengths and values disagree");
  }
}

KeyedJaggedTensor KeyedJaggedTensor::FromOffsets(std::vector<std::string> keys, at::Tensor values,
                                                 at::Tensor offsets,
                                                 std::optional<at::Tensor> weights,
                                                 std::int64_t stride) {
  offsets = AsInt64Vector(offsets, "offsets");
  if (offsets.numel() < 1) {
    throw std::invalid_argument(
        "KeyedJaggedTensor::FromOffsets: offsets is empty; it needs keys * stride + 1 "
        "entries starting with 0");
  }
  const auto first = offsets[0].item<std::int64_t>();
  if (first != 0) {
    throw std::invalid_argument("KeyedJaggedTensor::FromOffsets: offsets[0] = " +
                                std::to_string(first) + "; offsets must start at 0");
  }
  auto lengths =
      offsets.narrow(0, 1, offsets.numel() - 1) - offsets.narrow(0, 0, offsets.numel() - 1);
  return KeyedJaggedTensor(std::move(keys), std::move(values), std::move(lengths),
                           std::move(weights), stride);
}

KeyedJaggedTensor KeyedJaggedTensor::FromJaggedTensors(const std::vector<std::string>& keys,
                                                       const std::vector<JaggedTensor>& features) {
  if (keys.size() != features.size()) {
    throw std::invalid_argument(
        "KeyedJaggedTensor::FromJaggedTensors: " + std::to_string(keys.size()) + " keys but " +
        std::to_string(features.size()) + " jagged tensors; pass one per key");
  }
  if (keys.empty())
    return KeyedJaggedTensor(keys, at::empty({0}, at::kLong), at::empty({0}, at::kLong));
  std::vector<at::Tensor> values;
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> weights;
  const bool weighted = features[0].weights.defined();
  std::int64_t stride = -1;
  for (std::size_t i = 0; i < features.size(); ++i) {
    const auto& f = features[i];
    at::Tensor len = f.lengths;
    if (!len.defined() && f.offsets.defined()) {
      auto off = AsInt64Vector(f.offsets, "offsets");
      len = off.narrow(0, 1, off.numel() - 1) - off.narrow(0, 0, off.numel() - 1);
    }
    len = AsInt64Vector(len, "lengths");
    if (stride == -1) stride = len.numel();
    if (len.numel() != stride) {
      throw std::invalid_argument("KeyedJaggedTensor::FromJaggedTensors: key '" + keys[i] +
                                  "' has batch " + std::to_string(len.numel()) + " but key '" +
                                  keys[0] + "' has " + std::to_string(stride) +
                                  "; all keys need the same batch size");
    }
    if (f.weights.defined() != weighted) {
      throw std::invalid_argument("KeyedJaggedTensor::FromJaggedTensors: key '" + keys[i] +
                                  "' is " + (weighted ? "unweighted" : "weighted") + " but key '" +
                                  keys[0] + "' is " + (weighted ? "weighted" : "unweighted") +
                                  "; give all keys weights or none");
    }
    values.push_back(AsInt64Vector(f.values, "values"));
    lengths.push_back(len);
    if (weighted) weights.push_back(f.weights);
  }
  std::optional<at::Tensor> w;
  if (weighted) w = at::cat(weights);
  return KeyedJaggedTensor(keys, at::cat(values), at::cat(lengths), w, stride);
}

KeyedJaggedTensor KeyedJaggedTensor::Concat(const std::vector<KeyedJaggedTensor>& parts) {
  if (parts.empty())
    return KeyedJaggedTensor({}, at::empty({0}, at::kLong), at::empty({0}, at::kLong));
  if (parts.size() == 1) return parts[0];
  std::vector<std::string> keys;
  std::vector<at::Tensor> values;
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> weights;
  const auto stride = parts[0].Stride();
  const bool weighted = parts[0].HasWeights();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    if (p.Stride() != stride) {
      throw std::invalid_argument("KeyedJaggedTensor::Concat: part " + std::to_string(i) +
                                  " has stride " + std::to_string(p.Stride()) + " but part 0 has " +
                                  std::to_string(stride) +
                                  "; concatenate only KJTs of the same batch size");
    }
    if (p.HasWeights() != weighted) {
      throw std::invalid_argument("KeyedJaggedTensor::Concat: part " + std::to_string(i) + " is " +
                                  (p.HasWeights() ? "weighted" : "unweighted") + " but part 0 is " +
                                  (weighted ? "weighted" : "unweighted") +
                                  "; give all parts weights or none");
    }
    keys.insert(keys.end(), p.Keys().begin(), p.Keys().end());
    values.push_back(p.Values());
    lengths.push_back(p.Lengths());
    if (weighted) weights.push_back(p.Weights());
  }
  std::optional<at::Tensor> w;
  if (weighted) w = at::cat(weights);
  return KeyedJaggedTensor(std::move(keys), at::cat(values), at::cat(lengths), w, stride);
}

at::Tensor KeyedJaggedTensor::Offsets() const {
  if (!lengths_.defined()) return at::zeros({1}, at::kLong);
  return PrefixWithZero(lengths_);
}

std::int64_t KeyedJaggedTensor::KeyIndex(const std::string& key) const {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return static_cast<std::int64_t>(i);
  }
  throw std::out_of_range("KeyedJaggedTensor: no key '" + key +
                          "'; available keys: " + KeyList(keys_));
}

std::vector<std::int64_t> KeyedJaggedTensor::LengthPerKey() const {
  if (keys_.empty()) return {};
  if (stride_ == 0) return std::vector<std::int64_t>(keys_.size(), 0);
  return ToVector(lengths_.view({NumKeys(), stride_}).sum(1));
}

std::vector<std::int64_t> KeyedJaggedTensor::OffsetPerKey() const {
  const auto lpk = LengthPerKey();
  std::vector<std::int64_t> out(lpk.size() + 1, 0);
  std::partial_sum(lpk.begin(), lpk.end(), out.begin() + 1);
  return out;
}

JaggedTensor KeyedJaggedTensor::operator[](const std::string& key) const {
  const auto k = KeyIndex(key);
  const auto opk = OffsetPerKey();
  JaggedTensor jt;
  jt.values = values_.narrow(0, opk[k], opk[k + 1] - opk[k]);
  jt.lengths = lengths_.narrow(0, k * stride_, stride_);
  jt.offsets = PrefixWithZero(jt.lengths);
  if (HasWeights()) jt.weights = weights_.narrow(0, opk[k], opk[k + 1] - opk[k]);
  return jt;
}

std::vector<JaggedTensor> KeyedJaggedTensor::ToJaggedTensors() const {
  std::vector<JaggedTensor> out;
  out.reserve(keys_.size());
  const auto opk = OffsetPerKey();
  for (std::int64_t k = 0; k < NumKeys(); ++k) {
    JaggedTensor jt;
    jt.values = values_.narrow(0, opk[k], opk[k + 1] - opk[k]);
    jt.lengths = lengths_.narrow(0, k * stride_, stride_);
    jt.offsets = PrefixWithZero(jt.lengths);
    if (HasWeights()) jt.weights = weights_.narrow(0, opk[k], opk[k + 1] - opk[k]);
    out.push_back(std::move(jt));
  }
  return out;
}

KeyedJaggedTensor KeyedJaggedTensor::Permute(const std::vector<std::int64_t>& indices) const {
  const auto opk = OffsetPerKey();
  std::vector<std::string> keys;
  std::vector<at::Tensor> values;
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> weights;
  for (const auto i : indices) {
    if (i < 0 || i >= NumKeys()) {
      throw std::out_of_range("KeyedJaggedTensor::Permute: index " + std::to_string(i) +
                              " is outside [0, " + std::to_string(NumKeys()) +
                              "); indices must name existing keys");
    }
    keys.push_back(keys_[i]);
    values.push_back(values_.narrow(0, opk[i], opk[i + 1] - opk[i]));
    lengths.push_back(lengths_.narrow(0, i * stride_, stride_));
    if (HasWeights()) weights.push_back(weights_.narrow(0, opk[i], opk[i + 1] - opk[i]));
  }
  if (indices.empty()) {
    std::optional<at::Tensor> w;
    if (HasWeights()) w = weights_.narrow(0, 0, 0);
    return KeyedJaggedTensor({}, values_.narrow(0, 0, 0), lengths_.narrow(0, 0, 0), w, stride_);
  }
  std::optional<at::Tensor> w;
  if (HasWeights()) w = at::cat(weights);
  return KeyedJaggedTensor(std::move(keys), at::cat(values), at::cat(lengths), w, stride_);
}

std::vector<KeyedJaggedTensor> KeyedJaggedTensor::Split(
    const std::vector<std::int64_t>& segments) const {
  std::int64_t total = 0;
  for (const auto s : segments) {
    if (s < 0) {
      throw std::invalid_argument("KeyedJaggedTensor::Split: segment size " + std::to_string(s) +
                                  " is negative; sizes must be >= 0");
    }
    total += s;
  }
  if (total != NumKeys()) {
    throw std::invalid_argument("KeyedJaggedTensor::Split: segment sizes sum to " +
                                std::to_string(total) + " but the KJT has " +
                                std::to_string(NumKeys()) +
                                " keys; the sizes must cover every key once");
  }
  const auto opk = OffsetPerKey();
  std::vector<KeyedJaggedTensor> out;
  out.reserve(segments.size());
  std::int64_t k = 0;
  for (const auto s : segments) {
    std::vector<std::string> keys(keys_.begin() + k, keys_.begin() + k + s);
    auto values = values_.narrow(0, opk[k], opk[k + s] - opk[k]);
    auto lengths = lengths_.narrow(0, k * stride_, s * stride_);
    std::optional<at::Tensor> w;
    if (HasWeights()) w = weights_.narrow(0, opk[k], opk[k + s] - opk[k]);
    out.emplace_back(std::move(keys), values, lengths, w, stride_);
    k += s;
  }
  return out;
}

KeyedJaggedTensor KeyedJaggedTensor::SliceBatch(std::int64_t start, std::int64_t count) const {
  if (start < 0 || count < 0 || start + count > stride_) {
    throw std::out_of_range("KeyedJaggedTensor::SliceBatch: samples [" + std::to_string(start) +
                            ", " + std::to_string(start + count) + ") are outside the batch [0, " +
                            std::to_string(stride_) + ")");
  }
  if (NumKeys() == 0 || count == stride_) {
    return KeyedJaggedTensor(keys_, values_, lengths_,
                             HasWeights() ? std::optional(weights_) : std::nullopt, count);
  }
  const auto offsets_cpu = ToVector(Offsets());
  std::vector<at::Tensor> values;
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> weights;
  for (std::int64_t k = 0; k < NumKeys(); ++k) {
    const auto first = k * stride_ + start;
    const auto begin = offsets_cpu[first];
    const auto end = offsets_cpu[first + count];
    values.push_back(values_.narrow(0, begin, end - begin));
    lengths.push_back(lengths_.narrow(0, first, count));
    if (HasWeights()) weights.push_back(weights_.narrow(0, begin, end - begin));
  }
  std::optional<at::Tensor> w;
  if (HasWeights()) w = at::cat(weights);
  return KeyedJaggedTensor(keys_, at::cat(values), at::cat(lengths), w, count);
}

KeyedJaggedTensor KeyedJaggedTensor::To(const at::Device& device) const {
  std::optional<at::Tensor> w;
  if (HasWeights()) w = weights_.to(device);
  KeyedJaggedTensor out;
  out.keys_ = keys_;
  out.values_ = values_.defined() ? values_.to(device) : values_;
  out.lengths_ = lengths_.defined() ? lengths_.to(device) : lengths_;
  if (w) out.weights_ = *w;
  out.stride_ = stride_;
  return out;
}

// ---------------------------------------------------------------------------------------------
// KeyedTensor

KeyedTensor::KeyedTensor(std::vector<std::string> keys, std::vector<std::int64_t> length_per_key,
                         at::Tensor values)
    : keys_(std::move(keys)),
      length_per_key_(std::move(length_per_key)),
      values_(std::move(values)) {
  if (keys_.size() != length_per_key_.size()) {
    throw std::invalid_argument("KeyedTensor: " + std::to_string(keys_.size()) + " keys but " +
                                std::to_string(length_per_key_.size()) +
                                " lengths; pass one length per key");
  }
  std::int64_t total = 0;
  for (std::size_t i = 0; i < length_per_key_.size(); ++i) {
    if (length_per_key_[i] < 0) {
      throw std::invalid_argument("KeyedTensor: key '" + keys_[i] + "' has negative length " +
                                  std::to_string(length_per_key_[i]));
    }
    total += length_per_key_[i];
  }
  if (!values_.defined() || values_.dim() != 2 || values_.size(1) != total) {
    throw std::invalid_argument("KeyedTensor: values have shape " + Shape(values_) +
                                " but the keys need [B, " + std::to_string(total) +
                                "] (sum of length_per_key)");
  }
}

std::vector<std::int64_t> KeyedTensor::OffsetPerKey() const {
  std::vector<std::int64_t> out(length_per_key_.size() + 1, 0);
  std::partial_sum(length_per_key_.begin(), length_per_key_.end(), out.begin() + 1);
  return out;
}

const std::vector<at::Tensor>& KeyedTensor::Parts() const {
  if (parts_.empty() && !keys_.empty()) parts_ = values_.split_with_sizes(length_per_key_, 1);
  return parts_;
}

at::Tensor KeyedTensor::operator[](const std::string& key) const {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return Parts()[i];
  }
  throw std::out_of_range("KeyedTensor: no key '" + key + "'; available keys: " + KeyList(keys_));
}

at::Tensor KeyedTensor::Regroup(const std::vector<std::string>& keys) const {
  if (keys.empty()) return at::empty({values_.size(0), 0}, values_.options());
  std::vector<at::Tensor> parts;
  parts.reserve(keys.size());
  for (const auto& k : keys) parts.push_back((*this)[k]);
  if (parts.size() == 1) return parts[0];
  return at::cat(parts, 1);
}

}  // namespace tzrec
