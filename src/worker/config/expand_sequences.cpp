// Grouped sequence features (TorchEasyRec's sequence_feature with sequence_name; tzrec/features/
// sequence_feature.py, grouped form): each sub-feature of a sequence_feature becomes a
// sequence_id_feature / sequence_raw_feature named "<sequence_name>__<feature_name>" with the
// group's sequence_length and sequence_delim, in place (config order kept). Its table is the
// sub-feature's embedding_name or "<feature_name>_emb", as upstream's (so "id_2" inside
// "click_50_seq" shares the table of the id feature "id_2"). The fields of a sub-feature that
// have no sequence counterpart are refused by name. See internal.hpp.
#include <string>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

constexpr const char* kSubFg =
    " is a feature-generation field; a sequence_feature sub-feature is read fg-encoded "
    "(fg_mode FG_NONE): remove it";

std::string TableOf(const std::string& embedding_name, const std::string& feature_name) {
  return embedding_name.empty() ? feature_name + "_emb" : embedding_name;
}

protos::FeatureConfig FromId(const protos::SequenceFeature& seq, const protos::IdFeature& id,
                             const std::string& path) {
  Require(!id.has_pooling(), path +
                                 ".pooling: a sequence is pooled by its group's "
                                 "pooling_encoder (pooling_type); remove it");
  Require(!id.has_separator(), path + ".separator" + kSubFg);
  protos::FeatureConfig out;
  auto* s = out.mutable_sequence_id_feature();
  s->set_feature_name(seq.sequence_name() + "__" + id.feature_name());
  s->set_sequence_length(seq.sequence_length());
  s->set_sequence_delim(seq.sequence_delim());
  s->set_embedding_name(TableOf(id.embedding_name(), id.feature_name()));
  s->set_embedding_dim(id.embedding_dim());
  if (id.has_hash_bucket_size()) s->set_hash_bucket_size(id.hash_bucket_size());
  if (id.has_num_buckets()) s->set_num_buckets(id.num_buckets());
  for (const auto& word : id.vocab_list()) s->add_vocab_list(word);
  if (id.has_embedding_constraints()) {
    *s->mutable_embedding_constraints() = id.embedding_constraints();
  }
  return out;
}

protos::FeatureConfig FromRaw(const protos::SequenceFeature& seq, const protos::RawFeature& raw,
                              const std::string& path) {
  Require(!raw.has_pooling(), path +
                                  ".pooling: a sequence is pooled by its group's "
                                  "pooling_encoder (pooling_type); remove it");
  Require(!raw.has_normalizer(), path + ".normalizer" + kSubFg);
  Require(!raw.has_default_value(), path + ".default_value" + kSubFg);
  Require(!raw.has_separator(), path + ".separator" + kSubFg);
  Require(raw.value_dim() == 1, path + ".value_dim: " + std::to_string(raw.value_dim()) +
                                    "; each item of a sequence is one bucket id: remove it");
  protos::FeatureConfig out;
  auto* s = out.mutable_sequence_raw_feature();
  s->set_feature_name(seq.sequence_name() + "__" + raw.feature_name());
  s->set_sequence_length(seq.sequence_length());
  s->set_sequence_delim(seq.sequence_delim());
  s->set_embedding_name(TableOf(raw.embedding_name(), raw.feature_name()));
  s->set_embedding_dim(raw.embedding_dim());
  for (const float b : raw.boundaries()) s->add_boundaries(b);
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
      *expanded.Add() = sub.has_id_feature() ? FromId(seq, sub.id_feature(), sp + ".id_feature")
                                             : FromRaw(seq, sub.raw_feature(), sp + ".raw_feature");
    }
  }
  config->mutable_feature_configs()->Swap(&expanded);
}

}  // namespace tzrec::config_internal
