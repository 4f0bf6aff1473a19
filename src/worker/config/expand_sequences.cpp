// Grouped sequence features (TorchEasyRec's sequence_feature with sequence_name; tzrec/features/
// sequence_feature.py, grouped form): each sub-feature of a sequence_feature becomes a
// sequence_id_feature / sequence_raw_feature named "<sequence_name>__<feature_name>" with the
// group's sequence_length and sequence_delim, in place (config order kept). Its table is the
// sub-feature's embedding_name or "<feature_name>_emb", as upstream's (so "id_2" inside
// "click_50_seq" shares the table of the id feature "id_2"). With fg_mode FG_NORMAL / FG_DAG the
// sub-feature reads the column "<sequence_name>__<input>" of its expression "side:input"
// (upstream's _build_side_inputs) and keeps its feature-generation fields (separator, vocab_dict; a
// raw_feature's default_value). The fields of a sub-feature that have no
// sequence counterpart are refused by name. See internal.hpp.
#include <string>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

constexpr const char* kSubFg =
    " is a feature-generation field, not applied to fg-encoded input (fg_mode FG_NONE, as in "
    "TorchEasyRec): remove it";

std::string TableOf(const std::string& embedding_name, const std::string& feature_name) {
  return embedding_name.empty() ? feature_name + "_emb" : embedding_name;
}

// The expression of a sub-feature's sequence: "side:<sequence_name>__<input>" (FG_NORMAL /
// FG_DAG); empty with FG_NONE, where the column is the feature's name.
std::string SequenceExpression(const protos::SequenceFeature& seq, const std::string& expression,
                               const std::string& path, bool runs_fg) {
  if (!runs_fg) return "";
  Require(!expression.empty(),
          path +
              ".expression: empty; with fg_mode FG_NORMAL / FG_DAG name the "
              "input, e.g. \"item:item_id\" (column <sequence_name>__item_id)");
  const std::size_t colon = expression.rfind(':');
  const std::string side = colon == std::string::npos ? "" : expression.substr(0, colon + 1);
  const std::string input = colon == std::string::npos ? expression : expression.substr(colon + 1);
  return side + seq.sequence_name() + "__" + input;
}

protos::FeatureConfig FromId(const protos::SequenceFeature& seq, const protos::IdFeature& id,
                             const std::string& path, bool runs_fg) {
  Require(!id.has_pooling(), path +
                                 ".pooling: a sequence is pooled by its group's "
                                 "pooling_encoder (pooling_type); remove it");
  Require(runs_fg || !id.has_separator(), path + ".separator" + kSubFg);
  Require(!id.weighted(),
          path + ".weighted: weighted sequence items are not implemented; remove it");
  Require(!id.has_value_dim() || id.value_dim() == 1,
          path + ".value_dim: " + std::to_string(id.value_dim()) +
              "; a sequence item is one id (TorchEasyRec's SequenceIdFeature asserts value_dim 1)");
  Require(!id.has_vocab_file(), path +
                                    ".vocab_file: TorchEasyRec's SequenceIdFeature builds no "
                                    "vocabulary from a vocab_file (its fg config carries "
                                    "vocab_list / vocab_dict only); list the tokens in vocab_dict");
  Require(!id.has_default_bucketize_value(),
          path +
              ".default_bucketize_value: TorchEasyRec's SequenceIdFeature ignores it (unknown "
              "values are 1, the default value 0); remove it");
  protos::FeatureConfig out;
  auto* s = out.mutable_sequence_id_feature();
  s->set_feature_name(seq.sequence_name() + "__" + id.feature_name());
  const std::string expression = SequenceExpression(seq, id.expression(), path, runs_fg);
  if (!expression.empty()) s->set_expression(expression);
  s->set_sequence_length(seq.sequence_length());
  s->set_sequence_delim(seq.sequence_delim());
  s->set_embedding_name(TableOf(id.embedding_name(), id.feature_name()));
  s->set_embedding_dim(id.embedding_dim());
  if (id.has_hash_bucket_size()) s->set_hash_bucket_size(id.hash_bucket_size());
  if (id.has_num_buckets()) s->set_num_buckets(id.num_buckets());
  for (const auto& word : id.vocab_list()) s->add_vocab_list(word);
  for (const auto& entry : id.vocab_dict()) *s->add_vocab_dict() = entry;
  if (id.has_separator()) s->set_separator(id.separator());
  if (id.has_embedding_constraints()) {
    *s->mutable_embedding_constraints() = id.embedding_constraints();
  }
  return out;
}

protos::FeatureConfig FromRaw(const protos::SequenceFeature& seq, const protos::RawFeature& raw,
                              const std::string& path, bool runs_fg) {
  Require(!raw.has_pooling(), path +
                                  ".pooling: a sequence is pooled by its group's "
                                  "pooling_encoder (pooling_type); remove it");
  Require(!raw.has_normalizer(), path +
                                     ".normalizer: not implemented for sequence items; "
                                     "normalize the values offline or choose boundaries for them");
  Require(runs_fg || !raw.has_default_value(), path + ".default_value" + kSubFg);
  Require(!raw.has_separator(), path +
                                    ".separator: splits the values of a value_dim > 1 item, and a "
                                    "sequence item here is one value: remove it");
  Require(raw.value_dim() == 1, path + ".value_dim: " + std::to_string(raw.value_dim()) +
                                    "; each item of a sequence is one bucket id: remove it");
  protos::FeatureConfig out;
  auto* s = out.mutable_sequence_raw_feature();
  s->set_feature_name(seq.sequence_name() + "__" + raw.feature_name());
  const std::string expression = SequenceExpression(seq, raw.expression(), path, runs_fg);
  if (!expression.empty()) s->set_expression(expression);
  s->set_sequence_length(seq.sequence_length());
  s->set_sequence_delim(seq.sequence_delim());
  s->set_embedding_name(TableOf(raw.embedding_name(), raw.feature_name()));
  s->set_embedding_dim(raw.embedding_dim());
  for (const float b : raw.boundaries()) s->add_boundaries(b);
  if (raw.has_default_value()) s->set_default_value(raw.default_value());
  if (raw.has_embedding_constraints()) {
    *s->mutable_embedding_constraints() = raw.embedding_constraints();
  }
  return out;
}

}  // namespace

void ExpandGroupedSequences(PipelineConfig* config, std::vector<std::string>* warnings) {
  bool any = false;
  for (const auto& f : config->feature_configs()) any = any || f.has_sequence_feature();
  if (!any) return;
  const bool runs_fg = RunsFeatureGeneration(*config);
  google::protobuf::RepeatedPtrField<protos::FeatureConfig> expanded;
  for (int i = 0; i < config->feature_configs_size(); ++i) {
    const protos::FeatureConfig& f = config->feature_configs(i);
    if (!f.has_sequence_feature()) {
      *expanded.Add() = f;
      continue;
    }
    const protos::SequenceFeature& seq = f.sequence_feature();
    const std::string path = "feature_configs[" + std::to_string(i) + "].sequence_feature";
    Require(!seq.sequence_name().empty(),
            path +
                ".sequence_name: empty; name the sequence (its columns are "
                "<sequence_name>__<feature_name>)");
    Require(seq.sequence_length() > 0,
            path + ".sequence_length: must be > 0 (the items kept of each sequence), got 0");
    Require(
        !seq.sequence_delim().empty(),
        path + ".sequence_delim: empty; give the item separator (TorchEasyRec's default \";\")");
    Require(seq.features_size() > 0, path + ".features: empty (sequence '" + seq.sequence_name() +
                                         "'); list its sub-features");
    if (seq.has_sequence_pk()) {
      warnings->push_back(path + ".sequence_pk: no effect (" + seq.sequence_pk() +
                          "): the serving primary key of TorchEasyRec's online serving");
    }
    for (int k = 0; k < seq.features_size(); ++k) {
      const protos::SeqFeatureConfig& sub = seq.features(k);
      const std::string sp = path + ".features[" + std::to_string(k) + "]";
      Require(sub.has_id_feature() || sub.has_raw_feature(),
              sp + ": empty; set id_feature or raw_feature");
      *expanded.Add() = sub.has_id_feature()
                            ? FromId(seq, sub.id_feature(), sp + ".id_feature", runs_fg)
                            : FromRaw(seq, sub.raw_feature(), sp + ".raw_feature", runs_fg);
    }
  }
  config->mutable_feature_configs()->Swap(&expanded);
}

}  // namespace tzrec::config_internal
