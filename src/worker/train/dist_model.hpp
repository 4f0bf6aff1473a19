// The distributed model of train_eval and eval (internal to tzrec::train): the sharding plan, the
// sharded embedding tables and the replicated dense model of a config on every rank of a Comm;
// reading batches with the ranks' has-batch agreement; the evaluation loop and its result.
//
// Follows TorchEasyRec tzrec/main.py (`train_and_evaluate`, `evaluate`, `_evaluate`): the model is
// built the same way for training and for evaluation, and the evaluation gathers every rank's
// predictions before computing the metrics. dist_model.cpp (setup, batches) and evaluate.cpp.
// Collectives: every function that takes a DistModel is collective (every rank, same order).
#pragma once

#include <ATen/core/Tensor.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sparse_arch.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/input/input.hpp"
#include "tzrec/planner/planner.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {

// The model of one config on this rank. Built by BuildDistModel; members are public for the
// commands that train, restore and save it.
struct DistModel {
  std::shared_ptr<Comm> comm;
  int rank = 0;
  int world = 1;
  at::Device device{at::kCPU};
  ShardingPlan plan;  // every table: the EBC's and the EC's
  EmbeddingOptimizerConfig ebc_opt;
  std::unique_ptr<SparseArch> sparse;  // the sharded EBC and the sequences' EC (sparse_arch.hpp)
  std::unique_ptr<DenseModel> dense;
};

// Plans the tables (TorchRec planner collective_plan), creates the dense model and the sharded
// tables (seeded by Seed(config)). Collective. Throws PlannerError when no plan fits.
DistModel BuildDistModel(const PipelineConfig& config, std::shared_ptr<Comm> comm);

// A batch with the cursor of its rank right after it was read, and its issued input dist.
struct Fetched {
  Batch batch;
  std::string cursor_json;
  SparseArch::Dist dist;
};

// Reads this rank's next batch and agrees with the others whether everyone has one: training stops
// when any rank is out (the remainder is dropped everywhere, as TorchEasyRec does), evaluation
// when every rank is (ranks without data feed empty batches). nullopt: stop.
std::optional<Fetched> FetchBatch(DistModel& model, const PipelineConfig& config, Dataset& ds,
                                  bool train);

// The embedding lookup of `f` and the dense forward (autocast when mixed_precision is set): float
// logits [batch]. Training with a buffer_sync: rank 0's float buffers (BN running stats) go to
// every rank before the forward (DDP's broadcast_buffers=True).
at::Tensor DenseLogits(DistModel& model, const PipelineConfig& config, const Fetched& f,
                       bool training, DenseSync* buffer_sync = nullptr);

// The metrics of one evaluation over every rank's predictions.
struct EvalResult {
  double auc = NAN;
  double grouped_auc = NAN;  // NaN without a grouped_auc metric
  double loss = NAN;         // mean binary cross-entropy; NaN with no samples
  std::int64_t samples = 0;
  double seconds = 0;
  // Multi-task models (DenseModel::Tasks() not empty): TorchEasyRec's per-task metric names,
  // sorted: "auc_<tower>" (tasks with an auc metric), "binary_cross_entropy_<tower>" (the task's
  // loss metric, EvalTaskBceLoss); `loss` is then the sum of the task losses and `auc` NaN.
  std::vector<std::pair<std::string, double>> task_metrics;
};

// Evaluates the model on `input_path` (eval_batch_size, eval_config.num_steps batches per rank at
// most; 0: all) and prints "eval step <step>  auc ..." on rank 0. Local rank 0 prints
// TorchEasyRec's progress lines "<progress_desc>: <n>it [<rate>it/s] " after batch n (0-based) when
// n % eval_config.log_step_count_steps == 0, and one after the last batch (tzrec/main.py
// `_evaluate`). Collective.
EvalResult Evaluate(DistModel& model, const PipelineConfig& config, const std::string& input_path,
                    std::int64_t step, const std::string& progress_desc);

// TorchEasyRec's eval progress description: "Evaluating", then " Epoch-<epoch>" and
// " model-<step>" for those given (tzrec/main.py `_evaluate`'s desc_suffix). Pure.
std::string EvalProgressDesc(std::optional<std::int64_t> epoch, std::optional<std::int64_t> step);

// One line of TorchEasyRec's eval result file (tzrec/main.py `_evaluate`): a JSON object with
// "global_step" first (null when unknown) and then the metrics in sorted key order: "auc" (when
// the model has an auc metric), "binary_cross_entropy" (the loss, TorchEasyRec's loss metric
// name), "grouped_auc" (when it has a grouped_auc metric); for a multi-task model the sorted
// task_metrics instead. NaN values are written as null. Pure.
std::string EvalResultLine(const PipelineConfig& config, std::optional<std::int64_t> global_step,
                           const EvalResult& result);

}  // namespace tzrec
