// tzrec_train export / predict: their flags parsed into ExportOptions / PredictOptions for
// tzrec::Export and tzrec::Predict (include/tzrec/train/train.hpp).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>

#include "commands.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

int RunExport(int argc, char** argv) {
  ExportOptions options;
  std::string& config_path = options.pipeline_config_path;
  std::string& model_dir = options.model_dir;
  std::string& checkpoint_path = options.checkpoint_path;
  std::string& export_dir = options.export_dir;
  CLI::App app{
      "tzrec_train export: write a single-process model from a checkpoint of any world size",
      "tzrec_train export"};
  app.add_option("--pipeline_config_path,--pipeline-config-path", config_path,
                 "pipeline config (default: <model_dir>/pipeline.config)");
  app.add_option("--model_dir,--model-dir", model_dir,
                 "training model_dir (its newest checkpoint is exported)");
  app.add_option("--checkpoint_path,--checkpoint-path", checkpoint_path,
                 "a model.ckpt-STEP directory to export");
  app.add_option("--export_dir,--export-dir", export_dir, "output directory (must not exist)")
      ->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return Export(std::move(options));
}

int RunPredict(int argc, char** argv) {
  PredictOptions options;
  std::string& export_dir = options.export_dir;
  std::string& input_path = options.input_path;
  std::string& output_path = options.output_path;
  std::int64_t& batch_size = options.batch_size;
  CLI::App app{"tzrec_train predict: score an input with an exported model", "tzrec_train predict"};
  app.add_option("--export_dir,--export-dir", export_dir, "directory written by tzrec_train export")
      ->required();
  app.add_option("--input_path,--input-path", input_path,
                 "input in the config's format (globs, comma-separated)")
      ->required();
  app.add_option("--output_path,--output-path", output_path, "write one probability per line here");
  app.add_option("--batch_size,--batch-size", batch_size, "default: the config's eval batch size");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return Predict(std::move(options));
}

}  // namespace tzrec
