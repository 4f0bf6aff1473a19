// lookup_feature / match_feature feature generation (see kv_transform.hpp).
#include "kv_transform.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <utility>

#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

constexpr std::string_view kMapSeparator = "\x1d";

// Calls fn(text) for each text entry of a map cell: a text cell split on `sep`, a list's items.
template <typename Fn>
void ForEachEntry(const Cell& cell, std::string_view sep, Fn&& fn) {
  if (cell.kind == Cell::Kind::kString) return ForEachToken(cell.s, sep, fn);
  if (cell.kind != Cell::Kind::kList) return;
  for (std::int64_t k = 0; k < cell.i; ++k) {
    const Cell& item = cell.items[k];
    if (item.kind == Cell::Kind::kString) fn(item.s);
  }
}

// "key<sep>value" split at the first `sep`; false when there is none.
bool SplitPair(std::string_view entry, char sep, std::string_view* key, std::string_view* value) {
  const auto pos = entry.find(sep);
  if (pos == std::string_view::npos) return false;
  *key = entry.substr(0, pos);
  *value = entry.substr(pos + 1);
  return true;
}

}  // namespace

// The settings both messages share (same field names in LookupFeature and MatchFeature).
template <typename M>
static void SetUp(const M& m, const std::string& name, KvTransform::Output* output,
                  std::int64_t* table_size, std::unordered_map<std::string, std::int64_t>* vocab,
                  std::vector<double>* boundaries, tzrec::Normalizer* normalizer) {
  auto fail = [&](const std::string& why) {
    return std::runtime_error("feature '" + name + "': " + why);
  };
  const bool has_vocab = m.vocab_list_size() > 0 || m.vocab_dict_size() > 0;
  const int set = (m.hash_bucket_size() > 0) + (m.num_buckets() > 0) + (m.vocab_list_size() > 0) +
                  (m.vocab_dict_size() > 0) + (m.boundaries_size() > 0);
  if (set > 1) {
    throw fail(
        "set at most one of hash_bucket_size, num_buckets, vocab_list, vocab_dict, boundaries");
  }
  if (m.hash_bucket_size() > 0) {
    *output = KvTransform::Output::kHash;
    *table_size = static_cast<std::int64_t>(m.hash_bucket_size());
  } else if (m.num_buckets() > 0) {
    *output = KvTransform::Output::kNumBuckets;
    *table_size = static_cast<std::int64_t>(m.num_buckets());
  } else if (has_vocab) {
    *output = KvTransform::Output::kVocab;
    (*vocab)[m.default_value()] = 0;  // TorchEasyRec: [default_value, "<OOV>"] + vocab_list
    std::int64_t top = 0;
    for (int i = 0; i < m.vocab_list_size(); ++i) (*vocab)[m.vocab_list(i)] = i + 2;
    for (const auto& entry : m.vocab_dict()) {
      if (entry.key() != m.default_value()) {
        (*vocab)[entry.key()] = static_cast<std::int64_t>(entry.value());
      }
      top = std::max(top, static_cast<std::int64_t>(entry.value()));
    }
    *table_size = m.vocab_list_size() > 0 ? m.vocab_list_size() + 2 : top + 1;
  } else if (m.boundaries_size() > 0) {
    *output = KvTransform::Output::kBoundaries;
    boundaries->assign(m.boundaries().begin(), m.boundaries().end());
    for (std::size_t i = 1; i < boundaries->size(); ++i) {
      if (!((*boundaries)[i - 1] < (*boundaries)[i])) {
        throw fail("boundaries must be strictly increasing (boundaries[" + std::to_string(i) +
                   "] is not above boundaries[" + std::to_string(i - 1) + "])");
      }
    }
    *table_size = static_cast<std::int64_t>(boundaries->size()) + 1;
  }
  try {
    *normalizer = ParseNormalizer(m.normalizer());
  } catch (const ConfigError& error) {
    throw fail(error.what());
  }
}

KvTransform::KvTransform(const protos::FeatureConfig& config) : name_(FeatureName(config)) {
  if (config.has_lookup_feature()) {
    const protos::LookupFeature& l = config.lookup_feature();
    SetUp(l, name_, &output_, &table_size_, &vocab_, &boundaries_, &normalizer_);
    separator_ = l.separator();
    value_separator_ = l.value_separator();
    combiner_ = l.combiner();
    std::transform(combiner_.begin(), combiner_.end(), combiner_.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    default_value_ = l.default_value();
    need_key_ = l.need_key();
    const bool ids =
        output_ == Output::kHash || output_ == Output::kVocab || output_ == Output::kNumBuckets;
    if (ids) max_ids_ = l.value_dim();
    if (!ids && l.value_dim() > 1) value_dim_ = l.value_dim();
    if (!ids && combiner_ != "sum" && combiner_ != "mean" && combiner_ != "min" &&
        combiner_ != "max" && combiner_ != "count") {
      throw std::runtime_error("feature '" + name_ + "': combiner \"" + l.combiner() +
                               "\" is not one of sum, mean, min, max, count");
    }
  } else if (config.has_match_feature()) {
    const protos::MatchFeature& m = config.match_feature();
    SetUp(m, name_, &output_, &table_size_, &vocab_, &boundaries_, &normalizer_);
    match_ = true;
    separator_ = m.separator();
    default_value_ = m.default_value();
    show_pkey_ = m.show_pkey();
    show_skey_ = m.show_skey();
    all_pkey_ = m.pkey() == "ALL";
    all_skey_ = m.skey() == "ALL";
    inputs_ = 1 + !all_pkey_ + !all_skey_;
    if (output_ != Output::kDense && output_ != Output::kBoundaries) max_ids_ = m.value_dim();
  } else {
    throw std::logic_error("KvTransform: feature '" + name_ + "' is no lookup / match feature");
  }
  if (separator_.empty()) throw std::runtime_error("feature '" + name_ + "': empty separator");
}

void KvTransform::FindLookup(const Cell& map, const Cell& key, std::vector<Hit>* hits) const {
  std::vector<std::pair<std::string_view, std::string_view>> entries;
  ForEachEntry(map, kMapSeparator, [&](std::string_view entry) {
    std::string_view k, v;
    if (SplitPair(entry, ':', &k, &v)) entries.emplace_back(k, v);
  });
  std::vector<std::string> keys;
  CellValues(key, separator_, &keys);
  for (const std::string& k : keys) {
    // a repeated map key keeps its last value
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      if (it->first != k) continue;
      hits->push_back({need_key_ ? k + "_" : std::string(), it->second});
      break;
    }
  }
}

void KvTransform::FindMatch(const Cell& nested, const Cell* pkey, const Cell* skey,
                            std::vector<Hit>* hits) const {
  struct Primary {
    std::string_view key;
    std::vector<std::pair<std::string_view, std::string_view>> entries;
  };
  std::vector<Primary> map;
  ForEachEntry(nested, "|", [&](std::string_view entry) {
    Primary p;
    std::string_view inner;
    if (!SplitPair(entry, '^', &p.key, &inner)) return;
    ForEachToken(inner, ",", [&](std::string_view e) {
      std::string_view k, v;
      if (SplitPair(e, ':', &k, &v)) p.entries.emplace_back(k, v);
    });
    map.push_back(std::move(p));
  });
  std::vector<std::string> pkeys, skeys;
  if (pkey != nullptr) CellValues(*pkey, separator_, &pkeys);
  if (skey != nullptr) CellValues(*skey, separator_, &skeys);
  auto emit = [&](std::string_view p, std::string_view s, std::string_view v) {
    std::string prefix;
    if (show_pkey_) prefix += std::string(p) + "_";
    if (show_skey_) prefix += std::string(s) + "_";
    hits->push_back({std::move(prefix), v});
  };
  auto secondary = [&](const Primary& p) {
    if (all_skey_) {
      for (const auto& [s, v] : p.entries) emit(p.key, s, v);
      return;
    }
    for (const std::string& s : skeys) {
      for (auto it = p.entries.rbegin(); it != p.entries.rend(); ++it) {
        if (it->first != s) continue;
        emit(p.key, s, it->second);
        break;
      }
    }
  };
  if (all_pkey_) {
    for (const Primary& p : map) secondary(p);
    return;
  }
  for (const std::string& k : pkeys) {
    for (auto it = map.rbegin(); it != map.rend(); ++it) {
      if (it->key != k) continue;
      secondary(*it);
      break;
    }
  }
}

void KvTransform::Find(const Cell* const* cells, std::vector<Hit>* hits) const {
  if (!match_) return FindLookup(*cells[0], *cells[1], hits);
  std::size_t next = 1;
  const Cell* pkey = all_pkey_ ? nullptr : cells[next++];
  const Cell* skey = all_skey_ ? nullptr : cells[next++];
  FindMatch(*cells[0], pkey, skey, hits);
}

std::int64_t KvTransform::IdOf(const std::string& text) const {
  switch (output_) {
    case Output::kHash:
      return static_cast<std::int64_t>(Fnv1a64(text) % static_cast<std::uint64_t>(table_size_));
    case Output::kVocab: {
      const auto it = vocab_.find(text);
      return it == vocab_.end() ? 1 : it->second;
    }
    default:
      break;
  }
  const auto id = ParseInteger(text);
  if (!id) {
    throw InputError("feature '" + name_ + "': found value '" + text +
                     "' is not an integer id (num_buckets=" + std::to_string(table_size_) +
                     "); use hash_bucket_size for other values");
  }
  if (*id < 0 || *id >= table_size_) {
    throw InputError("feature '" + name_ + "': id " + std::to_string(*id) +
                     " is outside [0, num_buckets=" + std::to_string(table_size_) +
                     "); raise num_buckets or use hash_bucket_size");
  }
  return *id;
}

double KvTransform::Number(std::string_view text) const {
  const auto v = ParseDouble(Trim(text));
  if (!v) {
    throw InputError("feature '" + name_ + "': found value '" + std::string(text) +
                     "' is not a number; give text values an id table (hash_bucket_size, "
                     "vocab_list or vocab_dict)");
  }
  return *v;
}

void KvTransform::Numbers(const std::vector<Hit>& hits, double* out) const {
  if (hits.empty()) {
    std::fill(out, out + value_dim_, Number(default_value_));
    return;
  }
  if (value_dim_ > 1) {  // the first found value, split into value_dim numbers
    std::int64_t n = 0;
    ForEachToken(hits.front().value, value_separator_, [&](std::string_view token) {
      if (n < value_dim_) out[n] = Number(token);
      ++n;
    });
    if (n != value_dim_) {
      throw InputError("feature '" + name_ + "': found value '" + std::string(hits.front().value) +
                       "' holds " + std::to_string(n) + " numbers separated by '" +
                       value_separator_ + "' but value_dim=" + std::to_string(value_dim_));
    }
    return;
  }
  if (match_ && hits.size() > 1) {
    throw InputError("feature '" + name_ + "': " + std::to_string(hits.size()) +
                     " values matched (multi-value keys or ALL); a numeric match_feature takes "
                     "one: give it an id table (hash_bucket_size) or use a lookup_feature with a "
                     "combiner");
  }
  double sum = 0.0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const Hit& hit : hits) {
    const double v = Number(hit.value);
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double count = static_cast<double>(hits.size());
  if (match_ || combiner_ == "sum") {
    out[0] = sum;
  } else if (combiner_ == "mean") {
    out[0] = sum / count;
  } else if (combiner_ == "min") {
    out[0] = lo;
  } else if (combiner_ == "max") {
    out[0] = hi;
  } else {
    out[0] = count;
  }
}

void KvTransform::AppendIds(const Cell* const* cells, std::vector<std::int64_t>* out) const {
  std::vector<Hit> hits;
  Find(cells, &hits);
  if (output_ == Output::kBoundaries) {
    std::vector<double> v(static_cast<std::size_t>(value_dim_));
    Numbers(hits, v.data());
    for (const double x : v) {
      const double y = normalizer_.Apply(x);
      out->push_back(std::upper_bound(boundaries_.begin(), boundaries_.end(), y) -
                     boundaries_.begin());
    }
    return;
  }
  if (output_ == Output::kDense) {
    throw std::logic_error("feature '" + name_ + "' is dense; AppendIds called");
  }
  std::size_t n = 0;
  for (const Hit& hit : hits) {
    if (max_ids_ > 0 && n == max_ids_) return;
    out->push_back(IdOf(hit.prefix + std::string(hit.value)));
    ++n;
  }
  if (hits.empty() && !default_value_.empty()) out->push_back(IdOf(default_value_));
}

void KvTransform::WriteDense(const Cell* const* cells, float* out) const {
  std::vector<Hit> hits;
  Find(cells, &hits);
  std::vector<double> v(static_cast<std::size_t>(value_dim_));
  Numbers(hits, v.data());
  for (std::size_t k = 0; k < v.size(); ++k) out[k] = static_cast<float>(normalizer_.Apply(v[k]));
}

}  // namespace tzrec::input
