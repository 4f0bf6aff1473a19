// Tests of the pure parts of the eval / predict / fine-tune entry points (src/worker/train):
// TorchEasyRec's eval result line (tzrec/main.py `_evaluate`), the predictions file (CSV fields,
// writer choice, reserved columns in input order across files, Parquet written and read back) and
// the fine_tune_checkpoint path resolution (tzrec/utils/checkpoint_util.py `latest_checkpoint`).
#include <ATen/ops/ones.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dist_model.hpp"
#include "prediction_output.hpp"
#include "reader.hpp"
#include "train_common.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/error.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tzrec_entry_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EvalResult, LineHasTorchEasyRecsKeys) {
  PipelineConfig config;
  config.mutable_model_config()->add_metrics()->mutable_grouped_auc()->set_grouping_key("u");
  config.mutable_model_config()->add_metrics()->mutable_auc();
  EvalResult r;
  r.auc = 0.75;
  r.grouped_auc = 0.625;
  r.loss = 0.5;
  EXPECT_EQ(EvalResultLine(config, 30, r),
            R"({"global_step":30,"auc":0.75,"binary_cross_entropy":0.5,"grouped_auc":0.625})");
  EXPECT_EQ(EvalResultLine(PipelineConfig(), std::nullopt, EvalResult()),
            R"({"global_step":null,"binary_cross_entropy":null})");
}

TEST(PredictOutput, CsvFields) {
  using K = OutValue::Kind;
  EXPECT_EQ(CsvField({K::kNull, 0, 0, ""}), "");
  EXPECT_EQ(CsvField({K::kInt, -12, 0, ""}), "-12");
  EXPECT_EQ(CsvField({K::kFloat32, 0, static_cast<double>(0.1F), ""}), "0.1");
  EXPECT_EQ(CsvField({K::kDouble, 0, 0.1, ""}), "0.1");
  EXPECT_EQ(CsvField({K::kString, 0, 0, "plain"}), "plain");
  EXPECT_EQ(CsvField({K::kString, 0, 0, "a,b"}), "\"a,b\"");
  EXPECT_EQ(CsvField({K::kString, 0, 0, "say \"hi\""}), "\"say \"\"hi\"\"\"");
}

TEST(PredictOutput, WriterChoice) {
  PipelineConfig csv;
  csv.mutable_data_config()->set_dataset_type(protos::CsvDataset);
  PipelineConfig parquet;
  parquet.mutable_data_config()->set_dataset_type(protos::ParquetDataset);
  EXPECT_EQ(ChooseWriter("", "out.parquet", csv), WriterKind::kParquet);
  EXPECT_EQ(ChooseWriter("", "out.CSV", parquet), WriterKind::kCsv);
  EXPECT_EQ(ChooseWriter("", "out", parquet), WriterKind::kParquet);
  EXPECT_EQ(ChooseWriter("", "out", csv), WriterKind::kCsv);
  EXPECT_EQ(ChooseWriter("ParquetWriter", "out.csv", csv), WriterKind::kParquet);
  EXPECT_THROW(ChooseWriter("OdpsWriter", "out", csv), ConfigError);
}

// Two CSV files with a header: rows come in file order, a Next() may span both files.
TEST(PredictOutput, ReservedColumnsInInputOrderAcrossFiles) {
  const fs::path dir = TempDir("reserved");
  std::ofstream(dir / "a.csv") << "id,name,x\n1,one,0.5\n2,\"t,wo\",1.5\n";
  std::ofstream(dir / "b.csv") << "id,name,x\n3,three,2.5\n";
  PipelineConfig config;
  config.mutable_data_config()->set_dataset_type(protos::CsvDataset);
  config.mutable_data_config()->set_with_header(true);
  const std::string input = (dir / "*.csv").string();
  EXPECT_TRUE(InputHasColumn(config, input, "name"));
  EXPECT_FALSE(InputHasColumn(config, input, "label"));
  ReservedColumnReader reader(config, input, {"name", "id"});
  const OutColumns first = reader.Next(1);
  const OutColumns rest = reader.Next(2);
  ASSERT_EQ(first.size(), 2U);
  EXPECT_EQ(CsvField(first[0][0]), "one");
  ASSERT_EQ(rest[0].size(), 2U);
  EXPECT_EQ(CsvField(rest[0][0]), "\"t,wo\"");
  EXPECT_EQ(CsvField(rest[0][1]), "three");
  EXPECT_EQ(CsvField(rest[1][1]), "3");
  EXPECT_THROW(reader.Next(1), InputError);
  EXPECT_THROW(ReservedColumnReader(config, input, {"nope"}), InputError);

  auto writer =
      OpenPredictionWriter(WriterKind::kCsv, (dir / "out.csv").string(), {"probs", "name", "id"});
  OutColumns columns = {{{OutValue::Kind::kFloat32, 0, static_cast<double>(0.25F), ""}}};
  for (const auto& c : first) columns.push_back(c);
  writer->Write(columns);
  writer->Close();
  EXPECT_EQ(ReadFile(dir / "out.csv"), "probs,name,id\n0.25,one,1\n");
  fs::remove_all(dir);
}

TEST(PredictOutput, ParquetColumnTypes) {
  const fs::path dir = TempDir("parquet");
  const std::string path = (dir / "out.parquet").string();
  using K = OutValue::Kind;
  auto writer = OpenPredictionWriter(WriterKind::kParquet, path, {"probs", "id", "x", "s"});
  writer->Write({{{K::kFloat32, 0, 0.5, ""}},
                 {{K::kInt, 7, 0, ""}},
                 {{K::kInt, 1, 0, ""}},
                 {{K::kString, 0, 0, "a"}}});
  writer->Write({{{K::kFloat32, 0, 0.25, ""}},
                 {{K::kNull, 0, 0, ""}},
                 {{K::kDouble, 0, 2.5, ""}},
                 {{K::kInt, 3, 0, ""}}});
  writer->Close();
  auto reader = input::OpenParquet(path);
  ASSERT_EQ(reader->NumRows(), 2);
  EXPECT_EQ(reader->ColumnNames(), (std::vector<std::string>{"probs", "id", "x", "s"}));
  const input::ColumnBlock b = reader->Read(0, 2, {0, 1, 2, 3});
  EXPECT_EQ(b.columns[0][1].kind, input::Cell::Kind::kFloat);
  EXPECT_EQ(b.columns[0][1].d, 0.25);
  EXPECT_EQ(b.columns[1][0].i, 7);
  EXPECT_TRUE(b.columns[1][1].IsNull());
  EXPECT_EQ(b.columns[2][0].kind, input::Cell::Kind::kFloat);  // ints and floats: double
  EXPECT_EQ(b.columns[2][0].d, 1.0);
  EXPECT_EQ(b.columns[3][1].s, "3");  // any text: string
  fs::remove_all(dir);
}

TEST(FineTune, ParamMapLinesAreCurrentThenSavedName) {
  const auto renames = ParseParamMap(
      "# renamed tables\n\nc0_emb   old_c0_emb\n\tfinal_mlp.mlp.0.perceptron.0.weight w0  \n",
      "map.txt");
  const std::map<std::string, std::string> expected = {
      {"c0_emb", "old_c0_emb"}, {"final_mlp.mlp.0.perceptron.0.weight", "w0"}};
  EXPECT_EQ(renames, expected);
  for (const char* bad : {"a\n", "a b c\n", "a b\na c\n"}) {
    try {
      ParseParamMap(bad, "map.txt");
      FAIL() << bad;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("fine_tune_ckpt_param_map 'map.txt' line"), std::string::npos) << what;
    }
  }
}

TEST(FineTune, RenamesBringTheirOptimizerState) {
  // fine_tune_ckpt_param_map's "<current> <saved>": a renamed table's shards (with their optimizer
  // state) and a renamed dense tensor's weights and DenseOptimizer states "<name>/<state>" are read
  // from the saved name; other names are left alone.
  TrainState state;
  state.shards.resize(2);
  state.shards[0].table = "new_emb";
  state.shards[1].table = "kept_emb";
  state.dense = {{"mlp.w", at::ones({2})}, {"mlp.b", at::ones({2})}};
  state.dense_optimizer = {{"mlp.w/exp_avg", at::ones({2})},
                           {"mlp.w/step", at::ones({})},
                           {"mlp.b/exp_avg", at::ones({2})},
                           {"mlp.w.x/step", at::ones({})}};
  RenameToSaved({{"new_emb", "old_emb"}, {"mlp.w", "old.w"}}, state);
  EXPECT_EQ(state.shards[0].table, "old_emb");
  EXPECT_EQ(state.shards[1].table, "kept_emb");
  EXPECT_EQ(state.dense[0].name, "old.w");
  EXPECT_EQ(state.dense[1].name, "mlp.b");
  std::vector<std::string> names;
  for (const auto& nt : state.dense_optimizer) names.push_back(nt.name);
  EXPECT_EQ(names, (std::vector<std::string>{"old.w/exp_avg", "old.w/step", "mlp.b/exp_avg",
                                             "mlp.w.x/step"}));
}

TEST(EvalResult, ProgressDescIsTorchEasyRecs) {
  EXPECT_EQ(EvalProgressDesc(std::nullopt, std::nullopt), "Evaluating");
  EXPECT_EQ(EvalProgressDesc(std::nullopt, 20), "Evaluating model-20");
  EXPECT_EQ(EvalProgressDesc(0, 8), "Evaluating Epoch-0 model-8");
}

TEST(FineTune, CheckpointPathOrNewestInModelDir) {
  const fs::path dir = TempDir("fine_tune");
  auto comm = Comm::Init(DistEnv{}, BackendKind::kGloo);
  CheckpointManager manager(dir.string(), 0, comm);
  TrainState state;
  state.dense = {{"w", at::ones({2})}};
  state.data_cursor_json = "{}";
  state.step = 3;
  manager.Save(state);
  state.step = 7;
  manager.Save(state);
  EXPECT_EQ(fs::path(ResolveFineTuneCheckpoint(dir.string(), comm)).filename(), "model.ckpt-7");
  EXPECT_EQ(ResolveFineTuneCheckpoint((dir / "model.ckpt-3").string(), comm),
            (dir / "model.ckpt-3").string());
  for (const fs::path& bad : {dir / "model.ckpt-9", dir / "missing", dir / "model.ckpt-3" / "x"}) {
    try {
      ResolveFineTuneCheckpoint(bad.string(), comm);
      FAIL() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tzrec
