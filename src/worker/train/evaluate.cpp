// The evaluation loop and TorchEasyRec's eval result line (src/worker/train/dist_model.hpp).
// Reference: alibaba/TorchEasyRec tzrec/main.py `_evaluate` (metrics over every rank's data, one
// JSON line {"global_step", sorted metrics} appended per evaluation) and tzrec/models/rank_model.py
// (metric names "auc", "grouped_auc"; the loss metric named after the loss,
// "binary_cross_entropy"). The progress lines are tzrec/utils/logging_util.py ProgressLogger's
// ("<desc>: <n>it [<rate>it/s] ", desc "Evaluating[ Epoch-<e>][ model-<step>]"), written by local
// rank 0 after eval batch i (0-based) when i % eval_config.log_step_count_steps == 0 and once after
// the loop; one difference: ProgressLogger also drops a line within 1 s of the previous one.
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "dist_model.hpp"
#include "train_common.hpp"
#include "tzrec/train/loss.hpp"
#include "tzrec/train/metrics.hpp"

namespace tzrec {
namespace {

// Gathers every rank's 1-D tensor on every rank (rank order).
at::Tensor GatherV(DistModel& model, const at::Tensor& local) {
  at::Tensor n =
      at::full({1}, local.numel(), at::TensorOptions().dtype(at::kLong).device(model.device));
  const at::Tensor counts = model.comm->AllGather(n).to(at::kCPU);
  std::vector<std::int64_t> splits(static_cast<std::size_t>(model.world));
  for (int r = 0; r < model.world; ++r)
    splits[static_cast<std::size_t>(r)] = counts[r].item<std::int64_t>();
  return model.comm->AllGatherV(local.to(model.device), splits).to(at::kCPU);
}

// The labels of each task as columns: [B, T] (Batch::all_labels[label_index]).
at::Tensor TaskLabels(const Batch& b, const std::vector<TaskSpec>& tasks) {
  std::vector<at::Tensor> columns;
  for (const auto& t : tasks)
    columns.push_back(b.all_labels.at(static_cast<std::size_t>(t.label_index)).to(at::kCPU));
  return at::stack(columns, 1);
}

// Per-task metrics from every rank's probabilities and labels [N, T] (EvalResult::task_metrics).
std::vector<std::pair<std::string, double>> TaskMetrics(const std::vector<TaskSpec>& tasks,
                                                        const at::Tensor& probs,
                                                        const at::Tensor& labels,
                                                        const at::Tensor& weights, double* total) {
  std::vector<std::pair<std::string, double>> out;
  *total = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const TaskSpec& t = tasks[i];
    const at::Tensor p = probs.select(1, static_cast<std::int64_t>(i));
    const at::Tensor l = labels.select(1, static_cast<std::int64_t>(i));
    if (t.has_auc) out.emplace_back("auc_" + t.tower_name, Auc(p, l, t.auc_thresholds));
    const double loss = EvalTaskBceLoss(t, p, l, weights);
    out.emplace_back("binary_cross_entropy_" + t.tower_name, loss);
    *total += loss;
  }
  std::sort(out.begin(), out.end());
  return out;
}

void PrintEvalLine(std::int64_t step, const EvalResult& r) {
  if (!r.task_metrics.empty()) {
    std::cout << "eval step " << step << std::fixed << std::setprecision(5);
    for (const auto& [key, value] : r.task_metrics) std::cout << "  " << key << " " << value;
    std::cout << "  loss " << r.loss << "  samples " << r.samples << "  (" << std::setprecision(2)
              << r.seconds << " s)" << std::defaultfloat << std::endl;
    return;
  }
  std::cout << "eval step " << step << "  auc " << std::fixed << std::setprecision(5) << r.auc;
  if (!std::isnan(r.grouped_auc)) std::cout << "  grouped_auc " << r.grouped_auc;
  std::cout << "  loss " << r.loss << "  samples " << r.samples << "  (" << std::setprecision(2)
            << r.seconds << " s)" << std::defaultfloat << std::endl;
}

// TorchEasyRec's ProgressLogger (start_n -1, miniters 0) without its 1 s minimum interval: a line
// for n only when n is past the last line's n; the rate is per second since the last line.
class ProgressLog {
 public:
  ProgressLog(bool enabled, std::string desc) : enabled_(enabled), desc_(std::move(desc)) {}

  void Log(std::int64_t n) {
    const std::int64_t dn = n - last_n_;
    if (!enabled_ || dn <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::max(std::chrono::duration<double>(now - last_).count(), 1e-9);
    std::cout << desc_ << ": " << n << "it [" << std::fixed << std::setprecision(2)
              << static_cast<double>(dn) / dt << "it/s] " << std::defaultfloat << std::endl;
    last_n_ = n;
    last_ = now;
  }

 private:
  bool enabled_;
  std::string desc_;
  std::int64_t last_n_ = -1;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

nlohmann::ordered_json NumberOrNull(double v) {
  if (std::isnan(v)) return nlohmann::ordered_json(nullptr);
  return nlohmann::ordered_json(v);
}

}  // namespace

EvalResult Evaluate(DistModel& model, const PipelineConfig& config, const std::string& input_path,
                    std::int64_t step, const std::string& progress_desc) {
  c10::NoGradGuard no_grad;
  const std::int64_t batch = EvalBatchSize(config);
  Dataset ds =
      GuardInput([&] { return Dataset(config, input_path, model.rank, model.world, batch); });
  std::vector<at::Tensor> scores;
  std::vector<at::Tensor> labels;
  std::vector<at::Tensor> groups;
  std::vector<at::Tensor> weights;
  const std::vector<TaskSpec>& tasks = model.dense->Tasks();
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t num_steps = config.eval_config().num_steps();
  const std::int64_t log_every = config.eval_config().log_step_count_steps();
  ProgressLog plog(model.comm->LocalRank() == 0, progress_desc);
  std::int64_t i_step = 0;
  for (; num_steps <= 0 || i_step < num_steps; ++i_step) {
    std::optional<Fetched> f = FetchBatch(model, config, ds, false);
    if (!f) break;
    scores.push_back(at::sigmoid(DenseLogits(model, config, *f, /*training=*/false)).to(at::kCPU));
    labels.push_back(tasks.empty() ? f->batch.labels.to(at::kCPU) : TaskLabels(f->batch, tasks));
    if (f->batch.group_ids.defined()) groups.push_back(f->batch.group_ids.to(at::kCPU));
    if (f->batch.sample_weights.defined()) weights.push_back(f->batch.sample_weights);
    if (log_every > 0 && i_step % log_every == 0) plog.Log(i_step);
  }
  // Python's loop variable after the loop: the index that found no batch, or the last index of
  // range(num_steps) when that ran out first.
  plog.Log(num_steps > 0 && i_step == num_steps ? num_steps - 1 : i_step);
  // Multi-task: [B, T] scores and labels, gathered flat and reshaped.
  const std::int64_t columns = std::max<std::int64_t>(1, static_cast<std::int64_t>(tasks.size()));
  const std::vector<std::int64_t> empty =
      tasks.empty() ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{0, columns};
  const at::Tensor s = scores.empty() ? at::zeros(empty) : at::cat(scores);
  const at::Tensor l = labels.empty() ? at::zeros(empty) : at::cat(labels);
  const auto gather = [&](const at::Tensor& t) {
    const at::Tensor all = GatherV(model, t.to(at::kFloat).reshape({-1}));
    return tasks.empty() ? all : all.reshape({-1, columns});
  };
  const at::Tensor all_s = gather(s);
  const at::Tensor all_l = gather(l);
  EvalResult r;
  const bool weighted = config.data_config().sample_weight_fields_size() > 0;
  const at::Tensor all_w =
      weighted ? GatherV(model, weights.empty() ? at::zeros({0}) : at::cat(weights)) : at::Tensor();
  if (tasks.empty()) {
    r.auc = Auc(all_s, all_l, AucThresholds(config));
    r.loss = EvalBceLoss(all_s, all_l, all_w);
  } else {
    r.task_metrics = TaskMetrics(tasks, all_s, all_l, all_w, &r.loss);
  }
  r.samples = all_s.size(0);
  if (!GroupedAucKey(config).empty()) {
    const at::Tensor g = groups.empty() ? at::zeros({0}, at::kLong) : at::cat(groups);
    r.grouped_auc = GroupedAuc(all_s, all_l, GatherV(model, g.to(at::kLong)));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (model.rank == 0) PrintEvalLine(step, r);
  return r;
}

std::string EvalProgressDesc(std::optional<std::int64_t> epoch, std::optional<std::int64_t> step) {
  std::string desc = "Evaluating";
  if (epoch) desc += " Epoch-" + std::to_string(*epoch);
  if (step) desc += " model-" + std::to_string(*step);
  return desc;
}

std::string EvalResultLine(const PipelineConfig& config, std::optional<std::int64_t> global_step,
                           const EvalResult& result) {
  if (!result.task_metrics.empty()) {  // multi-task: sorted already
    nlohmann::ordered_json line;
    line["global_step"] = nlohmann::ordered_json(nullptr);
    if (global_step) line["global_step"] = *global_step;
    for (const auto& [key, value] : result.task_metrics) line[key] = NumberOrNull(value);
    return line.dump();
  }
  bool has_auc = false;
  bool has_grouped_auc = false;
  for (const auto& metric : config.model_config().metrics()) {
    has_auc = has_auc || metric.has_auc();
    has_grouped_auc = has_grouped_auc || metric.has_grouped_auc();
  }
  // nlohmann::ordered_json keeps insertion order: global_step, then the metrics sorted by name.
  nlohmann::ordered_json line;
  line["global_step"] = nlohmann::ordered_json(nullptr);
  if (global_step) line["global_step"] = *global_step;
  if (has_auc) line["auc"] = NumberOrNull(result.auc);
  line["binary_cross_entropy"] = NumberOrNull(result.loss);
  if (has_grouped_auc) line["grouped_auc"] = NumberOrNull(result.grouped_auc);
  return line.dump();
}

}  // namespace tzrec
