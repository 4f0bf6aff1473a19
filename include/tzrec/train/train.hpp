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
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/comm/comm.hpp"
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
//
// Which checkpoint a run starts from (TorchEasyRec tzrec/main.py `train_and_evaluate`):
//   model_dir holds a checkpoint, --continue_train: resume it (step, data cursor, optimizer state,
//     lr schedule); fine_tune_checkpoint, if set, is not used (a note says so).
//   model_dir holds a checkpoint, no --continue_train: ConfigError (use an empty model_dir).
//   model_dir holds none, train_config.fine_tune_checkpoint (or --fine_tune_checkpoint) set: a
//     fresh run (step 0, data from its start, fresh lr schedule and metrics) whose embedding
//     tables and dense parameters are the checkpoint's weights, and whose optimizer state is the
//     checkpoint's unless --ignore_restore_optimizer (TorchEasyRec's restore(ckpt_path, model,
//     optimizer, fine_tune_ckpt_param_map); a dense optimizer state the checkpoint lacks is a
//     CheckpointError naming --ignore_restore_optimizer). The path is a
//     model.ckpt-N directory (its name contains "model.ckpt-") or a model_dir (its newest valid
//     checkpoint); saved at any world size and plan. A table or dense parameter of the model
//     that the checkpoint lacks or has with another shape is a CheckpointError naming it (exit
//     4); saved ones the model does not have are skipped with a warning.
//     train_config.fine_tune_ckpt_param_map names a text file of renames, one
//     "<current name> <saved name>" pair per line (TorchEasyRec's PartialLoadPlanner format;
//     blank lines and lines starting with '#' are skipped): the model's embedding table
//     <current name> (a table name) or dense tensor <current name> (its checkpoint name, e.g.
//     "final_mlp.mlp.0.perceptron.0.weight") is restored from the saved <saved name>. A name the
//     model does not have is a ConfigError (exit 2), as is a malformed line.
//   neither: a fresh run from the seeded initialisation.
struct TrainEvalOptions {
  std::string pipeline_config_path;
  std::string train_input_path;
  std::string eval_input_path;
  std::string model_dir;
  std::string edit_config_json;      // JSON object of dotted-path overrides
  std::string fine_tune_checkpoint;  // sets train_config.fine_tune_checkpoint when non-empty
  bool continue_train = false;
  bool ignore_restore_optimizer = false;
  // Every N steps an in-memory checkpoint in tzrun's TZRUN_FLASH_DIR (0: none); see
  // src/worker/train/flash_checkpoint.hpp.
  std::int64_t flash_checkpoint_steps = 0;
};
int TrainEval(const TrainEvalOptions& options);

// The checkpoint directory a fine_tune_checkpoint path names: the path itself when its last
// component contains "model.ckpt-" (it must be a valid checkpoint), else the newest valid
// model.ckpt-N under it. Throws ConfigError naming the path when there is none. Local (no
// collective; `comm` is only held by the CheckpointManager that lists the directory).
std::string ResolveFineTuneCheckpoint(const std::string& path, std::shared_ptr<Comm> comm);

// The renames of a fine_tune_ckpt_param_map file's text (format above): current name → saved
// name. `path` is only used in messages. Throws ConfigError naming path:line for a line that is
// not two whitespace-separated names, or a current name given twice. Pure.
std::map<std::string, std::string> ParseParamMap(const std::string& text, const std::string& path);

// eval flags (TorchEasyRec tzrec/eval.py's): evaluates a checkpoint on every rank of the launch
// (run under tzrun like train_eval) and appends one line to <model_dir>/<eval_result_filename>.
struct EvalOptions {
  std::string pipeline_config_path;
  std::string checkpoint_path;  // empty: the newest checkpoint in the config's model_dir
  std::string eval_input_path;  // empty: the config's
  std::string eval_result_filename = "eval_result.txt";
};
int Eval(const EvalOptions& options);

struct ExportOptions {
  std::string pipeline_config_path;  // default: <model_dir>/pipeline.config
  std::string model_dir;             // its newest checkpoint is exported
  std::string checkpoint_path;       // or this model.ckpt-STEP directory
  std::string export_dir;            // must not exist or be empty
};
int Export(ExportOptions options);

// predict flags (TorchEasyRec tzrec/predict.py's). Scores the input with the export's model in one
// process and writes, per input row in input order, the output columns and then the reserved
// columns (TorchEasyRec's _write_predictions order). Output columns: "logits" and "probs"
// (TorchEasyRec's rank-model prediction names); default both, sorted. Reserved columns: input
// columns copied through (Parquet input: ints as int64, floats as double, text as string; CSV
// input: their text). Input without the label column is scored (no AUC is printed); with it the
// AUC is printed. Writer: writer_type "CsvWriter" (header line, comma-separated) or
// "ParquetWriter"; empty: by the output path's extension (.parquet / .csv / .txt), else the
// dataset_type's (CsvDataset -> CsvWriter, as TorchEasyRec). drop_remainder is off (every row).
struct PredictOptions {
  std::string export_dir;        // written by export (TorchEasyRec: --scripted_model_path)
  std::string input_path;        // the config's format (globs, comma-separated)
  std::string output_path;       // the predictions file; empty: none written
  std::string reserved_columns;  // comma-separated input columns to copy through
  std::string output_columns;    // comma-separated of "logits", "probs"; empty: both
  std::string writer_type;       // "CsvWriter" | "ParquetWriter" | "" (see above)
  std::string dataset_type;      // overrides data_config.dataset_type ("ParquetDataset", ...)
  std::string edit_config_json;  // dotted-path overrides of the export's pipeline.config
  std::int64_t batch_size = 0;   // <= 0: data_config.batch_size (TorchEasyRec's default)
};
int Predict(PredictOptions options);

// DenseOptimizer: tzrec/train/dense_optimizer.hpp; LrSchedule: tzrec/train/lr_schedule.hpp;
// Auc, GroupedAuc: tzrec/train/metrics.hpp.

}  // namespace tzrec
