// lookup_feature and match_feature (TorchEasyRec's LookupFeature / MatchFeature, fg_mode FG_DAG):
// hand-computed values of every option — combiners over the found values, ids of hashed /
// vocabulary / num_buckets values (need_key, show_pkey, show_skey, value_dim), boundaries, the
// normalizer, value_dim > 1, default_value — and a Dataset batch reading the input columns.
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

const std::string kMap =
    "a:1\x1d"
    "b:4\x1d"
    "c:x\x1d"
    "bad\x1d"
    "b:2";  // b repeated: 2 wins

protos::DataConfig Fg() {
  protos::DataConfig data;
  data.set_fg_mode(protos::FG_DAG);
  return data;
}

protos::FeatureConfig Lookup() {
  protos::FeatureConfig fc;
  auto* l = fc.mutable_lookup_feature();
  l->set_feature_name("kv");
  l->set_map("item:kv");
  l->set_key("user:k");
  l->set_separator("|");
  return fc;
}

protos::FeatureConfig Match(const std::string& pkey, const std::string& skey) {
  protos::FeatureConfig fc;
  auto* m = fc.mutable_match_feature();
  m->set_feature_name("kkv");
  m->set_nested_map("user:kkv");
  m->set_pkey(pkey);
  m->set_skey(skey);
  return fc;
}

std::vector<float> Dense(const FeatureTransform& t, std::vector<Cell> cells) {
  std::vector<const Cell*> p;
  for (const Cell& c : cells) p.push_back(&c);
  std::vector<float> out(static_cast<std::size_t>(t.DenseDim()));
  t.WriteInputsDense(p.data(), out.data());
  return out;
}

V Ids(const FeatureTransform& t, std::vector<Cell> cells) {
  std::vector<const Cell*> p;
  for (const Cell& c : cells) p.push_back(&c);
  V out;
  t.AppendInputsIds(p.data(), &out);
  return out;
}

float Combined(const std::string& combiner, const std::string& keys) {
  auto fc = Lookup();
  fc.mutable_lookup_feature()->set_combiner(combiner);
  const FeatureTransform t(fc, Fg());
  return Dense(t, {Cell::String(kMap), Cell::String(keys)}).at(0);
}

TEST(LookupTransform, CombinersOverFoundValues) {
  const FeatureTransform t(Lookup(), Fg());
  EXPECT_TRUE(t.MultiInput());
  EXPECT_FALSE(t.Sparse());
  EXPECT_EQ(t.Inputs(), 2u);
  EXPECT_EQ(t.DenseDim(), 1);
  // keys "a|b|z": a -> 1, b -> 2 (the last of the repeated key), z not in the map
  EXPECT_EQ(Combined("sum", "a|b|z"), 3.0f);
  EXPECT_EQ(Combined("mean", "a|b|z"), 1.5f);
  EXPECT_EQ(Combined("min", "a|b|z"), 1.0f);
  EXPECT_EQ(Combined("MAX", "a|b|z"), 2.0f);  // TorchEasyRec lower-cases the combiner
  EXPECT_EQ(Combined("count", "a|b|z"), 2.0f);
  // nothing found: default_value ("0", or as set)
  EXPECT_EQ(Combined("sum", "z"), 0.0f);
  auto fc = Lookup();
  fc.mutable_lookup_feature()->set_default_value("-1");
  const FeatureTransform d(fc, Fg());
  EXPECT_EQ(Dense(d, {Cell::String(kMap), Cell::Null()}), std::vector<float>{-1.0f});
  // a list map and an integer key; a list of keys
  const Cell items[] = {Cell::String("7:0.5"), Cell::String("8:0.25")};
  EXPECT_EQ(Dense(t, {Cell::List(items, 2), Cell::Int(8)}), std::vector<float>{0.25f});
  const Cell keys[] = {Cell::Int(7), Cell::Int(8)};
  EXPECT_EQ(Dense(t, {Cell::List(items, 2), Cell::List(keys, 2)}), std::vector<float>{0.75f});
  // a found text value in a numeric lookup is an error naming the feature and the value
  const std::string error = input_test::ErrorOf([&] {
    Dense(t, {Cell::String(kMap), Cell::String("c")});
  });
  EXPECT_NE(error.find("feature 'kv': found value 'x' is not a number"), std::string::npos)
      << error;
  fc = Lookup();
  fc.mutable_lookup_feature()->set_combiner("median");
  EXPECT_NE(
      input_test::ErrorOf([&] { (void)FeatureTransform(fc, Fg()); }).find("combiner \"median\""),
      std::string::npos);
}

TEST(LookupTransform, DiscreteIdsWithNeedKey) {
  auto fc = Lookup();
  auto* l = fc.mutable_lookup_feature();
  l->set_hash_bucket_size(100);
  l->set_embedding_dim(4);
  l->set_need_discrete(true);
  const FeatureTransform t(fc, Fg());
  EXPECT_TRUE(t.Sparse());
  EXPECT_EQ(t.TableSize(), 100);
  EXPECT_EQ(Ids(t, {Cell::String(kMap), Cell::String("c|a")}), (V{H("x", 100), H("1", 100)}));
  // nothing found: the default_value "0" is the value
  EXPECT_EQ(Ids(t, {Cell::String(kMap), Cell::String("z")}), (V{H("0", 100)}));
  l->set_default_value("");
  EXPECT_TRUE(Ids(FeatureTransform(fc, Fg()), {Cell::String(kMap), Cell::String("z")}).empty());
  l->set_need_key(true);
  const FeatureTransform keyed(fc, Fg());
  EXPECT_EQ(Ids(keyed, {Cell::String(kMap), Cell::String("c|a")}),
            (V{H("c_x", 100), H("a_1", 100)}));
  l->set_value_dim(1);  // the first found value only
  EXPECT_EQ(Ids(FeatureTransform(fc, Fg()), {Cell::String(kMap), Cell::String("c|a")}),
            (V{H("c_x", 100)}));
}

TEST(LookupTransform, NumBucketsAndVocabularies) {
  auto fc = Lookup();
  auto* l = fc.mutable_lookup_feature();
  l->set_num_buckets(5);
  l->set_embedding_dim(4);
  const FeatureTransform n(fc, Fg());
  EXPECT_EQ(n.TableSize(), 5);
  EXPECT_EQ(Ids(n, {Cell::String(kMap), Cell::String("b|a")}), (V{2, 1}));
  EXPECT_EQ(Ids(n, {Cell::String(kMap), Cell::String("z")}), (V{0}));  // default_value "0"
  EXPECT_NE(input_test::ErrorOf([&] {
              Ids(n, {Cell::String("a:9"), Cell::String("a")});
            }).find("id 9 is outside [0, num_buckets=5)"),
            std::string::npos);
  l->clear_num_buckets();
  l->add_vocab_list("1");
  l->add_vocab_list("2");
  const FeatureTransform v(fc, Fg());  // ids: default_value 0, unknown 1, "1" 2, "2" 3
  EXPECT_EQ(v.TableSize(), 4);
  EXPECT_EQ(Ids(v, {Cell::String(kMap), Cell::String("b|a|c|z")}), (V{3, 2, 1}));
  EXPECT_EQ(Ids(v, {Cell::String(kMap), Cell::String("z")}), (V{0}));
  l->clear_vocab_list();
  auto* e = l->add_vocab_dict();
  e->set_key("x");
  e->set_value(7);
  const FeatureTransform d(fc, Fg());  // rows: the largest id + 1
  EXPECT_EQ(d.TableSize(), 8);
  EXPECT_EQ(Ids(d, {Cell::String(kMap), Cell::String("c|a|z")}), (V{7, 1}));
  EXPECT_EQ(Ids(d, {Cell::String(kMap), Cell::String("z")}), (V{0}));
}

TEST(LookupTransform, BoundariesNormalizerAndValueDim) {
  auto fc = Lookup();
  auto* l = fc.mutable_lookup_feature();
  l->set_normalizer("method=minmax,min=0,max=10");
  const FeatureTransform norm(fc, Fg());
  EXPECT_EQ(Dense(norm, {Cell::String(kMap), Cell::String("a|b")}), std::vector<float>{0.3f});
  l->add_boundaries(0.2f);
  l->add_boundaries(0.5f);
  l->set_embedding_dim(4);
  const FeatureTransform b(fc, Fg());  // sum 3 -> 0.3 -> bucket 1 of [0.2, 0.5)
  EXPECT_EQ(b.TableSize(), 3);
  EXPECT_EQ(Ids(b, {Cell::String(kMap), Cell::String("a|b")}), (V{1}));
  EXPECT_EQ(Ids(b, {Cell::String(kMap), Cell::String("z")}), (V{0}));  // default 0 -> 0
  // value_dim 3: the first found value split on value_separator
  auto vd = Lookup();
  vd.mutable_lookup_feature()->set_value_dim(3);
  vd.mutable_lookup_feature()->set_value_separator(";");
  const FeatureTransform three(vd, Fg());
  EXPECT_EQ(three.DenseDim(), 3);
  const std::string map = "u:1;2;3\x1dv:4;5;6";
  EXPECT_EQ(Dense(three, {Cell::String(map), Cell::String("v|u")}),
            (std::vector<float>{4.0f, 5.0f, 6.0f}));
  EXPECT_EQ(Dense(three, {Cell::String(map), Cell::String("z")}),
            (std::vector<float>{0.0f, 0.0f, 0.0f}));
  EXPECT_NE(input_test::ErrorOf([&] {
              Dense(three, {Cell::String("u:1;2"), Cell::String("u")});
            }).find("holds 2 numbers separated by ';' but value_dim=3"),
            std::string::npos);
  // FG_NONE: the column named feature_name holds the generated numbers
  const FeatureTransform encoded(vd, protos::DataConfig());
  EXPECT_FALSE(encoded.MultiInput());
  EXPECT_EQ(encoded.DenseDim(), 3);
}

TEST(MatchTransform, HitAndWildcards) {
  const std::string nested = "c1^b1:0.5,b2:2|c2^b1:4";
  const FeatureTransform hit(Match("item:cate", "item:brand"), Fg());
  EXPECT_EQ(hit.Inputs(), 3u);
  EXPECT_EQ(Dense(hit, {Cell::String(nested), Cell::String("c1"), Cell::String("b2")}),
            std::vector<float>{2.0f});
  EXPECT_EQ(Dense(hit, {Cell::String(nested), Cell::String("c2"), Cell::String("b2")}),
            std::vector<float>{0.0f});  // not found: default_value
  // pkey ALL: the skey under every primary key (one here)
  const FeatureTransform all_p(Match("ALL", "item:brand"), Fg());
  EXPECT_EQ(all_p.Inputs(), 2u);
  EXPECT_EQ(Dense(all_p, {Cell::String(nested), Cell::String("b2")}), std::vector<float>{2.0f});
  // two matches in a numeric match_feature: an error naming the count
  EXPECT_NE(input_test::ErrorOf([&] {
              Dense(all_p, {Cell::String(nested), Cell::String("b1")});
            }).find("2 values matched"),
            std::string::npos);
  // skey ALL with ids: every secondary entry of the primary key, in map order
  auto fc = Match("item:cate", "ALL");
  fc.mutable_match_feature()->set_hash_bucket_size(50);
  fc.mutable_match_feature()->set_embedding_dim(4);
  const FeatureTransform all_s(fc, Fg());
  EXPECT_EQ(Ids(all_s, {Cell::String(nested), Cell::String("c1")}), (V{H("0.5", 50), H("2", 50)}));
  // separator: multi-value pkey text
  EXPECT_EQ(Ids(all_s, {Cell::String(nested), Cell::String("c2\x1d"
                                                           "c1")}),
            (V{H("4", 50), H("0.5", 50), H("2", 50)}));
}

TEST(MatchTransform, DiscreteIdsWithShownKeys) {
  const std::string nested = "50006842^16788816:0.1,30068:19|ALL^30068:20";
  auto fc = Match("item:cate", "item:brand");
  auto* m = fc.mutable_match_feature();
  m->set_hash_bucket_size(1000);
  m->set_embedding_dim(4);
  m->set_need_discrete(true);
  m->set_show_pkey(true);
  m->set_show_skey(true);
  const FeatureTransform t(fc, Fg());
  EXPECT_EQ(Ids(t, {Cell::String(nested), Cell::Int(50006842), Cell::Int(30068)}),
            (V{H("50006842_30068_19", 1000)}));
  m->set_show_pkey(false);
  EXPECT_EQ(Ids(FeatureTransform(fc, Fg()),
                {Cell::String(nested), Cell::String("ALL"), Cell::Int(30068)}),
            (V{H("30068_20", 1000)}));
  m->set_show_skey(false);
  m->set_value_dim(1);
  m->set_skey("ALL");
  EXPECT_EQ(Ids(FeatureTransform(fc, Fg()), {Cell::String(nested), Cell::String("50006842")}),
            (V{H("0.1", 1000)}));
  // vocabulary and num_buckets
  auto v = Match("item:cate", "item:brand");
  v.mutable_match_feature()->add_vocab_list("19");
  v.mutable_match_feature()->set_embedding_dim(4);
  const FeatureTransform vocab(v, Fg());
  EXPECT_EQ(Ids(vocab, {Cell::String(nested), Cell::Int(50006842), Cell::Int(30068)}), (V{2}));
  EXPECT_EQ(Ids(vocab, {Cell::String(nested), Cell::Int(50006842), Cell::Int(1)}), (V{0}));
  v.mutable_match_feature()->clear_vocab_list();
  v.mutable_match_feature()->set_num_buckets(30);
  EXPECT_EQ(
      Ids(FeatureTransform(v, Fg()), {Cell::String(nested), Cell::Int(50006842), Cell::Int(30068)}),
      (V{19}));
}

TEST(MatchTransform, NumericMatchBoundariesAndDefault) {
  auto fc = Match("item:cate", "item:brand");
  auto* m = fc.mutable_match_feature();
  m->set_default_value("-1");
  m->set_normalizer("method=minmax,min=0,max=10");
  const FeatureTransform d(fc, Fg());
  EXPECT_EQ(Dense(d, {Cell::String("c^b:5"), Cell::String("c"), Cell::String("b")}),
            std::vector<float>{0.5f});
  EXPECT_EQ(Dense(d, {Cell::Null(), Cell::String("c"), Cell::String("b")}),
            std::vector<float>{-0.1f});
  m->add_boundaries(0.0f);
  m->add_boundaries(0.4f);
  m->set_embedding_dim(4);
  const FeatureTransform b(fc, Fg());
  EXPECT_EQ(b.TableSize(), 3);
  EXPECT_EQ(Ids(b, {Cell::String("c^b:5"), Cell::String("c"), Cell::String("b")}), (V{2}));
  EXPECT_EQ(Ids(b, {Cell::String("c^b:5"), Cell::String("x"), Cell::String("b")}), (V{0}));
}

TEST(LookupTransform, DatasetReadsMapAndKey) {
  input_test::TempDir dir;
  input_test::WriteText(dir / "a.csv",
                        "label,kv,k,m,cate\n1,a:1\x1d"
                        "b:4,a|b,c^b:3,c\n0,a:1,z,,c\n");
  PipelineConfig c = input_test::FgConfig(protos::CsvDataset);
  *c.add_feature_configs() = Lookup();
  auto lookup_ids = Lookup();
  lookup_ids.mutable_lookup_feature()->set_feature_name("kv_ids");
  lookup_ids.mutable_lookup_feature()->set_hash_bucket_size(10);
  lookup_ids.mutable_lookup_feature()->set_embedding_dim(4);
  *c.add_feature_configs() = lookup_ids;
  auto match = Match("item:cate", "ALL");
  match.mutable_match_feature()->set_nested_map("user:m");
  *c.add_feature_configs() = match;
  Dataset ds(c, dir / "a.csv", 0, 1, 2);
  const auto b = ds.Next();
  ASSERT_TRUE(b);
  EXPECT_EQ(input_test::Floats(b->dense), (std::vector<float>{5.0f, 3.0f, 0.0f, 0.0f}));
  EXPECT_EQ(Longs(b->sparse.Lengths()), (V{2, 1}));
  EXPECT_EQ(Longs(b->sparse.Values()), (V{H("1", 10), H("4", 10), H("0", 10)}));
}

}  // namespace
}  // namespace tzrec::input
