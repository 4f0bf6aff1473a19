// Unit tests of ShardingLayout::Build (src/worker/sharding/sharding_layout.hpp): the units, routes
// and output column maps every rank derives from a plan, for each sharding type and a mixed plan
// at world sizes 1-4, against hand-computed layouts.
#include "sharding_layout.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace tzrec {
namespace {

using ::testing::HasSubstr;
using Group = ShardingLayout::OutGroup;

// Table A: 10 x 4, features a1, a2 (SUM). Table B: 7 x 6, feature b (MEAN). Table C: 5 x 2, c.
std::vector<EmbeddingBagConfig> Tables() {
  return {{"A", 10, 4, {"a1", "a2"}, PoolingType::kSum},
          {"B", 7, 6, {"b"}, PoolingType::kMean},
          {"C", 5, 2, {"c"}, PoolingType::kSum}};
}

Shard MakeShard(std::int64_t row_offset, std::int64_t col_offset, std::int64_t rows,
                std::int64_t cols, int rank) {
  Shard s;
  s.row_offset = row_offset;
  s.col_offset = col_offset;
  s.rows = rows;
  s.cols = cols;
  s.rank = rank;
  return s;
}

ParameterSharding Sharding(const EmbeddingBagConfig& t, ShardingType type,
                           std::vector<Shard> shards) {
  ParameterSharding ps;
  ps.table = t.name;
  ps.sharding_type = type;
  for (const Shard& s : shards) ps.ranks.push_back(s.rank);
  ps.shards = std::move(shards);
  return ps;
}

ParameterSharding TableWise(const EmbeddingBagConfig& t, int rank) {
  return Sharding(t, ShardingType::kTableWise,
                  {MakeShard(0, 0, t.num_embeddings, t.embedding_dim, rank)});
}

ParameterSharding DataParallel(const EmbeddingBagConfig& t, int world) {
  std::vector<Shard> shards;
  for (int r = 0; r < world; ++r)
    shards.push_back(MakeShard(0, 0, t.num_embeddings, t.embedding_dim, r));
  return Sharding(t, ShardingType::kDataParallel, shards);
}

// Row blocks of ceil(rows / ranks.size()) over `ranks` (trailing blocks may be empty).
ParameterSharding RowBlocks(const EmbeddingBagConfig& t, ShardingType type,
                            const std::vector<int>& ranks) {
  const auto n = static_cast<std::int64_t>(ranks.size());
  const std::int64_t block = (t.num_embeddings + n - 1) / n;
  std::vector<Shard> shards;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t lo = std::min(i * block, t.num_embeddings);
    const std::int64_t hi = std::min(lo + block, t.num_embeddings);
    shards.push_back(
        MakeShard(lo, 0, hi - lo, t.embedding_dim, ranks[static_cast<std::size_t>(i)]));
  }
  return Sharding(t, type, shards);
}

std::vector<int> Iota(int from, int to) {
  std::vector<int> v(static_cast<std::size_t>(to - from));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<std::int64_t> Cols(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(to - from));
  std::iota(v.begin(), v.end(), from);
  return v;
}

ShardingPlan MakePlan(int world, std::vector<ParameterSharding> tables) {
  ShardingPlan plan;
  plan.world_size = world;
  plan.local_world_size = world;
  plan.tables = std::move(tables);
  return plan;
}

// (unit, feature) pairs of a route list.
std::vector<std::pair<int, int>> Pairs(const std::vector<ShardingLayout::Route>& routes) {
  std::vector<std::pair<int, int>> out;
  for (const auto& r : routes) out.emplace_back(r.unit, r.feature);
  return out;
}

std::vector<std::vector<std::int64_t>> Runs(const ShardingLayout& layout) {
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& q : layout.a2a_runs) {
    for (const auto& run : q) out.push_back({run.src, run.dst, run.len});
    out.push_back({});  // separates source ranks
  }
  return out;
}

using PairList = std::vector<std::pair<int, int>>;
using RunList = std::vector<std::vector<std::int64_t>>;

TEST(ShardingLayout, FeaturesAndColumnsInEbcOrder) {
  const auto tables = Tables();
  const ShardingLayout l = ShardingLayout::Build(
      MakePlan(1, {TableWise(tables[0], 0), TableWise(tables[1], 0), TableWise(tables[2], 0)}),
      tables, 0, 1);
  ASSERT_EQ(l.features.size(), 4U);
  EXPECT_EQ(l.features[0].name, "a1");
  EXPECT_EQ(l.features[0].col_base, 0);
  EXPECT_EQ(l.features[1].name, "a2");
  EXPECT_EQ(l.features[1].col_base, 4);
  EXPECT_EQ(l.features[2].name, "b");
  EXPECT_EQ(l.features[2].col_base, 8);
  EXPECT_TRUE(l.features[2].mean);
  EXPECT_FALSE(l.features[0].mean);
  EXPECT_EQ(l.features[3].table, 2);
  EXPECT_EQ(l.features[3].col_base, 14);
  EXPECT_EQ(l.total_dim, 16);
  EXPECT_TRUE(l.any_mean);
}

// A on rank 0, B on the last rank (tables A and B only).
TEST(ShardingLayout, TableWise) {
  auto tables = Tables();
  tables.pop_back();
  for (int world = 1; world <= 4; ++world) {
    const int last = world - 1;
    const ShardingPlan plan =
        MakePlan(world, {TableWise(tables[0], 0), TableWise(tables[1], last)});
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(rank));
      const ShardingLayout l = ShardingLayout::Build(plan, tables, rank, world);
      ASSERT_EQ(l.units.size(), 2U);
      EXPECT_EQ(l.units[0].shard.rank, 0);
      EXPECT_EQ(l.units[1].shard.rank, last);
      EXPECT_TRUE(l.units[0].full_rows && l.units[1].full_rows);
      EXPECT_EQ(l.units[0].group, Group::kAllToAll);
      EXPECT_EQ(l.units[1].group, Group::kAllToAll);
      std::vector<PairList> routes(static_cast<std::size_t>(world));
      routes[0] = {{0, 0}, {0, 1}};
      routes[static_cast<std::size_t>(last)].push_back({1, 2});
      for (int d = 0; d < world; ++d) EXPECT_EQ(Pairs(l.routes[d]), routes[d]) << "dest " << d;
      std::vector<std::int64_t> cols(static_cast<std::size_t>(world), 0);
      cols[0] = 8;
      cols[static_cast<std::size_t>(last)] += 6;
      EXPECT_EQ(l.a2a_cols_per_rank, cols);
      EXPECT_EQ(l.a2a_colmap, Cols(0, 14));
      const RunList runs = world == 1 ? RunList{{0, 0, 14}, {}} : [&] {
        RunList r{{0, 0, 8}, {}};
        for (int q = 1; q < last; ++q) r.push_back({});
        r.push_back({0, 8, 6});
        r.push_back({});
        return r;
      }();
      EXPECT_EQ(Runs(l), runs);
      EXPECT_TRUE(l.any_sharded && l.any_a2a && l.a2a_covers_output);
      EXPECT_EQ(l.rs_cols, 0);
      std::vector<int> local;
      if (rank == 0) local.push_back(0);
      if (rank == last) local.push_back(1);
      EXPECT_EQ(l.local_units, local);
      for (std::size_t i = 0; i < local.size(); ++i) {
        EXPECT_EQ(l.units[static_cast<std::size_t>(local[i])].local, static_cast<int>(i));
      }
      EXPECT_TRUE(l.dp_tables.empty() && l.dp_features.empty());
    }
  }
}

// A split into two column blocks of 2, on rank 0 and the last rank.
TEST(ShardingLayout, ColumnWise) {
  auto tables = Tables();
  tables.resize(1);
  for (int world = 1; world <= 4; ++world) {
    const int last = world - 1;
    const ShardingPlan plan =
        MakePlan(world, {Sharding(tables[0], ShardingType::kColumnWise,
                                  {MakeShard(0, 0, 10, 2, 0), MakeShard(0, 2, 10, 2, last)})});
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(rank));
      const ShardingLayout l = ShardingLayout::Build(plan, tables, rank, world);
      ASSERT_EQ(l.units.size(), 2U);
      EXPECT_TRUE(l.units[0].full_rows && l.units[1].full_rows);
      if (world == 1) {
        // Order (feature, unit): a1 to both blocks, then a2.
        EXPECT_EQ(Pairs(l.routes[0]), (PairList{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
        EXPECT_EQ(l.a2a_colmap, Cols(0, 8));
        EXPECT_EQ(Runs(l), (RunList{{0, 0, 8}, {}}));
        EXPECT_EQ(l.local_units, (std::vector<int>{0, 1}));
        continue;
      }
      EXPECT_EQ(Pairs(l.routes[0]), (PairList{{0, 0}, {0, 1}}));
      EXPECT_EQ(Pairs(l.routes[last]), (PairList{{1, 0}, {1, 1}}));
      EXPECT_EQ(l.a2a_colmap, (std::vector<std::int64_t>{0, 1, 4, 5, 2, 3, 6, 7}));
      EXPECT_EQ(l.a2a_cols_per_rank[0], 4);
      EXPECT_EQ(l.a2a_cols_per_rank[last], 4);
      RunList runs{{0, 0, 2}, {2, 4, 2}, {}};
      for (int q = 1; q < last; ++q) runs.push_back({});
      runs.insert(runs.end(), {{0, 2, 2}, {2, 6, 2}, {}});
      EXPECT_EQ(Runs(l), runs);
      EXPECT_TRUE(l.a2a_covers_output);
      std::vector<int> local;
      if (rank == 0) local.push_back(0);
      if (rank == last) local.push_back(1);
      EXPECT_EQ(l.local_units, local);
    }
  }
}

// A row_wise over every rank: blocks of ceil(10 / W) rows, reduce-scatter, empty shards kept.
TEST(ShardingLayout, RowWise) {
  auto tables = Tables();
  tables.resize(1);
  const std::vector<std::vector<std::int64_t>> rows = {{10}, {5, 5}, {4, 4, 2}, {3, 3, 3, 1}};
  for (int world = 1; world <= 4; ++world) {
    const ShardingPlan plan =
        MakePlan(world, {RowBlocks(tables[0], ShardingType::kRowWise, Iota(0, world))});
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(rank));
      const ShardingLayout l = ShardingLayout::Build(plan, tables, rank, world);
      ASSERT_EQ(l.units.size(), static_cast<std::size_t>(world));
      std::int64_t offset = 0;
      for (int r = 0; r < world; ++r) {
        const auto& u = l.units[static_cast<std::size_t>(r)];
        EXPECT_EQ(u.shard.rank, r);
        EXPECT_EQ(u.shard.row_offset, offset);
        EXPECT_EQ(u.shard.rows, rows[world - 1][r]);
        EXPECT_EQ(u.group, Group::kReduceScatter);
        EXPECT_EQ(u.full_rows, world == 1);
        EXPECT_EQ(Pairs(l.routes[r]), (PairList{{r, 0}, {r, 1}}));
        offset += u.shard.rows;
      }
      EXPECT_EQ(l.rs_colmap, Cols(0, 8));
      EXPECT_EQ(l.rs_cols, 8);
      EXPECT_FALSE(l.any_a2a);
      EXPECT_FALSE(l.a2a_covers_output);
      EXPECT_EQ(l.a2a_cols_per_rank, std::vector<std::int64_t>(world, 0));
      EXPECT_EQ(l.local_units, std::vector<int>{rank});
    }
  }
}

// table_row_wise on one host of every rank reduce-scatters like row_wise; on the second host of
// two (ranks 2, 3) it goes through the all-to-all and drops its empty row block.
TEST(ShardingLayout, TableRowWise) {
  auto tables = Tables();
  tables.resize(1);
  for (int world = 1; world <= 4; ++world) {
    const ShardingPlan plan =
        MakePlan(world, {RowBlocks(tables[0], ShardingType::kTableRowWise, Iota(0, world))});
    const ShardingLayout l = ShardingLayout::Build(plan, tables, 0, world);
    ASSERT_EQ(l.units.size(), static_cast<std::size_t>(world));
    for (const auto& u : l.units) EXPECT_EQ(u.group, Group::kReduceScatter);
    EXPECT_EQ(l.rs_cols, 8);
  }
  // Table A (10 rows) in blocks of 5 on ranks 2 and 3.
  std::vector<EmbeddingBagConfig> two = {Tables()[0], Tables()[2]};
  two[1].num_embeddings = 1;  // one row: blocks [0,1) on rank 2 and an empty one on rank 3
  const ShardingPlan plan = MakePlan(4, {RowBlocks(two[0], ShardingType::kTableRowWise, {2, 3}),
                                         RowBlocks(two[1], ShardingType::kTableRowWise, {2, 3})});
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const ShardingLayout l = ShardingLayout::Build(plan, two, rank, 4);
    ASSERT_EQ(l.units.size(), 3U);  // A on 2 and 3, C's non-empty block on 2
    EXPECT_EQ(l.units[0].shard.rank, 2);
    EXPECT_EQ(l.units[1].shard.rank, 3);
    EXPECT_EQ(l.units[2].shard.rank, 2);
    EXPECT_EQ(l.units[2].shard.rows, 1);
    for (const auto& u : l.units) EXPECT_EQ(u.group, Group::kAllToAll);
    EXPECT_FALSE(l.units[0].full_rows);
    EXPECT_TRUE(l.units[2].full_rows);  // the whole 1-row table
    EXPECT_TRUE(l.routes[0].empty() && l.routes[1].empty());
    EXPECT_EQ(Pairs(l.routes[2]), (PairList{{0, 0}, {0, 1}, {2, 2}}));
    EXPECT_EQ(Pairs(l.routes[3]), (PairList{{1, 0}, {1, 1}}));
    // Partial sums of both row blocks add into the same columns.
    EXPECT_EQ(l.a2a_colmap,
              (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(l.a2a_cols_per_rank, (std::vector<std::int64_t>{0, 0, 10, 8}));
    EXPECT_EQ(Runs(l), (RunList{{}, {}, {0, 0, 10}, {}, {0, 0, 8}, {}}));
    EXPECT_FALSE(l.a2a_covers_output);
    EXPECT_EQ(l.rs_cols, 0);
    const std::vector<int> local = rank == 2   ? std::vector<int>{0, 2}
                                   : rank == 3 ? std::vector<int>{1}
                                               : std::vector<int>{};
    EXPECT_EQ(l.local_units, local);
  }
}

TEST(ShardingLayout, DataParallel) {
  auto tables = Tables();
  tables.resize(2);
  for (int world = 1; world <= 4; ++world) {
    const ShardingPlan plan =
        MakePlan(world, {DataParallel(tables[0], world), DataParallel(tables[1], world)});
    for (int rank = 0; rank < world; ++rank) {
      const ShardingLayout l = ShardingLayout::Build(plan, tables, rank, world);
      EXPECT_TRUE(l.units.empty());
      EXPECT_FALSE(l.any_sharded || l.any_a2a || l.a2a_covers_output);
      EXPECT_EQ(l.routes.size(), static_cast<std::size_t>(world));
      for (const auto& r : l.routes) EXPECT_TRUE(r.empty());
      EXPECT_EQ(l.dp_tables, (std::vector<int>{0, 1}));
      EXPECT_EQ(l.dp_index.at(1), 1);
      EXPECT_EQ(l.dp_features, (std::vector<int>{0, 1, 2}));
      EXPECT_TRUE(l.local_units.empty());
    }
  }
}

// A data_parallel, B table_wise on the last rank, C row_wise over every rank.
TEST(ShardingLayout, Mixed) {
  const auto tables = Tables();
  for (int world = 1; world <= 4; ++world) {
    const int last = world - 1;
    const ShardingPlan plan =
        MakePlan(world, {DataParallel(tables[0], world), TableWise(tables[1], last),
                         RowBlocks(tables[2], ShardingType::kRowWise, Iota(0, world))});
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(rank));
      const ShardingLayout l = ShardingLayout::Build(plan, tables, rank, world);
      ASSERT_EQ(l.units.size(), static_cast<std::size_t>(1 + world));
      EXPECT_EQ(l.units[0].table, 1);
      EXPECT_EQ(l.units[0].group, Group::kAllToAll);
      for (int r = 0; r < world; ++r) {
        EXPECT_EQ(l.units[static_cast<std::size_t>(1 + r)].group, Group::kReduceScatter);
        PairList expected;
        if (r == last) expected.push_back({0, 2});
        expected.push_back({1 + r, 3});
        EXPECT_EQ(Pairs(l.routes[r]), expected) << "dest " << r;
      }
      std::vector<std::int64_t> cols(static_cast<std::size_t>(world), 0);
      cols[static_cast<std::size_t>(last)] = 6;
      EXPECT_EQ(l.a2a_cols_per_rank, cols);
      EXPECT_EQ(l.a2a_colmap, Cols(8, 14));
      EXPECT_EQ(l.rs_colmap, Cols(14, 16));
      EXPECT_EQ(l.rs_cols, 2);
      EXPECT_TRUE(l.any_sharded && l.any_a2a);
      EXPECT_FALSE(l.a2a_covers_output);
      EXPECT_EQ(l.dp_tables, std::vector<int>{0});
      EXPECT_EQ(l.dp_features, (std::vector<int>{0, 1}));
      std::vector<int> local;
      if (rank == last) local.push_back(0);
      local.push_back(1 + rank);
      EXPECT_EQ(l.local_units, local);
      EXPECT_EQ(l.units[static_cast<std::size_t>(1 + rank)].local, rank == last ? 1 : 0);
    }
  }
}

template <typename F>
std::string ErrorOf(F&& build) {
  try {
    build();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ShardingLayout, Errors) {
  auto tables = Tables();
  tables.resize(1);
  EXPECT_THAT(
      ErrorOf([&] { ShardingLayout::Build(MakePlan(2, {TableWise(tables[0], 0)}), tables, 0, 3); }),
      HasSubstr("sharding plan is for world size 2 but this job has 3 ranks"));
  EXPECT_THAT(
      ErrorOf([&] { ShardingLayout::Build(MakePlan(2, {TableWise(tables[0], 2)}), tables, 0, 2); }),
      HasSubstr("shard of table 'A' (rank 2, offsets 0,0) does not fit the table 10 x 4"));
  EXPECT_THAT(ErrorOf([&] {
                ShardingLayout::Build(
                    MakePlan(1, {Sharding(tables[0], ShardingType::kTableWise, {})}), tables, 0, 1);
              }),
              HasSubstr("sharding plan has no shard for table 'A'"));
  auto dup = Tables();
  dup[1].feature_names = {"a2"};
  EXPECT_THAT(ErrorOf([&] {
                ShardingLayout::Build(
                    MakePlan(1, {TableWise(dup[0], 0), TableWise(dup[1], 0), TableWise(dup[2], 0)}),
                    dup, 0, 1);
              }),
              HasSubstr("feature 'a2' is listed by two tables"));
  auto empty = tables;
  empty[0].feature_names.clear();
  EXPECT_THAT(
      ErrorOf([&] { ShardingLayout::Build(MakePlan(1, {TableWise(empty[0], 0)}), empty, 0, 1); }),
      HasSubstr("table 'A' needs rows > 0, dim > 0 and at least one feature"));
}

}  // namespace
}  // namespace tzrec
