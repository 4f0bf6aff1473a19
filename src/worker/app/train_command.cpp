// tzrec_train train_eval: its flags (TorchEasyRec tzrec.train_eval's, in both spellings) parsed
// into TrainEvalOptions for tzrec::TrainEval (include/tzrec/train/train.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "commands.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

int RunTrainEval(int argc, char** argv) {
  TrainEvalOptions flags;
  CLI::App app{"tzrec_train train_eval: train and evaluate a model (TorchEasyRec tzrec.train_eval)",
               "tzrec_train"};
  app.add_option("--pipeline_config_path,--pipeline-config-path", flags.pipeline_config_path,
                 "pipeline config (JSON)")
      ->required();
  app.add_option("--train_input_path,--train-input-path", flags.train_input_path,
                 "overrides the config's");
  app.add_option("--eval_input_path,--eval-input-path", flags.eval_input_path,
                 "overrides the config's");
  app.add_option("--model_dir,--model-dir", flags.model_dir, "overrides the config's");
  app.add_option("--edit_config_json,--edit-config-json", flags.edit_config_json,
                 "JSON object of dotted-path overrides, e.g. '{\"train_config.num_steps\": 100}'");
  app.add_flag("--continue_train,--continue-train", flags.continue_train,
               "resume from the newest checkpoint in model_dir");
  app.add_flag("--ignore_restore_optimizer,--ignore-restore-optimizer",
               flags.ignore_restore_optimizer, "restore weights but not optimizer state");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return TrainEval(flags);
}

}  // namespace tzrec
