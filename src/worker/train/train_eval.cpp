// tzrec_train train_eval: the training job (include/tzrec/train/train.hpp).
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/stack.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "dist_model.hpp"
#include "flash_checkpoint.hpp"
#include "progress_report.hpp"
#include "train_common.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/agree.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/input/input.hpp"
#include "tzrec/planner/planner.hpp"
#include "tzrec/sharding/collective_plan.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"
#include "tzrec/train/loss.hpp"
#include "tzrec/train/model.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

using Flags = TrainEvalOptions;

std::string Hms(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  const auto s = static_cast<std::int64_t>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>((s / 60) % 60), static_cast<long long>(s % 60));
  return buf;
}

class Trainer {
 public:
  Trainer(PipelineConfig config, Flags flags)
      : config_(std::move(config)), flags_(std::move(flags)) {}

  int Run() {
    comm_ = Comm::Init(DistEnv::FromEnvironment());
    rank_ = comm_->Rank();
    world_ = comm_->WorldSize();
    device_ = comm_->Device();
    const auto& tc = config_.train_config();
    accumulation_ = std::max<std::int64_t>(1, tc.gradient_accumulation_steps());
    const int cc = comm_->CudaComputeCapabilityMajor();
    step_barrier_ = device_.is_cuda() && cc > 0 && cc < 7;

    CheckpointManager ckpt(config_.model_dir(), tc.keep_checkpoint_max(), comm_);
    flash_ = std::make_unique<FlashCheckpoints>(flags_.flash_checkpoint_steps, config_.model_dir(),
                                                tc.keep_checkpoint_max(), comm_);
    std::optional<std::string> restore_dir = flash_->Newer(ckpt.Latest());
    if (restore_dir && !flags_.continue_train) {
      throw ConfigError("model_dir '" + config_.model_dir() + "' already holds checkpoint " +
                        *restore_dir +
                        ": pass --continue_train to resume from it, or use an empty --model_dir");
    }
    if (!flags_.continue_train) restore_dir.reset();
    std::optional<std::string> fine_tune_dir;
    if (!tc.fine_tune_checkpoint().empty()) {
      if (restore_dir) {
        if (rank_ == 0) {
          std::cout << "tzrec_train: --continue_train resumes " << *restore_dir
                    << "; fine_tune_checkpoint '" << tc.fine_tune_checkpoint()
                    << "' is not used (as TorchEasyRec)" << std::endl;
        }
      } else {
        fine_tune_dir = ResolveFineTuneCheckpoint(tc.fine_tune_checkpoint(), comm_);
        if (!tc.fine_tune_ckpt_param_map().empty()) {
          param_map_ = LoadParamMap(tc.fine_tune_ckpt_param_map());
        }
      }
    }

    // Sharding plan, embedding tables, dense model.
    model_ = BuildDistModel(config_, comm_);
    std::vector<at::Tensor> dense_params;
    for (const auto& p : model_.dense->Parameters()) dense_params.push_back(p.tensor);
    sync_ = std::make_unique<DenseSync>(comm_, dense_params);
    sync_->BroadcastParameters(0);
    std::vector<at::Tensor> float_buffers;
    for (const auto& p : model_.dense->Buffers()) {
      if (at::isFloatingType(p.tensor.scalar_type())) float_buffers.push_back(p.tensor);
    }
    if (!float_buffers.empty()) buffer_sync_ = std::make_unique<DenseSync>(comm_, float_buffers);
    optimizer_ = std::make_unique<DenseOptimizer>(DenseOptimizerFromConfig(tc.dense_optimizer()),
                                                  model_.dense->Parameters());
    if (tc.has_grad_scaler()) scale_ = tc.grad_scaler().init_scale();
    sparse_schedule_.emplace(SparseScheduleFromConfig(tc.sparse_optimizer()), model_.ebc_opt.lr);
    dense_schedule_.emplace(DenseScheduleFromConfig(tc.dense_optimizer()),
                            optimizer_->LearningRate());
    if (rank_ == 0) {
      std::cout << "tzrec_train: world " << world_ << ", backend " << comm_->BackendName()
                << ", device " << device_ << ", " << model_.sparse->Tables().size()
                << " embedding table(s), " << model_.dense->NumParameters()
                << " dense parameters, plan " << model_.plan.Hash() << "\n"
                << model_.plan.ToTable() << std::flush;
    }

    std::optional<DataCursor> resume;
    if (restore_dir) resume = Restore(ckpt, *restore_dir);
    if (fine_tune_dir) FineTuneFrom(ckpt, *fine_tune_dir);
    comm_->Barrier();
    if (rank_ == 0) WriteEffectiveConfig();

    Train(ckpt, resume);
    return 0;
  }

 private:
  TrainState CurrentState(std::int64_t step, const std::string& cursor_json) {
    TrainState st = ModelState(*model_.sparse, *model_.dense);
    st.step = step;
    st.plan_json = model_.plan.ToJson();
    for (auto& [name, tensor] : optimizer_->StateTensors())
      st.dense_optimizer.push_back({name, tensor});
    st.data_cursor_json = cursor_json;
    nlohmann::json extra = {{"grad_scale", scale_},
                            {"growth_tracker", growth_tracker_},
                            {"epoch", epoch_},
                            {"sparse_lr", sparse_lr_},
                            {"dense_lr", optimizer_->LearningRate()}};
    st.extra_json = extra.dump();
    return st;
  }

  DataCursor Restore(CheckpointManager& ckpt, const std::string& dir) {
    TrainState target = CurrentState(0, "{}");
    if (flags_.ignore_restore_optimizer) {  // weights only: the optimizers start fresh
      for (auto& shard : target.shards) shard.optimizer.clear();
      target.dense_optimizer.clear();
    }
    RestoreInfo info;
    {
      c10::NoGradGuard no_grad;
      info = ckpt.Restore(dir, target);
    }
    if (!flags_.ignore_restore_optimizer) LoadShardOptimizerStates(*model_.sparse, target);
    for (const auto& nt : target.dense_optimizer) {
      if (nt.name == "step") {
        for (auto& [name, tensor] : optimizer_->StateTensors()) {
          if (name == "step") tensor.copy_(nt.tensor);
        }
      }
    }
    global_step_ = info.step;
    // A resumed run with nothing left to train evaluates, never re-saves (a flash checkpoint is
    // not on disk yet: the final save writes it there).
    saved_step_ = flash_->IsFlash(dir) ? -1 : info.step;
    const auto extra = nlohmann::json::parse(info.extra_json.empty() ? "{}" : info.extra_json);
    scale_ = extra.value("grad_scale", scale_);
    growth_tracker_ = extra.value("growth_tracker", std::int64_t{0});
    epoch_ = extra.value("epoch", std::int64_t{0});
    std::vector<DataCursor> cursors;
    for (const auto& c : info.data_cursors_json) cursors.push_back(DataCursor::FromJson(c));
    DataCursor merged = DataCursor::Merge(cursors);
    // The epoch in progress is the cursor's: a checkpoint written after the last epoch ended
    // records epoch = epochs_completed + 1 in extra, which would skip an epoch when the resumed run
    // is given more num_epochs.
    epoch_ = merged.epochs_completed;
    batch_epoch_ = epoch_;
    if (rank_ == 0) {
      std::cout << "tzrec_train: restored " << dir << " (step " << info.step << ", saved by "
                << info.saved_world_size << " rank(s)); " << merged.total_rows << " rows, epoch "
                << merged.epochs_completed << ", " << RowsIn(merged.consumed) << " consumed"
                << std::endl;
    }
    return merged;
  }

  // The checkpoint's weights and, unless --ignore_restore_optimizer, its optimizer state
  // (TorchEasyRec tzrec/main.py `_train_and_evaluate`: ckpt_manager.restore(ckpt_path, model,
  // optimizer, fine_tune_ckpt_param_map) on a fine-tune path too). The run stays at step 0 with its
  // own data, lr schedules, loss scale and metrics.
  void FineTuneFrom(CheckpointManager& ckpt, const std::string& dir) {
    const bool optimizer = !flags_.ignore_restore_optimizer;
    TrainState target = CurrentState(0, "{}");
    if (!optimizer) {
      for (auto& shard : target.shards) shard.optimizer.clear();
      target.dense_optimizer.clear();
    }
    ApplyParamMap(param_map_, config_.train_config().fine_tune_ckpt_param_map(), *model_.sparse,
                  *model_.dense, target);
    RestoreInfo info;
    {
      c10::NoGradGuard no_grad;
      // Another dense optimizer than the checkpoint's: a CheckpointError naming
      // --ignore_restore_optimizer.
      info = ckpt.Restore(dir, target);
    }
    if (optimizer) LoadShardOptimizerStates(*model_.sparse, target);
    if (rank_ == 0) {
      std::cout << "tzrec_train: fine-tune: weights "
                << (optimizer ? "and optimizer state" : "(not the optimizer state)") << " from "
                << dir << " (step " << info.step << ", saved by " << info.saved_world_size
                << " rank(s)); this run starts at step 0 with fresh data, lr schedule and metrics"
                << std::endl;
    }
  }

  static std::int64_t RowsIn(const std::vector<RowRange>& rs) {
    std::int64_t n = 0;
    for (const auto& r : rs) n += r.end - r.begin;
    return n;
  }

  void WriteEffectiveConfig() {
    fs::create_directories(config_.model_dir());
    std::ofstream(fs::path(config_.model_dir()) / "pipeline.config") << ToText(config_);
    std::ofstream(fs::path(config_.model_dir()) / "version")
        << "tzrec_train " << TZRUN_VERSION << '\n';
  }

  std::optional<Fetched> Fetch(Dataset& ds, bool train) {
    return FetchBatch(model_, config_, ds, train);
  }

  at::Tensor Logits(const Fetched& f, bool training) {
    return DenseLogits(model_, config_, f, training, buffer_sync_.get());
  }

  // The running sums of a Train call: losses since the last log line, samples, the step timer.
  struct Progress {
    std::int64_t total_steps = 0;
    double loss_sum = 0;
    std::vector<double> task_loss_sum;  // multi-task: per task, summed like loss_sum
    std::int64_t loss_count = 0;
    std::int64_t samples = 0;
    double last_loss = NAN;
    std::chrono::steady_clock::time_point window_start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point train_start = window_start;
    std::int64_t window_samples = 0;
    std::string last_cursor;
    std::int64_t micro = 0;
  };

  void Train(CheckpointManager& ckpt, const std::optional<DataCursor>& resume) {
    const auto& tc = config_.train_config();
    const std::int64_t batch = config_.data_config().batch_size();
    Dataset ds = GuardInput([&] {
      return Dataset(config_, config_.train_input_path(), rank_, world_, batch, resume,
                     /*train=*/true);
    });
    const std::int64_t epochs = NumEpochs(config_);
    // Steps still to run: this epoch's remaining rows (a resumed rank may hold fewer), then full
    // epochs; recomputed when an epoch starts.
    const std::int64_t full_epoch_steps = (ds.TotalRows() / world_ + batch - 1) / batch;
    Progress p;
    auto plan_total = [&]() {
      p.total_steps = tc.num_steps() > 0
                          ? tc.num_steps()
                          : global_step_ + (ds.RowsAssigned() + batch - 1) / batch +
                                std::max<std::int64_t>(0, epochs - epoch_ - 1) * full_epoch_steps;
    };
    plan_total();
    p.last_cursor = ds.Cursor().ToJson();

    auto done = [&]() { return tc.num_steps() > 0 && global_step_ >= tc.num_steps(); };
    bool whole_epoch = false;  // the epoch being read started at its first row (not a resume)
    std::int64_t epoch_start_step = global_step_;
    while (!done() && (tc.num_steps() > 0 || epoch_ < epochs)) {
      std::optional<Fetched> cur = Fetch(ds, true);
      if (!cur) {  // epoch over (or the data is exhausted for num_steps)
        ++epoch_;
        if (tc.num_steps() == 0 && epoch_ >= epochs) break;
        // With num_steps, an epoch of no steps would repeat for ever.
        if (whole_epoch && global_step_ == epoch_start_step) ThrowNoTrainingRows(ds);
        ds.StartNextEpoch();
        whole_epoch = true;
        epoch_start_step = global_step_;
        plan_total();
        continue;
      }
      while (cur && !done()) {
        if (step_barrier_) comm_->Barrier();  // CC < 7.0: TorchEasyRec's NCCL deadlock workaround
        std::optional<Fetched> next = Fetch(ds, true);  // input dist of batch k+1 overlaps batch k
        TrainStep(*cur, p);
        progress_.Report(global_step_, "train");
        if (tc.log_step_count_steps() > 0 && global_step_ % tc.log_step_count_steps() == 0) {
          LogProgress(p);
        }
        if (tc.save_checkpoints_steps() > 0 && global_step_ % tc.save_checkpoints_steps() == 0) {
          SaveAndEval(ckpt, p.last_cursor, p.samples, p.train_start, p.last_loss, p.loss_sum,
                      p.loss_count);
        }
        if (flash_->Due(global_step_) && saved_step_ != global_step_) {
          progress_.Report(global_step_, "checkpoint");
          flash_->Save(CurrentState(global_step_, p.last_cursor));
        }
        cur = std::move(next);
      }
      if (cur)
        model_.sparse->Drain(
            cur->dist);  // a batch fetched ahead of the last step: finish its input dist
      if (done()) break;
    }
    if (p.micro % accumulation_ != 0) DenseStep();
    if (p.loss_count > 0) train_loss_ = p.loss_sum / static_cast<double>(p.loss_count);
    if (std::isnan(train_loss_)) train_loss_ = p.last_loss;
    SaveAndEval(ckpt, p.last_cursor, p.samples, p.train_start, p.last_loss, p.loss_sum,
                p.loss_count, /*final=*/true);
  }

  // A whole epoch gave no training step (batches stop when any rank runs out): names the rank
  // with no rows, agreed on every rank so each ends with the same error.
  void ThrowNoTrainingRows(const Dataset& ds) {
    AgreeOnFirstError(*comm_, [&] {
      if (ds.RowsAssigned() > 0) return;
      throw InputError("train_config.num_steps " +
                       std::to_string(config_.train_config().num_steps()) + ": rank " +
                       std::to_string(rank_) + " has no training rows in '" +
                       config_.train_input_path() + "' (" + std::to_string(ds.TotalRows()) +
                       " rows in all, split over " + std::to_string(world_) +
                       " ranks), so no step can run; give every rank rows (more rows or input "
                       "files) or run fewer ranks");
    });
    throw InputError("train_config.num_steps " +
                     std::to_string(config_.train_config().num_steps()) + ": an epoch of '" +
                     config_.train_input_path() +
                     "' ended before any "
                     "training step although every rank has rows; check the input's batch_size");
  }

  // Forward, backward and (every accumulation_ micro-batches) the dense step of one batch.
  void TrainStep(const Fetched& cur, Progress& p) {
    ApplySchedules();
    at::Tensor logits = Logits(cur, /*training=*/true);
    const at::Tensor& w = cur.batch.sample_weights;
    const std::vector<TaskSpec>& tasks = model_.dense->Tasks();
    at::Tensor loss;
    if (tasks.empty()) {
      loss =
          BceWithLogitsLoss(logits, cur.batch.labels.to(device_), w.defined() ? w.to(device_) : w);
      p.last_loss = loss.item<double>();
    } else {
      const MultiTaskLoss mt =
          MultiTaskBceLoss(logits, cur.batch.all_labels, w.defined() ? w.to(device_) : w, tasks);
      loss = mt.total;
      ReadLosses(mt, p);
    }
    at::Tensor scaled = loss / static_cast<double>(accumulation_);
    // GradScaler as TorchEasyRec (dist_util._pipeline_backward:
    // grad_scaler.scale(loss).backward()): the fused embedding update runs inside this backward
    // with the loss-scaled gradient; only the dense gradients are unscaled (DenseStep), as
    // GradScaler.unscale_ reaches .grad tensors alone.
    if (scale_ > 0) scaled = scaled * scale_;
    scaled.backward();
    if (++p.micro % accumulation_ == 0) DenseStep();
    ++global_step_;
    batch_epoch_ = epoch_;
    p.samples += cur.batch.size;
    p.window_samples += cur.batch.size;
    p.loss_sum += p.last_loss;
    ++p.loss_count;
    p.last_cursor = cur.cursor_json;
  }

  // The total and per-task losses of one step, read to the host in one transfer (one device
  // synchronisation per step, as for a single-task model).
  static void ReadLosses(const MultiTaskLoss& mt, Progress& p) {
    std::vector<at::Tensor> parts{mt.total.detach()};
    for (const at::Tensor& t : mt.per_task) parts.push_back(t.detach());
    const at::Tensor host = at::stack(parts).to(at::kCPU, at::kDouble).contiguous();
    const double* v = host.data_ptr<double>();
    p.last_loss = v[0];
    p.task_loss_sum.resize(mt.per_task.size(), 0.0);
    for (std::size_t t = 0; t < mt.per_task.size(); ++t) p.task_loss_sum[t] += v[t + 1];
  }

  // The learning rates of this step from the schedules (TorchEasyRec tzrec/optim/lr_scheduler.py:
  // a function of the steps taken and the epochs completed, both restored by a resume, so a
  // resumed run continues the schedule exactly). The sparse update runs in the backward, so this
  // precedes the forward.
  void ApplySchedules() {
    const double sparse = sparse_schedule_->LearningRate(global_step_, epoch_);
    if (sparse != sparse_lr_) {
      for (auto& shard : model_.sparse->LocalShards()) shard.state->SetLearningRate(sparse);
      sparse_lr_ = sparse;
    }
    const double dense = dense_schedule_->LearningRate(global_step_, epoch_);
    if (dense != optimizer_->LearningRate()) optimizer_->SetLearningRate(dense);
  }

  // The log line of the last log_step_count_steps steps (rank 0), then a new window.
  void LogProgress(Progress& p) {
    const auto& tc = config_.train_config();
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - p.window_start).count();
    const double rate = static_cast<double>(p.window_samples) * world_ / std::max(secs, 1e-9);
    const double per_step = secs / static_cast<double>(tc.log_step_count_steps());
    if (rank_ == 0) {
      std::cout << "step " << global_step_ << "/" << p.total_steps << "  loss " << std::fixed
                << std::setprecision(5) << p.loss_sum / static_cast<double>(p.loss_count);
      // Multi-task: each task's loss by TorchEasyRec's name (binary_cross_entropy_<tower>).
      const std::vector<TaskSpec>& tasks = model_.dense->Tasks();
      for (std::size_t t = 0; t < p.task_loss_sum.size() && t < tasks.size(); ++t) {
        std::cout << "  binary_cross_entropy_" << tasks[t].tower_name << " "
                  << p.task_loss_sum[t] / static_cast<double>(p.loss_count);
      }
      std::cout << "  lr " << std::setprecision(6) << sparse_lr_ << "/"
                << optimizer_->LearningRate() << "  samples/s " << std::setprecision(1) << rate
                << "  eta " << Hms(per_step * static_cast<double>(p.total_steps - global_step_))
                << std::defaultfloat << std::endl;
    }
    p.window_start = now;
    p.window_samples = 0;
    train_loss_ = p.loss_sum / static_cast<double>(p.loss_count);
    p.loss_sum = 0;
    p.task_loss_sum.assign(p.task_loss_sum.size(), 0.0);
    p.loss_count = 0;
  }

  void DenseStep() {
    sync_->AllReduceGradients();
    const auto& tc = config_.train_config();
    bool finite = true;
    if (scale_ > 0) {  // GradScaler: unscale, skip the step on inf/nan (identical on every rank)
      c10::NoGradGuard no_grad;
      at::Tensor bad = at::zeros({}, at::TensorOptions().device(device_));
      for (const auto& p : model_.dense->Parameters()) {
        if (!p.tensor.grad().defined()) continue;
        p.tensor.mutable_grad().div_(scale_);
        bad = bad + (~at::isfinite(p.tensor.grad())).sum();
      }
      finite = bad.item<double>() == 0;
      const auto& gs = tc.grad_scaler();
      if (!finite) {
        scale_ *= gs.backoff_factor();
        growth_tracker_ = 0;
      } else if (++growth_tracker_ >= gs.growth_interval()) {
        scale_ *= gs.growth_factor();
        growth_tracker_ = 0;
      }
    }
    if (finite) {
      ClipGradients();
      optimizer_->Step();
    }
    optimizer_->ZeroGrad();
  }

  void ClipGradients() {
    const auto& gc = config_.train_config().grad_clipping();
    if (gc.clipping_type() == "none") return;
    c10::NoGradGuard no_grad;
    if (gc.clipping_type() == "value") {
      for (const auto& p : model_.dense->Parameters()) {
        if (p.tensor.grad().defined())
          p.tensor.mutable_grad().clamp_(-gc.max_gradient(), gc.max_gradient());
      }
      return;
    }
    // Norm over every dense gradient. They are already averaged over ranks (identical everywhere),
    // so the local norm is the global norm; enable_global_grad_clip needs no extra collective here.
    double total = 0;
    const bool inf_norm = std::isinf(gc.norm_type());
    for (const auto& p : model_.dense->Parameters()) {
      if (!p.tensor.grad().defined()) continue;
      const at::Tensor g = p.tensor.grad().to(at::kDouble);
      if (inf_norm) {
        total = std::max(total, g.abs().max().item<double>());
      } else {
        total += g.abs().pow(gc.norm_type()).sum().item<double>();
      }
    }
    if (!inf_norm) total = std::pow(total, 1.0 / gc.norm_type());
    const double coef = gc.max_gradient() / (total + 1e-6);
    if (coef < 1.0) {
      for (const auto& p : model_.dense->Parameters()) {
        if (p.tensor.grad().defined()) p.tensor.mutable_grad().mul_(coef);
      }
    }
  }

  void SaveAndEval(CheckpointManager& ckpt, const std::string& cursor, std::int64_t samples,
                   std::chrono::steady_clock::time_point start, double last_loss, double loss_sum,
                   std::int64_t loss_count, bool final = false) {
    (void)last_loss;
    (void)loss_sum;
    (void)loss_count;
    if (final && saved_step_ == global_step_) {
      // the last step was just saved
    } else {
      progress_.Report(global_step_, "checkpoint");
      const auto t0 = std::chrono::steady_clock::now();
      const TrainState state = CurrentState(global_step_, cursor);
      const std::string dir = flash_->Enabled() ? flash_->SaveForDisk(state) : ckpt.Save(state);
      saved_step_ = global_step_;
      if (rank_ == 0) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - t0);
        std::cout << "tzrec_train: saved " << dir << " (" << ms.count() << " ms"
                  << (flash_->Enabled() ? "; into memory, tzrun writes it to disk" : "") << ")"
                  << std::endl;
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    samples_per_sec_ = static_cast<double>(samples) * world_ / std::max(secs, 1e-9);
    // One evaluation per step: the final call after a save step does not evaluate again.
    if (!config_.eval_input_path().empty() && evaluated_step_ != global_step_) {
      progress_.Report(global_step_, "eval");
      Evaluate();
      evaluated_step_ = global_step_;
    }
    if (rank_ == 0) WriteMetrics();
  }

  void Evaluate() {
    const EvalResult r = tzrec::Evaluate(model_, config_, config_.eval_input_path(), global_step_,
                                         EvalProgressDesc(batch_epoch_, global_step_));
    eval_auc_ = r.auc;
    eval_loss_ = r.loss;
    eval_samples_ = r.samples;
    eval_gauc_ = r.grouped_auc;
    eval_task_metrics_ = r.task_metrics;
  }

  void WriteMetrics() {
    nlohmann::json m = {
        {"global_step", global_step_},
        {"world_size", world_},
        {"train_loss", std::isnan(train_loss_) ? nlohmann::json() : nlohmann::json(train_loss_)},
        {"samples_per_sec", samples_per_sec_}};
    const fs::path previous = fs::path(config_.model_dir()) / "metrics.json";
    if (std::isnan(train_loss_) && samples_per_sec_ == 0 && fs::exists(previous)) {
      // A resumed run with nothing left to train: keep the training figures of the run that
      // trained.
      try {
        const auto old = nlohmann::json::parse(std::ifstream(previous));
        if (old.contains("train_loss")) m["train_loss"] = old["train_loss"];
        if (old.contains("samples_per_sec")) m["samples_per_sec"] = old["samples_per_sec"];
      } catch (const std::exception&) {
        // an unreadable old file: write the fresh figures
      }
    }
    if (!config_.eval_input_path().empty()) {
      // Multi-task models: "eval_<metric>_<tower>" per task metric, eval_loss their losses' sum.
      if (eval_task_metrics_.empty()) m["eval_auc"] = eval_auc_;
      m["eval_loss"] = std::isnan(eval_loss_) ? nlohmann::json() : nlohmann::json(eval_loss_);
      m["eval_samples"] = eval_samples_;
      if (!std::isnan(eval_gauc_)) m["eval_grouped_auc"] = eval_gauc_;
      for (const auto& [key, value] : eval_task_metrics_)
        m["eval_" + key] = std::isnan(value) ? nlohmann::json() : nlohmann::json(value);
    }
    const fs::path path = fs::path(config_.model_dir()) / "metrics.json";
    const fs::path tmp = fs::path(config_.model_dir()) / ".metrics.json.tmp";
    std::ofstream(tmp) << m.dump(2) << '\n';
    fs::rename(tmp, path);
    // One line per evaluation, like TorchEasyRec's train_eval_result_v2.txt.
    std::ofstream(fs::path(config_.model_dir()) / "train_eval_result.txt", std::ios::app)
        << m.dump() << '\n';
  }

  PipelineConfig config_;
  Flags flags_;
  std::unique_ptr<FlashCheckpoints> flash_;
  ProgressReporter progress_;  // tzrun --hang-timeout (progress_report.hpp)  //
                               // --flash_checkpoint_steps (flash_checkpoint.hpp)
  std::shared_ptr<Comm> comm_;
  int rank_ = 0;
  int world_ = 1;
  at::Device device_{at::kCPU};
  DistModel model_;
  std::map<std::string, std::string> param_map_;  // fine_tune_ckpt_param_map: current → saved
  std::unique_ptr<DenseSync> sync_;
  std::unique_ptr<DenseSync> buffer_sync_;  // float buffers; null when the model has none
  std::unique_ptr<DenseOptimizer> optimizer_;
  std::int64_t accumulation_ = 1;
  bool step_barrier_ = false;
  std::int64_t global_step_ = 0;
  std::int64_t saved_step_ = -1;
  std::int64_t evaluated_step_ = -1;  // the step Evaluate() last ran at
  std::int64_t epoch_ = 0;
  std::int64_t batch_epoch_ = 0;  // the epoch of the last trained batch (eval progress lines)
  std::optional<LrSchedule> sparse_schedule_;
  std::optional<LrSchedule> dense_schedule_;
  double sparse_lr_ = -1;  // the lr last given to the embedding shards
  double scale_ = 0;       // GradScaler loss scale; 0: no scaler
  std::int64_t growth_tracker_ = 0;
  double train_loss_ = NAN;
  double samples_per_sec_ = 0;
  double eval_auc_ = NAN;
  double eval_gauc_ = NAN;
  double eval_loss_ = NAN;
  std::int64_t eval_samples_ = 0;
  std::vector<std::pair<std::string, double>> eval_task_metrics_;  // multi-task models
};

}  // namespace

int TrainEval(const TrainEvalOptions& flags) {
  LoadedConfig loaded = LoadPipelineConfig(flags.pipeline_config_path, flags.edit_config_json);
  PipelineConfig& config = loaded.config;
  if (!flags.train_input_path.empty()) config.set_train_input_path(flags.train_input_path);
  if (!flags.eval_input_path.empty()) config.set_eval_input_path(flags.eval_input_path);
  if (!flags.model_dir.empty()) config.set_model_dir(flags.model_dir);
  if (!flags.fine_tune_checkpoint.empty()) {
    config.mutable_train_config()->set_fine_tune_checkpoint(flags.fine_tune_checkpoint);
  }
  ResolveInputs(&config, &loaded.warnings);
  PrintConfigWarnings(loaded.warnings);
  if (config.train_input_path().empty()) {
    throw ConfigError(
        "no train input: set train_input_path in the config or pass --train_input_path");
  }
  if (config.model_dir().empty())
    throw ConfigError("no model_dir: set it in the config or pass --model_dir");
  return Trainer(std::move(config), flags).Run();
}

}  // namespace tzrec
