// `tzrec_train plan` (tzrec::RunPlanCommand): output, plan file, exit codes, environment defaults.
#include "plan_command.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out;
  std::string err;
};

Result RunPlan(std::vector<std::string> args) {
  args.insert(args.begin(), "plan");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int rc = RunPlanCommand(static_cast<int>(args.size()), argv.data());
  Result result{rc, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return result;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class PlanCommandTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tzrec_plan_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    for (const char* name : {"WORLD_SIZE", "LOCAL_WORLD_SIZE", "STORAGE_RESERVE_PERCENT",
                             "INTRA_NODE_BANDWIDTH", "CROSS_NODE_BANDWIDTH"}) {
      const char* value = getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  fs::path dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

constexpr const char* kTables = R"({
  "tables": [
    {"name": "user_id", "num_embeddings": 100000, "embedding_dim": 16, "feature_names": ["user_id"]},
    {"name": "item_id", "num_embeddings": 5000, "embedding_dim": 256,
     "feature_names": ["item_id", "click_item"], "pooling_factor": [1, 20],
     "sharding_types": ["column_wise"]},
    {"name": "cate", "num_embeddings": 10, "embedding_dim": 8, "feature_names": ["cate"],
     "pooling_factor": 2, "min_partition": 4}
  ],
  "batch_size": 256,
  "optimizer": "adagrad"
})";

TEST_F(PlanCommandTest, PrintsTableAndHashAndWritesPlan) {
  const std::string tables = Write("tables.json", kTables);
  const fs::path output = dir_ / "out" / "plan.json";
  fs::create_directories(output.parent_path());
  const Result r = RunPlan({"--tables", tables, "--world-size", "4", "--local-world-size", "2",
                            "--ddr-cap-gb", "2", "--output", output.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex("plan hash: ([0-9a-f]{16})\n"))) << r.out;
  EXPECT_NE(r.out.find("world 4 (2 per host), cpu, per-rank batch 256, optimizer adagrad"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("item_id"), std::string::npos);
  EXPECT_NE(r.out.find("column_wise"), std::string::npos);
  EXPECT_NE(r.out.find("per-rank totals"), std::string::npos);

  const ShardingPlan plan = ShardingPlan::FromJson(ReadFile(output));
  EXPECT_EQ(plan.Hash(), match[1].str());
  EXPECT_EQ(plan.world_size, 4);
  EXPECT_EQ(plan.local_world_size, 2);
  ASSERT_EQ(plan.tables.size(), 3u);
  EXPECT_EQ(plan.Get("item_id").sharding_type, ShardingType::kColumnWise);
  EXPECT_EQ(plan.Get("item_id").shards.size(), 2u);
  // The file equals what the library plans for the same input (batch 256, adagrad, 2 GiB).
  Topology topo;
  topo.world_size = 4;
  topo.local_world_size = 2;
  topo.ddr_cap = 2LL << 30;
  std::vector<TableSpec> specs(3);
  specs[0] = {"user_id", 100000, 16, {"user_id"}, 4, {}};
  specs[1] = {"item_id", 5000, 256, {"item_id", "click_item"}, 4, {}};
  specs[1].constraints.pooling_factors = {1, 20};
  specs[1].constraints.sharding_types = {ShardingType::kColumnWise};
  specs[2] = {"cate", 10, 8, {"cate"}, 4, {}};
  specs[2].constraints.pooling_factors = {2};
  specs[2].constraints.min_partition = 4;
  PlannerOptions options;
  options.batch_size = 256;
  options.optimizer = EmbeddingOptimizerKind::kAdagrad;
  EXPECT_EQ(Plan(topo, specs, options).ToJson(2) + "\n", ReadFile(output));
  // No temp file left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(output.parent_path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(PlanCommandTest, FlagsOverrideFileAndEnvironmentGivesDefaults) {
  const std::string tables = Write("tables.json", kTables);
  setenv("WORLD_SIZE", "8", 1);
  setenv("LOCAL_WORLD_SIZE", "4", 1);
  Result r = RunPlan(
      {"--tables", tables, "--batch-size", "64", "--optimizer", "sgd", "--ddr-cap-gb", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("world 8 (4 per host), cpu, per-rank batch 64, optimizer sgd"),
            std::string::npos)
      << r.out;
  unsetenv("LOCAL_WORLD_SIZE");
  r = RunPlan({"--tables", tables, "--world-size", "2", "--ddr-cap-gb", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("world 2 (2 per host)"), std::string::npos) << r.out;  // local = world
  r = RunPlan({"--tables", tables, "--world-size", "2", "--device", "cuda"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("cuda"), std::string::npos);
  EXPECT_NE(r.out.find("hbm 80.0 GiB"), std::string::npos) << r.out;
}

TEST_F(PlanCommandTest, UnknownJsonKeyNamesClosestKey) {
  const std::string tables = Write(
      "tables.json",
      R"({"tables":[{"name":"a","num_embeddings":10,"embeding_dim":4,"feature_names":["a"]}]})");
  const Result r = RunPlan({"--tables", tables});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown key 'embeding_dim'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'embedding_dim'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos);

  const std::string top = Write("top.json", R"({"tables":[],"batchsize":3})");
  const Result t = RunPlan({"--tables", top});
  EXPECT_EQ(t.rc, 2);
  EXPECT_NE(t.err.find("did you mean 'batch_size'"), std::string::npos) << t.err;
}

// --hbm-cap-gb is GPU memory: with --device cpu it is refused (exit 2, the flag and its value
// named), never silently planned with hbm 0; with --device cuda it is the per-rank HBM.
TEST_F(PlanCommandTest, HbmCapWithCpuDeviceIsRefused) {
  const std::string tables = Write("tables.json", kTables);
  Result r = RunPlan({"--tables", tables, "--device", "cpu", "--hbm-cap-gb", "12"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("tzrec_train plan: error: --hbm-cap-gb 12 is GPU memory, but --device is "
                       "cpu"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("remove --hbm-cap-gb or plan for --device cuda"), std::string::npos)
      << r.err;
  r = RunPlan({"--tables", tables, "--hbm-cap-gb", "12.5"});  // cpu is the default device
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--hbm-cap-gb 12.5 is GPU memory"), std::string::npos) << r.err;
  r = RunPlan({"--tables", tables, "--device", "cuda", "--hbm-cap-gb", "12"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("hbm 12.0 GiB"), std::string::npos) << r.out;
}

TEST_F(PlanCommandTest, BadInputExitsTwo) {
  // Missing file.
  Result r = RunPlan({"--tables", (dir_ / "nope.json").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
  // Not JSON.
  r = RunPlan({"--tables", Write("bad.json", "{tables: [")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  // Unknown sharding type.
  r = RunPlan({"--tables",
               Write("type.json", R"({"tables":[{"name":"a","num_embeddings":10,"embedding_dim":4,)"
                                  R"("feature_names":["a"],"sharding_types":["grid_shard"]}]})")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("grid_shard"), std::string::npos) << r.err;
  // Duplicate table names and non-positive sizes (Plan's invalid_argument).
  r = RunPlan({"--tables", Write("dup.json", R"({"tables":[
      {"name":"a","num_embeddings":10,"embedding_dim":4,"feature_names":["a"]},
      {"name":"a","num_embeddings":10,"embedding_dim":4,"feature_names":["b"]}]})")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("duplicate table name 'a'"), std::string::npos) << r.err;
  r = RunPlan({"--tables", Write("zero.json", R"({"tables":[
      {"name":"a","num_embeddings":0,"embedding_dim":4,"feature_names":["a"]}]})")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("num_embeddings"), std::string::npos) << r.err;
  // Bad flags.
  const std::string tables = Write("tables.json", kTables);
  EXPECT_EQ(RunPlan({"--tables", tables, "--device", "tpu"}).rc, 2);
  EXPECT_EQ(RunPlan({"--tables", tables, "--bogus"}).rc, 2);
  EXPECT_EQ(RunPlan({}).rc, 2);  // --tables is required
  EXPECT_EQ(RunPlan({"--tables", tables, "--world-size", "3", "--local-world-size", "2"}).rc, 2);
  setenv("WORLD_SIZE", "many", 1);
  EXPECT_EQ(RunPlan({"--tables", tables}).rc, 2);
  unsetenv("WORLD_SIZE");
  setenv("STORAGE_RESERVE_PERCENT", "lots", 1);
  r = RunPlan({"--tables", tables});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("STORAGE_RESERVE_PERCENT"), std::string::npos) << r.err;
  unsetenv("STORAGE_RESERVE_PERCENT");
  // Output directory missing: nothing written.
  r = RunPlan({"--tables", tables, "--output", (dir_ / "no" / "dir" / "plan.json").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(fs::exists(dir_ / "no"));
  // --help.
  EXPECT_EQ(RunPlan({"--help"}).rc, 0);
}

TEST_F(PlanCommandTest, NoFeasiblePlanExitsThree) {
  const std::string tables = Write("tables.json", kTables);
  const fs::path output = dir_ / "plan.json";
  const Result r = RunPlan({"--tables", tables, "--world-size", "1", "--ddr-cap-gb", "0.005",
                            "--output", output.string()});
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("no feasible sharding plan"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'user_id'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_EQ(r.out.find("plan hash"), std::string::npos);
}

}  // namespace
}  // namespace tzrec
