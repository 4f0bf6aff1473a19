// tzrec_train train_eval: its flags (TorchEasyRec tzrec/train_eval.py's, in both spellings; unknown
// ones as src/worker/app/flags.hpp says) parsed into TrainEvalOptions for tzrec::TrainEval
// (include/tzrec/train/train.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

int RunTrainEval(int argc, char** argv) {
  TrainEvalOptions flags;
  CLI::App app{"tzrec_train train_eval: train and evaluate a model (TorchEasyRec tzrec.train_eval)",
               "tzrec_train"};
  CommandFlags parser(app, "train_eval");
  app.add_option("--pipeline_config_path,--pipeline-config-path", flags.pipeline_config_path,
                 "pipeline config: protobuf text (.config) or protobuf JSON")
      ->required();
  app.add_option("--train_input_path,--train-input-path", flags.train_input_path,
                 "overrides the config's");
  app.add_option("--eval_input_path,--eval-input-path", flags.eval_input_path,
                 "overrides the config's");
  app.add_option("--model_dir,--model-dir", flags.model_dir, "overrides the config's");
  app.add_option("--edit_config_json,--edit-config-json", flags.edit_config_json,
                 "JSON object of dotted-path overrides, e.g. '{\"train_config.num_steps\": 100}'");
  app.add_flag("--continue_train,--continue-train", flags.continue_train,
               "resume from the newest checkpoint in model_dir (wins over fine_tune_checkpoint)");
  app.add_option("--fine_tune_checkpoint,--fine-tune-checkpoint", flags.fine_tune_checkpoint,
                 "sets train_config.fine_tune_checkpoint: start a fresh run from the weights of "
                 "this model.ckpt-N directory (or of the newest one in this model_dir)");
  app.add_flag("--ignore_restore_optimizer,--ignore-restore-optimizer",
               flags.ignore_restore_optimizer, "restore weights but not optimizer state");
  app.add_option("--flash_checkpoint_steps,--flash-checkpoint-steps", flags.flash_checkpoint_steps,
                 "every N steps, an in-memory checkpoint held by tzrun --flash-checkpoint's agent; "
                 "a restarted group (--continue_train) resumes from it (0: none)");
  parser.Refused("ignore_restore_lr_scheduler", false,
                 "the learning rates are a function of the restored step and epoch, so a resumed "
                 "run always continues the schedule; remove the flag");
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  return TrainEval(flags);
}

}  // namespace tzrec
