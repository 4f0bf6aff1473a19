// DataCursor: rank split (no overlap, no loss), merge, JSON, resume at another world size.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "tzrec/input/input.hpp"

namespace tzrec {
namespace {

std::vector<std::int64_t> Rows(const std::vector<RowRange>& ranges) {
  std::vector<std::int64_t> out;
  for (const auto& r : ranges) {
    for (auto i = r.begin; i < r.end; ++i) out.push_back(i);
  }
  return out;
}

// The first `n` rows of `ranges` as ranges.
std::vector<RowRange> Head(const std::vector<RowRange>& ranges, std::int64_t n) {
  std::vector<RowRange> out;
  for (const auto& r : ranges) {
    if (n <= 0) break;
    const auto k = std::min(n, r.Size());
    out.push_back({r.begin, r.begin + k});
    n -= k;
  }
  return out;
}

TEST(Cursor, AssignSplitsAllRowsWithoutOverlap) {
  for (std::int64_t total : {0, 1, 2, 7, 10, 11, 1000}) {
    for (int world : {1, 2, 3}) {
      DataCursor c{total, 0, {}, {}};
      std::vector<std::int64_t> all;
      std::vector<std::int64_t> sizes;
      for (int rank = 0; rank < world; ++rank) {
        const auto rows = Rows(c.Assign(rank, world));
        sizes.push_back(static_cast<std::int64_t>(rows.size()));
        all.insert(all.end(), rows.begin(), rows.end());
      }
      ASSERT_EQ(static_cast<std::int64_t>(all.size()), total)
          << "total " << total << " world " << world;
      for (std::int64_t i = 0; i < total; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], i);
      // Contiguous by count, remainder to the first ranks.
      for (int rank = 0; rank < world; ++rank) {
        EXPECT_EQ(sizes[static_cast<std::size_t>(rank)],
                  total / world + (rank < total % world ? 1 : 0));
      }
    }
  }
}

TEST(Cursor, AssignExample) {
  DataCursor c{10, 0, {}, {}};
  EXPECT_EQ(c.Assign(0, 3), (std::vector<RowRange>{{0, 4}}));
  EXPECT_EQ(c.Assign(1, 3), (std::vector<RowRange>{{4, 7}}));
  EXPECT_EQ(c.Assign(2, 3), (std::vector<RowRange>{{7, 10}}));
  c.consumed = {{0, 2}, {4, 6}, {7, 8}};  // free: 2,3,6,8,9
  EXPECT_EQ(c.Assign(0, 2), (std::vector<RowRange>{{2, 4}, {6, 7}}));
  EXPECT_EQ(c.Assign(1, 2), (std::vector<RowRange>{{8, 10}}));
  EXPECT_THROW(c.Assign(2, 2), std::invalid_argument);
  EXPECT_THROW(c.Assign(0, 0), std::invalid_argument);
}

TEST(Cursor, MergeUnitesAndJsonRoundTrips) {
  DataCursor a{100, 2, {{0, 10}, {50, 60}}, {}};
  DataCursor b{100, 2, {{10, 20}, {55, 70}}, {}};
  const auto m = DataCursor::Merge({a, b});
  EXPECT_EQ(m.total_rows, 100);
  EXPECT_EQ(m.epochs_completed, 2);
  EXPECT_EQ(m.consumed, (std::vector<RowRange>{{0, 20}, {50, 70}}));
  EXPECT_EQ(m.ConsumedRows(), 40);
  const auto json = m.ToJson();
  EXPECT_EQ(json, R"({"consumed":[[0,20],[50,70]],"epochs_completed":2,"total_rows":100})");
  const auto back = DataCursor::FromJson(json);
  EXPECT_EQ(back.consumed, m.consumed);
  EXPECT_EQ(back.total_rows, 100);
  EXPECT_EQ(back.epochs_completed, 2);
  // Unsorted, overlapping input is normalised.
  const auto n = DataCursor::FromJson(
      R"({"total_rows": 10, "epochs_completed": 0, "consumed": [[5, 7], [0, 2], [1, 3], [7, 8]]})");
  EXPECT_EQ(n.consumed, (std::vector<RowRange>{{0, 3}, {5, 8}}));
}

TEST(Cursor, MergeAndJsonErrors) {
  EXPECT_THROW(DataCursor::Merge({}), std::invalid_argument);
  try {
    DataCursor::Merge({DataCursor{100, 0, {}, {}}, DataCursor{99, 0, {}, {}}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("total_rows=99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DataCursor::Merge({DataCursor{10, 0, {}, {}}, DataCursor{10, 1, {}, {}}}),
               std::invalid_argument);
  EXPECT_THROW(DataCursor::FromJson("not json"), std::invalid_argument);
  EXPECT_THROW(DataCursor::FromJson(R"({"epochs_completed": 0, "consumed": []})"),
               std::invalid_argument);
  try {
    DataCursor::FromJson(R"({"total_rows": 10, "epochs_completed": 0, "consumed": [[5, 11]]})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 11)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      DataCursor::FromJson(R"({"total_rows": 10, "epochs_completed": 0, "consumed": [[3, 2]]})"),
      std::invalid_argument);
  EXPECT_THROW(
      DataCursor::FromJson(R"({"total_rows": 10, "epochs_completed": 0, "consumed": [[1]]})"),
      std::invalid_argument);
}

// Ranks at world 3 consume different amounts; the merged cursor resumed at world 2 (and 1, 4)
// reads every remaining row exactly once and none of the consumed ones.
TEST(Cursor, ResumeAtAnotherWorldSizeNeitherRepeatsNorSkips) {
  const std::int64_t total = 101;
  DataCursor start{total, 0, {}, {}};
  const std::vector<std::int64_t> progress = {10, 0, 30};
  std::vector<DataCursor> per_rank;
  std::set<std::int64_t> consumed;
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = Head(start.Assign(rank, 3), progress[static_cast<std::size_t>(rank)]);
    for (auto r : Rows(mine)) consumed.insert(r);
    per_rank.push_back(DataCursor{total, 0, mine, {}});
  }
  const auto merged = DataCursor::FromJson(DataCursor::Merge(per_rank).ToJson());
  EXPECT_EQ(merged.ConsumedRows(), 40);
  for (int world : {1, 2, 4}) {
    std::multiset<std::int64_t> read;
    for (int rank = 0; rank < world; ++rank) {
      for (auto r : Rows(merged.Assign(rank, world))) read.insert(r);
    }
    ASSERT_EQ(read.size() + consumed.size(), static_cast<std::size_t>(total)) << world;
    for (std::int64_t r = 0; r < total; ++r) {
      EXPECT_EQ(read.count(r) + consumed.count(r), 1U) << "row " << r << " world " << world;
    }
  }
}

}  // namespace
}  // namespace tzrec
