// Effective values of the config messages and the per-feature helpers
// (include/tzrec/config/config.hpp).
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {

std::uint64_t Seed(const PipelineConfig& config) {
  return config.train_config().has_seed() ? config.train_config().seed() : 42;
}

std::int64_t NumEpochs(const PipelineConfig& config) {
  const auto& t = config.train_config();
  if (t.num_steps() > 0) return 0;
  return t.num_epochs() > 0 ? t.num_epochs() : 1;
}

std::int64_t EvalBatchSize(const PipelineConfig& config) {
  const auto& d = config.data_config();
  return d.eval_batch_size() > 0 ? d.eval_batch_size() : d.batch_size();
}

bool RunsFeatureGeneration(const PipelineConfig& config) {
  return config.data_config().fg_mode() == protos::FG_NORMAL ||
         config.data_config().fg_mode() == protos::FG_DAG;
}

std::string GroupedAucKey(const PipelineConfig& config) {
  for (const auto& metric : config.model_config().metrics()) {
    if (metric.has_grouped_auc()) return metric.grouped_auc().grouping_key();
  }
  return "";
}

std::int64_t AucThresholds(const PipelineConfig& config) {
  for (const auto& metric : config.model_config().metrics()) {
    if (metric.has_auc()) return metric.auc().thresholds();
  }
  return 0;
}

std::string ModelType(const PipelineConfig& config) {
  switch (config.model_config().model_case()) {
    case protos::ModelConfig::kDlrm:
      return "dlrm";
    case protos::ModelConfig::kDeepfm:
      return "deepfm";
    case protos::ModelConfig::kMultiTower:
      return "multi_tower";
    case protos::ModelConfig::kMultiTowerDin:
      return "multi_tower_din";
    case protos::ModelConfig::kWideAndDeep:
      return "wide_and_deep";
    case protos::ModelConfig::kDcnV1:
      return "dcn_v1";
    case protos::ModelConfig::kDcnV2:
      return "dcn_v2";
    case protos::ModelConfig::kSimpleMultiTask:
      return "simple_multi_task";
    case protos::ModelConfig::kMmoe:
      return "mmoe";
    case protos::ModelConfig::kDbmtl:
      return "dbmtl";
    case protos::ModelConfig::kPle:
      return "ple";
    case protos::ModelConfig::kMaskNet:
      return "mask_net";
    case protos::ModelConfig::kXdeepfm:
      return "xdeepfm";
    case protos::ModelConfig::kWukong:
      return "wukong";
    default:
      return "";
  }
}

namespace {

// Calls fn(message) with the feature's set oneof member (an IdFeature, RawFeature,
// SequenceIdFeature or SequenceRawFeature; RawFeature's default instance when none is set).
template <typename Fn>
decltype(auto) Visit(const protos::FeatureConfig& f, Fn&& fn) {
  switch (f.feature_case()) {
    case protos::FeatureConfig::kIdFeature:
      return fn(f.id_feature());
    case protos::FeatureConfig::kSequenceIdFeature:
      return fn(f.sequence_id_feature());
    case protos::FeatureConfig::kSequenceRawFeature:
      return fn(f.sequence_raw_feature());
    case protos::FeatureConfig::kComboFeature:
      return fn(f.combo_feature());
    case protos::FeatureConfig::kLookupFeature:
      return fn(f.lookup_feature());
    case protos::FeatureConfig::kMatchFeature:
      return fn(f.match_feature());
    case protos::FeatureConfig::kExprFeature:
      return fn(f.expr_feature());
    default:
      return fn(f.raw_feature());
  }
}

// A lookup_feature's / match_feature's output: ids (a table) or a dense value.
template <typename M>
bool KvSparse(const M& m) {
  return m.hash_bucket_size() > 0 || m.num_buckets() > 0 || m.vocab_list_size() > 0 ||
         m.vocab_dict_size() > 0 || m.boundaries_size() > 0;
}

// Table rows of a lookup_feature / match_feature (TorchEasyRec's num_embeddings).
template <typename M>
std::int64_t KvTableRows(const M& m) {
  if (m.hash_bucket_size() > 0) return static_cast<std::int64_t>(m.hash_bucket_size());
  if (m.num_buckets() > 0) return static_cast<std::int64_t>(m.num_buckets());
  if (m.vocab_list_size() > 0) return m.vocab_list_size() + 2;
  if (m.vocab_dict_size() > 0) {
    std::uint64_t top = 0;
    for (const auto& entry : m.vocab_dict()) top = std::max(top, entry.value());
    return static_cast<std::int64_t>(top) + 1;
  }
  return m.boundaries_size() > 0 ? m.boundaries_size() + 1 : 0;
}

template <typename M>
std::int64_t IdTableRows(const M& id) {
  if (id.hash_bucket_size() > 0) return static_cast<std::int64_t>(id.hash_bucket_size());
  if (id.num_buckets() > 0) return static_cast<std::int64_t>(id.num_buckets());
  if (id.vocab_list_size() > 0) return id.vocab_list_size() + 2;
  return 0;
}

}  // namespace

protos::IdFeature SequenceItemFeature(const protos::SequenceIdFeature& s) {
  protos::IdFeature id;
  id.set_feature_name(s.feature_name());
  if (s.has_hash_bucket_size()) id.set_hash_bucket_size(s.hash_bucket_size());
  if (s.has_num_buckets()) id.set_num_buckets(s.num_buckets());
  for (const auto& word : s.vocab_list()) id.add_vocab_list(word);
  for (const auto& entry : s.vocab_dict()) *id.add_vocab_dict() = entry;
  id.set_separator(s.separator());
  return id;
}

const std::string& FeatureName(const protos::FeatureConfig& f) {
  return Visit(f, [](const auto& m) -> const std::string& { return m.feature_name(); });
}

bool IsIdFeature(const protos::FeatureConfig& f) {
  return f.has_id_feature();
}

bool IsSequence(const protos::FeatureConfig& f) {
  return f.has_sequence_id_feature() || f.has_sequence_raw_feature();
}

std::string SeqEncoderKind(const protos::SeqEncoderConfig& encoder) {
  const auto* oneof = encoder.GetDescriptor()->FindOneofByName("seq_module");
  const auto* field = encoder.GetReflection()->GetOneofFieldDescriptor(encoder, oneof);
  return field == nullptr ? "" : field->name();
}

const std::string* AttentionInput(const protos::SeqEncoderConfig& encoder) {
  if (encoder.has_din_encoder()) return &encoder.din_encoder().input();
  if (encoder.has_simple_attention()) return &encoder.simple_attention().input();
  if (encoder.has_multi_window_din_encoder()) return &encoder.multi_window_din_encoder().input();
  return nullptr;
}

bool IsSparse(const protos::FeatureConfig& f) {
  if (f.has_id_feature() || f.has_sequence_id_feature() || f.has_combo_feature()) return true;
  if (f.has_sequence_raw_feature()) return f.sequence_raw_feature().boundaries_size() > 0;
  if (f.has_lookup_feature()) return KvSparse(f.lookup_feature());
  if (f.has_match_feature()) return KvSparse(f.match_feature());
  if (f.has_expr_feature()) return f.expr_feature().boundaries_size() > 0;
  return f.raw_feature().boundaries_size() > 0;
}

std::int64_t EmbeddingDim(const protos::FeatureConfig& f) {
  if (!IsSparse(f)) return 0;
  return Visit(f, [](const auto& m) -> std::int64_t { return m.embedding_dim(); });
}

std::int64_t NumEmbeddings(const protos::FeatureConfig& f) {
  if (f.has_id_feature()) {
    const protos::IdFeature& id = f.id_feature();
    if (id.vocab_list_size() > 0 || id.vocab_dict_size() > 0) return VocabRows(id);
    return IdTableRows(id);
  }
  if (f.has_sequence_id_feature()) {
    const protos::IdFeature id = SequenceItemFeature(f.sequence_id_feature());
    if (id.vocab_list_size() > 0 || id.vocab_dict_size() > 0) return VocabRows(id);
    return IdTableRows(id);
  }
  if (f.has_combo_feature()) return static_cast<std::int64_t>(f.combo_feature().hash_bucket_size());
  if (f.has_lookup_feature()) return KvTableRows(f.lookup_feature());
  if (f.has_match_feature()) return KvTableRows(f.match_feature());
  if (f.has_expr_feature()) {
    const int n = f.expr_feature().boundaries_size();
    return n > 0 ? n + 1 : 0;
  }
  const int n = f.has_sequence_raw_feature() ? f.sequence_raw_feature().boundaries_size()
                                             : f.raw_feature().boundaries_size();
  return n > 0 ? n + 1 : 0;
}

std::string TableName(const protos::FeatureConfig& f) {
  const std::string& name =
      Visit(f, [](const auto& m) -> const std::string& { return m.embedding_name(); });
  return name.empty() ? FeatureName(f) + "_emb" : name;
}

const std::string& Pooling(const protos::FeatureConfig& f) {
  static const std::string kSum = "sum";
  if (f.has_id_feature()) return f.id_feature().pooling();
  if (f.has_raw_feature()) return f.raw_feature().pooling();
  if (f.has_combo_feature()) return f.combo_feature().pooling();
  if (f.has_lookup_feature()) return f.lookup_feature().pooling();
  if (f.has_match_feature()) return f.match_feature().pooling();
  if (f.has_expr_feature()) return f.expr_feature().pooling();
  return kSum;
}

namespace {

// The pooling_type of the pooling_encoder whose sequence group lists sequence feature `f`.
std::optional<std::string> EncoderPooling(const PipelineConfig& config,
                                          const protos::FeatureConfig& f) {
  for (const auto& group : config.model_config().feature_groups()) {
    for (const auto& encoder : group.sequence_encoders()) {
      if (!encoder.has_pooling_encoder()) continue;
      for (const auto& seq : group.sequence_groups()) {
        if (seq.group_name() != encoder.pooling_encoder().input()) continue;
        for (const auto& name : seq.feature_names()) {
          if (name == FeatureName(f)) return encoder.pooling_encoder().pooling_type();
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string EffectivePooling(const PipelineConfig& config, const protos::FeatureConfig& f) {
  if (!IsSequence(f)) return Pooling(f);
  if (auto p = EncoderPooling(config, f)) return *p;
  // Not pooled (unread, or read per item by an attention encoder): the table's pooling.
  for (const auto& other : config.feature_configs()) {
    if (!IsSparse(other) || TableName(other) != TableName(f) ||
        FeatureName(other) == FeatureName(f))
      continue;
    if (!IsSequence(other)) return Pooling(other);
    if (auto p = EncoderPooling(config, other)) return *p;
  }
  return "sum";
}

std::int64_t ValueDim(const protos::FeatureConfig& f) {
  if (f.has_lookup_feature()) {  // numbers: value_dim > 1 splits the found value
    const auto& l = f.lookup_feature();
    return l.value_dim() > 1 ? l.value_dim() : 1;
  }
  return f.has_raw_feature() ? f.raw_feature().value_dim() : 1;
}

std::int64_t SequenceLength(const protos::FeatureConfig& f) {
  if (f.has_sequence_id_feature()) return f.sequence_id_feature().sequence_length();
  if (f.has_sequence_raw_feature()) return f.sequence_raw_feature().sequence_length();
  return 0;
}

const std::string& SequenceDelim(const protos::FeatureConfig& f) {
  static const std::string kNone;
  if (f.has_sequence_id_feature()) return f.sequence_id_feature().sequence_delim();
  if (f.has_sequence_raw_feature()) return f.sequence_raw_feature().sequence_delim();
  return kNone;
}

const protos::ParameterConstraints& EmbeddingConstraints(const protos::FeatureConfig& f) {
  if (f.has_id_feature()) return f.id_feature().embedding_constraints();
  if (f.has_sequence_id_feature()) return f.sequence_id_feature().embedding_constraints();
  if (f.has_sequence_raw_feature()) return f.sequence_raw_feature().embedding_constraints();
  if (f.has_combo_feature()) return f.combo_feature().embedding_constraints();
  if (f.has_lookup_feature()) return f.lookup_feature().embedding_constraints();
  if (f.has_match_feature()) return f.match_feature().embedding_constraints();
  if (f.has_expr_feature()) return f.expr_feature().embedding_constraints();
  return f.raw_feature().embedding_constraints();
}

namespace {

std::string ColumnOf(const std::string& expression) {
  const std::size_t colon = expression.rfind(':');
  return colon == std::string::npos ? expression : expression.substr(colon + 1);
}

}  // namespace

std::string InputColumn(const PipelineConfig& config, const protos::FeatureConfig& f) {
  return InputColumns(config, f).front();
}

std::vector<std::string> InputColumns(const PipelineConfig& config,
                                      const protos::FeatureConfig& f) {
  if (!RunsFeatureGeneration(config)) return {FeatureName(f)};
  if (f.has_combo_feature()) {
    std::vector<std::string> columns;
    for (const std::string& e : f.combo_feature().expression()) columns.push_back(ColumnOf(e));
    if (columns.empty()) columns.push_back(FeatureName(f));
    return columns;
  }
  if (f.has_lookup_feature()) {
    return {ColumnOf(f.lookup_feature().map()), ColumnOf(f.lookup_feature().key())};
  }
  if (f.has_match_feature()) {
    const auto& m = f.match_feature();
    std::vector<std::string> columns{ColumnOf(m.nested_map())};
    for (const std::string* k : {&m.pkey(), &m.skey()}) {
      if (*k != "ALL") columns.push_back(ColumnOf(*k));
    }
    return columns;
  }
  if (f.has_expr_feature()) {
    std::vector<std::string> columns;
    for (const std::string& v : f.expr_feature().variables()) columns.push_back(ColumnOf(v));
    if (columns.empty()) columns.push_back(FeatureName(f));
    return columns;
  }
  const std::string& expression = Visit(f, [](const auto& m) -> const std::string& {
    using M = std::decay_t<decltype(m)>;
    if constexpr (std::is_same_v<M, protos::ComboFeature> ||
                  std::is_same_v<M, protos::LookupFeature> ||
                  std::is_same_v<M, protos::MatchFeature> ||
                  std::is_same_v<M, protos::ExprFeature>) {
      return m.feature_name();  // not reached: multi-input features are handled above
    } else {
      return m.expression();
    }
  });
  if (expression.empty()) return {FeatureName(f)};
  return {ColumnOf(expression)};
}

std::vector<ShardingType> ShardingTypes(const protos::ParameterConstraints& constraints) {
  std::vector<ShardingType> types;
  for (const std::string& name : constraints.sharding_types()) {
    try {
      types.push_back(ParseShardingType(name));
    } catch (const std::invalid_argument& error) {
      throw ConfigError(error.what());
    }
  }
  return types;
}

const protos::FeatureConfig& Feature(const PipelineConfig& config, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& f : config.feature_configs()) {
    if (FeatureName(f) == name) return f;
    names.push_back(FeatureName(f));
  }
  throw ConfigError("no feature '" + name + "' in feature_configs" +
                    (names.empty()
                         ? std::string()
                         : " (did you mean '" + tzrun::base::ClosestName(name, names) +
                               "'?); defined features: " + tzrun::base::Join(names, ", ")));
}

}  // namespace tzrec
