// tzrec_train export / predict (include/tzrec/train/train.hpp).
//
// export: one process (whatever RANK/WORLD_SIZE say, as TorchEasyRec's normal export forces
// WORLD_SIZE=1) builds the model with every table on rank 0, restores a checkpoint of any world
// size (shards merged by global offsets), and writes export_dir/pipeline.config and
// export_dir/model.ckpt-STEP/ (a world-1 checkpoint that Python's torch.load reads).
// predict: loads an export, scores an input file in the config's format, writes the output and
// reserved columns (prediction_output.hpp) and prints the AUC when the input has labels.
#include <ATen/core/Tensor.h>
#include <ATen/ops/stack.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "prediction_output.hpp"
#include "train_common.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/input/input.hpp"
#include "tzrec/train/train.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

// The labels of each task as columns: [B, T] (Batch::all_labels[label_index]).
at::Tensor TaskLabels(const Batch& b, const std::vector<TaskSpec>& tasks) {
  std::vector<at::Tensor> columns;
  for (const auto& t : tasks)
    columns.push_back(b.all_labels.at(static_cast<std::size_t>(t.label_index)));
  return at::stack(columns, 1);
}

// The single-process model of a config: every table whole on rank 0.
struct SingleModel {
  std::shared_ptr<Comm> comm;
  ShardingPlan plan;
  std::unique_ptr<SparseArch> sparse;
  std::unique_ptr<DenseModel> dense;

  explicit SingleModel(const PipelineConfig& config) {
    DistEnv env;  // world 1, no store
    comm = Comm::Init(env, BackendKind::kGloo);
    ParameterConstraints tw;
    tw.sharding_types = {ShardingType::kTableWise};
    const std::vector<TableSpec> specs = SparseTableSpecs(config, tw);
    Topology topo;
    topo.ddr_cap = 1LL << 50;  // export holds every table in this process, whatever the host says
    PlannerOptions popts;
    popts.batch_size = config.data_config().batch_size();
    popts.optimizer = SparseOptimizerFromConfig(config.train_config().sparse_optimizer()).kind;
    plan = Plan(topo, specs, popts);
    EmbeddingOptimizerConfig ocfg;
    ocfg.kind = popts.optimizer;
    sparse = std::make_unique<SparseArch>(config, plan, ocfg, Seed(config), comm);
    dense = DenseModel::Create(config, Seed(config), comm->Device());
  }

  std::int64_t RestoreFrom(const std::string& model_dir, const std::string& dir) {
    CheckpointManager ckpt(model_dir, 0, comm);
    TrainState state = ModelState(*sparse, *dense);
    c10::NoGradGuard no_grad;
    const RestoreInfo info = ckpt.Restore(dir, state);
    LoadShardOptimizerStates(*sparse, state);
    return info.step;
  }
};

// The export's pipeline.config with predict's flags applied (TorchEasyRec tzrec/main.py `predict`:
// batch_size (eval_batch_size when set), dataset_type, edit_config_json, drop_remainder and shuffle
// off; no sample weights and only the first label). Input without the label column: no labels read
// and no metrics grouped.
PipelineConfig PredictConfig(PredictOptions& options) {
  PipelineConfig config =
      LoadPipelineConfig((fs::path(options.export_dir) / "pipeline.config").string(),
                         options.edit_config_json)
          .config;
  auto* data = config.mutable_data_config();
  if (!options.dataset_type.empty()) {
    protos::DatasetType type;
    if (!protos::DatasetType_Parse(options.dataset_type, &type)) {
      throw ConfigError("--dataset_type '" + options.dataset_type +
                        "' is not a DatasetType; tzrec_train reads CsvDataset and ParquetDataset");
    }
    data->set_dataset_type(type);
  }
  data->set_drop_remainder(false);
  data->set_shuffle(false);
  // The batch of a non-training dataloader: --batch_size, else eval_batch_size when set, else
  // batch_size (TorchEasyRec tzrec/utils/config_util.py get_inference_batch_size, used by
  // tzrec/datasets/dataset.py for every mode but TRAIN; set_inference_batch_size for the flag).
  if (options.batch_size <= 0) options.batch_size = EvalBatchSize(config);
  // Scores use neither sample weights nor the labels after the first (TorchEasyRec's predict reads
  // only the model's inputs), so their columns need not be in the input.
  data->clear_sample_weight_fields();
  if (!TaskSpecs(config).empty()) {  // multi-task: every task's label, or none
    for (const auto& label : data->label_fields()) {
      if (!GuardInput([&] { return InputHasColumn(config, options.input_path, label); })) {
        data->clear_label_fields();
        break;
      }
    }
    return config;
  }
  while (data->label_fields_size() > 1) data->mutable_label_fields()->RemoveLast();
  if (data->label_fields_size() > 0 && !GuardInput([&] {
        return InputHasColumn(config, options.input_path, data->label_fields(0));
      })) {
    data->clear_label_fields();
    config.mutable_model_config()->clear_metrics();
  }
  return config;
}

std::vector<std::string> SplitColumns(const std::string& list) {
  std::vector<std::string> out;
  if (tzrun::base::Strip(list).empty()) return out;
  for (const auto& c : tzrun::base::Split(list, ',')) out.push_back(tzrun::base::Strip(c));
  return out;
}

// TorchEasyRec's prediction names, sorted: "logits", "probs"; multi-task models "logits_<tower>",
// "probs_<tower>" per task (tzrec/models/multi_task_rank.py).
std::vector<std::string> OutputNames(const std::vector<TaskSpec>& tasks) {
  if (tasks.empty()) return {"logits", "probs"};
  std::vector<std::string> names;
  for (const auto& t : tasks) {
    names.push_back("logits_" + t.tower_name);
    names.push_back("probs_" + t.tower_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// --output_columns: of the model's outputs; default all, sorted.
std::vector<std::string> OutputColumns(const std::string& list,
                                       const std::vector<TaskSpec>& tasks) {
  const std::vector<std::string> known = OutputNames(tasks);
  std::vector<std::string> out = SplitColumns(list);
  if (out.empty()) return known;
  for (const auto& c : out) {
    if (std::find(known.begin(), known.end(), c) == known.end()) {
      throw ConfigError("--output_columns: '" + c +
                        "' is not an output of this model; it outputs " +
                        tzrun::base::Join(known, ", "));
    }
  }
  return out;
}

std::vector<std::string> ReservedColumns(const std::string& list) {
  std::vector<std::string> out = SplitColumns(list);
  for (const auto& c : out) {
    if (c.empty()) throw ConfigError("--reserved_columns '" + list + "' has an empty name");
  }
  return out;
}

// logits [B] (or [B, T] for the tasks) float -> the requested output columns (probs =
// sigmoid(logits), float32).
OutColumns PredictionColumns(const std::vector<std::string>& outputs, const at::Tensor& logits,
                             const std::vector<TaskSpec>& tasks) {
  OutColumns columns;
  for (const auto& name : outputs) {
    at::Tensor t = logits;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (name == "logits_" + tasks[i].tower_name || name == "probs_" + tasks[i].tower_name)
        t = logits.select(1, static_cast<std::int64_t>(i));
    }
    if (name.rfind("probs", 0) == 0) t = at::sigmoid(t);
    t = t.contiguous();
    const auto acc = t.accessor<float, 1>();
    std::vector<OutValue> column(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      column[static_cast<std::size_t>(i)].kind = OutValue::Kind::kFloat32;
      column[static_cast<std::size_t>(i)].d = acc[i];
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace

int Export(ExportOptions options) {
  std::string& config_path = options.pipeline_config_path;
  std::string& model_dir = options.model_dir;
  std::string& checkpoint_path = options.checkpoint_path;
  const std::string& export_dir = options.export_dir;
  if (model_dir.empty() && checkpoint_path.empty()) {
    throw ConfigError(
        "nothing to export: pass --model_dir (newest checkpoint) or --checkpoint_path");
  }
  if (model_dir.empty()) model_dir = fs::path(checkpoint_path).parent_path().string();
  if (config_path.empty()) config_path = (fs::path(model_dir) / "pipeline.config").string();
  const PipelineConfig config = LoadPipelineConfig(config_path).config;
  if (fs::exists(export_dir) && !fs::is_empty(export_dir)) {
    throw ConfigError("--export_dir '" + export_dir +
                      "' exists and is not empty; choose a new directory");
  }
  SingleModel model(config);
  if (checkpoint_path.empty()) {
    CheckpointManager ckpt(model_dir, 0, model.comm);
    auto latest = ckpt.Latest();
    if (!latest)
      throw ConfigError("no valid checkpoint in '" + model_dir +
                        "'; train first or pass --checkpoint_path");
    checkpoint_path = *latest;
  }
  const std::int64_t step = model.RestoreFrom(model_dir, checkpoint_path);
  fs::create_directories(export_dir);
  PipelineConfig out = config;
  out.set_model_dir(export_dir);
  std::ofstream(fs::path(export_dir) / "pipeline.config") << ToText(out);
  CheckpointManager writer(export_dir, 0, model.comm);
  TrainState state = ModelState(*model.sparse, *model.dense);
  state.step = step;
  state.plan_json = model.plan.ToJson();
  state.data_cursor_json = "{}";
  const std::string dir = writer.Save(state);
  std::cout << "tzrec_train export: " << checkpoint_path << " (step " << step << ") -> " << dir
            << std::endl;
  return 0;
}

int Predict(PredictOptions options) {
  PipelineConfig config = PredictConfig(options);
  SingleModel model(config);
  CheckpointManager ckpt(options.export_dir, 0, model.comm);
  auto latest = ckpt.Latest();
  if (!latest) {
    throw ConfigError("'" + options.export_dir +
                      "' holds no exported model; run tzrec_train export first");
  }
  model.RestoreFrom(options.export_dir, *latest);
  const std::vector<TaskSpec>& tasks = model.dense->Tasks();
  const std::vector<std::string> outputs = OutputColumns(options.output_columns, tasks);
  const std::vector<std::string> reserved = ReservedColumns(options.reserved_columns);
  const bool labeled = config.data_config().label_fields_size() > 0;
  std::unique_ptr<PredictionWriter> writer;
  if (!options.output_path.empty()) {
    std::vector<std::string> names = outputs;
    names.insert(names.end(), reserved.begin(), reserved.end());
    writer = OpenPredictionWriter(ChooseWriter(options.writer_type, options.output_path, config),
                                  options.output_path, names);
  }
  ReservedColumnReader reserves =
      GuardInput([&] { return ReservedColumnReader(config, options.input_path, reserved); });
  c10::NoGradGuard no_grad;
  Dataset ds =
      GuardInput([&] { return Dataset(config, options.input_path, 0, 1, options.batch_size); });
  std::vector<at::Tensor> scores;
  std::vector<at::Tensor> labels;
  std::int64_t batches = 0;
  while (auto b = GuardInput([&] { return ds.Next(); })) {
    ++batches;
    const KeyedTensor kt = model.sparse->Forward(b->sparse);
    const at::Tensor logits = model.dense->Forward(kt, b->dense, /*training=*/false).to(at::kFloat);
    scores.push_back(at::sigmoid(logits));
    if (labeled) labels.push_back(tasks.empty() ? b->labels : TaskLabels(*b, tasks));
    if (writer) {
      OutColumns columns = PredictionColumns(outputs, logits, tasks);
      OutColumns kept = GuardInput([&] { return reserves.Next(b->size); });
      for (auto& c : kept) columns.push_back(std::move(c));
      writer->Write(columns);
    }
  }
  if (writer) writer->Close();
  std::cout << "tzrec_train predict: " << batches << " batch(es) of at most " << options.batch_size
            << " rows" << std::endl;
  const at::Tensor s =
      scores.empty()
          ? at::zeros(tasks.empty()
                          ? std::vector<std::int64_t>{0}
                          : std::vector<std::int64_t>{0, static_cast<std::int64_t>(tasks.size())})
          : at::cat(scores);
  std::cout << "tzrec_train predict: " << s.size(0) << " rows";
  if (labeled && !tasks.empty()) {
    const at::Tensor l = labels.empty() ? at::zeros({0, s.size(1)}) : at::cat(labels);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].has_auc) continue;
      const auto col = static_cast<std::int64_t>(i);
      std::cout << ", auc_" << tasks[i].tower_name << " " << std::fixed << std::setprecision(5)
                << Auc(s.select(1, col), l.select(1, col), tasks[i].auc_thresholds)
                << std::defaultfloat;
    }
  } else if (labeled) {
    const at::Tensor l = labels.empty() ? at::zeros({0}) : at::cat(labels);
    std::cout << ", auc " << std::fixed << std::setprecision(5) << Auc(s, l, AucThresholds(config))
              << std::defaultfloat;
  } else {
    std::cout << " (no label column in the input: no auc)";
  }
  std::cout << std::endl;
  if (writer) std::cout << "tzrec_train predict: written to " << options.output_path << std::endl;
  return 0;
}

}  // namespace tzrec
