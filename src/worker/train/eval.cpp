// tzrec_train eval (include/tzrec/train/train.hpp): the distributed model of the config, restored
// from a checkpoint of any world size, evaluated on every rank of the launch.
// Reference: alibaba/TorchEasyRec tzrec/eval.py (flags, default eval_result.txt) and tzrec/main.py
// `evaluate` (checkpoint_path default: the newest in model_dir; the result line appended to
// <model_dir>/<eval_result_filename> by rank 0). One difference: TorchEasyRec writes
// "global_step": null when --checkpoint_path is given; tzrec_train writes the checkpoint's step.
#include <c10/core/GradMode.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "dist_model.hpp"
#include "train_common.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

PipelineConfig EvalPipelineConfig(const EvalOptions& options) {
  LoadedConfig loaded = LoadPipelineConfig(options.pipeline_config_path);
  PipelineConfig& config = loaded.config;
  if (!options.eval_input_path.empty()) config.set_eval_input_path(options.eval_input_path);
  if (config.model_dir().empty() && !options.checkpoint_path.empty()) {
    config.set_model_dir(fs::path(options.checkpoint_path).parent_path().string());
  }
  config.clear_train_input_path();  // eval reads no training data (TorchEasyRec's eval.py)
  ResolveInputs(&config, &loaded.warnings);
  PrintConfigWarnings(loaded.warnings);
  if (config.eval_input_path().empty()) {
    throw ConfigError("no eval input: set eval_input_path in the config or pass --eval_input_path");
  }
  if (config.model_dir().empty()) {
    throw ConfigError(
        "no checkpoint to evaluate: set model_dir in the config or pass --checkpoint_path");
  }
  if (options.eval_result_filename.empty()) {
    throw ConfigError(
        "--eval_result_filename is empty; pass a file name (default eval_result.txt)");
  }
  return std::move(loaded.config);
}

}  // namespace

int Eval(const EvalOptions& options) {
  const PipelineConfig config = EvalPipelineConfig(options);
  std::shared_ptr<Comm> comm = Comm::Init(DistEnv::FromEnvironment());
  DistModel model = BuildDistModel(config, comm);
  CheckpointManager ckpt(config.model_dir(), 0, comm);
  std::string dir = options.checkpoint_path;
  if (dir.empty()) {
    const std::optional<std::string> latest = ckpt.Latest();
    if (!latest) {
      throw ConfigError("no valid checkpoint in model_dir '" + config.model_dir() +
                        "'; train first or pass --checkpoint_path");
    }
    dir = *latest;
  }
  TrainState target = ModelState(*model.sparse, *model.dense);
  for (auto& shard : target.shards) shard.optimizer.clear();
  RestoreInfo info;
  {
    c10::NoGradGuard no_grad;
    info = ckpt.Restore(dir, target);
  }
  if (model.rank == 0) {
    std::cout << "tzrec_train eval: " << dir << " (step " << info.step << ", saved by "
              << info.saved_world_size << " rank(s)) on " << model.world << " rank(s)" << std::endl;
  }
  // TorchEasyRec names the model step only when it found the newest checkpoint itself.
  const std::string desc = EvalProgressDesc(
      std::nullopt,
      options.checkpoint_path.empty() ? std::optional<std::int64_t>(info.step) : std::nullopt);
  const EvalResult result = Evaluate(model, config, config.eval_input_path(), info.step, desc);
  if (model.rank == 0) {
    const fs::path path = fs::path(config.model_dir()) / options.eval_result_filename;
    if (path.has_parent_path()) fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::app);
    out << EvalResultLine(config, info.step, result) << '\n';
    out.flush();
    if (!out) throw InputError("could not append to the eval result file '" + path.string() + "'");
    std::cout << "tzrec_train eval: result appended to " << path.string() << std::endl;
  }
  model.comm->Barrier();
  return 0;
}

}  // namespace tzrec
