// tzrec/train/train.hpp — tzrec_train's commands: train_eval (TorchEasyRec tzrec.train_eval),
// export and predict; plus the pieces they share (dense optimizers, lr schedules, AUC metrics).
//
// train_eval follows tzrec/main.py `_train_and_evaluate` and TorchRec's TrainPipelineSparseDist
// (notes ../shared/reference/torchrec-sharding.md §1.3–1.6): the next batch's input dist is issued
// before the current batch's compute; a has-batch agreement (the batch sizes of the input dist's
// first all-to-all when some table is sharded, else an all-reduce: SUM, compared with the world
// size) ends an epoch on every rank as soon as one rank runs out (the remainder is dropped
// everywhere, as tzrec does); eval runs until every rank is out, ranks without data feeding empty
// batches. Exit codes of the commands: 0 success; 2 bad input (config, flags, data: the message
// names it); 3 no feasible sharding plan; 4 a collective or checkpoint failure.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/train/dense_optimizer.hpp"
#include "tzrec/train/lr_schedule.hpp"
#include "tzrec/train/metrics.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {

// The commands, with their flags already parsed (src/worker/app/*_command.cpp parse argv). Each
// returns 0 on success; every failure is thrown (a tzrec::Error subclass, include/tzrec/error.hpp)
// and mapped to its exit code and one stderr line by the boundary in src/worker/app/main.cpp.

// train_eval flags (TorchEasyRec tzrec.train_eval's); empty paths keep the config's value.
struct TrainEvalOptions {
  std::string pipeline_config_path;
  std::string train_input_path;
  std::string eval_input_path;
  std::string model_dir;
  std::string edit_config_json;  // JSON object of dotted-path overrides
  bool continue_train = false;
  bool ignore_restore_optimizer = false;
};
int TrainEval(const TrainEvalOptions& options);

struct ExportOptions {
  std::string pipeline_config_path;  // default: <model_dir>/pipeline.config
  std::string model_dir;             // its newest checkpoint is exported
  std::string checkpoint_path;       // or this model.ckpt-STEP directory
  std::string export_dir;            // must not exist or be empty
};
int Export(ExportOptions options);

struct PredictOptions {
  std::string export_dir;       // written by export
  std::string input_path;       // the config's format (globs, comma-separated)
  std::string output_path;      // one probability per line; empty: none
  std::int64_t batch_size = 0;  // <= 0: the config's eval batch size
};
int Predict(PredictOptions options);

// DenseOptimizer: tzrec/train/dense_optimizer.hpp; LrSchedule: tzrec/train/lr_schedule.hpp;
// Auc, GroupedAuc: tzrec/train/metrics.hpp.

}  // namespace tzrec
