// Attention sequence encoders in the model (issue 14, items 1-2): a multi_tower DEEP group's
// din_encoder / simple_attention over sequence group "hist" {item (query), clicks (sequence)}.
// The unpooled sequence comes from the EmbeddingCollection of the clicks' table (sparse_arch.hpp
// SequenceInputs: "clicks__seq" padded, "clicks__seqlen" the lengths). Checked
// against TorchEasyRec's DINEncoder / SimpleAttention composed from libtorch ops over the padded
// table rows (forward and the gradients of the table rows and of every dense parameter).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sparse_arch.hpp"
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

// Table item_emb (10 x 3, InitTableSlice seed 11).
at::Tensor ItemTable() {
  return InitTableSlice(EmbeddingBagConfig{"item_emb", 10, 3, {"item"}}, 11, 0, 10, 0, 3, at::kCPU);
}

// The dense model's input (sparse_arch.hpp SequenceInputs): the EBC's tables pooled by a core
// EBC (seed 11) and the EC's features (table item_emb) looked up in `w`, so that the gradients of
// the EC's rows reach w.
KeyedTensor ModelInput(const PipelineConfig& c, const KeyedJaggedTensor& kjt, const at::Tensor& w) {
  const SequenceSpec spec = MakeSequenceSpec(c);
  std::vector<JaggedEmbedding> jagged;
  for (const auto& key : spec.keys) {
    const JaggedTensor jt = kjt[key];
    jagged.push_back(JaggedEmbedding{w.index_select(0, jt.values), jt.lengths});
  }
  const auto tables = EmbeddingTables(c);
  KeyedTensor pooled({}, {}, at::zeros({kjt.Stride(), 0}));
  if (!tables.empty()) {
    EmbeddingBagCollection ebc(tables, EmbeddingOptimizerConfig{}, 11, at::kCPU);
    at::NoGradGuard no_grad;
    pooled = ebc.Forward(kjt);
  }
  return SequenceInputs(spec, pooled, jagged);
}

TEST(Model, AttentionSequenceKeysAndTables) {
  const PipelineConfig c = AttnConfig(true);
  EXPECT_EQ(AttentionSequenceFeatures(c), (std::vector<std::string>{"clicks"}));
  // item_emb (read by the sequence) is the EC's, with the query item sharing it.
  EXPECT_TRUE(EmbeddingTables(c).empty());
  EXPECT_EQ(SequenceTableNames(c), (std::vector<std::string>{"item_emb"}));
  const auto ec = SequenceTables(c);
  ASSERT_EQ(ec.size(), 1U);
  EXPECT_EQ(ec[0].name, "item_emb");
  EXPECT_EQ(ec[0].feature_names, (std::vector<std::string>{"item", "clicks"}));
  const SequenceSpec spec = MakeSequenceSpec(c);
  EXPECT_EQ(spec.keys, (std::vector<std::string>{"item", "clicks"}));
  EXPECT_EQ(spec.length, (std::vector<std::int64_t>{0, 4}));
  const auto specs = SparseTableSpecs(c);
  ASSERT_EQ(specs.size(), 1U);
  EXPECT_EQ(specs[0].constraints.sharding_types, EcShardingTypes());
  EXPECT_EQ(AddDerivedFeatures(c, Batch3()).Keys(), Batch3().Keys());
  // A narrower item has its own table, in the EBC.
  const auto own = EmbeddingTables(AttnConfig(true, 2));
  ASSERT_EQ(own.size(), 1U);
  EXPECT_EQ(own[0].name, "item_small");
  EXPECT_EQ(SequenceTables(AttnConfig(true, 2))[0].feature_names,
            (std::vector<std::string>{"clicks"}));
  // A pooling-only config keeps every table in the EBC.
  PipelineConfig pool = c;
  auto* enc = pool.mutable_model_config()->mutable_feature_groups(0)->mutable_sequence_encoders(0);
  enc->mutable_pooling_encoder()->set_input("hist");
  EXPECT_TRUE(AttentionSequenceFeatures(pool).empty());
  EXPECT_TRUE(SequenceTables(pool).empty());
  ASSERT_EQ(EmbeddingTables(pool).size(), 1U);
  EXPECT_EQ(EmbeddingTables(pool)[0].feature_names, (std::vector<std::string>{"item", "clicks"}));
  // The EC reads no weights: a weighted feature may not share its table.
  PipelineConfig weighted = c;
  weighted.mutable_feature_configs(0)->mutable_id_feature()->set_weighted(true);
  EXPECT_THROW(SequenceTables(weighted), ConfigError);
  // A table constrained to table_row_wise only cannot be an EC table.
  PipelineConfig twrw = c;
  twrw.mutable_feature_configs(0)
      ->mutable_id_feature()
      ->mutable_embedding_constraints()
      ->add_sharding_types("table_row_wise");
  EXPECT_THROW(SparseTableSpecs(twrw), ConfigError);
}

TEST(Model, SequenceInputsPadAndPool) {
  const PipelineConfig c = AttnConfig(true);
  const at::Tensor w = ItemTable();
  const KeyedTensor kt = ModelInput(c, Batch3(), w);
  const at::Tensor zero = at::zeros({3});
  EXPECT_TRUE(at::equal(kt["clicks__seqlen"], at::tensor({3.0F, 0.0F, 1.0F}).unsqueeze(1)));
  const at::Tensor want = at::stack(
      {at::cat({w[4], w[5], w[6], zero}), at::zeros({12}), at::cat({w[7], zero, zero, zero})});
  EXPECT_TRUE(at::allclose(kt["clicks__seq"], want));
  EXPECT_TRUE(at::allclose(kt["item"], at::stack({w[1], w[2], w[3]})));
  // Pooled as the table pools (sum: the sequence's clicks pooled too, as the EBC would).
  EXPECT_TRUE(at::allclose(kt["clicks"], at::stack({w[4] + w[5] + w[6], zero, w[7]})));
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

// TorchEasyRec's MultiWindowDINEncoder over query [B, Dq] and the padded sequence s [B, T, D]
// (attn_mlp: one ReLU layer): the windows summed one by one over the masked weighted items.
at::Tensor MultiWindowReference(const std::map<std::string, at::Tensor>& p, const at::Tensor& q,
                                const at::Tensor& s, const at::Tensor& lengths,
                                const std::vector<std::int64_t>& windows) {
  const std::string e = "embedding_group.seq_encoders.all.0.";
  const std::int64_t rows = s.size(0), len = s.size(1), dim = s.size(2);
  const at::Tensor qp = at::constant_pad_nd(q, {0, dim - q.size(1)});
  const at::Tensor qq = qp.unsqueeze(1).expand({rows, len, dim});
  const at::Tensor x = at::cat({s, qq * s, qq}, -1);
  const at::Tensor h = at::relu(at::linear(x, p.at(e + "mlp.mlp.0.perceptron.0.weight"),
                                           p.at(e + "mlp.mlp.0.perceptron.0.bias")));
  const at::Tensor a = at::linear(h, p.at(e + "linear.weight"), p.at(e + "linear.bias"));
  const at::Tensor act = at::relu(a) - p.at(e + "active.weight") * at::relu(-a);  // PReLU
  const at::Tensor mask = at::arange(len, at::kLong).unsqueeze(0) < lengths.unsqueeze(1);
  const at::Tensor v = act * mask.unsqueeze(2) * s;
  std::vector<at::Tensor> parts;
  std::int64_t start = 0;
  for (const std::int64_t w : windows) {
    const std::int64_t n = std::max<std::int64_t>(std::min(start + w, len) - start, 0);
    const at::Tensor sum = n > 0 ? v.narrow(1, start, n).sum(1) : at::zeros({rows, dim});
    const at::Tensor count = at::clamp_min(at::clamp_max(lengths - start, w), 1);
    parts.push_back(sum / count.unsqueeze(1));
    start += w;
  }
  parts.push_back(qp);
  return at::cat(parts, 1);
}

using EncoderReference =
    std::function<at::Tensor(const std::map<std::string, at::Tensor>&, const at::Tensor&,
                             const at::Tensor&, const at::Tensor&)>;

void CheckModel(const PipelineConfig& c, const std::string& label, std::int64_t item_dim,
                const EncoderReference& reference) {
  SCOPED_TRACE(label + " item_dim " + std::to_string(item_dim));
  const at::Tensor w = ItemTable().requires_grad_(true);
  const KeyedTensor kt = ModelInput(c, Batch3(), w);
  const at::Tensor zero = at::zeros({3});
  auto model = DenseModel::Create(c, 7, at::kCPU);
  std::map<std::string, at::Tensor> p;
  for (const auto& param : model->Parameters()) p[param.name] = param.tensor;
  const at::Tensor got = model->Forward(kt, at::zeros({3, 0}), true);
  // The reference: [item, encoder(item, padded clicks)] → tower → final → output.
  const at::Tensor q = item_dim == 3 ? at::stack({w[1], w[2], w[3]}) : kt["item"].detach();
  const at::Tensor s = at::stack({at::stack({w[4], w[5], w[6]}), at::stack({zero, zero, zero}),
                                  at::stack({w[7], zero, zero})});
  const at::Tensor x = at::cat({q, reference(p, q, s, L({3, 0, 1}))}, 1);
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
}

void CheckModel(bool din, std::int64_t item_dim) {
  CheckModel(
      AttnConfig(din, item_dim), din ? "din_encoder" : "simple_attention", item_dim,
      [din](const std::map<std::string, at::Tensor>& p, const at::Tensor& q, const at::Tensor& s,
            const at::Tensor& lengths) { return Reference(din, p, q, s, lengths); });
}

TEST(Model, AttentionEncodersMatchComposedTorch) {
  CheckModel(true, 3);
  CheckModel(true, 2);  // DIN zero-pads a narrower query
  CheckModel(false, 3);
}

// multi_window_din_encoder in place of the din_encoder; the batch's padded sequence has L = 3
// items (lengths 3, 0, 1): windows [2, 3] pad it to 5, windows [1, 1] cut it to 2.
TEST(Model, MultiWindowDinEncoderMatchesComposedTorch) {
  for (const std::vector<std::int64_t>& windows :
       {std::vector<std::int64_t>{2, 3}, std::vector<std::int64_t>{1, 1}}) {
    for (const std::int64_t item_dim : {3, 2}) {
      PipelineConfig c = AttnConfig(true, item_dim);
      auto* enc = c.mutable_model_config()->mutable_feature_groups(0)->mutable_sequence_encoders(0);
      auto* mw = enc->mutable_multi_window_din_encoder();  // clears the din_encoder (a oneof)
      mw->set_input("hist");
      mw->mutable_attn_mlp()->add_hidden_units(4);
      for (const std::int64_t w : windows) mw->add_windows_len(static_cast<std::uint32_t>(w));
      EXPECT_EQ(AttentionSequenceFeatures(c), (std::vector<std::string>{"clicks"}));
      CheckModel(c, "multi_window_din_encoder " + std::to_string(windows[0]), item_dim,
                 [&windows](const std::map<std::string, at::Tensor>& p, const at::Tensor& q,
                            const at::Tensor& s, const at::Tensor& lengths) {
                   return MultiWindowReference(p, q, s, lengths, windows);
                 });
    }
  }
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
  ASSERT_EQ(EmbeddingTables(c).size(), 1U);  // user_emb; item_emb is the EC's
  const KeyedJaggedTensor kjt({"item", "clicks", "user"}, L({1, 2, 3, 4, 5, 6, 7, 0, 3, 4}),
                              L({1, 1, 1, 3, 0, 1, 1, 1, 1}));
  at::NoGradGuard no_grad;
  const at::Tensor w = ItemTable();
  const KeyedTensor kt = ModelInput(c, kjt, w);
  auto dense = DenseModel::Create(c, 7, at::kCPU);
  std::map<std::string, at::Tensor> p;
  for (const auto& param : dense->Parameters()) p[param.name] = param.tensor.detach();
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
