// Feature transforms (see transform.hpp and tzrec/input/input.hpp).
#include "transform.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

std::string Num(double v) {
  std::string buffer;
  return std::string(CellText(Cell::Float(v), &buffer));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// FeatureTransform

FeatureTransform::FeatureTransform(const protos::FeatureConfig& config,
                                   const protos::DataConfig& data)
    : name_(FeatureName(config)), value_dim_(ValueDim(config)) {
  auto fail = [&](const std::string& why) {
    return std::runtime_error("feature '" + name_ + "': " + why);
  };
  const bool runs_fg = data.fg_mode() == protos::FG_NORMAL || data.fg_mode() == protos::FG_DAG;
  if (runs_fg && IsSequence(config)) {
    try {
      InitFgSequence(config);
    } catch (const ConfigError& error) {
      throw fail(error.what());
    }
    return;
  }
  if (!runs_fg && IsSequence(config)) {
    // A fg-encoded sequence: integer ids joined by sequence_delim (or a list), the first
    // sequence_length kept (TorchEasyRec tzrec/features/sequence_feature.py FG_NONE parsing).
    kind_ = IdKind::kNumBuckets;
    table_size_ = NumEmbeddings(config);
    separator_ = SequenceDelim(config);
    sequence_length_ = SequenceLength(config);
    const auto& fill = config.has_sequence_id_feature()
                           ? config.sequence_id_feature().fg_encoded_default_value()
                           : config.sequence_raw_feature().fg_encoded_default_value();
    const bool has_fill = config.has_sequence_id_feature()
                              ? config.sequence_id_feature().has_fg_encoded_default_value()
                              : config.sequence_raw_feature().has_fg_encoded_default_value();
    if (has_fill) default_sequence_ = fill;
    return;
  }
  if (!runs_fg && config.has_id_feature() && config.id_feature().weighted()) {
    throw fail(
        "weighted: true with fg_mode FG_NONE is not implemented (TorchEasyRec reads "
        "<name>__values / <name>__weights columns there); use fg_mode FG_DAG with \"id:weight\" "
        "values");
  }
  if (!runs_fg) {
    // Feature-generated input: integer ids (bucket ids for raw features with boundaries).
    separator_ = data.fg_encoded_multival_sep();
    if (IsSparse(config)) {
      kind_ = IdKind::kNumBuckets;
      table_size_ = NumEmbeddings(config);
    } else {
      kind_ = IdKind::kDense;
      default_value_ = 0.0;
    }
    return;
  }
  if (config.has_combo_feature()) {
    const protos::ComboFeature& combo = config.combo_feature();
    if (combo.hash_bucket_size() == 0 || combo.expression_size() < 2) {
      throw fail(
          "a combo_feature needs hash_bucket_size > 0 and 2 or more expression inputs (got " +
          std::to_string(combo.hash_bucket_size()) + " and " +
          std::to_string(combo.expression_size()) + ")");
    }
    kind_ = IdKind::kHash;
    table_size_ = static_cast<std::int64_t>(combo.hash_bucket_size());
    separator_ = combo.separator();
    inputs_ = static_cast<std::size_t>(combo.expression_size());
    return;
  }
  if (config.has_lookup_feature() || config.has_match_feature()) {
    kv_ = std::make_shared<const KvTransform>(config);
    static_assert(static_cast<int>(KvTransform::Output::kDense) ==
                  static_cast<int>(IdKind::kDense));  // the same order
    kind_ = static_cast<IdKind>(kv_->Kind());
    table_size_ = kv_->TableSize();
    value_dim_ = kv_->Sparse() ? 1 : kv_->DenseDim();
    inputs_ = kv_->Inputs();
    return;
  }
  if (config.has_expr_feature()) {
    expr_ = std::make_shared<const ExprTransform>(config);
    kind_ = expr_->Sparse() ? IdKind::kBoundaries : IdKind::kDense;
    table_size_ = expr_->TableSize();
    value_dim_ = 1;
    inputs_ = expr_->Inputs();
    return;
  }
  if (IsIdFeature(config)) {
    const protos::IdFeature& id = config.id_feature();
    separator_ = id.separator();
    max_ids_ = id.value_dim();
    weighted_ = id.weighted();
    const bool vocab = id.vocab_list_size() > 0 || id.vocab_dict_size() > 0;
    const int set = (id.hash_bucket_size() > 0) + (id.num_buckets() > 0) + vocab;
    if (set != 1) {
      throw fail(
          "an id_feature needs exactly one of hash_bucket_size > 0, num_buckets > 0 or a "
          "non-empty vocab_list / vocab_dict (got hash_bucket_size=" +
          std::to_string(id.hash_bucket_size()) +
          ", num_buckets=" + std::to_string(id.num_buckets()) + ", vocab_list of " +
          std::to_string(id.vocab_list_size()) + ", vocab_dict of " +
          std::to_string(id.vocab_dict_size()) + ")");
    }
    if (id.hash_bucket_size() > 0) {
      kind_ = IdKind::kHash;
      table_size_ = static_cast<std::int64_t>(id.hash_bucket_size());
    } else if (id.num_buckets() > 0) {
      kind_ = IdKind::kNumBuckets;
      table_size_ = static_cast<std::int64_t>(id.num_buckets());
    } else {
      kind_ = IdKind::kVocab;
      Vocabulary v;
      try {
        v = IdVocabulary(id);
      } catch (const ConfigError& error) {
        throw fail(error.what());
      }
      vocab_ = std::move(v.ids);
      unknown_id_ = v.unknown_id;
      table_size_ = v.rows;
    }
    return;
  }
  const protos::RawFeature& raw = config.raw_feature();
  separator_ = raw.separator();
  try {
    default_value_ = std::stod(raw.default_value());
  } catch (const std::exception&) {
    throw fail("default_value \"" + raw.default_value() + "\" is not a number");
  }
  if (value_dim_ < 1) throw fail("value_dim must be >= 1, got " + std::to_string(value_dim_));
  try {
    normalizer_ = ParseNormalizer(raw.normalizer());
  } catch (const ConfigError& error) {
    throw fail(error.what());
  }
  if (raw.boundaries_size() > 0) {
    boundaries_.assign(raw.boundaries().begin(), raw.boundaries().end());
    for (std::size_t i = 1; i < boundaries_.size(); ++i) {
      if (!(boundaries_[i - 1] < boundaries_[i])) {
        throw fail("boundaries must be strictly increasing, but boundaries[" +
                   std::to_string(i - 1) + "]=" + Num(boundaries_[i - 1]) + " >= boundaries[" +
                   std::to_string(i) + "]=" + Num(boundaries_[i]));
      }
    }
    kind_ = IdKind::kBoundaries;
    table_size_ = static_cast<std::int64_t>(boundaries_.size()) + 1;
  } else {
    kind_ = IdKind::kDense;
  }
}

std::int64_t FeatureTransform::Bucketize(double x) const {
  return std::upper_bound(boundaries_.begin(), boundaries_.end(), x) - boundaries_.begin();
}

std::int64_t FeatureTransform::MapToken(std::string_view token, const Cell* numeric) const {
  switch (kind_) {
    case IdKind::kHash: {
      std::string buffer;
      const auto text = numeric ? CellText(*numeric, &buffer) : token;
      return static_cast<std::int64_t>(Fnv1a64(text) % static_cast<std::uint64_t>(table_size_));
    }
    case IdKind::kNumBuckets: {
      std::optional<std::int64_t> id;
      std::string shown;
      if (numeric && numeric->kind == Cell::Kind::kInt) {
        id = numeric->i;
      } else if (numeric) {
        std::string buffer;
        id = ParseInteger(CellText(*numeric, &buffer));
        shown = Describe(*numeric);
      } else {
        id = ParseInteger(token);
        shown = "'" + std::string(token) + "'";
      }
      if (!id) {
        throw InputError("feature '" + name_ + "': value " + shown +
                         " is not an integer id (num_buckets=" + std::to_string(table_size_) +
                         "); use hash_bucket_size for non-integer values");
      }
      if (*id < 0 || *id >= table_size_) {
        throw InputError("feature '" + name_ + "': id " + std::to_string(*id) +
                         " is outside [0, num_buckets=" + std::to_string(table_size_) +
                         "); raise num_buckets or use hash_bucket_size");
      }
      return *id;
    }
    case IdKind::kVocab: {
      std::string buffer;
      const auto text = numeric ? CellText(*numeric, &buffer) : token;
      auto it = vocab_.find(std::string(text));
      return it == vocab_.end() ? unknown_id_ : it->second;
    }
    default:
      break;
  }
  return 0;
}

void FeatureTransform::AppendIds(const Cell& cell, std::vector<std::int64_t>* out,
                                 std::vector<float>* weights) const {
  const std::size_t before = out->size();
  const std::size_t w_before = weights != nullptr ? weights->size() : 0;
  if (sequence_length_ > 0) {
    AppendSequence(cell, out);
  } else {
    std::vector<float> scratch;
    std::vector<float>* w = nullptr;
    if (weighted_) w = weights != nullptr ? weights : &scratch;
    AppendAllIds(cell, out, w);
    if (max_ids_ > 0 && out->size() > before + max_ids_) {  // value_dim 1: the first value only
      out->resize(before + max_ids_);
      if (w != nullptr) w->resize((w == weights ? w_before : 0) + max_ids_);
    }
  }
  if (weights != nullptr && !weighted_) weights->resize(w_before + (out->size() - before), 1.0f);
}

void FeatureTransform::Emit(std::string_view token, std::vector<std::int64_t>* out,
                            std::vector<float>* w) const {
  if (w == nullptr) {
    if (!token.empty() || kind_ == IdKind::kVocab) out->push_back(MapToken(token, nullptr));
    return;
  }
  if (token.empty()) return;
  const auto colon = token.rfind(':');
  if (colon == std::string_view::npos) {
    throw InputError("feature '" + name_ + "': weighted value '" + std::string(token) +
                     "' has no ':weight'; write id:weight pairs such as \"a:0.5\"");
  }
  const auto weight = ParseDouble(Trim(token.substr(colon + 1)));
  if (!weight) {
    throw InputError("feature '" + name_ + "': the weight of '" + std::string(token) +
                     "' is not a number; write id:weight pairs such as \"a:0.5\"");
  }
  const auto key = token.substr(0, colon);
  if (key.empty() && kind_ != IdKind::kVocab) return;
  out->push_back(MapToken(key, nullptr));
  w->push_back(static_cast<float>(*weight));
}

void FeatureTransform::AppendAllIds(const Cell& cell, std::vector<std::int64_t>* out,
                                    std::vector<float>* w) const {
  if (cell.IsNull()) {
    if (kind_ != IdKind::kBoundaries) return;
  }
  if (kind_ == IdKind::kBoundaries) {
    ForEachNormalized(cell, [&](std::int64_t, double x) { out->push_back(Bucketize(x)); });
    return;
  }
  if (kind_ == IdKind::kDense) {
    throw std::logic_error("feature '" + name_ + "' is dense; AppendIds called");
  }
  auto number = [&](const Cell& c) {
    if (w != nullptr) {
      throw InputError("feature '" + name_ +
                       "': weighted: true needs \"id:weight\" text values, got " + Describe(c) +
                       "; store the pairs as text (or a list of text)");
    }
    out->push_back(MapToken({}, &c));
  };
  if (cell.kind == Cell::Kind::kList) {  // each item one value (not split again), nulls skipped
    for (std::int64_t k = 0; k < cell.i; ++k) {
      const Cell& item = cell.items[k];
      if (item.kind == Cell::Kind::kNull) continue;
      if (item.kind != Cell::Kind::kString) {
        number(item);
      } else {
        Emit(item.s, out, w);
      }
    }
    return;
  }
  if (cell.kind != Cell::Kind::kString) return number(cell);
  if (cell.s.empty()) return;  // an empty value has no ids (TorchEasyRec's default_value "")
  if (separator_.empty()) return Emit(cell.s, out, w);
  ForEachToken(cell.s, separator_, [&](std::string_view token) { Emit(token, out, w); });
}

void FeatureTransform::AppendComboIds(const Cell* const* cells,
                                      std::vector<std::int64_t>* out) const {
  std::vector<std::string> combos{""};
  std::vector<std::string> values, next;
  for (std::size_t i = 0; i < inputs_; ++i) {
    values.clear();
    CellValues(*cells[i], separator_, &values);
    if (values.empty()) return;
    next.clear();
    for (const std::string& c : combos) {
      for (const std::string& v : values) next.push_back(i == 0 ? v : c + "_" + v);
    }
    combos.swap(next);
  }
  for (const std::string& c : combos) {
    out->push_back(static_cast<std::int64_t>(Fnv1a64(c) % static_cast<std::uint64_t>(table_size_)));
  }
}

void FeatureTransform::AppendInputsIds(const Cell* const* cells,
                                       std::vector<std::int64_t>* out) const {
  if (kv_ != nullptr) return kv_->AppendIds(cells, out);
  if (expr_ != nullptr) return expr_->AppendIds(cells, out);
  AppendComboIds(cells, out);
}

void FeatureTransform::WriteInputsDense(const Cell* const* cells, float* out) const {
  if (expr_ != nullptr) return expr_->WriteDense(cells, out);
  if (kv_ == nullptr) throw std::logic_error("feature '" + name_ + "': no dense inputs");
  kv_->WriteDense(cells, out);
}

void FeatureTransform::RawValues(const Cell& cell, double* out) const {
  auto bad = [&](const std::string& value) {
    return std::runtime_error("feature '" + name_ + "': raw value " + value +
                              " is not a number; fix the data or make it an id_feature");
  };
  switch (cell.kind) {
    case Cell::Kind::kNull:
      std::fill(out, out + value_dim_, default_value_);
      return;
    case Cell::Kind::kInt:
    case Cell::Kind::kFloat:
      if (value_dim_ != 1) {
        throw InputError("feature '" + name_ + "': value_dim=" + std::to_string(value_dim_) +
                         " but the column holds one number " + Describe(cell) +
                         " per row; store the values as text joined by '" + separator_ + "'");
      }
      out[0] = cell.kind == Cell::Kind::kInt ? static_cast<double>(cell.i) : cell.d;
      return;
    case Cell::Kind::kString:
      break;
    case Cell::Kind::kList:
      return ListValues(cell, out);
  }
  if (value_dim_ == 1) {
    const auto v = ParseDouble(cell.s);
    if (!v) throw bad(Describe(cell));
    out[0] = *v;
    return;
  }
  std::int64_t n = 0;
  ForEachToken(cell.s, separator_, [&](std::string_view token) {
    if (n < value_dim_) {
      const auto t = Trim(token);
      if (t.empty()) {
        out[n] = default_value_;
      } else {
        const auto v = ParseDouble(t);
        if (!v) throw bad("'" + std::string(token) + "' (in " + Describe(cell) + ")");
        out[n] = *v;
      }
    }
    ++n;
  });
  if (n != value_dim_) {
    throw InputError("feature '" + name_ + "': value " + Describe(cell) + " holds " +
                     std::to_string(n) + " values separated by '" + separator_ +
                     "' but value_dim=" + std::to_string(value_dim_));
  }
}

void FeatureTransform::ListValues(const Cell& cell, double* out) const {
  if (cell.i != value_dim_) {
    throw InputError("feature '" + name_ + "': list " + Describe(cell) + " holds " +
                     std::to_string(cell.i) +
                     " values but value_dim=" + std::to_string(value_dim_));
  }
  for (std::int64_t k = 0; k < cell.i; ++k) {
    const Cell& item = cell.items[k];
    std::optional<double> v;
    switch (item.kind) {
      case Cell::Kind::kNull:
        v = default_value_;
        break;
      case Cell::Kind::kInt:
        v = static_cast<double>(item.i);
        break;
      case Cell::Kind::kFloat:
        v = item.d;
        break;
      case Cell::Kind::kString:
        v = ParseDouble(Trim(item.s));
        break;
      case Cell::Kind::kList:
        break;
    }
    if (!v) {
      throw InputError("feature '" + name_ + "': raw value " + Describe(item) + " (in " +
                       Describe(cell) + ") is not a number; fix the data or make it an id_feature");
    }
    out[k] = *v;
  }
}

void FeatureTransform::WriteDense(const Cell& cell, float* out) const {
  ForEachNormalized(cell, [&](std::int64_t k, double x) { out[k] = static_cast<float>(x); });
}

void FeatureTransform::AppendIdsColumn(const Cell* cells, std::int64_t n,
                                       std::vector<std::int64_t>* ids,
                                       std::vector<std::int64_t>* lengths, std::int64_t* failed,
                                       std::vector<float>* weights) const {
  lengths->reserve(lengths->size() + static_cast<std::size_t>(n));
  if (kind_ == IdKind::kNumBuckets) ids->reserve(ids->size() + static_cast<std::size_t>(n));
  std::int64_t r = 0;
  try {
    for (; r < n; ++r) {
      const Cell& cell = cells[r];
      if (kind_ == IdKind::kNumBuckets && !weighted_ && cell.kind == Cell::Kind::kInt &&
          cell.i >= 0 && cell.i < table_size_) {
        ids->push_back(cell.i);
        lengths->push_back(1);
        if (weights != nullptr) weights->push_back(1.0f);
        continue;
      }
      const std::size_t before = ids->size();
      AppendIds(cell, ids, weights);
      lengths->push_back(static_cast<std::int64_t>(ids->size() - before));
    }
  } catch (...) {
    if (failed != nullptr) *failed = r;
    throw;
  }
}

void FeatureTransform::WriteDenseColumn(const Cell* cells, std::int64_t n, float* out,
                                        std::int64_t stride, std::int64_t* failed) const {
  std::int64_t r = 0;
  try {
    for (; r < n; ++r) {
      const Cell& cell = cells[r];
      float* o = out + r * stride;
      if (value_dim_ == 1 && cell.kind == Cell::Kind::kInt) {
        *o = static_cast<float>(normalizer_.Apply(static_cast<double>(cell.i)));
      } else if (value_dim_ == 1 && cell.kind == Cell::Kind::kFloat) {
        *o = static_cast<float>(normalizer_.Apply(cell.d));
      } else {
        WriteDense(cell, o);
      }
    }
  } catch (...) {
    if (failed != nullptr) *failed = r;
    throw;
  }
}

}  // namespace tzrec::input
