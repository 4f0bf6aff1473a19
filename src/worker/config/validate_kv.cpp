// Validation of lookup_feature and match_feature (include/tzrec/config/config.hpp): the
// combinations TorchEasyRec's fg_json (tzrec/features/lookup_feature.py / match_feature.py)
// overrides or ignores are refused by name, so that no set option goes without effect.
#include <cctype>
#include <exception>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

bool IsNumber(const std::string& text) {
  try {
    std::size_t used = 0;
    (void)std::stod(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

// The rules both messages share. Returns whether the output is ids of text values (hash or
// vocabulary: where need_key / show_pkey / show_skey apply).
template <typename M>
bool ValidateKvCommon(const M& f, const std::string& path) {
  std::vector<std::string> set;
  if (f.hash_bucket_size() > 0) set.push_back("hash_bucket_size");
  if (f.num_buckets() > 0) set.push_back("num_buckets");
  if (f.vocab_list_size() > 0) set.push_back("vocab_list");
  if (f.vocab_dict_size() > 0) set.push_back("vocab_dict");
  if (f.boundaries_size() > 0) set.push_back("boundaries");
  Require(set.size() <= 1, path + ": " + tzrun::base::Join(set, " and ") +
                               " are set; TorchEasyRec uses only the first of them: keep one");
  const bool text_ids =
      f.hash_bucket_size() > 0 || f.vocab_list_size() > 0 || f.vocab_dict_size() > 0;
  const bool sparse = !set.empty();
  if (sparse) {
    Require(f.embedding_dim() > 0, path + ".embedding_dim: must be > 0 (the width of the table " +
                                       "of " + set.front() + ")");
  } else {
    Require(f.embedding_dim() == 0,
            path + ".embedding_dim: " + std::to_string(f.embedding_dim()) +
                " on a numeric (dense) feature, which has no table: add hash_bucket_size, "
                "num_buckets, vocab_list, vocab_dict or boundaries, or remove embedding_dim");
  }
  Require(f.pooling() == "sum" || f.pooling() == "mean",
          path + ".pooling: \"" + f.pooling() + "\"; use \"sum\" or \"mean\"");
  Require(!f.separator().empty(), path + ".separator: empty; give the multi-value separator");
  Require(!f.need_discrete() || text_ids,
          path +
              ".need_discrete: true without hash_bucket_size, vocab_list or vocab_dict; text "
              "values need one of them (num_buckets and boundaries read numbers): add one or "
              "remove need_discrete");
  for (int i = 1; i < f.boundaries_size(); ++i) {
    Require(f.boundaries(i) > f.boundaries(i - 1),
            path + ".boundaries: must be strictly increasing, but [" + std::to_string(i - 1) +
                "] and [" + std::to_string(i) + "] are not");
  }
  std::set<std::string> vocab{f.default_value()};
  for (const std::string& word : f.vocab_list()) {
    Require(vocab.insert(word).second,
            path + ".vocab_list: \"" + word +
                "\" appears twice or is the default_value (id 0); entries must be unique");
  }
  if (f.has_normalizer()) {
    Require(!sparse || f.boundaries_size() > 0,
            path + ".normalizer: set with " + (set.empty() ? "" : set.front()) +
                "; it applies to numeric values only (dense or boundaries): remove it");
    try {
      ParseNormalizer(f.normalizer());
    } catch (const ConfigError& error) {
      throw ConfigError(path + ".normalizer: " + error.what());
    }
  }
  if (!text_ids && f.num_buckets() == 0) {
    Require(IsNumber(f.default_value()),
            path + ".default_value: \"" + f.default_value() +
                "\" is not a number (the value when nothing is found); give a number such as "
                "\"0\"");
  }
  return text_ids;
}

// map / key / nested_map / pkey / skey: given with feature generation.
void RequireInput(const std::string& value, const std::string& path, const char* field,
                  const char* example) {
  Require(!value.empty(), path + "." + field + ": empty; give the input, e.g. \"" + example + "\"");
}

}  // namespace

void ValidateLookup(const protos::LookupFeature& f, const std::string& path, bool runs_fg) {
  const bool text_ids = ValidateKvCommon(f, path);
  if (runs_fg) {
    RequireInput(f.map(), path, "map", "item:kv_cate_click");
    RequireInput(f.key(), path, "key", "user:cate");
  }
  const bool ids = text_ids || f.num_buckets() > 0;
  const std::string kind = f.hash_bucket_size() > 0 ? "hash_bucket_size"
                           : f.num_buckets() > 0    ? "num_buckets"
                                                    : "a vocabulary";
  Require(!f.need_key() || text_ids,
          path +
              ".need_key: true without hash_bucket_size, vocab_list or vocab_dict; the "
              "\"key_value\" text is an id only through one of them: add one or remove "
              "need_key");
  if (f.has_combiner()) {
    Require(!ids, path + ".combiner: \"" + f.combiner() + "\" with " + kind +
                      "; each found value is an id there (TorchEasyRec drops the combiner): "
                      "remove it");
    Require(f.value_dim() <= 1, path + ".combiner: \"" + f.combiner() + "\" with value_dim " +
                                    std::to_string(f.value_dim()) +
                                    " (> 1 reads the first found value): remove it");
    std::string c = f.combiner();
    for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    Require(c == "sum" || c == "mean" || c == "min" || c == "max" || c == "count",
            path + ".combiner: \"" + f.combiner() + "\"; use sum, mean, min, max or count");
  }
  if (ids) {
    Require(f.value_dim() <= 1,
            path + ".value_dim: " + std::to_string(f.value_dim()) + " with " + kind +
                "; ids take 0 (every found value, the default) or 1 (the first); value_dim > 1 "
                "splits a numeric value: use it without an id table (or with boundaries)");
  } else {
    Require(!f.has_value_dim() || f.value_dim() >= 1,
            path +
                ".value_dim: 0 on a numeric lookup (one number per sample); remove it or set "
                "the numbers per found value");
  }
  Require(!f.has_value_separator() || f.value_dim() > 1,
          path +
              ".value_separator: set without value_dim > 1; it splits a found value into "
              "value_dim numbers: set value_dim or remove it");
  Require(!f.value_separator().empty(), path + ".value_separator: empty; give a separator");
}

void ValidateMatch(const protos::MatchFeature& f, const std::string& path, bool runs_fg) {
  const bool text_ids = ValidateKvCommon(f, path);
  if (runs_fg) {
    RequireInput(f.nested_map(), path, "nested_map", "user:kkv_cate_brand_click");
    RequireInput(f.pkey(), path, "pkey", "item:cate");
    RequireInput(f.skey(), path, "skey", "item:brand");
  }
  Require((!f.show_pkey() && !f.show_skey()) || text_ids,
          path + "." + (f.show_pkey() ? "show_pkey" : "show_skey") +
              ": true without hash_bucket_size, vocab_list or vocab_dict; the prefixed text is "
              "an id only through one of them: add one or remove it");
  const bool ids = text_ids || f.num_buckets() > 0;
  if (ids) {
    Require(f.value_dim() <= 1, path + ".value_dim: " + std::to_string(f.value_dim()) +
                                    "; ids take 0 (every matched value, the default) or 1 "
                                    "(the first)");
  } else {
    Require(!f.has_value_dim() || f.value_dim() == 1,
            path + ".value_dim: " + std::to_string(f.value_dim()) +
                " on a numeric match_feature; TorchEasyRec supports value_dim 1 only: remove it");
  }
}

}  // namespace tzrec::config_internal
