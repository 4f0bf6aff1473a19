// Tests of the models in src/worker/train/model.cpp (include/tzrec/train/model.hpp) against
// references composed from ATen ops with the models' own parameters: TorchEasyRec's DeepFM
// (tzrec/models/deepfm.py, tzrec/modules/fm.py) with and without `final` and an `fm` group, DLRM
// with only a sparse group (tzrec/models/dlrm.py), and the MLP options reaching the models
// (training flag, BatchNorm buffers).
#include "tzrec/train/model.hpp"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

void AddId(PipelineConfig& c, const std::string& name, int dim) {
  auto* f = c.add_feature_configs()->mutable_id_feature();
  f->set_feature_name(name);
  f->set_embedding_dim(dim);
  f->set_num_buckets(10);
}

void AddRaw(PipelineConfig& c, const std::string& name) {
  c.add_feature_configs()->mutable_raw_feature()->set_feature_name(name);
}

void AddGroup(PipelineConfig& c, const std::string& name, const std::vector<std::string>& features,
              protos::FeatureGroupType type = protos::DEEP) {
  auto* g = c.mutable_model_config()->add_feature_groups();
  g->set_group_name(name);
  g->set_group_type(type);
  for (const auto& f : features) g->add_feature_names(f);
}

std::map<std::string, at::Tensor> ByName(const std::vector<Parameter>& ps) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : ps) out[p.name] = p.tensor.detach();
  return out;
}

// relu(x·Wᵀ + b) of a default MLP layer "<name>.mlp.<i>.perceptron.0".
at::Tensor Layer(std::map<std::string, at::Tensor>& p, const std::string& name, int i,
                 const at::Tensor& x) {
  const std::string k = name + ".mlp." + std::to_string(i) + ".perceptron.0.";
  return at::relu(at::linear(x, p.at(k + "weight"), p.at(k + "bias")));
}

at::Tensor Fm(const at::Tensor& e) {  // [B, N, d] → [B, d]
  const at::Tensor s = e.sum(1);
  return 0.5 * (s * s - (e * e).sum(1));
}

// a, b: id features of dim 3; r: a raw feature; wide tables of dim 2.
PipelineConfig DeepFmConfig(bool with_final, bool with_fm_group) {
  PipelineConfig c;
  AddId(c, "a", 3);
  AddId(c, "b", 3);
  AddRaw(c, "r");
  AddGroup(c, "wide", {"a", "b"}, protos::WIDE);
  AddGroup(
      c, "deep",
      with_fm_group ? std::vector<std::string>{"a", "r", "b"} : std::vector<std::string>{"a", "b"});
  if (with_fm_group) AddGroup(c, "fm", {"b", "a"});
  auto* m = c.mutable_model_config()->mutable_deepfm();
  m->mutable_deep()->add_hidden_units(4);
  m->mutable_deep()->add_hidden_units(5);
  if (with_final) m->mutable_final()->add_hidden_units(2);
  m->set_wide_embedding_dim(2);
  return c;
}

struct Inputs {
  KeyedTensor sparse;
  at::Tensor dense;
  at::Tensor a, b, aw, bw;
};

Inputs MakeInputs(std::int64_t batch) {
  Inputs in;
  at::manual_seed(7);
  in.a = at::randn({batch, 3});
  in.b = at::randn({batch, 3});
  in.aw = at::randn({batch, 2});
  in.bw = at::randn({batch, 2});
  in.dense = at::randn({batch, 1});
  in.sparse = KeyedTensor({"a", "b", "a__wide", "b__wide"}, {3, 3, 2, 2},
                          at::cat({in.a, in.b, in.aw, in.bw}, 1));
  return in;
}

TEST(Model, DeepFmWithFinalMatchesTheFormula) {
  // The WIDE group's features get their own "<table>__wide" tables of wide_embedding_dim (as
  // TorchEasyRec's "<table>_wide"), besides their deep tables.
  std::map<std::string, std::int64_t> dims;
  for (const auto& t : EmbeddingTables(DeepFmConfig(true, true))) dims[t.name] = t.embedding_dim;
  EXPECT_EQ(dims, (std::map<std::string, std::int64_t>{
                      {"a_emb", 3}, {"a_emb__wide", 2}, {"b_emb", 3}, {"b_emb__wide", 2}}));
  auto model = DenseModel::Create(DeepFmConfig(true, true), 3, at::kCPU);
  auto p = ByName(model->Parameters());
  const Inputs in = MakeInputs(6);
  const at::Tensor y_wide = (in.aw.sum(1) + in.bw.sum(1)).unsqueeze(1);
  const at::Tensor deep =
      Layer(p, "deep_mlp", 1, Layer(p, "deep_mlp", 0, at::cat({in.a, in.dense, in.b}, 1)));
  const at::Tensor fm = Fm(at::stack({in.b, in.a}, 1));  // group "fm"
  const at::Tensor h = Layer(p, "final_mlp", 0, at::cat({y_wide, fm, deep}, 1));
  const at::Tensor want = at::linear(h, p.at("output.weight"), p.at("output.bias")).view({-1});
  EXPECT_EQ(p.at("final_mlp.mlp.0.perceptron.0.weight").size(1), 1 + 3 + 5);
  EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, true), want, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, false), want, 1e-5, 1e-6));
}

TEST(Model, DeepFmWithoutFinalMatchesTheFormula) {
  auto model = DenseModel::Create(DeepFmConfig(false, false), 3, at::kCPU);
  auto p = ByName(model->Parameters());
  EXPECT_EQ(p.count("final_mlp.mlp.0.perceptron.0.weight"), 0U);
  const Inputs in = MakeInputs(5);
  const at::Tensor deep =
      Layer(p, "deep_mlp", 1, Layer(p, "deep_mlp", 0, at::cat({in.a, in.b}, 1)));
  const at::Tensor fm = Fm(at::stack({in.a, in.b}, 1));  // FM over group "deep"
  const at::Tensor want = in.aw.sum(1) + in.bw.sum(1) + fm.sum(1) +
                          at::linear(deep, p.at("output.weight"), p.at("output.bias")).view({-1});
  EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, true), want, 1e-5, 1e-6));
}

TEST(Model, DeepFmRefusesUnequalFmDims) {
  PipelineConfig c = DeepFmConfig(false, false);
  c.mutable_model_config()->mutable_feature_groups(1)->add_feature_names("r");  // dim 1 vs 3
  EXPECT_THROW(DenseModel::Create(c, 3, at::kCPU), ConfigError);
}

TEST(Model, DlrmWithOnlyASparseGroupMatchesTheFormula) {
  for (const bool with_sparse : {false, true}) {
    PipelineConfig c;
    AddId(c, "a", 3);
    AddId(c, "b", 3);
    AddId(c, "w", 3);
    AddGroup(c, "sparse", {"a", "b", "w"});
    auto* m = c.mutable_model_config()->mutable_dlrm();
    m->mutable_final()->add_hidden_units(4);
    m->set_arch_with_sparse(with_sparse);
    auto model = DenseModel::Create(c, 5, at::kCPU);
    auto p = ByName(model->Parameters());
    EXPECT_EQ(p.count("dense_mlp.mlp.0.perceptron.0.weight"), 0U);
    at::manual_seed(3);
    const at::Tensor a = at::randn({4, 3}), b = at::randn({4, 3}), w = at::randn({4, 3});
    const KeyedTensor kt({"a", "b", "w"}, {3, 3, 3}, at::cat({a, b, w}, 1));
    // Pairwise dot products (0,1), (0,2), (1,2), then the embeddings when arch_with_sparse.
    std::vector<at::Tensor> z{(a * b).sum(1, true), (a * w).sum(1, true), (b * w).sum(1, true)};
    if (with_sparse) z.insert(z.end(), {a, b, w});
    const at::Tensor h = Layer(p, "final_mlp", 0, at::cat(z, 1));
    const at::Tensor want = at::linear(h, p.at("output.weight"), p.at("output.bias")).view({-1});
    EXPECT_TRUE(at::allclose(model->Forward(kt, at::zeros({4, 0}), true), want, 1e-5, 1e-6))
        << with_sparse;
  }
}

// MultiTower over one raw feature with a BatchNorm + dropout tower.
TEST(Model, MlpOptionsReachTheModelsWithTheirBuffers) {
  PipelineConfig c;
  AddRaw(c, "r");
  AddRaw(c, "s");
  AddGroup(c, "g", {"r", "s"});
  auto* tower = c.mutable_model_config()->mutable_multi_tower()->add_towers();
  tower->set_input("g");
  tower->mutable_mlp()->add_hidden_units(3);
  tower->mutable_mlp()->set_use_bn(true);
  tower->mutable_mlp()->add_dropout_ratio(0.5);
  c.mutable_model_config()->mutable_multi_tower()->mutable_final()->add_hidden_units(2);
  auto model = DenseModel::Create(c, 1, at::kCPU);
  auto b = ByName(model->Buffers());
  const std::string bn = "towers.g.mlp.0.perceptron.1.";
  ASSERT_EQ(b.count(bn + "running_mean"), 1U);
  ASSERT_EQ(b.count(bn + "num_batches_tracked"), 1U);
  auto p = ByName(model->Parameters());
  EXPECT_EQ(p.count("towers.g.mlp.0.perceptron.0.bias"), 0U);  // no Linear bias with use_bn
  EXPECT_EQ(p.count(bn + "weight"), 1U);
  at::manual_seed(2);
  const at::Tensor x = at::randn({8, 2}) * 3 + 1;
  const KeyedTensor none({}, {}, at::zeros({8, 0}));
  const at::Tensor eval1 = model->Forward(none, x, false);
  EXPECT_TRUE(at::equal(model->Forward(none, x, false), eval1));  // no dropout, stats fixed
  EXPECT_EQ(b.at(bn + "num_batches_tracked").item<std::int64_t>(), 0);
  model->Forward(none, x, true);
  EXPECT_EQ(b.at(bn + "num_batches_tracked").item<std::int64_t>(), 1);
  // running_mean ← 0.9·0 + 0.1·batch mean of the Linear output (torch.nn.BatchNorm1d).
  const at::Tensor lin = at::linear(x, p.at("towers.g.mlp.0.perceptron.0.weight"));
  EXPECT_TRUE(at::allclose(b.at(bn + "running_mean"), 0.1 * lin.mean(0), 1e-5, 1e-6));
  EXPECT_FALSE(at::equal(model->Forward(none, x, false), eval1));  // eval reads the new stats
}

TEST(Model, BadActivationIsAConfigErrorNamingTheField) {
  PipelineConfig c = DeepFmConfig(true, true);
  c.mutable_model_config()->mutable_deepfm()->mutable_deep()->set_activation("nn.Relu");
  try {
    DenseModel::Create(c, 3, at::kCPU);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("deep_mlp.activation"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tzrec
