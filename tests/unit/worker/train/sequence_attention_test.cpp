// Attention sequence encoders in the model (issue 14, items 1-2): a multi_tower DEEP group's
// din_encoder / simple_attention over sequence group "hist" {item (query), clicks (sequence)}.
// The unpooled sequence comes from the per-item keys "clicks__seq<t>" in the clicks' own table
// (AddDerivedFeatures) and the lengths from "clicks__seqlen" (AddSequenceLengths). Checked
// against TorchEasyRec's DINEncoder / SimpleAttention composed from libtorch ops over the padded
// table rows (forward and the gradients of the table rows and of every dense parameter).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

// tower and final: one linear layer each (no activation). item (id, dim `item_dim`, table item_emb
// when 3 wide), clicks (sequence_length 4, dim 3, table item_emb), group "all" = item + the encoder
// over "hist" {item, clicks}.
PipelineConfig AttnConfig(bool din, std::int64_t item_dim = 3) {
  PipelineConfig c;
  auto* item = c.add_feature_configs()->mutable_id_feature();
  item->set_feature_name("item");
  item->set_num_buckets(10);
  item->set_embedding_dim(item_dim);
  item->set_embedding_name(item_dim == 3 ? "item_emb" : "item_small");
  auto* clicks = c.add_feature_configs()->mutable_sequence_id_feature();
  clicks->set_feature_name("clicks");
  clicks->set_sequence_length(4);
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
  auto* enc = g->add_sequence_encoders();
  if (din) {
    enc->mutable_din_encoder()->set_input("hist");
    enc->mutable_din_encoder()->mutable_attn_mlp()->add_hidden_units(4);
  } else {
    enc->mutable_simple_attention()->set_input("hist");
  }
  auto* mt = c.mutable_model_config()->mutable_multi_tower();
  auto* tower = mt->add_towers();
  tower->set_input("all");
  tower->mutable_mlp()->add_hidden_units(4);
  tower->mutable_mlp()->set_activation("");  // linear: no dead ReLU hides a gradient
  mt->mutable_final()->add_hidden_units(2);
  mt->mutable_final()->set_activation("");
  return c;
}

at::Tensor L(const std::vector<std::int64_t>& v) {
  return at::tensor(v, at::kLong);
}

// Batch of 3: item ids 1, 2, 3; clicks [4, 5, 6], [], [7] (lengths 3, 0, 1).
KeyedJaggedTensor Batch3() {
  return KeyedJaggedTensor({"item", "clicks"}, L({1, 2, 3, 4, 5, 6, 7}), L({1, 1, 1, 3, 0, 1}));
}

TEST(Model, AttentionSequenceKeysAndTables) {
  const PipelineConfig c = AttnConfig(true);
  EXPECT_EQ(AttentionSequenceFeatures(c), (std::vector<std::string>{"clicks"}));
  const auto tables = EmbeddingTables(c);
  ASSERT_EQ(tables.size(), 1U);
  EXPECT_EQ(tables[0].feature_names,
            (std::vector<std::string>{"item", "clicks", "clicks__seq0", "clicks__seq1",
                                      "clicks__seq2", "clicks__seq3"}));
  const KeyedJaggedTensor d = AddDerivedFeatures(c, Batch3());
  EXPECT_TRUE(at::equal(d["clicks__seq0"].values, L({4, 7})));
  EXPECT_TRUE(at::equal(d["clicks__seq0"].lengths, L({1, 0, 1})));
  EXPECT_TRUE(at::equal(d["clicks__seq2"].values, L({6})));
  EXPECT_TRUE(at::equal(d["clicks__seq2"].lengths, L({1, 0, 0})));
  EXPECT_EQ(d["clicks__seq3"].values.numel(), 0);
  // A pooling-only config keeps its keys and tables.
  PipelineConfig pool = c;
  auto* enc = pool.mutable_model_config()->mutable_feature_groups(0)->mutable_sequence_encoders(0);
  enc->mutable_pooling_encoder()->set_input("hist");
  EXPECT_TRUE(AttentionSequenceFeatures(pool).empty());
  EXPECT_EQ(AddDerivedFeatures(pool, Batch3()).Keys(), Batch3().Keys());
}

// TorchEasyRec's encoders over query [B, Dq] and the padded sequence s [B, T, D].
at::Tensor Reference(bool din, const std::map<std::string, at::Tensor>& p, const at::Tensor& q,
                     const at::Tensor& s, const at::Tensor& lengths,
                     const std::string& e = "embedding_group.seq_encoders.all.0.") {
  const std::int64_t rows = s.size(0), len = s.size(1), dim = s.size(2);
  at::Tensor a;
  if (din) {
    const at::Tensor qq =
        at::constant_pad_nd(q, {0, dim - q.size(1)}).unsqueeze(1).expand({rows, len, dim});
    const at::Tensor x = at::cat({qq, s, qq - s, qq * s}, -1);
    const at::Tensor h = at::relu(at::linear(x, p.at(e + "mlp.mlp.0.perceptron.0.weight"),
                                             p.at(e + "mlp.mlp.0.perceptron.0.bias")));
    a = at::linear(h, p.at(e + "linear.weight"), p.at(e + "linear.bias")).squeeze(-1);
  } else {
    a = at::matmul(s, q.unsqueeze(2)).squeeze(2);
  }
  const at::Tensor mask = at::arange(len, at::kLong).unsqueeze(0) < lengths.unsqueeze(1);
  const at::Tensor scores = at::softmax(a.masked_fill(mask.logical_not(), -2147483647.0), -1);
  return at::matmul(scores.unsqueeze(1), s).squeeze(1);
}

void CheckModel(bool din, std::int64_t item_dim) {
  SCOPED_TRACE(std::string(din ? "din_encoder" : "simple_attention") + " item_dim " +
               std::to_string(item_dim));
  const PipelineConfig c = AttnConfig(din, item_dim);
  const auto tables = EmbeddingTables(c);
  EmbeddingBagCollection ebc(tables, EmbeddingOptimizerConfig{}, 11, at::kCPU);
  const KeyedJaggedTensor kjt = Batch3();
  KeyedTensor pooled;
  {
    at::NoGradGuard no_grad;
    pooled = AddSequenceLengths(c, ebc.Forward(AddDerivedFeatures(c, kjt)), kjt);
  }
  EXPECT_TRUE(at::equal(pooled["clicks__seqlen"], at::tensor({3.0F, 0.0F, 1.0F}).unsqueeze(1)));
  const at::Tensor w_item = ebc.Weight(item_dim == 3 ? "item_emb" : "item_small").clone();
  const at::Tensor w = ebc.Weight("item_emb").clone().requires_grad_(true);
  // The pooled per-item keys are the table rows (zeros past the length).
  const at::Tensor zero = at::zeros({3});
  EXPECT_TRUE(at::allclose(pooled["clicks__seq0"], at::stack({w[4], zero, w[7]}).detach()));
  EXPECT_TRUE(at::allclose(pooled["clicks__seq2"], at::stack({w[6], zero, zero}).detach()));
  auto model = DenseModel::Create(c, 7, at::kCPU);
  std::map<std::string, at::Tensor> p;
  for (const auto& param : model->Parameters()) p[param.name] = param.tensor;
  // The model over the EBC's columns rebuilt from w (so that w gets the model's gradient).
  std::vector<std::string> keys = pooled.Keys();
  std::vector<at::Tensor> cols;
  const std::map<std::string, at::Tensor> rows = {
      {"item", item_dim == 3 ? at::stack({w[1], w[2], w[3]}) : pooled["item"]},
      {"clicks__seq0", at::stack({w[4], zero, w[7]})},
      {"clicks__seq1", at::stack({w[5], zero, zero})},
      {"clicks__seq2", at::stack({w[6], zero, zero})}};
  for (const auto& k : keys) cols.push_back(rows.count(k) ? rows.at(k) : pooled[k]);
  const KeyedTensor kt(keys, pooled.LengthPerKey(), at::cat(cols, 1));
  EXPECT_TRUE(at::allclose(kt.Values(), pooled.Values()));
  const at::Tensor got = model->Forward(kt, at::zeros({3, 0}), true);
  // The reference: [item, encoder(item, padded clicks)] → tower → final → output.
  const at::Tensor q = rows.at("item");
  const at::Tensor s = at::stack({at::stack({w[4], w[5], w[6]}), at::stack({zero, zero, zero}),
                                  at::stack({w[7], zero, zero})});
  const at::Tensor x = at::cat({q, Reference(din, p, q, s, L({3, 0, 1}))}, 1);
  const at::Tensor t = at::linear(x, p.at("towers.all.mlp.0.perceptron.0.weight"),
                                  p.at("towers.all.mlp.0.perceptron.0.bias"));
  const at::Tensor h = at::linear(t, p.at("final_mlp.mlp.0.perceptron.0.weight"),
                                  p.at("final_mlp.mlp.0.perceptron.0.bias"));
  const at::Tensor want = at::linear(h, p.at("output.weight"), p.at("output.bias")).view({-1});
  ASSERT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << got << want;
  std::vector<at::Tensor> inputs = {w};
  for (const auto& param : model->Parameters()) inputs.push_back(param.tensor);
  auto grads = [&](const at::Tensor& logits) {
    for (auto& in : inputs) in.mutable_grad() = at::Tensor();
    (logits * at::arange(1, 4)).sum().backward();
    std::vector<at::Tensor> out;
    for (const auto& in : inputs)
      out.push_back(in.grad().defined() ? in.grad().clone() : in.grad());
    return out;
  };
  const std::vector<at::Tensor> g_got = grads(got);
  const std::vector<at::Tensor> g_want = grads(want);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(i == 0 ? "table rows" : model->Parameters()[i - 1].name);
    ASSERT_TRUE(g_got[i].defined() && g_want[i].defined());
    EXPECT_TRUE(at::allclose(g_got[i], g_want[i], 1e-5, 1e-6)) << g_got[i] << g_want[i];
  }
  EXPECT_GT(g_got[0].abs().sum().item<float>(), 0.0F);
  (void)w_item;
}

TEST(Model, AttentionEncodersMatchComposedTorch) {
  CheckModel(true, 3);
  CheckModel(true, 2);  // DIN zero-pads a narrower query
  CheckModel(false, 3);
}

// multi_tower_din: tower "user" (DEEP: user) and a DIN tower over SEQUENCE group "seq"
// {item, clicks}; final over [tower(user), din(item, clicks)] (tzrec/models/multi_tower_din.py).
TEST(Model, MultiTowerDinMatchesComposedTorch) {
  PipelineConfig c = AttnConfig(true);
  auto* user = c.add_feature_configs()->mutable_id_feature();
  user->set_feature_name("user");
  user->set_num_buckets(5);
  user->set_embedding_dim(2);
  auto* model = c.mutable_model_config();
  model->clear_feature_groups();
  auto* gu = model->add_feature_groups();
  gu->set_group_name("user");
  gu->add_feature_names("user");
  auto* gs = model->add_feature_groups();
  gs->set_group_name("seq");
  gs->set_group_type(protos::SEQUENCE);
  gs->add_feature_names("item");
  gs->add_feature_names("clicks");
  auto* mt = model->mutable_multi_tower_din();
  auto* tower = mt->add_towers();
  tower->set_input("user");
  tower->mutable_mlp()->add_hidden_units(4);
  tower->mutable_mlp()->set_activation("");
  auto* din = mt->add_din_towers();
  din->set_input("seq");
  din->mutable_attn_mlp()->add_hidden_units(4);
  mt->mutable_final()->add_hidden_units(2);
  mt->mutable_final()->set_activation("");
  EXPECT_EQ(AttentionSequenceFeatures(c), (std::vector<std::string>{"clicks"}));
  const auto tables = EmbeddingTables(c);
  EmbeddingBagCollection ebc(tables, EmbeddingOptimizerConfig{}, 11, at::kCPU);
  const KeyedJaggedTensor kjt({"item", "clicks", "user"}, L({1, 2, 3, 4, 5, 6, 7, 0, 3, 4}),
                              L({1, 1, 1, 3, 0, 1, 1, 1, 1}));
  at::NoGradGuard no_grad;
  const KeyedTensor kt = AddSequenceLengths(c, ebc.Forward(AddDerivedFeatures(c, kjt)), kjt);
  auto dense = DenseModel::Create(c, 7, at::kCPU);
  std::map<std::string, at::Tensor> p;
  for (const auto& param : dense->Parameters()) p[param.name] = param.tensor.detach();
  const at::Tensor w = ebc.Weight("item_emb");
  const at::Tensor zero = at::zeros({3});
  const at::Tensor q = at::stack({w[1], w[2], w[3]});
  const at::Tensor s = at::stack({at::stack({w[4], w[5], w[6]}), at::stack({zero, zero, zero}),
                                  at::stack({w[7], zero, zero})});
  const at::Tensor t = at::linear(kt["user"], p.at("towers.user.mlp.0.perceptron.0.weight"),
                                  p.at("towers.user.mlp.0.perceptron.0.bias"));
  const at::Tensor x = at::cat({t, Reference(true, p, q, s, L({3, 0, 1}), "din_towers.0.")}, 1);
  const at::Tensor h = at::linear(x, p.at("final_mlp.mlp.0.perceptron.0.weight"),
                                  p.at("final_mlp.mlp.0.perceptron.0.bias"));
  const at::Tensor want = at::linear(h, p.at("output.weight"), p.at("output.bias")).view({-1});
  EXPECT_TRUE(at::allclose(dense->Forward(kt, at::zeros({3, 0}), false), want, 1e-5, 1e-6));
}

TEST(Model, AttentionEncoderRefusedOutsideMultiTower) {
  PipelineConfig c = AttnConfig(true);
  auto* mt = c.mutable_model_config()->mutable_dcn_v1();
  mt->mutable_cross()->set_cross_num(1);
  mt->mutable_deep()->add_hidden_units(4);
  mt->mutable_final()->add_hidden_units(2);
  try {
    DenseModel::Create(c, 5, at::kCPU);
    FAIL() << "dcn_v1 with din_encoder was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("attention sequence encoders are read by multi_tower only"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tzrec
