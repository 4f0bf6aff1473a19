// Internal to tzrec::input: the feature generation of lookup_feature and match_feature
// (TorchEasyRec tzrec/features/lookup_feature.py / match_feature.py with pyfg), fg_mode FG_NORMAL /
// FG_DAG. Construction validates the config; the methods throw std::runtime_error naming the
// feature and the value. Immutable after construction; const methods may run concurrently.
//
// lookup_feature: inputs [map, key]. The map cell holds "k:v" entries ("k1:v1\x1dk2:v2", or a list
// of "k:v" texts; an entry splits at its first ':', one without ':' is skipped, a repeated key
// keeps its last value); the key cell one or more keys (text split on separator, list items,
// numbers as their text). Each key found gives one value, in key order.
// match_feature: inputs [nested_map, pkey (unless ALL), skey (unless ALL)]. The nested map
// "pk1^sk1:v1,sk2:v2|pk2^sk3:v3" ('|' between primary entries, '^' after the primary key, ','
// between secondary entries, ':' after the secondary key); every (pkey value, skey value) pair
// found gives one value; ALL stands for every key of that level, in map order.
//
// The found values become (the first of hash_bucket_size / num_buckets / vocab_list / vocab_dict /
// boundaries that is set, else dense):
//  hash / vocab: each value (need_key: "key_value"; show_pkey / show_skey: "pkey_skey_value") is
//    an id: FNV-1a 64 mod hash_bucket_size, or its vocabulary id (default_value 0, unknown 1, the
//    vocab_list from 2; vocab_dict as given with default_value 0); none found: default_value
//    (none when empty); value_dim > 0 keeps the first value_dim ids.
//  num_buckets: each value an integer id in [0, num_buckets); none found: default_value.
//  dense / boundaries: the values as numbers, combined (lookup combiner sum | mean | min | max |
//    count; a match takes one value), default_value when none is found, normalized, then
//    bucketized by boundaries. A lookup with value_dim > 1 splits its first found value on
//    value_separator into value_dim numbers (default_value each when none is found).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cell.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec::input {

class KvTransform {
 public:
  enum class Output { kHash, kNumBuckets, kVocab, kBoundaries, kDense };

  // `config` holds a lookup_feature or a match_feature. Throws std::runtime_error.
  explicit KvTransform(const protos::FeatureConfig& config);

  Output Kind() const { return output_; }
  bool Sparse() const { return output_ != Output::kDense; }
  // Table rows of a sparse output; 0 for dense.
  std::int64_t TableSize() const { return table_size_; }
  // Floats per sample of a dense output (value_dim of a lookup, else 1); 0 for sparse.
  std::int64_t DenseDim() const { return Sparse() ? 0 : value_dim_; }
  // Input cells per sample (lookup 2; match 1 to 3: nested_map, pkey and skey unless ALL).
  std::size_t Inputs() const { return inputs_; }

  // One sample's ids from its input cells cells[0..Inputs()).
  void AppendIds(const Cell* const* cells, std::vector<std::int64_t>* out) const;
  // One sample's DenseDim() floats.
  void WriteDense(const Cell* const* cells, float* out) const;

 private:
  struct Hit {
    std::string prefix;  // need_key / show_pkey / show_skey: "key_" parts
    std::string_view value;
  };
  // The values found for one sample (viewing the cells' texts).
  void Find(const Cell* const* cells, std::vector<Hit>* hits) const;
  void FindLookup(const Cell& map, const Cell& key, std::vector<Hit>* hits) const;
  void FindMatch(const Cell& nested, const Cell* pkey, const Cell* skey,
                 std::vector<Hit>* hits) const;
  std::int64_t IdOf(const std::string& text) const;
  // The value_dim numbers of one sample (before normalization).
  void Numbers(const std::vector<Hit>& hits, double* out) const;
  double Number(std::string_view text) const;

  std::string name_;
  bool match_ = false;
  Output output_ = Output::kDense;
  std::int64_t table_size_ = 0;
  std::size_t inputs_ = 2;
  std::string separator_;        // multi-value separator of the key inputs
  std::string value_separator_;  // lookup value_dim > 1
  std::string combiner_;         // lookup: sum | mean | min | max | count
  std::string default_value_;
  bool need_key_ = false;  // lookup
  bool show_pkey_ = false;
  bool show_skey_ = false;
  bool all_pkey_ = false;
  bool all_skey_ = false;
  std::size_t max_ids_ = 0;
  std::int64_t value_dim_ = 1;
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::vector<double> boundaries_;
  tzrec::Normalizer normalizer_;
};

}  // namespace tzrec::input
