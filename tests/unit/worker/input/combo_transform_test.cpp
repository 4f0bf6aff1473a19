// combo_feature (TorchEasyRec's ComboFeature, fg_mode FG_DAG): the cartesian product of the
// inputs' values, each combination "v1_v2" hashed into hash_bucket_size rows — hand-computed ids
// (FNV-1a 64 of the joined text) of the transform and of a Dataset batch reading two columns.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cell.hpp"
#include "dataset_test_util.hpp"
#include "transform.hpp"

namespace tzrec::input {
namespace {

using input_test::H;
using input_test::Longs;
using V = std::vector<std::int64_t>;

protos::FeatureConfig Combo() {
  protos::FeatureConfig fc;
  auto* c = fc.mutable_combo_feature();
  c->set_feature_name("age_cate");
  c->add_expression("user:age");
  c->add_expression("item:cate");
  c->set_embedding_dim(4);
  c->set_hash_bucket_size(1000);
  c->set_separator("|");
  return fc;
}

V Ids(const FeatureTransform& t, const Cell& a, const Cell& b) {
  const Cell* cells[] = {&a, &b};
  V out;
  t.AppendInputsIds(cells, &out);
  return out;
}

TEST(ComboTransform, CartesianProductHashed) {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_DAG);
  const FeatureTransform t(Combo(), data);
  EXPECT_TRUE(t.MultiInput());
  EXPECT_EQ(t.TableSize(), 1000);
  EXPECT_EQ(Ids(t, Cell::Int(18), Cell::String("c1|c2")), (V{H("18_c1", 1000), H("18_c2", 1000)}));
  EXPECT_EQ(Ids(t, Cell::String("a|b"), Cell::String("x|y")),
            (V{H("a_x", 1000), H("a_y", 1000), H("b_x", 1000), H("b_y", 1000)}));
  EXPECT_TRUE(Ids(t, Cell::Null(), Cell::String("x")).empty());  // a missing input: no ids
  EXPECT_TRUE(Ids(t, Cell::String("a"), Cell::String("")).empty());
  // FG_NONE: the column named feature_name holds ids in [0, hash_bucket_size).
  const FeatureTransform encoded(Combo(), protos::DataConfig());
  EXPECT_FALSE(encoded.MultiInput());
  V ids;
  encoded.AppendIds(Cell::Int(7), &ids);
  EXPECT_EQ(ids, V{7});
}

TEST(ComboTransform, DatasetReadsEveryInput) {
  input_test::TempDir dir;
  input_test::WriteText(dir / "a.csv", "label,age,cate\n1,18,c1|c2\n0,,c3\n1,30,c3\n");
  PipelineConfig c = input_test::FgConfig(protos::CsvDataset);
  *c.add_feature_configs() = Combo();
  Dataset ds(c, dir / "a.csv", 0, 1, 3);
  const auto b = ds.Next();
  ASSERT_TRUE(b);
  EXPECT_EQ(Longs(b->sparse.Lengths()), (V{2, 0, 1}));
  EXPECT_EQ(Longs(b->sparse.Values()), (V{H("18_c1", 1000), H("18_c2", 1000), H("30_c3", 1000)}));
}

}  // namespace
}  // namespace tzrec::input
