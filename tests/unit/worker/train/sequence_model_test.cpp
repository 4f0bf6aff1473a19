// Pooled sequences in the models (issue 14, item 2): a DEEP group's pooling_encoder over a
// sequence group appends the pooled sequence features to the group (TorchEasyRec's
// EmbeddingGroup with sequence_groups / sequence_encoders). The tables pool the sequence
// features with the encoder's pooling_type; this test checks the EBC's pooled sequence against
// TorchEasyRec's PoolingEncoder (sequence_encoders.hpp) over the padded unpooled embeddings, and
// the MultiTower forward against the formula over [item, pooled clicks].
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sequence_encoders.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

// item (id, 10 rows, dim 3, table item_emb), clicks (sequence, table item_emb), group "all":
// item + pooling_encoder(pooling_type) over sequence group "hist" {item, clicks}.
PipelineConfig SeqConfig(const std::string& pooling) {
  PipelineConfig c;
  auto* item = c.add_feature_configs()->mutable_id_feature();
  item->set_feature_name("item");
  item->set_num_buckets(10);
  item->set_embedding_dim(3);
  item->set_embedding_name("item_emb");
  item->set_pooling(pooling);
  auto* clicks = c.add_feature_configs()->mutable_sequence_id_feature();
  clicks->set_feature_name("clicks");
  clicks->set_sequence_length(5);
  clicks->set_num_buckets(10);
  clicks->set_embedding_dim(3);
  clicks->set_embedding_name("item_emb");
  auto* g = c.mutable_model_config()->add_feature_groups();
  g->set_group_name("all");
  g->add_feature_names("item");
  auto* seq = g->add_sequence_groups();
  seq->set_group_name("hist");
  seq->add_feature_names("item");
  seq->add_feature_names("clicks");
  auto* enc = g->add_sequence_encoders()->mutable_pooling_encoder();
  enc->set_input("hist");
  enc->set_pooling_type(pooling);
  auto* mt = c.mutable_model_config()->mutable_multi_tower();
  auto* tower = mt->add_towers();
  tower->set_input("all");
  tower->mutable_mlp()->add_hidden_units(4);
  mt->mutable_final()->add_hidden_units(2);
  return c;
}

at::Tensor L(const std::vector<std::int64_t>& v) {
  return at::tensor(v, at::kLong);
}

TEST(Model, PoolingEncoderAppendsPooledSequences) {
  for (const std::string pooling : {"mean", "sum"}) {
    const PipelineConfig c = SeqConfig(pooling);
    const auto tables = EmbeddingTables(c);
    ASSERT_EQ(tables.size(), 1U);
    EXPECT_EQ(tables[0].name, "item_emb");
    EXPECT_EQ(tables[0].feature_names, (std::vector<std::string>{"item", "clicks"}));
    EXPECT_EQ(tables[0].pooling, pooling == "mean" ? PoolingType::kMean : PoolingType::kSum);
    EmbeddingBagCollection ebc(tables, EmbeddingOptimizerConfig{}, 11, at::kCPU);
    // Batch of 3: item ids 1, 2, 3; clicks sequences [4, 5, 6], [], [7].
    const KeyedJaggedTensor kjt({"item", "clicks"}, L({1, 2, 3, 4, 5, 6, 7}),
                                L({1, 1, 1, 3, 0, 1}));
    at::NoGradGuard no_grad;
    const KeyedTensor pooled = ebc.Forward(kjt);
    // TorchEasyRec's PoolingEncoder over the padded sequence [B, L=3, D] of the table's rows.
    const at::Tensor w = ebc.Weight("item_emb");
    at::Tensor seq = at::zeros({3, 3, 3});
    seq[0][0] = w[4];
    seq[0][1] = w[5];
    seq[0][2] = w[6];
    seq[2][0] = w[7];
    const PoolingEncoder encoder("seq_encoder", 3, pooling);
    const at::Tensor want_clicks = encoder.Forward(seq, L({3, 0, 1}));
    EXPECT_TRUE(at::allclose(pooled["clicks"], want_clicks, 1e-6, 1e-6)) << pooling;
    // MultiTower: tower "all" reads [item, pooled clicks] (dim 3 + 3).
    auto model = DenseModel::Create(c, 5, at::kCPU);
    std::map<std::string, at::Tensor> p;
    for (const auto& param : model->Parameters()) p[param.name] = param.tensor.detach();
    const at::Tensor tw = p.at("towers.all.mlp.0.perceptron.0.weight");
    EXPECT_EQ(tw.size(1), 6) << pooling;
    const at::Tensor x = at::cat({pooled["item"], want_clicks}, 1);
    const at::Tensor t = at::relu(at::linear(x, tw, p.at("towers.all.mlp.0.perceptron.0.bias")));
    const at::Tensor h = at::relu(at::linear(t, p.at("final_mlp.mlp.0.perceptron.0.weight"),
                                             p.at("final_mlp.mlp.0.perceptron.0.bias")));
    const at::Tensor want = at::linear(h, p.at("output.weight"), p.at("output.bias")).view({-1});
    EXPECT_TRUE(at::allclose(model->Forward(pooled, at::zeros({3, 0}), false), want, 1e-5, 1e-6))
        << pooling;
  }
}

// A sequence feature's embedding_constraints constrain its table (as an id feature's do).
TEST(Model, SequenceTableConstraints) {
  PipelineConfig c = SeqConfig("mean");
  auto* clicks = c.mutable_feature_configs(1)->mutable_sequence_id_feature();
  clicks->set_embedding_name("clicks_emb");
  clicks->mutable_embedding_constraints()->add_sharding_types("row_wise");
  EXPECT_EQ(TableConstraints(c, "clicks_emb").sharding_types,
            (std::vector<ShardingType>{ShardingType::kRowWise}));
  const auto tables = EmbeddingTables(c);
  ASSERT_EQ(tables.size(), 2U);
  EXPECT_EQ(tables[1].name, "clicks_emb");
  EXPECT_EQ(tables[1].feature_names, (std::vector<std::string>{"clicks"}));
}

}  // namespace
}  // namespace tzrec
