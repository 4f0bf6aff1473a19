// The evaluation loop and TorchEasyRec's eval result line (src/worker/train/dist_model.hpp).
// Reference: alibaba/TorchEasyRec tzrec/main.py `_evaluate` (metrics over every rank's data, one
// JSON line {"global_step", sorted metrics} appended per evaluation) and tzrec/models/rank_model.py
// (metric names "auc", "grouped_auc"; the loss metric named after the loss,
// "binary_cross_entropy").
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

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

void PrintEvalLine(std::int64_t step, const EvalResult& r) {
  std::cout << "eval step " << step << "  auc " << std::fixed << std::setprecision(5) << r.auc;
  if (!std::isnan(r.grouped_auc)) std::cout << "  grouped_auc " << r.grouped_auc;
  std::cout << "  loss " << r.loss << "  samples " << r.samples << "  (" << std::setprecision(2)
            << r.seconds << " s)" << std::defaultfloat << std::endl;
}

nlohmann::ordered_json NumberOrNull(double v) {
  if (std::isnan(v)) return nlohmann::ordered_json(nullptr);
  return nlohmann::ordered_json(v);
}

}  // namespace

EvalResult Evaluate(DistModel& model, const PipelineConfig& config, const std::string& input_path,
                    std::int64_t step) {
  c10::NoGradGuard no_grad;
  const std::int64_t batch = EvalBatchSize(config);
  Dataset ds =
      GuardInput([&] { return Dataset(config, input_path, model.rank, model.world, batch); });
  std::vector<at::Tensor> scores;
  std::vector<at::Tensor> labels;
  std::vector<at::Tensor> groups;
  std::vector<at::Tensor> weights;
  std::int64_t steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (config.eval_config().num_steps() <= 0 || steps < config.eval_config().num_steps()) {
    std::optional<Fetched> f = FetchBatch(model, config, ds, false);
    if (!f) break;
    scores.push_back(at::sigmoid(DenseLogits(model, config, *f, /*training=*/false)).to(at::kCPU));
    labels.push_back(f->batch.labels.to(at::kCPU));
    if (f->batch.group_ids.defined()) groups.push_back(f->batch.group_ids.to(at::kCPU));
    if (f->batch.sample_weights.defined()) weights.push_back(f->batch.sample_weights);
    ++steps;
  }
  const at::Tensor s = scores.empty() ? at::zeros({0}) : at::cat(scores);
  const at::Tensor l = labels.empty() ? at::zeros({0}) : at::cat(labels);
  const at::Tensor all_s = GatherV(model, s.to(at::kFloat));
  const at::Tensor all_l = GatherV(model, l.to(at::kFloat));
  EvalResult r;
  r.auc = Auc(all_s, all_l, AucThresholds(config));
  const bool weighted = config.data_config().sample_weight_fields_size() > 0;
  const at::Tensor all_w =
      weighted ? GatherV(model, weights.empty() ? at::zeros({0}) : at::cat(weights)) : at::Tensor();
  r.loss = EvalBceLoss(all_s, all_l, all_w);
  r.samples = all_s.numel();
  if (!GroupedAucKey(config).empty()) {
    const at::Tensor g = groups.empty() ? at::zeros({0}, at::kLong) : at::cat(groups);
    r.grouped_auc = GroupedAuc(all_s, all_l, GatherV(model, g.to(at::kLong)));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (model.rank == 0) PrintEvalLine(step, r);
  return r;
}

std::string EvalResultLine(const PipelineConfig& config, std::optional<std::int64_t> global_step,
                           const EvalResult& result) {
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
