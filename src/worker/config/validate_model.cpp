// Validation of model_config: groups, towers and the model's own rules
// (include/tzrec/config/config.hpp).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/config/mlp_activation.hpp"
#include "tzrun/base/strings.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {

// tzrec.protos.MLP: the same rules as ValidateMlpOptions (src/worker/train/mlp_options.cpp), so a
// bad MLP is refused when the config is read.
void ValidateMlp(const protos::MLP& mlp, const std::string& path, bool need_units) {
  Require(!need_units || mlp.hidden_units_size() > 0,
          path + ".hidden_units: empty; give at least one layer width, e.g. [64, 32]");
  for (int i = 0; i < mlp.hidden_units_size(); ++i) {
    Require(mlp.hidden_units(i) > 0,
            path + ".hidden_units[" + std::to_string(i) + "]: must be > 0, got 0 (a layer width)");
  }
  const int d = mlp.dropout_ratio_size();
  Require(d <= 1 || d == mlp.hidden_units_size(),
          path + ".dropout_ratio: has " + std::to_string(d) + " values but hidden_units has " +
              std::to_string(mlp.hidden_units_size()) +
              " layers; give none, one for every layer, or one per layer");
  for (int i = 0; i < d; ++i) {
    const double p = mlp.dropout_ratio(i);
    Require(p >= 0 && p < 1, path + ".dropout_ratio[" + std::to_string(i) +
                                 "]: must be in [0, 1), got " + std::to_string(p));
  }
  Require(!(mlp.use_bn() && mlp.use_ln()),
          path + ".use_bn and " + path +
              ".use_ln: both true; TorchEasyRec's Perceptron allows one norm per layer, set one "
              "of them to false");
  ValidateMlpActivation(
      mlp.activation(),
      std::vector<std::int64_t>(mlp.hidden_units().begin(), mlp.hidden_units().end()), path);
}

namespace {

class ModelChecks {
 public:
  explicit ModelChecks(const PipelineConfig& config) : config_(config) {
    for (const auto& f : config.feature_configs()) features_[FeatureName(f)] = &f;
  }
  void Run();

 private:
  const protos::FeatureGroupConfig& Group(const std::string& name, const std::string& path) {
    const auto it = groups_.find(name);
    Require(it != groups_.end(), path + ": feature group '" + name +
                                     "' is not defined in model_config.feature_groups" +
                                     Suggest(name, group_names_) +
                                     "; defined groups: " + tzrun::base::Join(group_names_, ", "));
    return *it->second;
  }
  const protos::FeatureConfig& F(const std::string& name) { return *features_.at(name); }
  std::int64_t SharedDim(const protos::FeatureGroupConfig& group, const std::string& path,
                         const std::string& why);
  void Groups();
  void SequenceGroups(const protos::FeatureGroupConfig& group, const std::string& path);
  void AttentionEncoder(const protos::SeqGroupConfig& seq, const std::string& path);
  void MultiWindowDin(const protos::MultiWindowDINEncoder& encoder, const std::string& path);
  void AttentionFeatures(const google::protobuf::RepeatedPtrField<std::string>& names,
                         const std::string& group_name, const std::string& path);
  void NoWideGroups(const std::string& path);
  void SingleTaskLossesAndMetrics();
  void MultiTowerDin();
  void Dlrm();
  void DeepFm();
  void MultiTower();

  const PipelineConfig& config_;
  std::map<std::string, const protos::FeatureConfig*> features_;
  std::map<std::string, const protos::FeatureGroupConfig*> groups_;
  std::vector<std::string> group_names_;
  std::map<std::string, std::string> sequence_pooling_;  // sequence feature → pooling_type
};

std::int64_t ModelChecks::SharedDim(const protos::FeatureGroupConfig& group,
                                    const std::string& path, const std::string& why) {
  std::int64_t dim = 0;
  std::string first;
  for (const std::string& name : group.feature_names()) {
    const protos::FeatureConfig& f = F(name);
    if (!IsSparse(f)) continue;
    if (dim == 0) {
      dim = EmbeddingDim(f);
      first = name;
    }
    Require(EmbeddingDim(f) == dim, path + ": sparse features of group '" + group.group_name() +
                                        "' must share one " + "embedding_dim (" + why + "), but '" +
                                        first + "' has " + std::to_string(dim) + " and '" + name +
                                        "' has " + std::to_string(EmbeddingDim(f)) +
                                        "; set every embedding_dim of the group to the same value");
  }
  return dim;
}

void ModelChecks::Groups() {
  const protos::ModelConfig& model = config_.model_config();
  Require(model.feature_groups_size() > 0,
          "model_config.feature_groups: empty; define the groups the model reads (e.g. \"dense\" "
          "and \"sparse\" for dlrm)");
  std::vector<std::string> feature_names;
  for (const auto& [name, f] : features_) feature_names.push_back(name);
  for (int g = 0; g < model.feature_groups_size(); ++g) {
    const protos::FeatureGroupConfig& group = model.feature_groups(g);
    const std::string path = "model_config.feature_groups[" + std::to_string(g) + "]";
    Require(!group.group_name().empty(), path + ".group_name: empty; every group needs a name");
    Require(
        groups_.emplace(group.group_name(), &group).second,
        path + ".group_name: '" + group.group_name() + "' is defined twice; names must be unique");
    group_names_.push_back(group.group_name());
    const bool din = config_.model_config().has_multi_tower_din();
    const bool sequence = group.group_type() == protos::SEQUENCE && din;
    Require(group.group_type() == protos::DEEP || group.group_type() == protos::WIDE || sequence,
            path + ".group_type: " + protos::FeatureGroupType_Name(group.group_type()) +
                " groups are sequence groups, which tzrec_train reads only in multi_tower_din "
                "(SEQUENCE); use DEEP or WIDE");
    Require(group.feature_names_size() > 0 || group.sequence_encoders_size() > 0,
            path + ".feature_names: empty (group '" + group.group_name() + "'); list its features");
    std::set<std::string> seen;
    for (int k = 0; k < group.feature_names_size(); ++k) {
      const std::string& name = group.feature_names(k);
      const std::string item = path + ".feature_names[" + std::to_string(k) + "]";
      Require(features_.count(name) == 1,
              item + ": unknown feature '" + name + "' in group '" + group.group_name() +
                  "'; define it in feature_configs" + Suggest(name, feature_names));
      Require(seen.insert(name).second,
              item + ": feature '" + name + "' listed twice in group '" + group.group_name() + "'");
      Require(sequence || !IsSequence(F(name)),
              item + ": '" + name +
                  "' is a sequence feature; list it in a sequence_groups entry "
                  "of the group and pool it with a sequence_encoders pooling_encoder");
    }
    if (sequence) {
      Require(group.sequence_groups_size() == 0 && group.sequence_encoders_size() == 0,
              path +
                  ": a SEQUENCE group has no sequence_groups / sequence_encoders; list its "
                  "query and sequence features in feature_names");
      AttentionFeatures(group.feature_names(), group.group_name(), path);
    }
    SequenceGroups(group, path);
  }
}

// A DEEP group's sequence_groups and their pooling_encoders (TorchEasyRec's EmbeddingGroup: each
// encoder's output is appended to the group's features). Every sequence group is read by an
// encoder, and a sequence feature has one pooling_type (its table pools it).
void ModelChecks::SequenceGroups(const protos::FeatureGroupConfig& group, const std::string& path) {
  if (group.sequence_groups_size() == 0 && group.sequence_encoders_size() == 0) return;
  using MC = protos::ModelConfig;
  static const std::set<int> kFlatModels = {
      MC::kMultiTower,      MC::kDcnV1, MC::kDcnV2, MC::kMaskNet,
      MC::kSimpleMultiTask, MC::kMmoe,  MC::kDbmtl, MC::kPle};
  Require(kFlatModels.count(config_.model_config().model_case()) == 1,
          path + ".sequence_groups: model_config." + ModelType(config_) +
              " does not read sequence encoders in tzrec_train; they are implemented for "
              "multi_tower, dcn_v1, dcn_v2, mask_net, simple_multi_task, mmoe, dbmtl and ple");
  Require(group.group_type() == protos::DEEP,
          path + ".sequence_groups: set on a " + protos::FeatureGroupType_Name(group.group_type()) +
              " group ('" + group.group_name() + "'); sequence groups belong to DEEP groups");
  std::map<std::string, const protos::SeqGroupConfig*> seqs;
  std::vector<std::string> seq_names;
  for (int s = 0; s < group.sequence_groups_size(); ++s) {
    const auto& seq = group.sequence_groups(s);
    const std::string sp = path + ".sequence_groups[" + std::to_string(s) + "]";
    Require(!seq.group_name().empty(),
            sp + ".group_name: empty; every sequence group needs a name");
    Require(seqs.emplace(seq.group_name(), &seq).second, sp + ".group_name: '" + seq.group_name() +
                                                             "' is defined twice in group '" +
                                                             group.group_name() + "'");
    seq_names.push_back(seq.group_name());
    bool has_sequence = false;
    for (const std::string& name : seq.feature_names()) {
      Require(features_.count(name) == 1,
              sp + ".feature_names: unknown feature '" + name + "'; define it in feature_configs");
      has_sequence = has_sequence || IsSequence(F(name));
    }
    Require(has_sequence, sp + ": sequence group '" + seq.group_name() +
                              "' has no sequence feature (sequence_id_feature or "
                              "sequence_raw_feature); add one or remove the group");
  }
  std::set<std::string> read;
  for (int e = 0; e < group.sequence_encoders_size(); ++e) {
    const auto& encoder = group.sequence_encoders(e);
    const std::string ep = path + ".sequence_encoders[" + std::to_string(e) + "]";
    if (const std::string* input = AttentionInput(encoder)) {
      const std::string kind = SeqEncoderKind(encoder);
      const auto it = seqs.find(*input);
      Require(it != seqs.end(), ep + "." + kind + ".input: '" + *input +
                                    "' is not a sequence group of group '" + group.group_name() +
                                    "'" + Suggest(*input, seq_names));
      read.insert(*input);
      AttentionEncoder(*it->second, ep + "." + kind);
      if (encoder.has_multi_window_din_encoder())
        MultiWindowDin(encoder.multi_window_din_encoder(), ep + "." + kind);
      continue;
    }
    Require(encoder.has_pooling_encoder(),
            ep + ": empty; set pooling_encoder, din_encoder, simple_attention or "
                 "multi_window_din_encoder { input: ... }");
    const auto& pooling = encoder.pooling_encoder();
    Require(pooling.pooling_type() == "sum" || pooling.pooling_type() == "mean",
            ep + ".pooling_encoder.pooling_type: \"" + pooling.pooling_type() +
                "\"; use \"sum\" or \"mean\"");
    const auto it = seqs.find(pooling.input());
    Require(it != seqs.end(), ep + ".pooling_encoder.input: '" + pooling.input() +
                                  "' is not a sequence group of group '" + group.group_name() +
                                  "'" + Suggest(pooling.input(), seq_names));
    read.insert(pooling.input());
    for (const std::string& name : it->second->feature_names()) {
      if (!IsSequence(F(name))) continue;
      const auto [known, fresh] = sequence_pooling_.emplace(name, pooling.pooling_type());
      Require(fresh || known->second == pooling.pooling_type(),
              ep + ".pooling_encoder.pooling_type: \"" + pooling.pooling_type() +
                  "\" for sequence feature '" + name +
                  "', which another pooling_encoder pools "
                  "with \"" +
                  known->second +
                  "\"; a sequence feature has one pooling: use one "
                  "pooling_type");
    }
  }
  for (const std::string& name : seq_names) {
    Require(read.count(name) == 1, path + ".sequence_groups: '" + name +
                                       "' is read by no sequence_encoders entry; add a "
                                       "pooling_encoder { input: \"" +
                                       name + "\" } or remove the group");
  }
}

// A din_encoder / simple_attention over sequence group `seq` (TorchEasyRec's DINEncoder /
// SimpleAttention: query = the group's non-sequence features, sequence = its sequence features
// side by side, which must therefore have one sequence_length). multi_tower only: the model that
// reads the unpooled per-item embeddings (src/worker/train/model_parts.hpp GroupInput).
void ModelChecks::AttentionEncoder(const protos::SeqGroupConfig& seq, const std::string& path) {
  Require(config_.model_config().model_case() == protos::ModelConfig::kMultiTower,
          path + ": model_config." + ModelType(config_) +
              " does not read attention sequence encoders in tzrec_train; they are implemented "
              "for multi_tower (use a pooling_encoder in the other models)");
  AttentionFeatures(seq.feature_names(), seq.group_name(), path);
}

// A multi_window_din_encoder's attn_mlp (required) and windows_len: TorchEasyRec sums the weighted
// items of each window, from the sequence's start; an empty list fails in torch, a window of 0
// items is refused here.
void ModelChecks::MultiWindowDin(const protos::MultiWindowDINEncoder& encoder,
                                 const std::string& path) {
  Require(encoder.windows_len_size() > 0,
          path +
              ".windows_len: empty; give the windows' lengths in items, from the "
              "sequence's start, e.g. windows_len: [2, 4, 8]");
  for (int k = 0; k < encoder.windows_len_size(); ++k) {
    Require(encoder.windows_len(k) > 0,
            path + ".windows_len[" + std::to_string(k) +
                "]: 0; every window needs at least 1 item: remove it or give it a length");
  }
  ValidateMlp(encoder.attn_mlp(), path + ".attn_mlp", true);
}

// The features of an attention input (a sequence group, or multi_tower_din's SEQUENCE group).
void ModelChecks::AttentionFeatures(const google::protobuf::RepeatedPtrField<std::string>& names,
                                    const std::string& group_name, const std::string& path) {
  bool has_query = false;
  std::int64_t length = 0;
  std::string first;
  for (const std::string& name : names) {
    if (!IsSequence(F(name))) {
      has_query = true;
      continue;
    }
    if (length == 0) {
      length = SequenceLength(F(name));
      first = name;
    }
    Require(SequenceLength(F(name)) == length,
            path + ": sequence features '" + first + "' (sequence_length " +
                std::to_string(length) + ") and '" + name + "' (sequence_length " +
                std::to_string(SequenceLength(F(name))) + ") of sequence group '" + group_name +
                "' are concatenated per item; give them one sequence_length");
  }
  Require(has_query, path + ": sequence group '" + group_name +
                         "' has no query feature (a non-sequence feature such as the target "
                         "item's id); add one to its feature_names");
}

// A model without wide_embedding_dim reads every group through its features' own tables.
// TorchEasyRec would embed a WIDE group through separate "<table>_wide" tables of dim 4 (and
// refuse its dense features); tzrec_train builds wide tables only for deepfm, wide_and_deep and
// xdeepfm, so a WIDE group elsewhere is refused rather than read as DEEP.
void ModelChecks::NoWideGroups(const std::string& path) {
  for (const auto& g : config_.model_config().feature_groups()) {
    Require(g.group_type() != protos::WIDE,
            path + ": group '" + g.group_name() +
                "' has group_type WIDE; this model reads DEEP groups only (TorchEasyRec would "
                "give a WIDE group its own '<table>_wide' embeddings of dim 4, which tzrec_train "
                "builds only for deepfm, wide_and_deep and xdeepfm): set group_type: DEEP");
  }
}

// TorchEasyRec's dlrm.py: group "sparse" (one embedding_dim); group "dense" optional (without
// it there is no dense_mlp and the interaction takes the sparse features alone).
void ModelChecks::Dlrm() {
  const protos::DLRM& dlrm = config_.model_config().dlrm();
  const std::string path = "model_config.dlrm";
  NoWideGroups(path);
  const auto& sparse = Group("sparse", path + " (group \"sparse\")");
  for (const std::string& name : sparse.feature_names()) {
    Require(IsSparse(F(name)), path + ": group \"sparse\" holds '" + name +
                                   "', a dense raw feature; move it to group \"dense\" (or give "
                                   "it boundaries and an embedding_dim)");
  }
  const std::int64_t dim = SharedDim(sparse, path, "DLRM's interaction takes dot products");
  ValidateMlp(dlrm.final(), path + ".final", false);
  if (groups_.count("dense") == 0) {
    Require(!dlrm.has_dense_mlp(),
            path +
                ".dense_mlp: set, but there is no feature group \"dense\" for it to read; "
                "add the group or remove dense_mlp");
    Require(sparse.feature_names_size() > 1 || dlrm.arch_with_sparse(),
            path +
                ": without a \"dense\" group, one sparse feature and arch_with_sparse: false "
                "leave final no input; add sparse features or set arch_with_sparse: true");
    return;
  }
  for (const std::string& name : groups_.at("dense")->feature_names()) {
    Require(!IsSparse(F(name)), path + ": group \"dense\" holds '" + name +
                                    "', a sparse feature (an id feature or a raw feature with "
                                    "boundaries); move it to group \"sparse\"");
  }
  ValidateMlp(dlrm.dense_mlp(), path + ".dense_mlp", true);
  const std::int64_t last = dlrm.dense_mlp().hidden_units(dlrm.dense_mlp().hidden_units_size() - 1);
  Require(last == dim, path + ".dense_mlp.hidden_units: the last unit " + std::to_string(last) +
                           " must equal the sparse embedding_dim " + std::to_string(dim) +
                           " (the dense output joins the dot interaction with the embeddings); "
                           "set the last unit to " +
                           std::to_string(dim));
}

// TorchEasyRec's deepfm.py: WIDE group "wide" (summed wide embeddings), group "deep" (deep MLP),
// FM over group "fm" when defined, else over "deep": every feature of it one dim.
void ModelChecks::DeepFm() {
  const protos::DeepFM& deepfm = config_.model_config().deepfm();
  const std::string path = "model_config.deepfm";
  const auto& wide = Group("wide", path + " (group \"wide\")");
  Require(wide.group_type() == protos::WIDE,
          path + ": group \"wide\" has group_type " +
              protos::FeatureGroupType_Name(wide.group_type()) +
              "; set group_type: WIDE (its features get wide_embedding_dim embeddings)");
  for (const auto& [name, group] : groups_) {
    Require(name == "wide" || group->group_type() != protos::WIDE,
            path + ": group '" + name +
                "' is WIDE but DeepFM reads only the WIDE group "
                "\"wide\"; move its features there or make it DEEP");
  }
  for (const std::string& name : wide.feature_names()) {
    Require(IsSparse(F(name)), path + ": group \"wide\" holds '" + name +
                                   "', a dense raw feature; the wide part embeds sparse features "
                                   "only: remove it from \"wide\"");
  }
  Group("deep", path + " (group \"deep\")");
  const std::string fm_name = groups_.count("fm") != 0 ? "fm" : "deep";
  std::int64_t dim = 0;
  std::string first;
  for (const std::string& name : groups_.at(fm_name)->feature_names()) {
    const protos::FeatureConfig& f = F(name);
    const std::int64_t d = IsSparse(f) ? EmbeddingDim(f) : ValueDim(f);
    if (dim == 0) dim = d, first = name;
    Require(d == dim, path + ": the FM part reshapes group \"" + fm_name +
                          "\" to [B, N, d], so its features need one dim, but '" + first +
                          "' has " + std::to_string(dim) + " and '" + name + "' has " +
                          std::to_string(d) +
                          (fm_name == "deep" ? "; add a group \"fm\" of equal-dim features"
                                             : "; give them one embedding_dim"));
  }
  Require(deepfm.wide_embedding_dim() > 0, path + ".wide_embedding_dim: must be > 0");
  ValidateMlp(deepfm.deep(), path + ".deep", true);
  if (deepfm.has_final()) ValidateMlp(deepfm.final(), path + ".final", false);
}

void ModelChecks::MultiTower() {
  const protos::MultiTower& mt = config_.model_config().multi_tower();
  const std::string path = "model_config.multi_tower";
  NoWideGroups(path);
  Require(mt.towers_size() > 0, path + ".towers: empty; add one tower per feature group");
  std::set<std::string> used;
  for (int i = 0; i < mt.towers_size(); ++i) {
    const std::string tower_path = path + ".towers[" + std::to_string(i) + "]";
    Group(mt.towers(i).input(), tower_path + ".input");
    Require(used.insert(mt.towers(i).input()).second,
            tower_path + ".input: group '" + mt.towers(i).input() +
                "' already feeds another tower; each group feeds one tower");
    ValidateMlp(mt.towers(i).mlp(), tower_path + ".mlp", true);
  }
  ValidateMlp(mt.final(), path + ".final", false);
}

// TorchEasyRec's multi_tower_din.py: towers over DEEP groups, din_towers over SEQUENCE groups
// (each SEQUENCE group read by one), final over their outputs.
void ModelChecks::MultiTowerDin() {
  const protos::MultiTowerDIN& mt = config_.model_config().multi_tower_din();
  const std::string path = "model_config.multi_tower_din";
  NoWideGroups(path);
  Require(mt.towers_size() + mt.din_towers_size() > 0,
          path + ": no towers and no din_towers; add at least one");
  std::set<std::string> used;
  for (int i = 0; i < mt.towers_size(); ++i) {
    const std::string tower_path = path + ".towers[" + std::to_string(i) + "]";
    const auto& g = Group(mt.towers(i).input(), tower_path + ".input");
    Require(g.group_type() == protos::DEEP,
            tower_path + ".input: group '" + g.group_name() + "' is " +
                protos::FeatureGroupType_Name(g.group_type()) + "; towers read DEEP groups");
    Require(used.insert(g.group_name()).second,
            tower_path + ".input: group '" + g.group_name() +
                "' already feeds another tower; each group feeds one tower");
    ValidateMlp(mt.towers(i).mlp(), tower_path + ".mlp", true);
  }
  for (int i = 0; i < mt.din_towers_size(); ++i) {
    const std::string tower_path = path + ".din_towers[" + std::to_string(i) + "]";
    const auto& g = Group(mt.din_towers(i).input(), tower_path + ".input");
    Require(g.group_type() == protos::SEQUENCE, tower_path + ".input: group '" + g.group_name() +
                                                    "' is " +
                                                    protos::FeatureGroupType_Name(g.group_type()) +
                                                    "; din_towers read SEQUENCE groups");
    Require(used.insert(g.group_name()).second,
            tower_path + ".input: group '" + g.group_name() +
                "' already feeds another tower; each group feeds one tower");
    Require(mt.din_towers(i).attn_mlp().hidden_units_size() > 0,
            tower_path +
                ".attn_mlp.hidden_units: empty; the attention score is "
                "Linear(hidden_units[-1] -> 1)");
    ValidateMlp(mt.din_towers(i).attn_mlp(), tower_path + ".attn_mlp", true);
  }
  for (const auto& g : config_.model_config().feature_groups()) {
    Require(g.group_type() != protos::SEQUENCE || used.count(g.group_name()) == 1,
            path + ": SEQUENCE group '" + g.group_name() +
                "' feeds no din_tower; add din_towers { input: \"" + g.group_name() +
                "\" attn_mlp { ... } } or remove the group");
  }
  ValidateMlp(mt.final(), path + ".final", false);
}

// A single-task model's losses and metrics (TorchEasyRec's RankModel). Without a loss,
// TorchEasyRec's TrainWrapper fails (torch.stack of no losses); metrics are kept in a dict by
// their name ("auc", "grouped_auc"), so a second entry of one kind would replace the first.
void ModelChecks::SingleTaskLossesAndMetrics() {
  const protos::ModelConfig& model = config_.model_config();
  Require(model.losses_size() > 0,
          "model_config.losses: empty; TorchEasyRec trains no model without a loss: add "
          "losses { binary_cross_entropy {} }");
  for (int i = 0; i < model.losses_size(); ++i) {
    Require(model.losses(i).has_binary_cross_entropy(),
            "model_config.losses[" + std::to_string(i) + "]: empty; set binary_cross_entropy {}");
  }
  std::set<std::string> seen;
  for (int i = 0; i < model.metrics_size(); ++i) {
    const protos::MetricConfig& metric = model.metrics(i);
    const std::string path = "model_config.metrics[" + std::to_string(i) + "]";
    Require(metric.metric_case() != protos::MetricConfig::METRIC_NOT_SET,
            path + ": empty; set auc {} or grouped_auc { grouping_key: ... }");
    const std::string name = metric.has_auc() ? "auc" : "grouped_auc";
    Require(seen.insert(name).second, path + "." + name + ": a second " + name +
                                          " metric (TorchEasyRec names both '" + name +
                                          "' and keeps only the last); keep one");
    if (metric.has_auc()) {
      Require(metric.auc().thresholds() != 1,
              path + ".auc.thresholds: 1; use 0 (exact AUC) or >= 2 bins (TorchEasyRec: 200)");
    }
  }
}

void ModelChecks::Run() {
  const protos::ModelConfig& model = config_.model_config();
  Require(model.model_case() != protos::ModelConfig::MODEL_NOT_SET,
          "model_config: no model; set one of dlrm, deepfm, multi_tower, multi_tower_din, "
          "wide_and_deep, dcn_v1, "
          "dcn_v2, mask_net, xdeepfm, wukong, simple_multi_task, mmoe, dbmtl, ple");
  Require(model.num_class() == 1,
          "model_config.num_class: " + std::to_string(model.num_class()) +
              "; tzrec_train trains binary models (num_class 1 with binary_cross_entropy): "
              "multi-class losses are not supported");
  using MC = protos::ModelConfig;
  static const std::set<int> kMultiTask = {MC::kSimpleMultiTask, MC::kMmoe, MC::kDbmtl, MC::kPle};
  // Multi-task models take losses and metrics per task tower (validate_multi_task.cpp).
  if (kMultiTask.count(model.model_case()) == 0) SingleTaskLossesAndMetrics();
  Groups();
  switch (model.model_case()) {
    case protos::ModelConfig::kDlrm:
      Dlrm();
      break;
    case protos::ModelConfig::kDeepfm:
      DeepFm();
      break;
    case protos::ModelConfig::kWideAndDeep:
    case protos::ModelConfig::kDcnV1:
    case protos::ModelConfig::kDcnV2:
      ValidateRankCross(config_);
      break;
    case protos::ModelConfig::kSimpleMultiTask:
    case protos::ModelConfig::kMmoe:
    case protos::ModelConfig::kDbmtl:
    case protos::ModelConfig::kPle:
      ValidateMultiTask(config_);
      break;
    case protos::ModelConfig::kMaskNet:
    case protos::ModelConfig::kWukong:
    case protos::ModelConfig::kXdeepfm:
      ValidateRankMaskModels(config_);
      break;
    case protos::ModelConfig::kMultiTowerDin:
      MultiTowerDin();
      break;
    default:
      MultiTower();
  }
}

}  // namespace

void ValidateModel(const PipelineConfig& config) {
  ModelChecks(config).Run();
}

}  // namespace tzrec::config_internal
