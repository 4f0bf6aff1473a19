// Weighted id features (TorchEasyRec id_feature weighted: true, input "k1:v1\x1dk2:v2", fg_mode
// FG_DAG): hand-computed ids, weights and lengths of the transform, and the KeyedJaggedTensor
// weights of a Dataset batch (1 for the ids of unweighted features, as a TorchRec weighted KJT
// needs one weight per id). The EBC's weighted pooling is tested in tests/unit/worker/core.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cell.hpp"
#include "dataset_test_util.hpp"
#include "transform.hpp"

namespace tzrec::input {
namespace {

using input_test::Floats;
using input_test::Longs;

protos::FeatureConfig Weighted(std::initializer_list<const char*> vocab) {
  protos::FeatureConfig fc;
  auto* id = fc.mutable_id_feature();
  id->set_feature_name("tags");
  id->set_expression("item:tags");
  id->set_embedding_dim(4);
  id->set_weighted(true);
  for (const char* v : vocab) id->add_vocab_list(v);
  return fc;
}

protos::DataConfig Fg() {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_DAG);
  return data;
}

TEST(WeightedTransform, PairsGiveIdsAndWeights) {
  const FeatureTransform t(Weighted({"a", "b"}), Fg());
  EXPECT_TRUE(t.Weighted());
  const Cell cells[] = {Cell::String("a:0.5\x1d"
                                     "b:2"),
                        Cell::String(""), Cell::String("c:1.5"), Cell::Null()};
  std::vector<std::int64_t> ids, lengths;
  std::vector<float> weights;
  t.AppendIdsColumn(cells, 4, &ids, &lengths, nullptr, &weights);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{2, 3, 1}));  // vocab index + 2; c unknown -> 1
  EXPECT_EQ(weights, (std::vector<float>{0.5F, 2.0F, 1.5F}));
  EXPECT_EQ(lengths, (std::vector<std::int64_t>{2, 0, 1, 0}));
  auto fc = Weighted({});
  fc.mutable_id_feature()->set_num_buckets(10);
  fc.mutable_id_feature()->set_value_dim(1);
  const FeatureTransform first(fc, Fg());
  ids.clear();
  weights.clear();
  first.AppendIds(Cell::String("3:0.25\x1d"
                               "4:1"),
                  &ids, &weights);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(weights, (std::vector<float>{0.25F}));
}

TEST(WeightedTransform, BadPairsNameTheFeature) {
  const FeatureTransform t(Weighted({"a"}), Fg());
  std::vector<std::int64_t> ids;
  std::vector<float> w;
  EXPECT_NE(input_test::ErrorOf([&] {
              t.AppendIds(Cell::String("a"), &ids, &w);
            }).find("feature 'tags': weighted value 'a' has no ':weight'"),
            std::string::npos);
  EXPECT_NE(input_test::ErrorOf([&] {
              t.AppendIds(Cell::String("a:x"), &ids, &w);
            }).find("the weight of 'a:x' is not a number"),
            std::string::npos);
  EXPECT_NE(input_test::ErrorOf([&] {
              t.AppendIds(Cell::Int(3), &ids, &w);
            }).find("weighted: true needs \"id:weight\" text values"),
            std::string::npos);
  protos::DataConfig none;
  EXPECT_NE(input_test::ErrorOf([&] {
              FeatureTransform(Weighted({"a"}), none);
            }).find("weighted: true with fg_mode FG_NONE is not implemented"),
            std::string::npos);
}

// A CSV with a weighted and an unweighted feature: the batch KJT's weights are the pairs'
// weights for `tags` and 1 for every `user` id, in KJT value order (feature-major).
TEST(WeightedTransform, DatasetBatchCarriesWeights) {
  input_test::TempDir dir;
  input_test::WriteText(dir / "a.csv", "label,user,tags\n1,7,a:0.5|b:2\n0,3,\n1,4,b:3\n");
  PipelineConfig c = input_test::FgConfig(protos::CsvDataset);
  auto user = input_test::Id("user", "user");
  user.mutable_id_feature()->set_num_buckets(10);
  auto tags = Weighted({"a", "b"});
  tags.mutable_id_feature()->set_separator("|");
  *c.add_feature_configs() = user;
  *c.add_feature_configs() = tags;
  Dataset ds(c, dir / "a.csv", 0, 1, 3);
  EXPECT_TRUE(ds.Weighted());
  const auto b = ds.Next();
  ASSERT_TRUE(b);
  EXPECT_EQ(Longs(b->sparse.Lengths()), (std::vector<std::int64_t>{1, 1, 1, 2, 0, 1}));
  EXPECT_EQ(Longs(b->sparse.Values()), (std::vector<std::int64_t>{7, 3, 4, 2, 3, 3}));
  ASSERT_TRUE(b->sparse.HasWeights());
  EXPECT_EQ(Floats(b->sparse.Weights()), (std::vector<float>{1, 1, 1, 0.5F, 2, 3}));
}

}  // namespace
}  // namespace tzrec::input
