// Validation of feature_configs (include/tzrec/config/config.hpp).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

std::string FeaturePath(int index, const protos::FeatureConfig& feature) {
  const char* kind = "raw_feature";
  if (IsIdFeature(feature)) kind = "id_feature";
  if (feature.has_sequence_id_feature()) kind = "sequence_id_feature";
  if (feature.has_sequence_raw_feature()) kind = "sequence_raw_feature";
  if (feature.has_combo_feature()) kind = "combo_feature";
  if (feature.has_lookup_feature()) kind = "lookup_feature";
  if (feature.has_match_feature()) kind = "match_feature";
  if (feature.has_expr_feature()) kind = "expr_feature";
  return "feature_configs[" + std::to_string(index) + "]." + kind;
}

std::vector<ShardingType> CheckedShardingTypes(const protos::ParameterConstraints& constraints,
                                               const std::string& path) {
  try {
    return ShardingTypes(constraints);
  } catch (const ConfigError& error) {
    throw ConfigError(path + ".sharding_types: " + error.what());
  }
}

template <typename M>
void ValidateTableSize(const M& f, const std::string& path) {
  std::vector<std::string> set;
  if (f.hash_bucket_size() > 0) set.push_back("hash_bucket_size");
  if (f.num_buckets() > 0) set.push_back("num_buckets");
  if (f.vocab_list_size() > 0) set.push_back("vocab_list");
  std::string choices = "hash_bucket_size, num_buckets, vocab_list";
  if constexpr (std::is_same_v<M, protos::IdFeature>) {
    if (f.vocab_dict_size() > 0) set.push_back("vocab_dict");
    choices += ", vocab_dict, vocab_file";
  }
  Require(set.size() == 1,
          path + ": " +
              (set.empty() ? std::string("no table size")
                           : "both " + tzrun::base::Join(set, " and ") + " are set") +
              " (feature '" + f.feature_name() + "'); set exactly one of " + choices);
  std::set<std::string> vocab;
  for (const std::string& word : f.vocab_list()) {
    Require(vocab.insert(word).second, path + ".vocab_list: \"" + word +
                                           "\" appears twice; vocabulary entries must be unique");
  }
}

// default_bucketize_value only with a vocabulary, and every id of the vocabulary (the unknown one
// included) inside the table.
void ValidateIdVocabulary(const protos::IdFeature& f, const std::string& path) {
  const bool has_vocab = f.vocab_list_size() > 0 || f.vocab_dict_size() > 0;
  Require(has_vocab || !f.has_default_bucketize_value(),
          path +
              ".default_bucketize_value: set without vocab_list, vocab_dict or vocab_file "
              "(feature '" +
              f.feature_name() + "'); it is the id of unknown vocabulary values: remove it");
  if (!has_vocab) return;
  for (const auto& entry : f.vocab_dict()) {
    Require(entry.value() < (std::uint64_t{1} << 62), path + ".vocab_dict: id " +
                                                          std::to_string(entry.value()) + " of \"" +
                                                          entry.key() + "\" is too large");
  }
  Vocabulary vocab;
  try {
    vocab = IdVocabulary(f);
  } catch (const ConfigError& error) {
    throw ConfigError(path + ": " + error.what());
  }
  Require(vocab.unknown_id < vocab.rows,
          path + ": the id of unknown values, " + std::to_string(vocab.unknown_id) +
              (f.has_default_bucketize_value() ? " (default_bucketize_value)"
                                               : " (TorchEasyRec's <OOV> id without "
                                                 "default_bucketize_value)") +
              ", is outside the table of " + std::to_string(vocab.rows) + " rows (feature '" +
              f.feature_name() + "'); set default_bucketize_value below " +
              std::to_string(vocab.rows) + " or add vocabulary ids");
}

// combo_feature: >= 2 inputs with feature generation, hash_bucket_size, embedding_dim, pooling.
void ValidateCombo(const protos::ComboFeature& f, const std::string& path, bool runs_fg) {
  Require(f.embedding_dim() > 0, path + ".embedding_dim: must be > 0 (the embedding width)");
  Require(f.hash_bucket_size() > 0, path + ".hash_bucket_size: must be > 0 (feature '" +
                                        f.feature_name() +
                                        "'); a combo_feature hashes each combination into it");
  Require(!runs_fg || f.expression_size() >= 2,
          path + ".expression: " + std::to_string(f.expression_size()) +
              " input(s); a combo_feature combines 2 or more, e.g. [\"user:age\", \"item:cate\"]");
  Require(f.pooling() == "sum" || f.pooling() == "mean",
          path + ".pooling: \"" + f.pooling() + "\"; use \"sum\" or \"mean\"");
  Require(!f.separator().empty(), path + ".separator: empty; give the multi-value separator");
}

void ValidateId(const protos::IdFeature& f, const std::string& path) {
  Require(f.embedding_dim() > 0, path + ".embedding_dim: must be > 0 (the embedding width)");
  ValidateTableSize(f, path);
  Require(f.pooling() == "sum" || f.pooling() == "mean",
          path + ".pooling: \"" + f.pooling() + "\"; use \"sum\" or \"mean\"");
  Require(!f.separator().empty(), path + ".separator: empty; give the multi-value separator");
  ValidateIdVocabulary(f, path);
  Require(f.value_dim() <= 1, path + ".value_dim: " + std::to_string(f.value_dim()) +
                                  "; an id_feature takes 0 (every value of a multi-value cell) "
                                  "or 1 (the first value only), as TorchEasyRec");
}

void ValidateRaw(const protos::RawFeature& f, const std::string& path) {
  for (int i = 1; i < f.boundaries_size(); ++i) {
    Require(f.boundaries(i) > f.boundaries(i - 1),
            path + ".boundaries: must be strictly increasing, but [" + std::to_string(i - 1) +
                "] and [" + std::to_string(i) + "] are not");
  }
  Require(f.value_dim() > 0, path + ".value_dim: must be > 0 (values per row)");
  Require(f.pooling() == "sum" || f.pooling() == "mean",
          path + ".pooling: \"" + f.pooling() + "\"; use \"sum\" or \"mean\"");
  if (f.boundaries_size() == 0) {
    Require(f.embedding_dim() == 0,
            path + ".embedding_dim: " + std::to_string(f.embedding_dim()) +
                " without boundaries; a dense raw feature has no table: add boundaries or remove "
                "embedding_dim");
  } else {
    Require(f.embedding_dim() > 0, path +
                                       ".embedding_dim: must be > 0 for a bucketized raw "
                                       "feature (with boundaries)");
    Require(f.value_dim() == 1, path + ".value_dim: must be 1 with boundaries");
  }
  try {
    ParseNormalizer(f.normalizer());
  } catch (const ConfigError& error) {
    throw ConfigError(path + ".normalizer: " + error.what());
  }
  try {
    std::size_t used = 0;
    (void)std::stod(f.default_value(), &used);
    Require(used == f.default_value().size(), "");
  } catch (const std::exception&) {
    throw ConfigError(path + ".default_value: \"" + f.default_value() + "\" is not a number");
  }
}

// sequence_id_feature / sequence_raw_feature: sequence_length > 0, a sequence_delim, a table.
template <typename M>
void ValidateSequence(const M& f, const std::string& path) {
  Require(f.sequence_length() > 0,
          path + ".sequence_length: must be > 0 (the items kept of each sequence), got 0");
  Require(!f.sequence_delim().empty(),
          path + ".sequence_delim: empty; give the item separator (TorchEasyRec's default \";\")");
  Require(f.embedding_dim() > 0, path + ".embedding_dim: must be > 0 (the embedding width)");
}

// Exactly one table option (as an id_feature), a one-character-or-longer separator.
void ValidateSequenceId(const protos::SequenceIdFeature& f, const std::string& path) {
  const bool vocab = f.vocab_list_size() > 0 || f.vocab_dict_size() > 0;
  const int set = (f.hash_bucket_size() > 0) + (f.num_buckets() > 0) + vocab;
  Require(set == 1, path + ": sequence_id_feature '" + f.feature_name() +
                        "' needs exactly one of hash_bucket_size, num_buckets, vocab_list / "
                        "vocab_dict (got " +
                        std::to_string(set) + ")");
  Require(f.vocab_list_size() == 0 || f.vocab_dict_size() == 0,
          path + ": vocab_list and vocab_dict are both set; keep one");
  Require(!f.separator().empty(), path +
                                      ".separator: empty; give the multi-value separator "
                                      "(TorchEasyRec's default \"\\x1d\")");
}

void ValidateSequenceRaw(const protos::SequenceRawFeature& f, const std::string& path) {
  Require(f.boundaries_size() > 0,
          path + ": sequence_raw_feature '" + f.feature_name() +
              "' has no boundaries; a dense sequence is not implemented by tzrec_train: add "
              "boundaries (the column then holds bucket ids) or drop the feature");
  for (int i = 1; i < f.boundaries_size(); ++i) {
    Require(f.boundaries(i) > f.boundaries(i - 1),
            path + ".boundaries: must be strictly increasing, but [" + std::to_string(i - 1) +
                "] and [" + std::to_string(i) + "] are not");
  }
}

}  // namespace

void ValidateFeatures(const PipelineConfig& config) {
  const bool runs_fg = RunsFeatureGeneration(config);
  std::vector<std::string> columns;
  for (const protos::Field& field : config.data_config().input_fields()) {
    columns.push_back(field.input_name());
  }
  std::map<std::string, int> index;
  std::map<std::string, int> table_owner;
  for (int i = 0; i < config.feature_configs_size(); ++i) {
    const protos::FeatureConfig& f = config.feature_configs(i);
    Require(f.feature_case() != protos::FeatureConfig::FEATURE_NOT_SET,
            "feature_configs[" + std::to_string(i) +
                "]: empty; set id_feature, raw_feature, combo_feature, lookup_feature, "
                "match_feature or expr_feature");
    const std::string path = FeaturePath(i, f);
    Require(!FeatureName(f).empty(), path + ".feature_name: empty; every feature needs a name");
    if (IsIdFeature(f)) {
      ValidateId(f.id_feature(), path);
      Require(runs_fg || !f.id_feature().weighted(),
              path +
                  ".weighted: true with data_config.fg_mode FG_NONE is not implemented ("
                  "TorchEasyRec reads <name>__values / <name>__weights columns there); use "
                  "fg_mode FG_DAG with \"id:weight\" values");
    } else if (f.has_combo_feature()) {
      ValidateCombo(f.combo_feature(), path, runs_fg);
    } else if (f.has_lookup_feature()) {
      ValidateLookup(f.lookup_feature(), path, runs_fg);
    } else if (f.has_match_feature()) {
      ValidateMatch(f.match_feature(), path, runs_fg);
    } else if (f.has_expr_feature()) {
      ValidateExpr(f.expr_feature(), path, runs_fg);
    } else if (f.has_sequence_id_feature()) {
      ValidateSequence(f.sequence_id_feature(), path);
      ValidateSequenceId(f.sequence_id_feature(), path);
      ValidateTableSize(f.sequence_id_feature(), path);
    } else if (f.has_sequence_raw_feature()) {
      ValidateSequenceRaw(f.sequence_raw_feature(), path);
      ValidateSequence(f.sequence_raw_feature(), path);
    } else {
      ValidateRaw(f.raw_feature(), path);
    }
    const auto [it, inserted] = index.emplace(FeatureName(f), i);
    Require(inserted, path + ".feature_name: '" + FeatureName(f) + "' is already used by " +
                          FeaturePath(it->second, config.feature_configs(it->second)) +
                          "; feature names must be unique");
    for (const std::string& column :
         columns.empty() ? std::vector<std::string>{} : InputColumns(config, f)) {
      Require(std::find(columns.begin(), columns.end(), column) != columns.end(),
              path + (runs_fg ? ".expression" : ".feature_name") + ": input column '" + column +
                  "' is not one of data_config.input_fields" + Suggest(column, columns) +
                  (runs_fg ? ""
                           : " (with fg_mode FG_NONE a feature reads the column named by "
                             "its feature_name)"));
    }
    const protos::ParameterConstraints& constraints = EmbeddingConstraints(f);
    CheckedShardingTypes(constraints, path + ".embedding_constraints");
    if (!IsSparse(f)) {
      Require(constraints.sharding_types_size() == 0,
              path +
                  ".embedding_constraints: set on a dense feature, which has no table; "
                  "remove it");
      continue;
    }
    const auto [owner, fresh] = table_owner.emplace(TableName(f), i);
    if (fresh) continue;
    const protos::FeatureConfig& first = config.feature_configs(owner->second);
    const std::string lead = path + ": feature '" + FeatureName(f) + "' shares table '" +
                             TableName(f) + "' with feature '" + FeatureName(first) + "' (" +
                             FeaturePath(owner->second, first) + ") but ";
    const std::string tail = "; features with the same embedding_name must agree on it";
    Require(EmbeddingDim(f) == EmbeddingDim(first),
            lead + "embedding_dim " + std::to_string(EmbeddingDim(f)) +
                " != " + std::to_string(EmbeddingDim(first)) + tail);
    Require(NumEmbeddings(f) == NumEmbeddings(first),
            lead + "its table size " + std::to_string(NumEmbeddings(f)) +
                " != " + std::to_string(NumEmbeddings(first)) + tail);
    const std::string pooling = EffectivePooling(config, f);
    const std::string first_pooling = EffectivePooling(config, first);
    Require(pooling == first_pooling,
            lead + "pooling \"" + pooling + "\" != \"" + first_pooling + "\"" +
                (IsSequence(f) || IsSequence(first)
                     ? " (a sequence feature is pooled by its pooling_encoder's pooling_type)"
                     : "") +
                tail);
  }
  if (const auto& global = config.train_config().global_embedding_constraints();
      global.sharding_types_size() > 0) {
    CheckedShardingTypes(global, "train_config.global_embedding_constraints");
  }
}

}  // namespace tzrec::config_internal
