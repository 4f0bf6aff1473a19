// tzrec_train export / predict: their flags (TorchEasyRec tzrec/export.py's and predict.py's, in
// both spellings, plus tzrec_train's older names; unknown ones as src/worker/app/flags.hpp says)
// parsed into ExportOptions / PredictOptions for tzrec::Export and tzrec::Predict
// (include/tzrec/train/train.hpp).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>

#include "commands.hpp"
#include "flags.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

int RunExport(int argc, char** argv) {
  ExportOptions options;
  CLI::App app{
      "tzrec_train export: write a single-process model from a checkpoint of any world size",
      "tzrec_train export"};
  CommandFlags parser(app, "export");
  app.add_option("--pipeline_config_path,--pipeline-config-path", options.pipeline_config_path,
                 "pipeline config, protobuf text or JSON (default: <model_dir>/pipeline.config)");
  app.add_option("--model_dir,--model-dir", options.model_dir,
                 "training model_dir (its newest checkpoint is exported)");
  app.add_option("--checkpoint_path,--checkpoint-path", options.checkpoint_path,
                 "a model.ckpt-STEP directory to export");
  app.add_option("--export_dir,--export-dir", options.export_dir,
                 "output directory (must not exist)")
      ->required();
  parser.Refused("asset_files", true,
                 "copying extra files into the export is not implemented; copy them yourself");
  parser.Refused("additional_export_config", true,
                 "tzrec_train writes no model_acc.json to merge it into");
  parser.NoEffect("data_input_path", true,
                  "tzrec_train export traces no sample batch; the export is a checkpoint");
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  return Export(std::move(options));
}

int RunPredict(int argc, char** argv) {
  PredictOptions options;
  CLI::App app{
      "tzrec_train predict: score an input with an exported model (TorchEasyRec "
      "tzrec.predict)",
      "tzrec_train predict"};
  CommandFlags parser(app, "predict");
  app.add_option("--scripted_model_path,--scripted-model-path,--export_dir,--export-dir",
                 options.export_dir, "directory written by tzrec_train export")
      ->required();
  app.add_option("--predict_input_path,--predict-input-path,--input_path,--input-path",
                 options.input_path, "input in the config's format (globs, comma-separated)")
      ->required();
  app.add_option("--predict_output_path,--predict-output-path,--output_path,--output-path",
                 options.output_path, "predictions file: CSV or Parquet (see --writer_type)");
  app.add_option("--reserved_columns,--reserved-columns", options.reserved_columns,
                 "comma-separated input columns copied to the output, after the outputs");
  app.add_option("--output_columns,--output-columns", options.output_columns,
                 "comma-separated model outputs: logits, probs (default: both)");
  app.add_option("--batch_size,--batch-size", options.batch_size,
                 "default: the config's data_config.eval_batch_size, else batch_size");
  app.add_option("--writer_type,--writer-type", options.writer_type,
                 "CsvWriter | ParquetWriter (default: by the output's extension, else the "
                 "dataset_type's)");
  app.add_option("--dataset_type,--dataset-type", options.dataset_type,
                 "overrides data_config.dataset_type: CsvDataset | ParquetDataset");
  app.add_option("--edit_config_json,--edit-config-json", options.edit_config_json,
                 "JSON object of dotted-path overrides of the export's pipeline.config");
  parser.NoEffect("predict_threads", true,
                  "tzrec_train predicts in one thread; the predictions are the same");
  parser.NoEffect("is_profiling", false, "no profiling trace is written");
  parser.NoEffect("debug_level", true, "tzrec_train prints no parsed-input debug output");
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  return Predict(std::move(options));
}

}  // namespace tzrec
