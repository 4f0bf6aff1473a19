// Unit tests of tzrec::checkpoint at world size 1 (include/tzrec/checkpoint/checkpoint.hpp).
#include "tzrec/checkpoint/checkpoint.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tzrec {
namespace {

namespace fs = std::filesystem;

// Shard `s` of table `salt`: cell (row, col) = salt*100000 + row*100 + col (exact in float32).
at::Tensor Slice(int salt, const Shard& s) {
  auto rows = at::arange(s.row_offset, s.row_offset + s.rows, at::kFloat).unsqueeze(1);
  auto cols = at::arange(s.col_offset, s.col_offset + s.cols, at::kFloat).unsqueeze(0);
  return (rows * 100 + cols + salt * 100000).contiguous();
}

Shard MakeShard(std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
  Shard s;
  s.row_offset = r0;
  s.col_offset = c0;
  s.rows = rows;
  s.cols = cols;
  return s;
}

// Adam-like state on table "emb_a" [10, 8] and row-wise Adagrad on "emb_b" [7, 4].
ShardState AdamShard(const Shard& s, bool filled) {
  ShardState st;
  st.table = "emb_a";
  st.table_rows = 10;
  st.table_cols = 8;
  st.shard = s;
  st.weight = filled ? Slice(1, s) : at::full({s.rows, s.cols}, -1.0f);
  st.optimizer.push_back({"momentum1", filled ? Slice(2, s) : at::full({s.rows, s.cols}, -1.0f)});
  st.optimizer.push_back({"momentum2", filled ? Slice(3, s) : at::full({s.rows, s.cols}, -1.0f)});
  st.optimizer.push_back({"step", at::scalar_tensor(filled ? 17 : -1, at::kLong)});
  return st;
}

// Row-wise state of a shard: row*10 + col_offset (one accumulator per row of the shard's columns).
at::Tensor RowWise(const Shard& s) {
  return at::arange(s.row_offset, s.row_offset + s.rows, at::kFloat) * 10 + s.col_offset;
}

ShardState RowWiseShard(const Shard& s, bool filled) {
  ShardState st;
  st.table = "emb_b";
  st.table_rows = 7;
  st.table_cols = 4;
  st.shard = s;
  st.weight = filled ? Slice(4, s) : at::full({s.rows, s.cols}, -1.0f);
  st.optimizer.push_back({"momentum1", filled ? RowWise(s) : at::full({s.rows}, -1.0f)});
  return st;
}

TrainState FullState(bool filled) {
  TrainState state;
  state.step = 5;
  state.shards.push_back(AdamShard(MakeShard(0, 0, 10, 8), filled));
  state.shards.push_back(RowWiseShard(MakeShard(0, 0, 7, 4), filled));
  const auto dense_w =
      filled ? at::arange(12, at::kDouble).reshape({3, 4}) : at::zeros({3, 4}, at::kDouble);
  state.dense.push_back({"mlp.0.weight", dense_w});
  state.dense.push_back({"mlp.0.bias", filled ? at::arange(3, at::kFloat) + 0.5 : at::zeros({3})});
  state.dense_optimizer.push_back(
      {"mlp.0.weight.exp_avg", filled ? at::full({3, 4}, 0.25) : at::zeros({3, 4})});
  state.data_cursor_json = R"({"files":["a.parquet"],"row":123})";
  state.extra_json = R"({"epoch":2,"scaler":65536.0})";
  return state;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tzrec_ckpt_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    comm_ = Comm::Init(DistEnv{});
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
  std::shared_ptr<Comm> comm_;
};

TEST_F(CheckpointTest, RoundTripIsExact) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  EXPECT_FALSE(manager.Latest().has_value());
  const TrainState saved = FullState(true);
  const std::string path = manager.Save(saved);
  EXPECT_EQ(path, (dir_ / "model.ckpt-5").string());
  for (const char* f :
       {"model-000000-of-000001.pt", "optimizer-000000-of-000001.pt", "metadata.json", "plan"}) {
    EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-5" / f)) << f;
  }
  ASSERT_TRUE(manager.Latest().has_value());
  EXPECT_EQ(*manager.Latest(), path);

  TrainState target = FullState(false);
  const RestoreInfo info = manager.Restore(path, target);
  EXPECT_EQ(info.step, 5);
  EXPECT_EQ(info.saved_world_size, 1);
  ASSERT_EQ(info.data_cursors_json.size(), 1u);
  EXPECT_EQ(info.data_cursors_json[0], saved.data_cursor_json);
  EXPECT_EQ(nlohmann::json::parse(info.extra_json), nlohmann::json::parse(saved.extra_json));
  for (std::size_t i = 0; i < saved.shards.size(); ++i) {
    EXPECT_TRUE(at::equal(target.shards[i].weight, saved.shards[i].weight)) << i;
    ASSERT_EQ(target.shards[i].optimizer.size(), saved.shards[i].optimizer.size());
    for (std::size_t k = 0; k < saved.shards[i].optimizer.size(); ++k) {
      EXPECT_TRUE(
          at::equal(target.shards[i].optimizer[k].tensor, saved.shards[i].optimizer[k].tensor))
          << i << " " << saved.shards[i].optimizer[k].name;
    }
  }
  EXPECT_EQ(target.shards[0].optimizer[2].tensor.item<std::int64_t>(), 17);
  for (std::size_t i = 0; i < saved.dense.size(); ++i) {
    EXPECT_TRUE(at::equal(target.dense[i].tensor, saved.dense[i].tensor)) << saved.dense[i].name;
    EXPECT_EQ(target.dense[i].tensor.scalar_type(), saved.dense[i].tensor.scalar_type());
  }
  EXPECT_TRUE(at::equal(target.dense_optimizer[0].tensor, saved.dense_optimizer[0].tensor));

  // metadata.json records shapes, offsets, files and cursors.
  std::ifstream in(dir_ / "model.ckpt-5" / "metadata.json");
  const auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["step"], 5);
  EXPECT_EQ(meta["world_size"], 1);
  EXPECT_EQ(meta["tables"]["emb_a"]["shape"], nlohmann::json({10, 8}));
  EXPECT_EQ(meta["tables"]["emb_b"]["shards"][0]["optimizer"]["momentum1"]["shape"],
            nlohmann::json({7}));
  EXPECT_EQ(meta["data_cursors"][0]["row"], 123);
  EXPECT_EQ(meta["dense"]["tensors"]["mlp.0.weight"]["shape"], nlohmann::json({3, 4}));
}

TEST_F(CheckpointTest, ViewsAndStridedTensorsAreSavedCompactly) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState saved = FullState(true);
  // A shard weight that is a transposed view into a larger buffer.
  at::Tensor big = at::zeros({20, 20});
  big.narrow(0, 2, 8).narrow(1, 5, 10).copy_(Slice(1, MakeShard(0, 0, 10, 8)).t());
  saved.shards[0].weight = big.narrow(0, 2, 8).narrow(1, 5, 10).t();
  const std::string path = manager.Save(saved);
  TrainState target = FullState(false);
  manager.Restore(path, target);
  EXPECT_TRUE(at::equal(target.shards[0].weight, Slice(1, MakeShard(0, 0, 10, 8))));
  // The model file holds the 80 floats of the shard, not the 400 of the buffer: the same size
  // as with a compact weight.
  TrainState compact = FullState(true);
  compact.step = 6;
  manager.Save(compact);
  EXPECT_EQ(fs::file_size(dir_ / "model.ckpt-5" / "model-000000-of-000001.pt"),
            fs::file_size(dir_ / "model.ckpt-6" / "model-000000-of-000001.pt"));
}

// One process holding several shards of a table: resharding by global offsets.
TEST_F(CheckpointTest, ReshardsRowsAndColumns) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState saved;
  saved.step = 9;
  // emb_a: two column blocks of width 4; emb_b: rows split 3 + 4.
  saved.shards.push_back(AdamShard(MakeShard(0, 0, 10, 4), true));
  saved.shards.push_back(AdamShard(MakeShard(0, 4, 10, 4), true));
  saved.shards.push_back(RowWiseShard(MakeShard(0, 0, 3, 4), true));
  saved.shards.push_back(RowWiseShard(MakeShard(3, 0, 4, 4), true));
  saved.shards[1].optimizer[2].tensor.fill_(19);  // differing step counters: the max is kept
  const std::string path = manager.Save(saved);

  TrainState target;
  // emb_a: row-wise 4 + 6 over the full width; emb_b: rows 0-1, 2-6.
  target.shards.push_back(AdamShard(MakeShard(0, 0, 4, 8), false));
  target.shards.push_back(AdamShard(MakeShard(4, 0, 6, 8), false));
  target.shards.push_back(RowWiseShard(MakeShard(0, 0, 2, 4), false));
  target.shards.push_back(RowWiseShard(MakeShard(2, 0, 5, 4), false));
  manager.Restore(path, target);
  for (int i = 0; i < 2; ++i) {
    const Shard& s = target.shards[i].shard;
    EXPECT_TRUE(at::equal(target.shards[i].weight, Slice(1, s))) << i;
    EXPECT_TRUE(at::equal(target.shards[i].optimizer[0].tensor, Slice(2, s))) << i;
    EXPECT_TRUE(at::equal(target.shards[i].optimizer[1].tensor, Slice(3, s))) << i;
    EXPECT_EQ(target.shards[i].optimizer[2].tensor.item<std::int64_t>(), 19) << i;
  }
  for (int i = 2; i < 4; ++i) {
    const Shard& s = target.shards[i].shard;
    EXPECT_TRUE(at::equal(target.shards[i].weight, Slice(4, s))) << i;
    EXPECT_TRUE(at::equal(target.shards[i].optimizer[0].tensor, RowWise(s))) << i;
  }
}

TEST_F(CheckpointTest, RowWiseStateOfOtherColumnBlocksIsReinitialised) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState saved;
  saved.step = 3;
  saved.shards.push_back(RowWiseShard(MakeShard(0, 0, 7, 2), true));
  saved.shards.push_back(RowWiseShard(MakeShard(0, 2, 7, 2), true));
  const std::string path = manager.Save(saved);

  TrainState whole;  // one shard over all 4 columns: the [rows] state cannot be resharded
  whole.shards.push_back(RowWiseShard(MakeShard(0, 0, 7, 4), false));
  manager.Restore(path, whole);
  EXPECT_TRUE(at::equal(whole.shards[0].weight, Slice(4, whole.shards[0].shard)));
  EXPECT_TRUE(at::equal(whole.shards[0].optimizer[0].tensor, at::full({7}, -1.0f)));

  TrainState blocks;  // [rows, 2] blocks of width 2 over the full width: matches the saved blocks
  blocks.shards.push_back(RowWiseShard(MakeShard(0, 0, 7, 4), false));
  blocks.shards[0].optimizer[0].tensor = at::full({7, 2}, -1.0f);
  manager.Restore(path, blocks);
  const auto rows = at::arange(7, at::kFloat) * 10;
  EXPECT_TRUE(at::equal(blocks.shards[0].optimizer[0].tensor, at::stack({rows, rows + 2}, 1)));
}

TEST_F(CheckpointTest, LatestSkipsIncompleteAndTemporaryDirs) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState state = FullState(true);
  state.step = 1;
  const std::string good = manager.Save(state);
  state.step = 3;
  const std::string broken = manager.Save(state);
  fs::remove(fs::path(broken) / "optimizer-000000-of-000001.pt");  // a listed file is missing
  fs::create_directories(dir_ / "model.ckpt-9");                   // no metadata.json
  fs::copy(good, dir_ / ".model.ckpt-12.tmp");                     // killed save, complete files
  EXPECT_EQ(manager.Latest().value_or(""), good);

  // A truncated file (size differs from metadata.json) also makes a checkpoint invalid.
  state.step = 4;
  const std::string truncated = manager.Save(state);
  EXPECT_FALSE(fs::exists(dir_ / ".model.ckpt-12.tmp"));  // removed by the next Save
  EXPECT_EQ(manager.Latest().value_or(""), truncated);
  fs::resize_file(fs::path(truncated) / "model-000000-of-000001.pt", 100);
  EXPECT_EQ(manager.Latest().value_or(""), good);
}

TEST_F(CheckpointTest, KeepMaxPrunesOldest) {
  CheckpointManager manager(dir_.string(), 2, comm_);
  TrainState state = FullState(true);
  for (std::int64_t step : {10, 20, 30, 40}) {
    state.step = step;
    manager.Save(state);
  }
  EXPECT_FALSE(fs::exists(dir_ / "model.ckpt-10"));
  EXPECT_FALSE(fs::exists(dir_ / "model.ckpt-20"));
  EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-30"));
  EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-40"));
  EXPECT_EQ(manager.Latest().value_or(""), (dir_ / "model.ckpt-40").string());

  CheckpointManager keep_all(dir_.string(), 0, comm_);
  for (std::int64_t step : {50, 60, 70}) {
    state.step = step;
    keep_all.Save(state);
  }
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) count += entry.is_directory();
  EXPECT_EQ(count, 5);
}

// A damaged directory named like a checkpoint is not counted toward keep_checkpoint_max (it would
// push the valid older ones out) and is not removed either.
TEST_F(CheckpointTest, KeepMaxCountsOnlyCompleteCheckpoints) {
  CheckpointManager manager(dir_.string(), 2, comm_);
  TrainState state = FullState(true);
  state.step = 10;
  manager.Save(state);
  state.step = 20;
  const std::string damaged = manager.Save(state);
  fs::remove(fs::path(damaged) / "metadata.json");
  fs::create_directories(dir_ / "model.ckpt-25");  // empty: a copy that never finished
  state.step = 30;
  manager.Save(state);
  EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-10"));  // 2 complete: 10 and 30
  EXPECT_TRUE(fs::exists(damaged));
  EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-25"));
  state.step = 40;
  manager.Save(state);
  EXPECT_FALSE(fs::exists(dir_ / "model.ckpt-10"));  // the oldest complete one goes
  EXPECT_TRUE(fs::exists(dir_ / "model.ckpt-30"));
  EXPECT_TRUE(fs::exists(damaged));
  EXPECT_EQ(manager.Latest().value_or(""), (dir_ / "model.ckpt-40").string());
}

TEST_F(CheckpointTest, SavingAnExistingStepFails) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState state = FullState(true);
  const std::string path = manager.Save(state);
  const auto size = fs::file_size(fs::path(path) / "model-000000-of-000001.pt");
  state.dense[0].tensor.fill_(7);
  try {
    manager.Save(state);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("model.ckpt-5' already exists"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fs::file_size(fs::path(path) / "model-000000-of-000001.pt"), size);
  EXPECT_EQ(manager.Latest().value_or(""), path);
  EXPECT_FALSE(fs::exists(dir_ / ".model.ckpt-5.tmp"));
}

std::string RestoreError(CheckpointManager& manager, const std::string& path, TrainState target) {
  try {
    manager.Restore(path, target);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST_F(CheckpointTest, CorruptFilesAreNamed) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  const std::string path = manager.Save(FullState(true));
  const fs::path model = fs::path(path) / "model-000000-of-000001.pt";
  const fs::path optim = fs::path(path) / "optimizer-000000-of-000001.pt";
  const auto size = fs::file_size(model);
  fs::copy_file(model, dir_ / "model.bak");

  fs::resize_file(model, size / 2);  // truncated
  std::string error = RestoreError(manager, path, FullState(false));
  EXPECT_NE(error.find(model.string()), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  {  // same size, garbage content: not a zip archive
    std::ofstream out(model, std::ios::binary | std::ios::trunc);
    out << std::string(size, 'x');
  }
  error = RestoreError(manager, path, FullState(false));
  EXPECT_NE(error.find(model.string()), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;

  fs::copy_file(dir_ / "model.bak", model, fs::copy_options::overwrite_existing);
  {  // the zip's data.pkl record damaged in place (the pickle comes first in the archive)
    std::fstream io(optim, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(120);
    io << std::string(64, '\xff');
  }
  error = RestoreError(manager, path, FullState(false));
  EXPECT_NE(error.find(optim.string()), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;

  {
    std::ofstream out(fs::path(path) / "metadata.json", std::ios::trunc);
    out << "{\"format\": ";
  }
  error = RestoreError(manager, path, FullState(false));
  EXPECT_NE(error.find((fs::path(path) / "metadata.json").string()), std::string::npos) << error;
  EXPECT_FALSE(manager.Latest().has_value());
}

TEST_F(CheckpointTest, ModelMismatchesAreNamed) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  const std::string path = manager.Save(FullState(true));

  TrainState extra_table = FullState(false);
  extra_table.shards[1].table = "emb_new";
  std::string error = RestoreError(manager, path, extra_table);
  EXPECT_NE(error.find("table 'emb_new' is not in checkpoint"), std::string::npos) << error;

  TrainState bigger = FullState(false);
  bigger.shards[1].table_rows = 8;
  bigger.shards[1].shard.rows = 8;
  bigger.shards[1].weight = at::zeros({8, 4});
  error = RestoreError(manager, path, bigger);
  EXPECT_NE(error.find("table 'emb_b' is [8, 4] now but [7, 4]"), std::string::npos) << error;

  TrainState dense_shape = FullState(false);
  dense_shape.dense[0].tensor = at::zeros({4, 3}, at::kDouble);
  error = RestoreError(manager, path, dense_shape);
  EXPECT_NE(error.find("'mlp.0.weight' is [4, 3] now but [3, 4]"), std::string::npos) << error;
  EXPECT_NE(error.find("model-000000-of-000001.pt"), std::string::npos) << error;

  TrainState dense_missing = FullState(false);
  dense_missing.dense_optimizer.push_back({"mlp.0.weight.exp_avg_sq", at::zeros({3, 4})});
  error = RestoreError(manager, path, dense_missing);
  EXPECT_NE(error.find("'mlp.0.weight.exp_avg_sq' is not in"), std::string::npos) << error;
  EXPECT_NE(error.find("optimizer-000000-of-000001.pt"), std::string::npos) << error;
}

TEST_F(CheckpointTest, BadInputsAreRejectedBeforeWriting) {
  CheckpointManager manager(dir_.string(), 0, comm_);
  TrainState state = FullState(true);
  state.extra_json = "{not json";
  EXPECT_THROW(manager.Save(state), CheckpointError);
  state = FullState(true);
  state.shards[0].weight = at::zeros({10, 7});
  try {
    manager.Save(state);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("weight is [10, 7], expected [10, 8]"), std::string::npos)
        << e.what();
  }
  state = FullState(true);
  state.shards[0].shard.rows = 5;  // half of emb_a missing
  state.shards[0].weight = at::zeros({5, 8});
  state.shards[0].optimizer.clear();
  try {
    manager.Save(state);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("cover 40 of its 80 cells"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(manager.Latest().has_value());
  EXPECT_THROW(CheckpointManager("", 0, comm_), CheckpointError);
  EXPECT_THROW(CheckpointManager(dir_.string(), -1, comm_), CheckpointError);
}

#ifdef TZREC_TEST_PYTHON
// Python's torch.load (weights_only=True, its default) returns a dict of the saved tensors.
TEST_F(CheckpointTest, PythonTorchLoadReadsBothFiles) {
  if (!fs::exists(TZREC_TEST_PYTHON)) GTEST_SKIP() << "no python at " << TZREC_TEST_PYTHON;
  CheckpointManager manager(dir_.string(), 0, comm_);
  const TrainState saved = FullState(true);
  const fs::path path = manager.Save(saved);
  const fs::path script = dir_ / "load.py";
  {
    std::ofstream out(script);
    out << "import json, sys, torch\n"
           "out = {}\n"
           "for f in sys.argv[1:]:\n"
           "    d = torch.load(f)\n"
           "    assert type(d) is dict, type(d)\n"
           "    out[f] = {k: {'dtype': str(v.dtype), 'shape': list(v.shape),\n"
           "                  'values': v.flatten().tolist()} for k, v in d.items()}\n"
           "print(json.dumps(out))\n";
  }
  const std::string model = (path / "model-000000-of-000001.pt").string();
  const std::string optim = (path / "optimizer-000000-of-000001.pt").string();
  const std::string command =
      std::string(TZREC_TEST_PYTHON) + " " + script.string() + " " + model + " " + optim + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  if (output.find("No module named 'torch'") != std::string::npos) {
    GTEST_SKIP() << "torch is not installed for " << TZREC_TEST_PYTHON;
  }
  ASSERT_EQ(status, 0) << output;
  const auto result = nlohmann::json::parse(output.substr(output.find('{')));
  const auto check = [&](const std::string& file, const std::string& key, const at::Tensor& want) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(result[file].contains(key)) << result[file].dump().substr(0, 300);
    const auto& entry = result[file][key];
    EXPECT_EQ(entry["shape"].get<std::vector<std::int64_t>>(), want.sizes().vec());
    const auto values = entry["values"].get<std::vector<double>>();
    const at::Tensor flat = want.to(at::kDouble).flatten();
    ASSERT_EQ(static_cast<std::int64_t>(values.size()), flat.numel());
    for (std::int64_t i = 0; i < flat.numel(); ++i) {
      ASSERT_EQ(values[static_cast<std::size_t>(i)], flat[i].item<double>()) << i;
    }
  };
  EXPECT_EQ(result[model].size(), 4u);  // 2 weights + 2 dense
  check(model, "emb_a/weight/0_0", saved.shards[0].weight);
  check(model, "emb_b/weight/0_0", saved.shards[1].weight);
  check(model, "dense/mlp.0.weight", saved.dense[0].tensor);
  check(model, "dense/mlp.0.bias", saved.dense[1].tensor);
  EXPECT_EQ(result[model]["dense/mlp.0.weight"]["dtype"], "torch.float64");
  EXPECT_EQ(result[optim].size(), 5u);  // 3 Adam + 1 row-wise + 1 dense
  check(optim, "emb_a/momentum1/0_0", saved.shards[0].optimizer[0].tensor);
  check(optim, "emb_a/momentum2/0_0", saved.shards[0].optimizer[1].tensor);
  check(optim, "emb_a/step/0_0", saved.shards[0].optimizer[2].tensor);
  EXPECT_EQ(result[optim]["emb_a/step/0_0"]["dtype"], "torch.int64");
  check(optim, "emb_b/momentum1/0_0", saved.shards[1].optimizer[0].tensor);
  check(optim, "dense/mlp.0.weight.exp_avg", saved.dense_optimizer[0].tensor);
}
#endif

}  // namespace
}  // namespace tzrec
