// tzrec::planner: partitioner (type choice, splitting, spreading, errors), plan JSON, hash and
// table. Shard math and the perf/storage formulas are tested in planner_estimate_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "planner_test_util.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

using planner_test::Cpu;
using planner_test::MakeTable;

// ---------------------------------------------------------------------------------------------
// Planning

std::map<int, std::int64_t> StoragePerRank(const ShardingPlan& plan) {
  std::map<int, std::int64_t> used;
  for (const auto& t : plan.tables) {
    for (const auto& s : t.shards) used[s.rank] += s.ddr_bytes + s.hbm_bytes;
  }
  return used;
}

TEST(PlannerPlan, SingleAllowedTypeIsUsed) {
  for (ShardingType type : AllShardingTypes()) {
    SCOPED_TRACE(std::string(ToString(type)));
    TableSpec table = MakeTable("t", 1000, 256);
    table.constraints.sharding_types = {type};
    const ShardingPlan plan = Plan(Cpu(4, 2), {table}, PlannerOptions{});
    ASSERT_EQ(plan.tables.size(), 1u);
    const ParameterSharding& sharding = plan.Get("t");
    EXPECT_EQ(sharding.sharding_type, type);
    EXPECT_EQ(sharding.compute_kernel, type == ShardingType::kDataParallel ? "dense" : "fused");
    std::int64_t rows_cols = 0;
    for (const Shard& s : sharding.shards) rows_cols += s.rows * s.cols;
    const std::int64_t copies = type == ShardingType::kDataParallel ? 4 : 1;
    EXPECT_EQ(rows_cols, 1000 * 256 * copies);
    switch (type) {
      case ShardingType::kDataParallel:
      case ShardingType::kRowWise:
        EXPECT_EQ(sharding.ranks, (std::vector<int>{0, 1, 2, 3}));
        break;
      case ShardingType::kTableWise:
        EXPECT_EQ(sharding.ranks.size(), 1u);
        break;
      case ShardingType::kColumnWise:
        ASSERT_EQ(sharding.shards.size(), 2u);
        EXPECT_EQ(sharding.ranks.size(), 2u);
        EXPECT_NE(sharding.shards[0].rank, sharding.shards[1].rank);  // least-loaded rank
        break;
      case ShardingType::kTableRowWise:
        ASSERT_EQ(sharding.ranks.size(), 2u);
        EXPECT_EQ(sharding.ranks[1], sharding.ranks[0] + 1);
        EXPECT_EQ(sharding.ranks[0] % 2, 0);
        break;
    }
  }
}

TEST(PlannerPlan, WorldOfOneAcceptsEveryType) {
  for (ShardingType type : AllShardingTypes()) {
    TableSpec table = MakeTable("t", 50, 16);
    table.constraints.sharding_types = {type};
    const ShardingPlan plan = Plan(Cpu(1, 1), {table}, PlannerOptions{});
    ASSERT_EQ(plan.tables[0].shards.size(), 1u);
    EXPECT_EQ(plan.tables[0].shards[0].rank, 0);
    EXPECT_EQ(plan.tables[0].shards[0].rows, 50);
    EXPECT_EQ(plan.tables[0].sharding_type, type);
  }
}

TEST(PlannerPlan, TooBigForOneRankIsSplit) {
  // 1,000,000 x 512 fp32 with SGD = 1.9 GiB; each rank has 1 GiB.
  TableSpec big = MakeTable("big", 1'000'000, 512);
  PlannerOptions options;
  options.optimizer = EmbeddingOptimizerKind::kSgd;
  const Topology topo = Cpu(4, 4, 1LL << 30);
  const ShardingPlan plan = Plan(topo, {big, MakeTable("small", 100, 16)}, options);
  const ParameterSharding& sharding = plan.Get("big");
  EXPECT_TRUE(sharding.sharding_type == ShardingType::kRowWise ||
              sharding.sharding_type == ShardingType::kColumnWise ||
              sharding.sharding_type == ShardingType::kTableRowWise)
      << ToString(sharding.sharding_type);
  EXPECT_GE(sharding.shards.size(), 4u);
  const StorageCapacity free = ReservedCapacity(topo, {big, MakeTable("small", 100, 16)}, options);
  for (const auto& [rank, used] : StoragePerRank(plan)) {
    EXPECT_LE(used, free.ddr) << "rank " << rank;
  }
}

TEST(PlannerPlan, ShardEstimatesMatchEstimateShards) {
  const TableSpec table = MakeTable("t", 1000, 32);
  TableSpec rw = table;
  rw.constraints.sharding_types = {ShardingType::kRowWise};
  const ShardingPlan plan = Plan(Cpu(2, 2), {rw}, PlannerOptions{});
  const auto expected = EstimateShards(table, ShardingType::kRowWise, Cpu(2, 2), PlannerOptions{});
  ASSERT_EQ(plan.tables[0].shards.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(plan.tables[0].shards[i].perf_ms, expected[i].perf_ms);
    EXPECT_EQ(plan.tables[0].shards[i].ddr_bytes, expected[i].ddr_bytes);
  }
}

TEST(PlannerPlan, PicksLowestRatedFeasibleOption) {
  // One table on 2 ranks of one host: the rating is the max per-rank perf; row_wise splits the
  // work, so its per-rank perf 0.00875 beats table_wise 0.0198 and data_parallel 0.0100.
  const ShardingPlan plan = Plan(Cpu(2, 2), {MakeTable("t", 100, 16)}, PlannerOptions{});
  const ParameterSharding& sharding = plan.Get("t");
  // row_wise and table_row_wise tie on one host; the first in proposal order (greedy: lowest
  // total perf, then type order) is kept.
  EXPECT_EQ(sharding.sharding_type, ShardingType::kRowWise);
}

TEST(PlannerPlan, SpreadsTableWiseTablesOverRanks) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 4; ++i) {
    tables.push_back(MakeTable("t" + std::to_string(i), 1000 + i, 64));
    tables.back().constraints.sharding_types = {ShardingType::kTableWise};
  }
  const ShardingPlan plan = Plan(Cpu(4, 4), tables, PlannerOptions{});
  std::set<int> ranks;
  for (const auto& t : plan.tables) ranks.insert(t.shards[0].rank);
  EXPECT_EQ(ranks.size(), 4u);
}

TEST(PlannerPlan, DeterministicForManyTables) {
  // 9 tables → more than the exhaustive limit: greedy + uniform + min-storage proposals.
  std::vector<TableSpec> tables;
  for (int i = 0; i < 9; ++i) {
    tables.push_back(
        MakeTable("cat_" + std::to_string(i), 1000 * (i + 1) * (i + 1), 16 << (i % 4)));
  }
  tables[3].constraints.pooling_factors = {4.0};
  const Topology topo = Cpu(4, 2, 256LL << 20);
  const ShardingPlan first = Plan(topo, tables, PlannerOptions{});
  const ShardingPlan second = Plan(topo, tables, PlannerOptions{});
  EXPECT_EQ(first.ToJson(), second.ToJson());
  EXPECT_EQ(first.Hash(), second.Hash());
  ASSERT_EQ(first.tables.size(), 9u);
  for (std::size_t i = 0; i < tables.size(); ++i) EXPECT_EQ(first.tables[i].table, tables[i].name);
  const StorageCapacity free = ReservedCapacity(topo, tables, PlannerOptions{});
  for (const auto& [rank, used] : StoragePerRank(first)) EXPECT_LE(used, free.ddr);
}

TEST(PlannerPlan, ImpossibleTableNamesItAndMissingBytes) {
  // World 1, 1 MiB per rank. 'huge' 100000 x 16: every type is one full shard of
  // 6,400,000 + 400,000 (row-wise state) + 4096 ids + 32768 outputs = 6,836,864 bytes.
  // Free: 1 MiB − KJT ⌈(512 + 512)·8⌉·20 = 1,048,576 − 163,840 = 884,736.
  const std::vector<TableSpec> tables = {MakeTable("small", 10, 16), MakeTable("huge", 100000, 16)};
  try {
    Plan(Cpu(1, 1, 1 << 20), tables, PlannerOptions{});
    FAIL() << "expected PlannerError";
  } catch (const PlannerError& e) {
    EXPECT_EQ(e.FailureKind(), PlannerError::Kind::kInsufficientStorage);
    EXPECT_EQ(e.Table(), "huge");
    EXPECT_EQ(e.MissingBytes(), 6'836'864 - 884'736);
    const std::string what = e.what();
    EXPECT_NE(what.find("'huge' (100000 x 16, fp32)"), std::string::npos) << what;
    EXPECT_NE(what.find("6.5 MiB"), std::string::npos) << what;    // needed
    EXPECT_NE(what.find("864.0 KiB"), std::string::npos) << what;  // free
    EXPECT_NE(what.find("add ranks"), std::string::npos) << what;
  }
}

TEST(PlannerPlan, StrictConstraintsNamesAllowedTypes) {
  TableSpec big = MakeTable("big", 1'000'000, 512);
  big.constraints.sharding_types = {ShardingType::kTableWise, ShardingType::kDataParallel};
  PlannerOptions options;
  options.optimizer = EmbeddingOptimizerKind::kSgd;
  try {
    Plan(Cpu(4, 4, 1LL << 30), {big}, options);
    FAIL() << "expected PlannerError";
  } catch (const PlannerError& e) {
    EXPECT_EQ(e.FailureKind(), PlannerError::Kind::kStrictConstraints);
    EXPECT_EQ(e.Table(), "big");
    EXPECT_GT(e.MissingBytes(), 0);
    const std::string what = e.what();
    EXPECT_NE(what.find("allows only table_wise, data_parallel"), std::string::npos) << what;
    EXPECT_NE(what.find("allow column_wise, row_wise, table_row_wise"), std::string::npos) << what;
  }
}

TEST(PlannerPlan, TablesThatFitAloneButNotTogether) {
  // Each 8000 x 128 SGD table is 4,096,000 bytes + IO; two ranks with 5 MiB: one table fits (even
  // whole), three do not in any split.
  std::vector<TableSpec> tables = {MakeTable("a", 8000, 128), MakeTable("b", 8000, 128),
                                   MakeTable("c", 8000, 128)};
  PlannerOptions options;
  options.optimizer = EmbeddingOptimizerKind::kSgd;
  options.batch_size = 8;
  try {
    Plan(Cpu(2, 2, 5LL << 20), tables, options);
    FAIL() << "expected PlannerError";
  } catch (const PlannerError& e) {
    EXPECT_EQ(e.FailureKind(), PlannerError::Kind::kInsufficientStorage);
    EXPECT_FALSE(e.Table().empty());
    EXPECT_GT(e.MissingBytes(), 0);
    EXPECT_NE(std::string(e.what()).find("in all"), std::string::npos) << e.what();
  }
  // Two of them fit.
  tables.pop_back();
  EXPECT_NO_THROW(Plan(Cpu(2, 2, 5LL << 20), tables, options));
}

TEST(PlannerPlan, RejectsBadSpecs) {
  const Topology topo = Cpu(2, 2);
  const PlannerOptions options;
  EXPECT_THROW(Plan(topo, {MakeTable("a", 10, 4), MakeTable("a", 20, 4)}, options),
               std::invalid_argument);
  EXPECT_THROW(Plan(topo, {MakeTable("a", 0, 4)}, options), std::invalid_argument);
  EXPECT_THROW(Plan(topo, {MakeTable("a", 10, -1)}, options), std::invalid_argument);
  TableSpec no_features = MakeTable("a", 10, 4);
  no_features.feature_names.clear();
  EXPECT_THROW(Plan(topo, {no_features}, options), std::invalid_argument);
  TableSpec bad_pooling = MakeTable("a", 10, 4, {"x", "y"});
  bad_pooling.constraints.pooling_factors = {1.0};
  EXPECT_THROW(Plan(topo, {bad_pooling}, options), std::invalid_argument);
  TableSpec bad_partition = MakeTable("a", 10, 4);
  bad_partition.constraints.min_partition = 0;
  EXPECT_THROW(Plan(topo, {bad_partition}, options), std::invalid_argument);
  TableSpec bad_type = MakeTable("a", 10, 4);
  bad_type.constraints.sharding_types = {static_cast<ShardingType>(42)};
  EXPECT_THROW(Plan(topo, {bad_type}, options), std::invalid_argument);
  PlannerOptions zero_batch;
  zero_batch.batch_size = 0;
  EXPECT_THROW(Plan(topo, {MakeTable("a", 10, 4)}, zero_batch), std::invalid_argument);
  EXPECT_THROW(Plan(Cpu(3, 2), {MakeTable("a", 10, 4)}, options), std::invalid_argument);
  const ShardingPlan empty = Plan(topo, {}, options);
  EXPECT_TRUE(empty.tables.empty());
  EXPECT_EQ(empty.world_size, 2);
}

// ---------------------------------------------------------------------------------------------
// Plan JSON, hash, table

ShardingPlan TinyRowWisePlan() {
  ShardingPlan plan;
  plan.world_size = 2;
  plan.local_world_size = 2;
  ParameterSharding sharding;
  sharding.table = "t";
  sharding.sharding_type = ShardingType::kRowWise;
  sharding.ranks = {0, 1};
  Shard a;
  a.rows = 5;
  a.cols = 16;
  a.rank = 0;
  a.perf_ms = 0.25;
  a.ddr_bytes = 1000;
  Shard b = a;
  b.row_offset = 5;
  b.rank = 1;
  sharding.shards = {a, b};
  plan.tables.push_back(sharding);
  return plan;
}

TEST(PlannerJson, HashIsFnv1aOfPlacement) {
  const ShardingPlan plan = TinyRowWisePlan();
  // FNV-1a 64 of {"world_size":2,"local_world_size":2,"tables":{"t":{"sharding_type":"row_wise",
  // "compute_kernel":"fused","ranks":[0,1],"shards":[{"offsets":[0,0],"sizes":[5,16],"rank":0},
  // {"offsets":[5,0],"sizes":[5,16],"rank":1}]}}} computed in Python.
  EXPECT_EQ(plan.Hash(), "94fbf416aff2bb7b");
  ShardingPlan estimates_changed = plan;
  estimates_changed.tables[0].shards[0].perf_ms = 9;
  estimates_changed.tables[0].shards[1].ddr_bytes = 1;
  EXPECT_EQ(estimates_changed.Hash(), plan.Hash());
  ShardingPlan moved = plan;
  moved.tables[0].shards[1].rank = 0;
  EXPECT_NE(moved.Hash(), plan.Hash());
}

TEST(PlannerJson, RoundTrip) {
  std::vector<TableSpec> tables = {MakeTable("user_id", 1000, 16), MakeTable("item", 300, 256),
                                   MakeTable("cate", 7, 8)};
  tables[1].constraints.sharding_types = {ShardingType::kColumnWise};
  tables[2].constraints.sharding_types = {ShardingType::kTableRowWise};
  const ShardingPlan plan = Plan(Cpu(4, 2), tables, PlannerOptions{});
  const std::string json = plan.ToJson();
  const ShardingPlan back = ShardingPlan::FromJson(json);
  EXPECT_EQ(back.ToJson(), json);
  EXPECT_EQ(back.Hash(), plan.Hash());
  EXPECT_EQ(back.ToJson(-1), plan.ToJson(-1));
  ASSERT_EQ(back.tables.size(), 3u);
  EXPECT_EQ(back.tables[0].table, "user_id");  // table order kept
  EXPECT_EQ(back.tables[2].table, "cate");
  EXPECT_EQ(back.Get("item").sharding_type, ShardingType::kColumnWise);
  ASSERT_EQ(back.Get("item").shards.size(), 2u);
  EXPECT_EQ(back.Get("item").shards[1].col_offset, 128);
  EXPECT_DOUBLE_EQ(back.Get("item").shards[1].perf_ms, plan.Get("item").shards[1].perf_ms);
  EXPECT_THROW(back.Get("nope"), std::out_of_range);
}

TEST(PlannerJson, FromJsonNamesBadField) {
  auto expect_bad = [](const std::string& json, const std::string& field) {
    try {
      ShardingPlan::FromJson(json);
      FAIL() << "expected invalid_argument for " << json;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_bad("{", "parse");
  expect_bad(R"({"local_world_size":1,"tables":{}})", "world_size");
  const std::string head = R"({"world_size":2,"local_world_size":2,"tables":{"t":)";
  expect_bad(
      head + R"({"sharding_type":"grid","compute_kernel":"fused","ranks":[0],"shards":[]}}})",
      "tables.t.sharding_type");
  expect_bad(head + R"({"sharding_type":"table_wise","compute_kernel":"fused","ranks":[0],)"
                    R"("shards":[{"offsets":[0,0],"sizes":[5],"rank":0}]}}})",
             "tables.t.shards[0].sizes");
  expect_bad(head + R"({"sharding_type":"table_wise","compute_kernel":"fused","ranks":[0],)"
                    R"("shards":[{"offsets":[0,0],"sizes":[5,4],"rank":7}]}}})",
             "tables.t.shards[0].rank");
}

TEST(PlannerJson, ToTableListsShardsAndTotals) {
  const std::string table = TinyRowWisePlan().ToTable();
  EXPECT_NE(table.find("table"), std::string::npos);
  EXPECT_NE(table.find("row_wise"), std::string::npos);
  EXPECT_NE(table.find("5x16@0 5x16@1"), std::string::npos) << table;
  EXPECT_NE(table.find("0.5000"), std::string::npos) << table;  // table perf = 2 × 0.25
  EXPECT_NE(table.find("1000 B"), std::string::npos) << table;  // rank 0 ddr total
  EXPECT_NE(table.find("per-rank totals"), std::string::npos) << table;
  // Columns aligned: "type" starts at the same offset in the header and in the row.
  const auto header_end = table.find('\n');
  const std::string header = table.substr(0, header_end);
  const std::string row =
      table.substr(header_end + 1, table.find('\n', header_end + 1) - header_end - 1);
  EXPECT_EQ(header.find("type"), row.find("row_wise"));
  EXPECT_EQ(header.find("shards"), row.find("5x16@0"));
}

}  // namespace
}  // namespace tzrec
