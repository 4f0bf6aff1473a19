// tzrec::planner: names, topology, shard math, TorchRec perf/storage formulas and reservation.
// Expected numbers are hand-computed from the TorchRec formulas (docs/sharding.md), independently
// of src/worker/planner/. The partitioner, plan JSON and hash are tested in planner_plan_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "planner_test_util.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

using planner_test::Cpu;
using planner_test::MakeTable;

constexpr double kGiBps = 1024.0 * 1024.0 * 1024.0 / 1000.0;
constexpr double kDdrBw = 51 * kGiBps;
constexpr double kIntraBw = 600 * kGiBps;
constexpr double kInterBw = 12.5 * kGiBps;

struct ShapeRank {
  std::int64_t row_offset, col_offset, rows, cols;
  int rank;
};

void ExpectShapes(const std::vector<Shard>& shards, const std::vector<ShapeRank>& expected) {
  ASSERT_EQ(shards.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    EXPECT_EQ(shards[i].row_offset, expected[i].row_offset);
    EXPECT_EQ(shards[i].col_offset, expected[i].col_offset);
    EXPECT_EQ(shards[i].rows, expected[i].rows);
    EXPECT_EQ(shards[i].cols, expected[i].cols);
    EXPECT_EQ(shards[i].rank, expected[i].rank);
  }
}

// ---------------------------------------------------------------------------------------------
// Names

TEST(PlannerNames, ShardingTypesRoundTrip) {
  ASSERT_EQ(AllShardingTypes().size(), 5u);
  const std::vector<std::string> names = {"data_parallel", "table_wise", "column_wise", "row_wise",
                                          "table_row_wise"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(ToString(AllShardingTypes()[i]), names[i]);
    EXPECT_EQ(ParseShardingType(names[i]), AllShardingTypes()[i]);
  }
  try {
    ParseShardingType("grid_shard");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("grid_shard"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("table_row_wise"), std::string::npos);
  }
}

TEST(PlannerNames, OptimizersAndDevices) {
  for (auto kind : {EmbeddingOptimizerKind::kSgd, EmbeddingOptimizerKind::kAdagrad,
                    EmbeddingOptimizerKind::kRowWiseAdagrad, EmbeddingOptimizerKind::kAdam}) {
    EXPECT_EQ(ParseEmbeddingOptimizerKind(ToString(kind)), kind);
  }
  EXPECT_EQ(ToString(EmbeddingOptimizerKind::kRowWiseAdagrad), "rowwise_adagrad");
  EXPECT_THROW(ParseEmbeddingOptimizerKind("lamb"), std::invalid_argument);
  EXPECT_EQ(ToString(ComputeDevice::kCpu), "cpu");
  EXPECT_EQ(ToString(ComputeDevice::kCuda), "cuda");
}

TEST(PlannerNames, PlannerErrorExitsWithNoPlan) {
  const PlannerError error(PlannerError::Kind::kInsufficientStorage, "t", 7, "too big");
  const Error& base = error;  // tzrec::Error (include/tzrec/error.hpp)
  EXPECT_EQ(base.Code(), ExitCode::kNoPlan);
  EXPECT_EQ(base.ExitCode(), 3);
  EXPECT_STREQ(base.what(), "too big");
  EXPECT_EQ(error.Table(), "t");
  EXPECT_EQ(error.MissingBytes(), 7);
}

TEST(PlannerNames, FormatBytes) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(3 * 1024), "3.0 KiB");
  EXPECT_EQ(FormatBytes(static_cast<std::int64_t>(5.2 * (1LL << 30))), "5.2 GiB");
}

// ---------------------------------------------------------------------------------------------
// Topology

class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& name : names_) {
      const char* value = std::getenv(name.c_str());
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
    }
  }
  ~EnvGuard() {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (saved_[i]) {
        setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      } else {
        unsetenv(names_[i].c_str());
      }
    }
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

TEST(PlannerTopology, HostLayoutMustBeUniform) {
  EXPECT_EQ(Topology::HostLayoutProblem({2, 2, 2, 2}), "");
  EXPECT_EQ(Topology::HostLayoutProblem({1}), "");
  // Three nodes with 1, 1 and 2 processes: the plan would assume hosts of one size.
  const std::string mixed = Topology::HostLayoutProblem({1, 1, 2, 2});
  EXPECT_NE(mixed.find("LOCAL_WORLD_SIZE by rank: 1, 1, 2, 2"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("--nproc-per-node"), std::string::npos) << mixed;
  const std::string partial = Topology::HostLayoutProblem({2, 2, 2});
  EXPECT_NE(partial.find("world size 3 is not a multiple of LOCAL_WORLD_SIZE 2"), std::string::npos)
      << partial;
}

TEST(PlannerTopology, ValidateRejectsBadShapes) {
  EXPECT_NO_THROW(Cpu(4, 2).Validate());
  EXPECT_THROW(Cpu(3, 2).Validate(), std::invalid_argument);
  EXPECT_THROW(Cpu(0, 1).Validate(), std::invalid_argument);
  EXPECT_THROW(Cpu(2, 0).Validate(), std::invalid_argument);
  Topology topo = Cpu(2, 2);
  topo.storage_reserve_percent = 1.0;
  EXPECT_THROW(topo.Validate(), std::invalid_argument);
  topo = Cpu(2, 2);
  topo.intra_host_bw = 0;
  EXPECT_THROW(topo.Validate(), std::invalid_argument);
  topo = Cpu(2, 2);
  topo.device = ComputeDevice::kCuda;
  topo.hbm_cap = 0;
  EXPECT_THROW(topo.Validate(), std::invalid_argument);
  EXPECT_EQ(Cpu(8, 4).NumHosts(), 2);
}

TEST(PlannerTopology, FromEnvironmentReadsBandwidthsAndRam) {
  EnvGuard guard({"INTRA_NODE_BANDWIDTH", "CROSS_NODE_BANDWIDTH", "STORAGE_RESERVE_PERCENT"});
  unsetenv("INTRA_NODE_BANDWIDTH");
  unsetenv("CROSS_NODE_BANDWIDTH");
  unsetenv("STORAGE_RESERVE_PERCENT");
  const Topology plain = Topology::FromEnvironment(4, 2, ComputeDevice::kCpu, 123);
  EXPECT_EQ(plain.hbm_cap, 0);  // CPU ignores the HBM cap
  EXPECT_DOUBLE_EQ(plain.intra_host_bw, Topology::kDefaultIntraHostBw);
  EXPECT_DOUBLE_EQ(plain.storage_reserve_percent, 0.15);
  const std::int64_t ram =
      static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  EXPECT_EQ(plain.ddr_cap, ram / 2);

  setenv("INTRA_NODE_BANDWIDTH", "32212254.72", 1);  // 30 GiB/s
  setenv("CROSS_NODE_BANDWIDTH", "3221225.472", 1);
  setenv("STORAGE_RESERVE_PERCENT", "0.3", 1);
  const Topology cuda = Topology::FromEnvironment(8, 8, ComputeDevice::kCuda, 80LL << 30);
  EXPECT_EQ(cuda.hbm_cap, 80LL << 30);
  EXPECT_DOUBLE_EQ(cuda.intra_host_bw, 32212254.72);
  EXPECT_DOUBLE_EQ(cuda.inter_host_bw, 3221225.472);
  EXPECT_DOUBLE_EQ(cuda.storage_reserve_percent, 0.3);

  setenv("CROSS_NODE_BANDWIDTH", "fast", 1);
  try {
    Topology::FromEnvironment(8, 8, ComputeDevice::kCuda, 80LL << 30);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CROSS_NODE_BANDWIDTH"), std::string::npos);
  }
  setenv("CROSS_NODE_BANDWIDTH", "3221225.472", 1);
  EXPECT_THROW(Topology::FromEnvironment(3, 2, ComputeDevice::kCpu, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Shard math

TEST(PlannerShards, ColumnWiseBlock) {
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 16)), 16);    // below MIN_CW_DIM: whole D
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 128)), 128);  // no divisor in [128, 128)
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 256)), 128);
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 384)), 128);
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 264)), 132);  // smallest divisor >= 128, %4 == 0
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 260)), 260);  // 130 is not a multiple of 4
  EXPECT_EQ(ColumnWiseBlock(MakeTable("t", 10, 200)), 200);
  TableSpec small = MakeTable("t", 10, 16);
  small.constraints.min_partition = 8;
  EXPECT_EQ(ColumnWiseBlock(small), 8);
  TableSpec wide = MakeTable("t", 10, 512);
  wide.constraints.min_partition = 64;
  EXPECT_EQ(ColumnWiseBlock(wide), 64);
  wide.constraints.min_partition = 6;  // 6 is no multiple of 4; 8 is the first
  EXPECT_EQ(ColumnWiseBlock(wide), 8);
}

TEST(PlannerShards, DataParallelIsAFullCopyPerRank) {
  const auto shards =
      CalculateShards(MakeTable("t", 10, 16), ShardingType::kDataParallel, Cpu(3, 3), {});
  ExpectShapes(shards, {{0, 0, 10, 16, 0}, {0, 0, 10, 16, 1}, {0, 0, 10, 16, 2}});
}

TEST(PlannerShards, TableWiseOneShardOnGivenRank) {
  ExpectShapes(CalculateShards(MakeTable("t", 10, 16), ShardingType::kTableWise, Cpu(4, 2), {2}),
               {{0, 0, 10, 16, 2}});
  EXPECT_THROW(CalculateShards(MakeTable("t", 10, 16), ShardingType::kTableWise, Cpu(4, 2), {}),
               std::invalid_argument);
  EXPECT_THROW(CalculateShards(MakeTable("t", 10, 16), ShardingType::kTableWise, Cpu(4, 2), {4}),
               std::invalid_argument);
}

TEST(PlannerShards, ColumnWiseBlocksOnePerRank) {
  ExpectShapes(
      CalculateShards(MakeTable("t", 7, 384), ShardingType::kColumnWise, Cpu(4, 2), {3, 1, 3}),
      {{0, 0, 7, 128, 3}, {0, 128, 7, 128, 1}, {0, 256, 7, 128, 3}});
  ExpectShapes(CalculateShards(MakeTable("t", 7, 16), ShardingType::kColumnWise, Cpu(4, 2), {1}),
               {{0, 0, 7, 16, 1}});
  EXPECT_THROW(
      CalculateShards(MakeTable("t", 7, 384), ShardingType::kColumnWise, Cpu(4, 2), {0, 1}),
      std::invalid_argument);
}

TEST(PlannerShards, RowWiseUneven) {
  ExpectShapes(CalculateShards(MakeTable("t", 10, 8), ShardingType::kRowWise, Cpu(4, 4), {}),
               {{0, 0, 3, 8, 0}, {3, 0, 3, 8, 1}, {6, 0, 3, 8, 2}, {9, 0, 1, 8, 3}});
  ExpectShapes(CalculateShards(MakeTable("t", 2, 8), ShardingType::kRowWise, Cpu(3, 3), {}),
               {{0, 0, 1, 8, 0}, {1, 0, 1, 8, 1}, {2, 0, 0, 8, 2}});
  ExpectShapes(CalculateShards(MakeTable("t", 12, 8), ShardingType::kRowWise, Cpu(4, 2), {}),
               {{0, 0, 3, 8, 0}, {3, 0, 3, 8, 1}, {6, 0, 3, 8, 2}, {9, 0, 3, 8, 3}});
}

TEST(PlannerShards, TableRowWiseOverOneHost) {
  ExpectShapes(
      CalculateShards(MakeTable("t", 10, 8), ShardingType::kTableRowWise, Cpu(4, 2), {}, 1),
      {{0, 0, 5, 8, 2}, {5, 0, 5, 8, 3}});
  ExpectShapes(CalculateShards(MakeTable("t", 5, 8), ShardingType::kTableRowWise, Cpu(8, 4), {}, 0),
               {{0, 0, 2, 8, 0}, {2, 0, 2, 8, 1}, {4, 0, 1, 8, 2}, {5, 0, 0, 8, 3}});
  EXPECT_THROW(
      CalculateShards(MakeTable("t", 10, 8), ShardingType::kTableRowWise, Cpu(4, 2), {}, 2),
      std::invalid_argument);
}

TEST(PlannerShards, WorldOfOneDegenerates) {
  for (ShardingType type : AllShardingTypes()) {
    SCOPED_TRACE(std::string(ToString(type)));
    const auto shards = CalculateShards(MakeTable("t", 10, 16), type, Cpu(1, 1), {0});
    ExpectShapes(shards, {{0, 0, 10, 16, 0}});
  }
}

// ---------------------------------------------------------------------------------------------
// Estimates: table 100 x 16 fp32, one feature, pooling 1, per-rank batch 512 (I = O = 512).

double TwPerf(int world, int local, double dim) {
  const double a2a = world <= local ? kIntraBw : kInterBw;
  const double in = std::ceil(512.0 * world * 8), look = 512.0 * world * std::max(dim, 32.0) * 4;
  const double out = 512.0 * world * dim * 4;
  const double pen = dim >= 128 ? 1.0 : dim >= 64 ? 1.15 : 1.75;
  const double fwd = (in + look + out) * pen / kDdrBw;
  return 3 * fwd + 2 * out / a2a;
}

TEST(PlannerEstimates, PerfMatchesTorchRecFormulas) {
  const TableSpec table = MakeTable("t", 100, 16);
  const PlannerOptions options;  // batch 512, rowwise_adagrad
  // Literal values computed with the TorchRec formulas in Python (W=2, L=2 and W=4, L=2).
  struct Case {
    int world, local;
    ShardingType type;
    double expected;
  } cases[] = {
      {2, 2, ShardingType::kTableWise, 0.01983792174096201},
      {2, 2, ShardingType::kColumnWise, 0.01983792174096201},
      {2, 2, ShardingType::kRowWise, 0.008751364315257353},
      {2, 2, ShardingType::kTableRowWise, 0.008751364315257353},
      {2, 2, ShardingType::kDataParallel, 0.010022930070465686},
      {4, 2, ShardingType::kTableWise, 0.058800192440257346},
      {4, 2, ShardingType::kRowWise, 0.0346075319776348},
      {4, 2, ShardingType::kTableRowWise, 0.0272683536305147},
      {4, 2, ShardingType::kDataParallel, 0.010142139360016468},
      {8, 2, ShardingType::kDataParallel, 0.010499767228668811},  // all-reduce doubled (W > 2L)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(ToString(c.type)) + " W=" + std::to_string(c.world));
    const auto shards = EstimateShards(table, c.type, Cpu(c.world, c.local), options);
    for (const Shard& shard : shards) EXPECT_NEAR(shard.perf_ms, c.expected, 1e-12);
  }
  // Block penalties: D 64 → 1.15, D 128 → 1.
  EXPECT_NEAR(
      EstimateShards(MakeTable("t", 100, 64), ShardingType::kTableWise, Cpu(1, 1), options)[0]
          .perf_ms,
      0.01718034931257659, 1e-12);
  EXPECT_NEAR(
      EstimateShards(MakeTable("t", 100, 128), ShardingType::kTableWise, Cpu(1, 1), options)[0]
          .perf_ms,
      0.029760622510723037, 1e-12);
  // Column-wise shards use their own width: D 256 → two blocks of 128.
  const auto cw =
      EstimateShards(MakeTable("t", 100, 256), ShardingType::kColumnWise, Cpu(4, 2), options);
  ASSERT_EQ(cw.size(), 2u);
  EXPECT_NEAR(cw[0].perf_ms, TwPerf(4, 2, 128), 1e-12);
  EXPECT_NEAR(cw[1].perf_ms, TwPerf(4, 2, 128), 1e-12);
}

TEST(PlannerEstimates, PoolingFactorsAndBatchScaleInputs) {
  TableSpec table = MakeTable("t", 100, 16, {"a", "b"});
  table.constraints.pooling_factors = {2.0, 0.5};
  PlannerOptions options;
  options.batch_size = 64;
  // I = (2 + 0.5)·64 = 160, O = 2·64 = 128; world 1 table-wise on DDR.
  const double in = std::ceil(160.0 * 8), look = 160.0 * 32 * 4, out = 128.0 * 16 * 4;
  const double fwd = (in + look + out) * 1.75 / kDdrBw;
  const auto shard = EstimateShards(table, ShardingType::kTableWise, Cpu(1, 1), options)[0];
  EXPECT_NEAR(shard.perf_ms, 3 * fwd + 2 * out / kIntraBw, 1e-12);
  // Storage: 6400 tensor + 400 row-wise state + 1280 ids + 8192 outputs.
  EXPECT_EQ(shard.ddr_bytes, 6400 + 400 + 1280 + 8192);
}

TEST(PlannerEstimates, StorageMatchesTorchRecFormulas) {
  const TableSpec table = MakeTable("t", 100, 16);
  PlannerOptions options;  // rowwise_adagrad: optimizer state = tensor / D
  const Topology topo = Cpu(4, 2);
  // table_wise: 6400 + 400 + ids 512·4·8 + outputs 512·4·16·4.
  auto tw = EstimateShards(table, ShardingType::kTableWise, topo, options, {3});
  ASSERT_EQ(tw.size(), 1u);
  EXPECT_EQ(tw[0].rank, 3);
  EXPECT_EQ(tw[0].ddr_bytes, 154256);
  EXPECT_EQ(tw[0].hbm_bytes, 0);
  EXPECT_EQ(EstimateShards(table, ShardingType::kColumnWise, topo, options)[0].ddr_bytes, 154256);
  // row_wise: 25 rows → 1600 + 100 + ids (512/4)·4·8 + 131072.
  for (const Shard& s : EstimateShards(table, ShardingType::kRowWise, topo, options)) {
    EXPECT_EQ(s.ddr_bytes, 136868);
  }
  // table_row_wise: 50 rows → 3200 + 200 + ids (512/2)·4·8 + 131072.
  for (const Shard& s : EstimateShards(table, ShardingType::kTableRowWise, topo, options)) {
    EXPECT_EQ(s.ddr_bytes, 142664);
  }
  // data_parallel: a full copy per rank + ids 512·8 + outputs 512·16·4.
  const auto dp = EstimateShards(table, ShardingType::kDataParallel, topo, options);
  ASSERT_EQ(dp.size(), 4u);
  for (const Shard& s : dp) EXPECT_EQ(s.ddr_bytes, 43664);
  // Optimizer multipliers: SGD 0, Adagrad 1, Adam 2.
  options.optimizer = EmbeddingOptimizerKind::kSgd;
  EXPECT_EQ(EstimateShards(table, ShardingType::kTableWise, topo, options)[0].ddr_bytes, 153856);
  options.optimizer = EmbeddingOptimizerKind::kAdagrad;
  EXPECT_EQ(EstimateShards(table, ShardingType::kTableWise, topo, options)[0].ddr_bytes, 160256);
  options.optimizer = EmbeddingOptimizerKind::kAdam;
  EXPECT_EQ(EstimateShards(table, ShardingType::kTableWise, topo, options)[0].ddr_bytes, 166656);
  // An empty row-wise shard stores nothing (2 rows over 3 ranks → 1, 1, 0).
  const auto uneven =
      EstimateShards(MakeTable("u", 2, 16), ShardingType::kRowWise, Cpu(3, 3), options);
  ASSERT_EQ(uneven.size(), 3u);
  EXPECT_GT(uneven[0].ddr_bytes, 0);
  EXPECT_EQ(uneven[2].ddr_bytes, 0);
}

TEST(PlannerEstimates, CudaUsesHbm) {
  Topology topo = Cpu(2, 2);
  topo.device = ComputeDevice::kCuda;
  topo.hbm_cap = 80LL << 30;
  const TableSpec table = MakeTable("t", 100, 16);
  const auto shard =
      EstimateShards(table, ShardingType::kTableWise, topo, PlannerOptions{}, {0})[0];
  EXPECT_EQ(shard.ddr_bytes, 0);
  EXPECT_EQ(shard.hbm_bytes, 6400 + 400 + 8192 + 65536);
  const double hbm_bw = 897 * kGiBps;
  const double in = 8192, look = 512.0 * 2 * 32 * 4, out = 512.0 * 2 * 16 * 4;
  EXPECT_NEAR(shard.perf_ms, 3 * (in + look + out) * 1.75 / hbm_bw + 2 * out / kIntraBw, 1e-12);
}

TEST(PlannerEstimates, Reservation) {
  std::vector<TableSpec> tables = {MakeTable("a", 100, 16, {"a1", "a2"}), MakeTable("b", 10, 8)};
  tables[0].constraints.pooling_factors = {3.0, 1.5};
  PlannerOptions options;
  options.batch_size = 100;
  options.dense_parameter_bytes = 1000;
  // ids = (3 + 1.5 + 1)·100 = 550 → KJT ⌈550·8⌉·20 = 88000; dense 6·1000.
  const StorageCapacity cpu = ReservedCapacity(Cpu(2, 2, 1 << 20), tables, options);
  EXPECT_EQ(cpu.hbm, 0);
  EXPECT_EQ(cpu.ddr, (1 << 20) - 88000 - 6000);  // the percentage does not touch DDR
  Topology cuda = Cpu(2, 2, 1 << 20);
  cuda.device = ComputeDevice::kCuda;
  cuda.hbm_cap = 10'000'000;
  const StorageCapacity gpu = ReservedCapacity(cuda, tables, options);
  EXPECT_EQ(gpu.hbm, 8'500'000 - 88000 - 6000);
  EXPECT_EQ(gpu.ddr, 1 << 20);
  try {
    ReservedCapacity(Cpu(2, 2, 50000), tables, options);
    FAIL() << "expected PlannerError";
  } catch (const PlannerError& e) {
    EXPECT_EQ(e.FailureKind(), PlannerError::Kind::kInsufficientStorage);
    EXPECT_EQ(e.MissingBytes(), 88000 + 6000 - 50000);
  }
}

}  // namespace
}  // namespace tzrec
