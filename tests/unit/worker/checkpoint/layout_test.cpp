// Unit tests of the pure parts of a checkpoint (src/worker/checkpoint/layout.hpp): descriptor merge
// (who writes which shard, disagreement and coverage errors) and the resharding geometry.
#include "layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tzrec::checkpoint_detail {
namespace {

Json ShardJson(const std::string& table, std::int64_t rows, std::int64_t cols, std::int64_t r0,
               std::int64_t c0, std::int64_t nr, std::int64_t nc) {
  return {
      {"table", table},      {"table_shape", {rows, cols}},
      {"offsets", {r0, c0}}, {"sizes", {nr, nc}},
      {"dtype", "float"},    {"states", Json::array({{{"name", "momentum1"}, {"shape", {nr}}}})}};
}

Json RankDesc(std::int64_t step, std::vector<Json> shards) {
  Json list = Json::array();
  for (auto& s : shards) list.push_back(std::move(s));
  return {{"step", step}, {"shards", list}, {"cursor", Json::object()}};
}

std::string MergeError(const std::vector<Json>& descs) {
  try {
    MergeDescriptors(descs);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(MergeDescriptors, RowWiseShardsAreWrittenByTheirOwners) {
  const auto all = MergeDescriptors({RankDesc(7, {ShardJson("t", 10, 4, 0, 0, 5, 4)}),
                                     RankDesc(7, {ShardJson("t", 10, 4, 5, 0, 5, 4)})});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].owner, 0);
  EXPECT_EQ(all[1].owner, 1);
  EXPECT_TRUE(all[0].written && all[1].written);
  EXPECT_EQ(all[1].shard.row_offset, 5);
  EXPECT_EQ(all[1].states.at(0).first, "momentum1");
}

TEST(MergeDescriptors, ReplicasAreWrittenOnceByTheLowestRank) {
  const auto all = MergeDescriptors({RankDesc(1, {ShardJson("dp", 6, 2, 0, 0, 6, 2)}),
                                     RankDesc(1, {ShardJson("dp", 6, 2, 0, 0, 6, 2)}),
                                     RankDesc(1, {ShardJson("dp", 6, 2, 0, 0, 6, 2)})});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].written);
  EXPECT_FALSE(all[1].written);
  EXPECT_FALSE(all[2].written);
}

TEST(MergeDescriptors, DisagreementsAndGapsAreNamed) {
  EXPECT_NE(MergeError({RankDesc(1, {}), RankDesc(2, {})}).find("ranks disagree on the step"),
            std::string::npos);
  EXPECT_NE(MergeError({RankDesc(1, {ShardJson("t", 10, 4, 0, 0, 5, 4)}),
                        RankDesc(1, {ShardJson("t", 12, 4, 5, 0, 5, 4)})})
                .find("ranks disagree on the shape of table 't'"),
            std::string::npos);
  EXPECT_NE(MergeError({RankDesc(1, {ShardJson("t", 10, 4, 0, 0, 6, 4)}),
                        RankDesc(1, {ShardJson("t", 10, 4, 5, 0, 5, 4)})})
                .find("overlap without being replicas: rank 0 and rank 1"),
            std::string::npos);
  EXPECT_NE(MergeError({RankDesc(1, {ShardJson("t", 10, 4, 0, 0, 5, 4)})})
                .find("cover 20 of its 40 cells"),
            std::string::npos);
}

TEST(BuildMetadata, ListsWrittenShardsWithTheirFilesAndKeys) {
  std::vector<Json> descs = {RankDesc(3, {ShardJson("t", 4, 2, 0, 0, 2, 2)}),
                             RankDesc(3, {ShardJson("t", 4, 2, 2, 0, 2, 2)})};
  descs[0]["extra"] = {{"epoch", 1}};
  descs[0]["plan_hash"] = "abc";
  descs[0]["dense"] = Json::object();
  descs[0]["dense_optimizer"] = Json::object();
  const auto all = MergeDescriptors(descs);
  const Json meta = BuildMetadata(all, descs, 3, 2, false, Json::array());
  EXPECT_EQ(meta.at("format"), "tzrec_checkpoint");
  EXPECT_EQ(meta.at("step"), 3);
  EXPECT_TRUE(meta.at("plan_file").is_null());
  const Json& shards = meta.at("tables").at("t").at("shards");
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[1].at("model_file"), "model-000001-of-000002.pt");
  EXPECT_EQ(shards[1].at("weight_key"), "t/weight/2_0");
  EXPECT_EQ(shards[1].at("optimizer").at("momentum1").at("key"), "t/momentum1/2_0");
  EXPECT_EQ(meta.at("dense").at("file"), "model-000000-of-000002.pt");
  EXPECT_EQ(meta.at("extra").at("epoch"), 1);
}

Shard MakeShard(std::int64_t r0, std::int64_t c0, std::int64_t nr, std::int64_t nc) {
  Shard s;
  s.row_offset = r0;
  s.col_offset = c0;
  s.rows = nr;
  s.cols = nc;
  return s;
}

TEST(Geometry, OverlapAndWeightSlice) {
  const Shard target = MakeShard(4, 0, 8, 16);   // rows [4, 12)
  const Shard saved = MakeShard(10, 0, 10, 16);  // rows [10, 20)
  const Overlap o = OverlapOf(target, saved);
  EXPECT_FALSE(o.Empty());
  EXPECT_EQ(o.Cells(), 2 * 16);
  const Slice s = WeightSlice(target, saved, o);
  EXPECT_EQ(s.src_row, 0);
  EXPECT_EQ(s.dst_row, 6);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.cols, 16);
  EXPECT_TRUE(OverlapOf(target, MakeShard(12, 0, 4, 16)).Empty());
  EXPECT_TRUE(OverlapOf(MakeShard(0, 0, 4, 8), MakeShard(0, 8, 4, 8)).Empty());
}

TEST(Geometry, ColumnBlocksMustAlign) {
  // Target: columns [0, 16) in blocks of 8; saved: columns [8, 16) in blocks of 8.
  const Shard target = MakeShard(0, 0, 4, 16);
  const Shard saved = MakeShard(0, 8, 4, 8);
  const Overlap o = OverlapOf(target, saved);
  const auto s = BlockSlice(target, saved, o, 8);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->dst_col, 1);
  EXPECT_EQ(s->src_col, 0);
  EXPECT_EQ(s->cols, 1);
  // Saved columns [4, 12): not whole blocks of 8 of the target.
  const Shard skew = MakeShard(0, 4, 4, 8);
  EXPECT_FALSE(BlockSlice(target, skew, OverlapOf(target, skew), 8).has_value());
  EXPECT_TRUE(BlockSlice(target, skew, OverlapOf(target, skew), 1).has_value());
}

TEST(Geometry, LayoutOfStateShapes) {
  const auto one = LayoutOf({10}, 10, 16);
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(one->one_dim);
  EXPECT_EQ(one->width, 16);
  const auto blocks = LayoutOf({10, 2}, 10, 16);
  ASSERT_TRUE(blocks.has_value());
  EXPECT_EQ(blocks->width, 8);
  EXPECT_EQ(LayoutOf({10, 16}, 10, 16)->width, 1);
  EXPECT_FALSE(LayoutOf({10, 3}, 10, 16).has_value());
  EXPECT_FALSE(LayoutOf({9}, 10, 16).has_value());
  EXPECT_FALSE(LayoutOf({}, 10, 16).has_value());
}

TEST(Names, DirectoriesAndFiles) {
  EXPECT_EQ(RankFileName("model", 1, 2), "model-000001-of-000002.pt");
  EXPECT_EQ(StepOfDirName("model.ckpt-123"), 123);
  EXPECT_FALSE(StepOfDirName("model.ckpt-").has_value());
  EXPECT_FALSE(StepOfDirName("model.ckpt-1x").has_value());
  EXPECT_TRUE(IsTmpDirName(TmpDirName(5)));
  EXPECT_FALSE(IsTmpDirName(CkptDirName(5)));
  EXPECT_FALSE(IsTmpDirName(".other.tmp"));
}

}  // namespace
}  // namespace tzrec::checkpoint_detail
