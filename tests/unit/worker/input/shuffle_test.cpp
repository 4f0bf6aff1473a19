// data_config.shuffle: the batch shuffle order (src/worker/input/shuffle.hpp) against its
// definition (TorchEasyRec BaseReader._arrow_reader_iter: a buffer of shuffle_buffer_size
// batches, a uniform pick once full, the rest shuffled at the end), and Dataset's shuffled epochs:
// per-epoch and per-rank orders, batches keeping their rows, eval datasets unshuffled, and a
// resume (cursor JSON round trip) that replays the uninterrupted run's batches exactly.
#include "shuffle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "dataset_test_util.hpp"
#include "tzrec/input/input.hpp"

namespace tzrec {
namespace {

using namespace input_test;  // NOLINT(google-build-using-namespace): the shared test helpers

std::vector<std::int64_t> Iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(Shuffle, OrderIsASeededPermutation) {
  for (const std::int64_t n : {0, 1, 5, 40, 333}) {
    for (const std::int64_t buffer : {0, 1, 2, 7, 32, 1000}) {
      const auto order = input::ShuffleOrder(n, buffer, 11);
      auto sorted = order;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, Iota(n)) << n << " " << buffer;      // a permutation
      EXPECT_EQ(order, input::ShuffleOrder(n, buffer, 11));  // deterministic
      if (buffer <= 1) {
        EXPECT_EQ(order, Iota(n));
      }
      // The buffer holds at most `buffer` batches: the j-th returned batch was built by then.
      for (std::int64_t j = 0; j + buffer <= n && buffer > 1; ++j) {
        EXPECT_LE(order[static_cast<std::size_t>(j)], j + buffer - 1) << n << " " << buffer;
      }
    }
  }
  EXPECT_NE(input::ShuffleOrder(40, 8, 1), input::ShuffleOrder(40, 8, 2));
  EXPECT_NE(input::ShuffleOrder(40, 8, 1), Iota(40));
  // Seeds differ per epoch and per rank.
  std::set<std::uint64_t> seeds;
  for (int epoch = 0; epoch < 4; ++epoch) {
    for (int rank = 0; rank < 4; ++rank) seeds.insert(input::EpochSeed(42, epoch, rank));
  }
  EXPECT_EQ(seeds.size(), 16U);
  EXPECT_THROW(input::ShuffleOrder(-1, 4, 0), std::invalid_argument);
}

TEST(Shuffle, StreamSlicingAndBatchRemoval) {
  const std::vector<RowRange> stream = {{10, 13}, {20, 25}, {40, 42}};  // 10 positions
  EXPECT_EQ(input::SliceStream(stream, 2, 6), (std::vector<RowRange>{{12, 13}, {20, 23}}));
  EXPECT_EQ(input::SliceStream(stream, 8, 99), (std::vector<RowRange>{{40, 42}}));
  // Batches of 4: [0, 4) [4, 8) [8, 10); without batch 1 and the partial batch 2.
  EXPECT_EQ(input::RemoveBatches(stream, {1}, 4),
            (std::vector<RowRange>{{10, 13}, {20, 21}, {40, 42}}));
  EXPECT_EQ(input::RemoveBatches(stream, {2, 0}, 4), (std::vector<RowRange>{{21, 25}}));
}

// 3 files (97 rows), shuffle buffer 4, batches of 5, seed 7.
PipelineConfig ShuffleConfig(std::int64_t workers) {
  auto c = ParquetConfig();
  c.mutable_data_config()->set_shuffle(true);
  c.mutable_data_config()->set_shuffle_buffer_size(4);
  c.mutable_data_config()->set_num_workers(static_cast<std::uint32_t>(workers));
  c.mutable_train_config()->set_seed(7);
  return c;
}

std::string WriteFiles(const TempDir& dir) {
  WriteTypedParquet(dir / "a.parquet", 0, 31, 7);
  WriteTypedParquet(dir / "b.parquet", 31, 40, 9);
  WriteTypedParquet(dir / "c.parquet", 71, 26, 26);
  return dir / "*.parquet";
}

// The rid of every row of every batch.
std::vector<std::vector<std::int64_t>> Rows(const std::vector<Batch>& batches) {
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& b : batches) out.push_back(Longs(b.sparse["rid"].values));
  return out;
}

TEST(Shuffle, EpochsShuffleBatchesNotRows) {
  TempDir dir;
  const std::string path = WriteFiles(dir);
  for (int rank = 0; rank < 2; ++rank) {
    Dataset ds(ShuffleConfig(1), path, rank, 2, 5, std::nullopt, /*train=*/true);
    const auto epoch0 = Rows(ReadAll(ds));
    ds.StartNextEpoch();
    const auto epoch1 = Rows(ReadAll(ds));
    Dataset plain(ShuffleConfig(1), path, rank, 2, 5);  // an eval dataset: not shuffled
    const auto sequential = Rows(ReadAll(plain));
    EXPECT_NE(epoch0, sequential);
    EXPECT_NE(epoch0, epoch1);
    for (const auto& epoch : {epoch0, epoch1}) {
      auto sorted = epoch;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, sequential);  // the same batches, each with its rows, in another order
    }
    // num_workers 0 (batches built in Next) returns the same order.
    Dataset inline_ds(ShuffleConfig(0), path, rank, 2, 5, std::nullopt, true);
    EXPECT_EQ(Rows(ReadAll(inline_ds)), epoch0);
  }
}

// Interrupt each rank after k batches, merge the cursors through JSON as a checkpoint does,
// resume at the same world size: the rest of the epoch and the next epoch are the batches of the
// uninterrupted run. At another world size, the rest is every unconsumed row once.
TEST(Shuffle, ResumeReplaysTheUninterruptedOrder) {
  TempDir dir;
  const std::string path = WriteFiles(dir);
  for (const std::int64_t workers : {0, 2}) {
    for (const int k : {0, 3, 7, 10}) {
      std::vector<std::vector<std::vector<std::int64_t>>> full(2), next(2), head(2);
      std::vector<DataCursor> cursors;
      for (int rank = 0; rank < 2; ++rank) {
        Dataset ds(ShuffleConfig(workers), path, rank, 2, 5, std::nullopt, true);
        full[rank] = Rows(ReadAll(ds));
        ds.StartNextEpoch();
        next[rank] = Rows(ReadAll(ds));
        Dataset cut(ShuffleConfig(workers), path, rank, 2, 5, std::nullopt, true);
        for (int s = 0; s < k; ++s) {
          auto b = cut.Next();
          if (b) head[rank].push_back(Longs(b->sparse["rid"].values));
        }
        cursors.push_back(cut.Cursor());
      }
      const auto merged = DataCursor::FromJson(DataCursor::Merge(cursors).ToJson());
      ASSERT_TRUE(merged.replay);
      std::set<std::int64_t> consumed;
      for (int rank = 0; rank < 2; ++rank) {
        for (const auto& b : head[rank]) consumed.insert(b.begin(), b.end());
      }
      EXPECT_EQ(merged.ConsumedRows(), static_cast<std::int64_t>(consumed.size()));
      for (int rank = 0; rank < 2; ++rank) {
        Dataset resumed(ShuffleConfig(workers), path, rank, 2, 5, merged, true);
        auto seen = head[rank];
        for (const auto& b : Rows(ReadAll(resumed))) seen.push_back(b);
        EXPECT_EQ(seen, full[rank]) << "rank " << rank << " k " << k;
        resumed.StartNextEpoch();
        EXPECT_EQ(Rows(ReadAll(resumed)), next[rank]) << "rank " << rank << " k " << k;
      }
      // World 3: another split, every row not consumed exactly once.
      std::multiset<std::int64_t> rest;
      for (int rank = 0; rank < 3; ++rank) {
        Dataset other(ShuffleConfig(workers), path, rank, 3, 5, merged, true);
        for (const auto& b : Rows(ReadAll(other))) rest.insert(b.begin(), b.end());
      }
      for (std::int64_t r = 0; r < 97; ++r) {
        EXPECT_EQ(rest.count(r) + consumed.count(r), 1U) << r << " k " << k;
      }
    }
  }
}

TEST(Shuffle, CursorJsonKeepsTheReplay) {
  DataCursor c{50, 1, {{0, 5}, {10, 15}}, {}};
  c.replay = DataCursor::Replay{2, {{0, 5}}, {3, -1}};
  const auto back = DataCursor::FromJson(c.ToJson());
  ASSERT_TRUE(back.replay);
  EXPECT_EQ(*back.replay, *c.replay);
  DataCursor d = c;
  d.replay->batches = {-1, 4};
  const auto merged = DataCursor::Merge({c, d});
  ASSERT_TRUE(merged.replay);
  EXPECT_EQ(merged.replay->batches, (std::vector<std::int64_t>{3, 4}));
  d.replay->epoch_base = {};
  EXPECT_FALSE(DataCursor::Merge({c, d}).replay);  // not the same epoch start: no exact replay
  EXPECT_THROW(DataCursor::FromJson(R"({"total_rows": 5, "epochs_completed": 0, "consumed": [],
      "shuffle": {"world": 2, "epoch_base": [], "batches": [1]}})"),
               std::invalid_argument);
}

// num_workers >= 2 runs that many reader threads, each with its own file readers: the batches and
// their order are the same for every num_workers (plain and shuffled, with drop_remainder, and on
// CSV), and so is a resume.
TEST(Dataset, ParallelReadersKeepTheBatchesAndTheirOrder) {
  TempDir dir;
  const std::string path = WriteFiles(dir);
  std::string csv = "rid,label,f,s,ls,d\n";
  for (int i = 0; i < 53; ++i) csv += std::to_string(i) + ",1,0.5,s,x,y\n";
  WriteText(dir / "t.csv", csv);
  for (const bool shuffle : {false, true}) {
    for (const bool drop : {false, true}) {
      for (const bool text : {false, true}) {
        std::vector<std::vector<std::int64_t>> reference;
        for (const std::int64_t workers : {0, 1, 2, 3, 5}) {
          auto c = ShuffleConfig(workers);
          c.mutable_data_config()->set_shuffle(shuffle);
          c.mutable_data_config()->set_drop_remainder(drop);
          if (text) c.mutable_data_config()->set_dataset_type(protos::CsvDataset);
          Dataset ds(c, text ? dir / "t.csv" : path, 1, 2, 4, std::nullopt, true);
          auto rows = Rows(ReadAll(ds));
          ds.StartNextEpoch();
          for (auto& b : Rows(ReadAll(ds))) rows.push_back(std::move(b));
          if (workers == 0) {
            reference = rows;
            EXPECT_FALSE(rows.empty());
          } else {
            EXPECT_EQ(rows, reference) << workers << " " << shuffle << " " << drop << " " << text;
          }
        }
      }
    }
  }
  // Stopping mid-epoch with reader threads blocked on full queues joins them.
  Dataset early(ShuffleConfig(4), path, 0, 1, 2, std::nullopt, true);
  ASSERT_TRUE(early.Next());
  early.StartNextEpoch();
  ASSERT_TRUE(early.Next());
}

}  // namespace
}  // namespace tzrec
