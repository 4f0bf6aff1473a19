// Internal to tzrec::input: per-feature value → id / dense transforms (semantics in
// tzrec/input/input.hpp). Construction validates the FeatureConfig; the Append* methods throw
// std::runtime_error naming the feature and the value (the caller adds file and row).
// Thread-safety: immutable after construction; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cell.hpp"
#include "expr_transform.hpp"
#include "kv_transform.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec::input {

class FeatureTransform {
 public:
  enum class IdKind { kHash, kNumBuckets, kVocab, kBoundaries, kDense };

  // Validates: exactly one of hash_bucket_size / num_buckets / vocab_list for an id feature,
  // boundaries sorted, value_dim >= 1, the normalizer. Throws std::runtime_error.
  // With data_config.fg_mode FG_NONE the cells are already feature-generated (TorchEasyRec
  // tzrec/features/*.py `_parse_fg_encoded_*`): ids (and bucket ids of raw features with
  // boundaries) are integers in [0, table rows), dense values are used as they are, and
  // multi-value cells are split by data_config.fg_encoded_multival_sep. With FG_NORMAL / FG_DAG
  // the transform runs the feature generation: hashing, num_buckets, vocab_list, boundaries and
  // the normalizer, multi-value cells split by the feature's separator.
  FeatureTransform(const protos::FeatureConfig& config, const protos::DataConfig& data);

  const std::string& Name() const { return name_; }
  bool Sparse() const { return kind_ != IdKind::kDense; }
  // id_feature weighted: true (fg_mode FG_NORMAL / FG_DAG): cells hold "id:weight" values.
  bool Weighted() const { return weighted_; }
  // A combo_feature, lookup_feature, match_feature or expr_feature with feature generation: it
  // reads Inputs() cells per sample (its InputColumns) through AppendInputsIds / WriteInputsDense.
  bool MultiInput() const { return inputs_ > 0; }
  std::size_t Inputs() const { return inputs_; }
  IdKind Kind() const { return kind_; }
  // Table rows for sparse features (ids are in [0, table_size())); 0 for dense.
  std::int64_t TableSize() const { return table_size_; }
  // Floats per sample for dense features (value_dim); 0 for sparse.
  std::int64_t DenseDim() const { return Sparse() ? 0 : value_dim_; }

  // Appends the ids of one sample's cell to `out` (none for a missing value). A sequence feature
  // (FG_NONE): a text cell split on sequence_delim, a list cell's non-null items or one number,
  // each an integer id in [0, table rows), all kept (TorchEasyRec's FG_NONE parsing): more than
  // sequence_length items is an InputError naming the feature and both lengths; an empty
  // cell (null, blank text, empty list) reads fg_encoded_default_value when set, else no ids.
  // With FG_NORMAL / FG_DAG: a text cell's items split on sequence_delim (empty items kept) or a
  // list cell's items (null: empty), the first sequence_length kept; an empty item, and an empty
  // cell as one item, is default_value (a sequence_id_feature's "" reads "0"; a raw one's "":
  // an empty cell has no items, an empty item is an error); each item is one value (several,
  // split on separator, are an error naming the feature) mapped as an id_feature value
  // (hash_bucket_size, num_buckets, vocab_list / vocab_dict with default_value -> 0) or a
  // sequence_raw_feature's bucket (boundaries).
  // `weights` (optional) gets one weight per appended id: the ":weight" of a weighted feature's
  // "id:weight" value, 1 for any other feature (TorchEasyRec's weighted id_feature input
  // "k1:v1\x1dk2:v2"). A weighted value without ":weight", or with a weight that is not a
  // number, or a non-text value of a weighted feature, is an error naming the feature.
  void AppendIds(const Cell& cell, std::vector<std::int64_t>* out,
                 std::vector<float>* weights = nullptr) const;
  // A multi-input feature (FG_NORMAL / FG_DAG): one sample's ids from its inputs' cells
  // cells[0..Inputs()). A combo_feature: every combination of the inputs' values (text cells split
  // on the separator, list items, numbers as their text), joined by "_" in input order and hashed
  // (FNV-1a 64 mod hash_bucket_size); an input without values gives the sample no ids.
  // A lookup_feature / match_feature: its found values' ids (see kv_transform.hpp); an
  // expr_feature: the bucket ids of its expression's values (see expr_transform.hpp).
  void AppendInputsIds(const Cell* const* cells, std::vector<std::int64_t>* out) const;
  // A dense lookup_feature / match_feature / expr_feature: one sample's DenseDim() floats from its
  // input cells.
  void WriteInputsDense(const Cell* const* cells, float* out) const;
  // Writes value_dim normalised floats of one sample's cell to out[0..value_dim).
  void WriteDense(const Cell& cell, float* out) const;

  // Column-at-a-time forms of the two above, with the same results: cells[0..n) are n samples'
  // cells of this feature. AppendIdsColumn appends their ids to `ids` and one length per sample
  // to `lengths`; WriteDenseColumn writes sample r's value_dim floats to out + r * stride. Integer
  // ids of num_buckets features and single numbers of raw features take a tight loop; other
  // cells go through AppendIds / WriteDense. On an error, `*failed` (when given) is set to the
  // index of the offending cell before the exception propagates.
  void AppendIdsColumn(const Cell* cells, std::int64_t n, std::vector<std::int64_t>* ids,
                       std::vector<std::int64_t>* lengths, std::int64_t* failed = nullptr,
                       std::vector<float>* weights = nullptr) const;
  void WriteDenseColumn(const Cell* cells, std::int64_t n, float* out, std::int64_t stride,
                        std::int64_t* failed = nullptr) const;

 private:
  std::int64_t MapToken(std::string_view token, const Cell* numeric) const;
  // A combo_feature's ids (the cartesian product of its inputs' values, hashed).
  void AppendComboIds(const Cell* const* cells, std::vector<std::int64_t>* out) const;
  // AppendIds without the value_dim limit; `w` non-null for a weighted feature.
  void AppendAllIds(const Cell& cell, std::vector<std::int64_t>* out, std::vector<float>* w) const;
  // One text value: its id (and, with `w`, its weight: "id:weight").
  void Emit(std::string_view token, std::vector<std::int64_t>* out, std::vector<float>* w) const;
  // A sequence feature's ids (sequence_transform.cpp): FG_NONE's encoded ids, or with FG_NORMAL
  // / FG_DAG the items' feature generation (AppendFgSequence, one item through AppendItem: `text`
  // or, for a number, `numeric`).
  void AppendSequence(const Cell& cell, std::vector<std::int64_t>* out) const;
  void CheckEncodedLength(std::int64_t items) const;
  void InitFgSequence(const protos::FeatureConfig& config);
  void AppendFgSequence(const Cell& cell, std::vector<std::int64_t>* out) const;
  void AppendItem(std::string_view text, const Cell* numeric, std::vector<std::int64_t>* out) const;
  std::int64_t Bucketize(double x) const;
  // value_dim numbers (raw features): default_value when missing.
  void RawValues(const Cell& cell, double* out) const;
  // A list cell's items as value_dim numbers (null items: default_value); another length is an
  // error naming the feature.
  void ListValues(const Cell& cell, double* out) const;
  // Calls sink(k, normalizer(value k)) for the cell's value_dim raw values, k = 0 .. value_dim-1.
  template <typename Sink>
  void ForEachNormalized(const Cell& cell, Sink sink) const {
    double values[64];
    std::vector<double> big;
    double* v = values;
    if (value_dim_ > 64) {
      big.resize(static_cast<std::size_t>(value_dim_));
      v = big.data();
    }
    RawValues(cell, v);
    for (std::int64_t k = 0; k < value_dim_; ++k) sink(k, normalizer_.Apply(v[k]));
  }

  std::string name_;
  IdKind kind_ = IdKind::kDense;
  std::int64_t table_size_ = 0;
  std::string separator_;  // id: multi-value separator; raw: value_dim separator
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::int64_t unknown_id_ = 1;  // vocabulary: the id of values not in it
  std::size_t max_ids_ = 0;      // id_feature value_dim: > 0 keeps the first max_ids_ ids
  bool weighted_ = false;        // id_feature weighted
  std::size_t inputs_ = 0;       // multi-input features (with feature generation): their inputs
  std::shared_ptr<const KvTransform> kv_;      // lookup_feature / match_feature
  std::shared_ptr<const ExprTransform> expr_;  // expr_feature
  std::vector<double> boundaries_;
  tzrec::Normalizer normalizer_;
  std::int64_t value_dim_ = 1;
  double default_value_ = 0.0;
  std::int64_t sequence_length_ = 0;             // > 0: a sequence feature
  std::optional<std::string> default_sequence_;  // fg_encoded_default_value of a sequence
  bool fg_sequence_ = false;                     // a sequence with feature generation
  std::string sequence_delim_;                   // ... its item separator
  std::string item_default_;                     // ... the value of an empty item ("": none)
};

}  // namespace tzrec::input
