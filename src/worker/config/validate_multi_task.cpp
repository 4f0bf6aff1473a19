// Validation of the multi-task models simple_multi_task, mmoe, dbmtl and ple
// (validate_util.hpp ValidateMultiTask). Follows TorchEasyRec tzrec/models/multi_task_rank.py,
// mmoe.py, dbmtl.py, ple.py (tzrec/modules/extraction_net.py): the first feature group is the
// input, each task tower is a binary task with one binary_cross_entropy loss on its label_name;
// what tzrec_train does not implement is refused naming the field.
#include <set>
#include <string>

#include "internal.hpp"
#include "tzrec/config/config.hpp"
#include "validate_util.hpp"

namespace tzrec::config_internal {
namespace {

// The fields TaskTower and BayesTaskTower share.
template <typename Tower>
void ValidateTower(const PipelineConfig& config, const Tower& tower, const std::string& path,
                   std::set<std::string>* names) {
  Require(!tower.tower_name().empty(), path + ".tower_name: empty; name the task (e.g. \"ctr\")");
  Require(names->insert(tower.tower_name()).second,
          path + ".tower_name: '" + tower.tower_name() + "' is used by another task tower");
  const auto& labels = config.data_config().label_fields();
  Require(!tower.label_name().empty(),
          path + ".label_name: empty; name the task's data_config.label_fields entry");
  Require(std::find(labels.begin(), labels.end(), tower.label_name()) != labels.end(),
          path + ".label_name: '" + tower.label_name() +
              "' is not in data_config.label_fields; add it there");
  Require(tower.num_class() == 1, path + ".num_class: " + std::to_string(tower.num_class()) +
                                      "; tzrec_train trains binary tasks only (num_class 1)");
  Require(tower.losses_size() == 1 && tower.losses(0).has_binary_cross_entropy(),
          path +
              ".losses: give exactly one loss, binary_cross_entropy {} (the only loss "
              "tzrec_train implements)");
  bool auc = false;
  for (int j = 0; j < tower.metrics_size(); ++j) {
    const auto& metric = tower.metrics(j);
    const std::string mpath = path + ".metrics[" + std::to_string(j) + "]";
    Require(!metric.has_grouped_auc(),
            mpath + ".grouped_auc: not implemented for multi-task models; use auc {}");
    Require(metric.has_auc(), mpath + ": empty; set auc {}");
    Require(!auc, mpath + ".auc: a second auc for task '" + tower.tower_name() +
                      "' (both would be auc_" + tower.tower_name() + "); keep one");
    Require(metric.auc().thresholds() != 1,
            mpath + ".auc.thresholds: 1; use 0 (exact AUC) or >= 2 bins (TorchEasyRec: 200)");
    auc = true;
  }
  if (tower.has_mlp()) ValidateMlp(tower.mlp(), path + ".mlp", true);
  if (tower.has_sample_weight_name()) {
    const auto& weights = config.data_config().sample_weight_fields();
    Require(std::find(weights.begin(), weights.end(), tower.sample_weight_name()) != weights.end(),
            path + ".sample_weight_name: '" + tower.sample_weight_name() +
                "' is not in data_config.sample_weight_fields; add it there");
  }
}

template <typename Towers>
void ValidateTowers(const PipelineConfig& config, const Towers& towers, const std::string& path) {
  Require(towers.size() > 0, path + ".task_towers: empty; add one task tower per task");
  std::set<std::string> names;
  bool weighted = false;
  for (int i = 0; i < towers.size(); ++i) {
    ValidateTower(config, towers.Get(i), path + ".task_towers[" + std::to_string(i) + "]", &names);
    weighted = weighted || towers.Get(i).has_sample_weight_name();
  }
  Require(config.data_config().sample_weight_fields_size() == 0 || weighted,
          "data_config.sample_weight_fields: multi-task models weight a task by its "
          "sample_weight_name, and no task tower names '" +
              (config.data_config().sample_weight_fields_size() > 0
                   ? config.data_config().sample_weight_fields(0)
                   : std::string()) +
              "'; set sample_weight_name in a task tower or remove the field");
}

void ValidateMMoEParts(const protos::MLP* expert, const protos::MLP* gate, std::uint32_t experts,
                       const std::string& path) {
  ValidateMlp(*expert, path + ".expert_mlp", true);
  if (gate != nullptr) ValidateMlp(*gate, path + ".gate_mlp", true);
  Require(experts >= 1, path + ".num_expert: 0; give at least one expert");
}

void ValidateDbmtl(const PipelineConfig& config) {
  const protos::DBMTL& m = config.model_config().dbmtl();
  const std::string path = "model_config.dbmtl";
  ValidateTowers(config, m.task_towers(), path);
  if (m.has_bottom_mlp()) ValidateMlp(m.bottom_mlp(), path + ".bottom_mlp", true);
  if (m.has_expert_mlp()) {
    ValidateMMoEParts(&m.expert_mlp(), m.has_gate_mlp() ? &m.gate_mlp() : nullptr, m.num_expert(),
                      path);
  } else {
    Require(!m.has_gate_mlp() && !m.has_num_expert(),
            path + (m.has_gate_mlp() ? ".gate_mlp" : ".num_expert") +
                ": set without expert_mlp, so there is no MMoE for it; set expert_mlp or remove "
                "it");
  }
  std::set<std::string> earlier;
  for (int i = 0; i < m.task_towers_size(); ++i) {
    const auto& t = m.task_towers(i);
    const std::string tpath = path + ".task_towers[" + std::to_string(i) + "]";
    Require(t.relation_tower_names_size() == 0 || t.has_relation_mlp(),
            tpath +
                ".relation_tower_names: set without relation_mlp, which is what reads them; "
                "add relation_mlp or remove them");
    for (const auto& r : t.relation_tower_names()) {
      Require(earlier.count(r) == 1, tpath + ".relation_tower_names: '" + r +
                                         "' is not a task tower defined before '" + t.tower_name() +
                                         "'; list earlier towers only");
    }
    if (t.has_relation_mlp()) ValidateMlp(t.relation_mlp(), tpath + ".relation_mlp", true);
    earlier.insert(t.tower_name());
  }
}

// TorchEasyRec's ExtractionNet stacks each task's experts with the shared experts, so both MLPs
// must end in the same width; network_name is only a label.
void ValidatePle(const PipelineConfig& config) {
  const protos::PLE& m = config.model_config().ple();
  const std::string path = "model_config.ple";
  ValidateTowers(config, m.task_towers(), path);
  Require(m.extraction_networks_size() > 0,
          path + ".extraction_networks: empty; add at least one extraction network");
  for (int i = 0; i < m.extraction_networks_size(); ++i) {
    const protos::ExtractionNetwork& n = m.extraction_networks(i);
    const std::string npath = path + ".extraction_networks[" + std::to_string(i) + "]";
    Require(n.has_task_expert_net(),
            npath + ".task_expert_net: not set; give the task experts' MLP");
    Require(n.has_share_expert_net(),
            npath + ".share_expert_net: not set; give the shared experts' MLP");
    ValidateMlp(n.task_expert_net(), npath + ".task_expert_net", true);
    ValidateMlp(n.share_expert_net(), npath + ".share_expert_net", true);
    Require(n.expert_num_per_task() >= 1,
            npath + ".expert_num_per_task: 0; give each task at least one expert");
    Require(n.share_num() >= 1, npath + ".share_num: 0; give at least one shared expert");
    const auto& t = n.task_expert_net().hidden_units();
    const auto& s = n.share_expert_net().hidden_units();
    Require(t[t.size() - 1] == s[s.size() - 1],
            npath + ".share_expert_net.hidden_units: ends in " + std::to_string(s[s.size() - 1]) +
                " but task_expert_net ends in " + std::to_string(t[t.size() - 1]) +
                "; the gates mix task and shared experts, so give both the same last unit");
  }
}

}  // namespace

void ValidateMultiTask(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  Require(model.feature_groups_size() == 1,
          "model_config.feature_groups: " + std::to_string(model.feature_groups_size()) +
              " groups, but " + ModelType(config) +
              " reads one (TorchEasyRec takes the first); put every feature in one DEEP group");
  Require(model.feature_groups(0).group_type() == protos::DEEP,
          "model_config.feature_groups[0].group_type: " + ModelType(config) +
              " reads a DEEP group; set group_type: DEEP");
  Require(model.losses_size() == 0 && model.metrics_size() == 0,
          std::string("model_config.") + (model.losses_size() > 0 ? "losses" : "metrics") +
              ": multi-task models take losses and metrics per task tower; move them into "
              "task_towers");
  if (model.has_simple_multi_task()) {
    ValidateTowers(config, model.simple_multi_task().task_towers(),
                   "model_config.simple_multi_task");
  } else if (model.has_mmoe()) {
    const protos::MMoE& m = model.mmoe();
    Require(m.has_expert_mlp(), "model_config.mmoe.expert_mlp: not set; MMoE needs its experts");
    ValidateTowers(config, m.task_towers(), "model_config.mmoe");
    ValidateMMoEParts(&m.expert_mlp(), m.has_gate_mlp() ? &m.gate_mlp() : nullptr, m.num_expert(),
                      "model_config.mmoe");
  } else if (model.has_ple()) {
    ValidatePle(config);
  } else {
    ValidateDbmtl(config);
  }
}

}  // namespace tzrec::config_internal
