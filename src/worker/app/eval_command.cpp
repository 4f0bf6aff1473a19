// tzrec_train eval: its flags (TorchEasyRec tzrec/eval.py's, in both spellings; unknown ones as
// src/worker/app/flags.hpp says) parsed into EvalOptions for tzrec::Eval
// (include/tzrec/train/train.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "tzrec/error.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

int RunEval(int argc, char** argv) {
  EvalOptions options;
  std::string eval_type = "latest";
  CLI::App app{"tzrec_train eval: evaluate a checkpoint on every rank (TorchEasyRec tzrec.eval)",
               "tzrec_train eval"};
  CommandFlags parser(app, "eval");
  app.add_option("--pipeline_config_path,--pipeline-config-path", options.pipeline_config_path,
                 "pipeline config: protobuf text (.config) or protobuf JSON")
      ->required();
  app.add_option("--checkpoint_path,--checkpoint-path", options.checkpoint_path,
                 "a model.ckpt-N directory (default: the newest in the config's model_dir)");
  app.add_option("--eval_input_path,--eval-input-path", options.eval_input_path,
                 "overrides the config's eval_input_path");
  app.add_option("--eval_result_filename,--eval-result-filename", options.eval_result_filename,
                 "appended with one JSON line in <model_dir>")
      ->capture_default_str();
  app.add_option("--eval_type,--eval-type", eval_type,
                 "which checkpoint without --checkpoint_path: latest (TorchEasyRec's default)")
      ->capture_default_str();
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  if (eval_type != "latest") {
    throw ConfigError("--eval_type '" + eval_type +
                      "': tzrec_train evaluates the latest checkpoint (eval_type latest); pass "
                      "--checkpoint_path model_dir/model.ckpt-N for another one");
  }
  return Eval(options);
}

}  // namespace tzrec
