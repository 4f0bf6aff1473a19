// tzrec_train export / predict (include/tzrec/train/train.hpp).
//
// export: one process (whatever RANK/WORLD_SIZE say, as TorchEasyRec's normal export forces
// WORLD_SIZE=1) builds the model with every table on rank 0, restores a checkpoint of any world
// size (shards merged by global offsets), and writes export_dir/pipeline.config and
// export_dir/model.ckpt-STEP/ (a world-1 checkpoint that Python's torch.load reads).
// predict: loads an export, scores an input file in the config's format, writes one probability
// per line and prints the AUC when the input has labels.
#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "train_common.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/input/input.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

// The single-process model of a config: every table whole on rank 0.
struct SingleModel {
  std::shared_ptr<Comm> comm;
  std::vector<EmbeddingBagConfig> tables;
  ShardingPlan plan;
  std::unique_ptr<ShardedEmbeddingBagCollection> ebc;
  std::unique_ptr<DenseModel> dense;

  explicit SingleModel(const PipelineConfig& config) {
    DistEnv env;  // world 1, no store
    comm = Comm::Init(env, BackendKind::kGloo);
    tables = EmbeddingTables(config);
    std::vector<TableSpec> specs;
    ParameterConstraints tw;
    tw.sharding_types = {ShardingType::kTableWise};
    for (const auto& t : tables) specs.push_back(ToTableSpec(t, tw));
    Topology topo;
    topo.ddr_cap = 1LL << 50;  // export holds every table in this process, whatever the host says
    PlannerOptions popts;
    popts.batch_size = config.data_config().batch_size();
    popts.optimizer = SparseOptimizerFromConfig(config.train_config().sparse_optimizer()).kind;
    plan = Plan(topo, specs, popts);
    EmbeddingOptimizerConfig ocfg;
    ocfg.kind = popts.optimizer;
    ebc = std::make_unique<ShardedEmbeddingBagCollection>(tables, plan, ocfg, Seed(config), comm);
    dense = DenseModel::Create(config, Seed(config), comm->device());
  }

  std::int64_t RestoreFrom(const std::string& model_dir, const std::string& dir) {
    CheckpointManager ckpt(model_dir, 0, comm);
    TrainState state = ModelState(*ebc, tables, *dense);
    c10::NoGradGuard no_grad;
    const RestoreInfo info = ckpt.Restore(dir, state);
    LoadShardOptimizerStates(*ebc, state);
    return info.step;
  }
};

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
  TrainState state = ModelState(*model.ebc, model.tables, *model.dense);
  state.step = step;
  state.plan_json = model.plan.ToJson();
  state.data_cursor_json = "{}";
  const std::string dir = writer.Save(state);
  std::cout << "tzrec_train export: " << checkpoint_path << " (step " << step << ") -> " << dir
            << std::endl;
  return 0;
}

int Predict(PredictOptions options) {
  const std::string& export_dir = options.export_dir;
  const std::string& input_path = options.input_path;
  const std::string& output_path = options.output_path;
  std::int64_t& batch_size = options.batch_size;
  const PipelineConfig config =
      LoadPipelineConfig((fs::path(export_dir) / "pipeline.config").string()).config;
  SingleModel model(config);
  CheckpointManager ckpt(export_dir, 0, model.comm);
  auto latest = ckpt.Latest();
  if (!latest)
    throw ConfigError("'" + export_dir + "' holds no exported model; run tzrec_train export first");
  model.RestoreFrom(export_dir, *latest);
  if (batch_size <= 0) {
    batch_size = EvalBatchSize(config);
  }
  c10::NoGradGuard no_grad;
  Dataset ds = GuardInput([&] { return Dataset(config, input_path, 0, 1, batch_size); });
  std::vector<at::Tensor> scores;
  std::vector<at::Tensor> labels;
  while (auto b = GuardInput([&] { return ds.Next(); })) {
    const KeyedTensor kt = model.ebc->Forward(AddDerivedFeatures(config, b->sparse));
    scores.push_back(at::sigmoid(model.dense->Forward(kt, b->dense, /*training=*/false)));
    labels.push_back(b->labels);
  }
  const at::Tensor s = scores.empty() ? at::zeros({0}) : at::cat(scores);
  const at::Tensor l = labels.empty() ? at::zeros({0}) : at::cat(labels);
  if (!output_path.empty()) {
    std::ofstream out(output_path);
    const auto acc = s.accessor<float, 1>();
    for (std::int64_t i = 0; i < s.numel(); ++i) out << acc[i] << '\n';
    if (!out) throw InputError("could not write --output_path '" + output_path + "'");
  }
  std::cout << "tzrec_train predict: " << s.numel() << " rows, auc " << std::fixed
            << std::setprecision(5) << Auc(s, l, AucThresholds(config)) << std::endl;
  return 0;
}

}  // namespace tzrec
