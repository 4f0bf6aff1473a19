// The tasks of a multi-task model (include/tzrec/train/model.hpp TaskSpecs), following TorchEasyRec
// tzrec/models/multi_task_rank.py: one task per task tower, named by tower_name, trained on the
// label_name column, weighted when weight or sample_weight_name is set (has_weight).
#include <string>
#include <vector>

#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

template <typename Towers>
std::vector<TaskSpec> FromTowers(const PipelineConfig& config, const Towers& towers) {
  const auto& labels = config.data_config().label_fields();
  std::vector<TaskSpec> tasks;
  for (const auto& tower : towers) {
    TaskSpec t;
    t.tower_name = tower.tower_name();
    t.label_name = tower.label_name();
    for (int i = 0; i < labels.size(); ++i) {
      if (labels.Get(i) == t.label_name) t.label_index = i;
    }
    t.sample_weighted = tower.has_sample_weight_name();
    t.has_weight = tower.has_weight() || t.sample_weighted;
    t.weight = tower.weight();
    for (const auto& metric : tower.metrics()) {
      if (!metric.has_auc()) continue;
      t.has_auc = true;
      t.auc_thresholds = metric.auc().thresholds();
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace

std::vector<TaskSpec> TaskSpecs(const PipelineConfig& config) {
  const protos::ModelConfig& model = config.model_config();
  if (model.has_simple_multi_task())
    return FromTowers(config, model.simple_multi_task().task_towers());
  if (model.has_mmoe()) return FromTowers(config, model.mmoe().task_towers());
  if (model.has_dbmtl()) return FromTowers(config, model.dbmtl().task_towers());
  if (model.has_ple()) return FromTowers(config, model.ple().task_towers());
  return {};
}

}  // namespace tzrec
