// WideAndDeep, DCNV1 and DCNV2 (src/worker/train/wide_and_deep.cpp, dcn.cpp, dcn_v2.cpp) against
// references composed from ATen ops with the models' own parameters, written from TorchEasyRec's
// tzrec/models/wide_and_deep.py, dcn.py, dcn_v2.py and the cross layers of
// tzrec/modules/interaction.py (the layers themselves are checked against torch in
// cross_golden_test.cpp); also the parameter names (TorchEasyRec's state-dict names) and the wide
// tables.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/error.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

void AddId(PipelineConfig& c, const std::string& name, int dim) {
  auto* f = c.add_feature_configs()->mutable_id_feature();
  f->set_feature_name(name);
  f->set_embedding_dim(dim);
  f->set_num_buckets(10);
}

void AddGroup(PipelineConfig& c, const std::string& name, const std::vector<std::string>& features,
              protos::FeatureGroupType type = protos::DEEP) {
  auto* g = c.mutable_model_config()->add_feature_groups();
  g->set_group_name(name);
  g->set_group_type(type);
  for (const auto& f : features) g->add_feature_names(f);
}

// a, b: id features of dim 3; r: a raw feature (dense column 0).
PipelineConfig Features() {
  PipelineConfig c;
  AddId(c, "a", 3);
  AddId(c, "b", 3);
  c.add_feature_configs()->mutable_raw_feature()->set_feature_name("r");
  return c;
}

std::map<std::string, at::Tensor> ByName(const std::vector<Parameter>& ps) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : ps) out[p.name] = p.tensor.detach();
  return out;
}

std::vector<std::string> Names(const std::vector<Parameter>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.name);
  return out;
}

// relu(x·Wᵀ + b) of a default MLP layer "<name>.mlp.<i>.perceptron.0".
at::Tensor Layer(const std::map<std::string, at::Tensor>& p, const std::string& name, int i,
                 const at::Tensor& x) {
  const std::string k = name + ".mlp." + std::to_string(i) + ".perceptron.0.";
  return at::relu(at::linear(x, p.at(k + "weight"), p.at(k + "bias")));
}

struct Inputs {
  KeyedTensor sparse;
  at::Tensor dense, a, b, aw, bw;
};

Inputs MakeInputs(std::int64_t batch) {
  Inputs in;
  at::manual_seed(11);
  in.a = at::randn({batch, 3});
  in.b = at::randn({batch, 3});
  in.aw = at::randn({batch, 2});
  in.bw = at::randn({batch, 2});
  in.dense = at::randn({batch, 1});
  in.sparse = KeyedTensor({"a", "b", "a__wide", "b__wide"}, {3, 3, 2, 2},
                          at::cat({in.a, in.b, in.aw, in.bw}, 1));
  return in;
}

PipelineConfig WideAndDeepConfig(bool with_final) {
  PipelineConfig c = Features();
  AddGroup(c, "wide", {"a", "b"}, protos::WIDE);
  AddGroup(c, "deep", {"a", "r", "b"});
  auto* m = c.mutable_model_config()->mutable_wide_and_deep();
  m->mutable_deep()->add_hidden_units(4);
  m->mutable_deep()->add_hidden_units(5);
  if (with_final) m->mutable_final()->add_hidden_units(2);
  m->set_wide_embedding_dim(2);
  return c;
}

TEST(RankCrossModel, WideAndDeepMatchesTheFormula) {
  const Inputs in = MakeInputs(6);
  const at::Tensor y_wide = (in.aw.sum(1) + in.bw.sum(1)).unsqueeze(1);  // [B, 1]
  for (const bool with_final : {true, false}) {
    SCOPED_TRACE(with_final ? "with final" : "without final");
    auto model = DenseModel::Create(WideAndDeepConfig(with_final), 3, at::kCPU);
    const auto p = ByName(model->Parameters());
    const at::Tensor deep =
        Layer(p, "deep_mlp", 1, Layer(p, "deep_mlp", 0, at::cat({in.a, in.dense, in.b}, 1)));
    at::Tensor want;
    if (with_final) {
      EXPECT_EQ(p.at("final_mlp.mlp.0.perceptron.0.weight").size(1), 1 + 5);
      const at::Tensor h = Layer(p, "final_mlp", 0, at::cat({y_wide, deep}, 1));
      want = at::linear(h, p.at("output_mlp.weight"), p.at("output_mlp.bias")).view({-1});
    } else {
      EXPECT_EQ(p.count("final_mlp.mlp.0.perceptron.0.weight"), 0U);
      want = y_wide.view({-1}) +
             at::linear(deep, p.at("output_mlp.weight"), p.at("output_mlp.bias")).view({-1});
    }
    EXPECT_EQ(p.size(), with_final ? 8U : 6U);
    EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, true), want, 1e-5, 1e-6));
  }
}

TEST(RankCrossModel, WideAndDeepReadsWideTablesOfWideEmbeddingDim) {
  const auto tables = EmbeddingTables(WideAndDeepConfig(false));
  std::map<std::string, std::int64_t> dims;
  for (const auto& t : tables) dims[t.name] = t.embedding_dim;
  EXPECT_EQ(dims.at("a_emb__wide"), 2);
  EXPECT_EQ(dims.at("b_emb__wide"), 2);
  EXPECT_EQ(dims.at("a_emb"), 3);
}

// x_{l+1} = (x_l · w_l) x_0 + b_l + x_l, written with a row sum instead of a matmul.
at::Tensor CrossRef(const std::map<std::string, at::Tensor>& p, const at::Tensor& x, int layers) {
  at::Tensor xl = x;
  for (int l = 0; l < layers; ++l) {
    const at::Tensor w = p.at("cross.w." + std::to_string(l) + ".weight").view({-1});
    xl = (xl * w).sum(1, /*keepdim=*/true) * x + p.at("cross.b." + std::to_string(l)) + xl;
  }
  return xl;
}

TEST(RankCrossModel, DcnV1MatchesTheFormula) {
  PipelineConfig c = Features();
  AddGroup(c, "all", {"b", "r", "a"});
  auto* m = c.mutable_model_config()->mutable_dcn_v1();
  m->mutable_cross()->set_cross_num(2);
  m->mutable_deep()->add_hidden_units(4);
  m->mutable_final()->add_hidden_units(3);
  auto model = DenseModel::Create(c, 5, at::kCPU);
  EXPECT_EQ(
      Names(model->Parameters()),
      (std::vector<std::string>{"cross.w.0.weight", "cross.w.1.weight", "cross.b.0", "cross.b.1",
                                "deep.mlp.0.perceptron.0.weight", "deep.mlp.0.perceptron.0.bias",
                                "final_dnn.mlp.0.perceptron.0.weight",
                                "final_dnn.mlp.0.perceptron.0.bias", "output_linear.weight"}));
  auto p = ByName(model->Parameters());
  // Upstream starts b at zeros; give it values so that the test sees it.
  for (const char* b : {"cross.b.0", "cross.b.1"}) p.at(b).copy_(at::randn({7}));
  const Inputs in = MakeInputs(5);
  const at::Tensor x = at::cat({in.b, in.dense, in.a}, 1);
  const at::Tensor h =
      Layer(p, "final_dnn", 0, at::cat({CrossRef(p, x, 2), Layer(p, "deep", 0, x)}, 1));
  const at::Tensor want = at::linear(h, p.at("output_linear.weight")).view({-1});
  EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, true), want, 1e-5, 1e-6));
}

// x_{l+1} = x_0 ⊙ (V_l U_l x_l + c_l) + x_l.
at::Tensor CrossV2Ref(const std::map<std::string, at::Tensor>& p, const at::Tensor& x, int layers) {
  at::Tensor xl = x;
  for (int l = 0; l < layers; ++l) {
    const std::string i = std::to_string(l);
    const at::Tensor u = p.at("cross.u_kernels." + i + ".weight");  // [r, D]
    const at::Tensor v = p.at("cross.v_kernels." + i + ".weight");  // [D, r]
    xl = x * (xl.matmul(u.t()).matmul(v.t()) + p.at("cross.v_kernels." + i + ".bias")) + xl;
  }
  return xl;
}

TEST(RankCrossModel, DcnV2MatchesTheFormula) {
  const Inputs in = MakeInputs(4);
  const at::Tensor x = at::cat({in.a, in.b, in.dense}, 1);  // D = 7
  for (const bool full : {true, false}) {
    SCOPED_TRACE(full ? "backbone and deep" : "cross only");
    PipelineConfig c = Features();
    AddGroup(c, "features", {"a", "b", "r"});
    auto* m = c.mutable_model_config()->mutable_dcn_v2();
    if (full) m->mutable_backbone()->add_hidden_units(6);
    m->mutable_cross()->set_cross_num(2);
    m->mutable_cross()->set_low_rank(3);
    if (full) m->mutable_deep()->add_hidden_units(4);
    m->mutable_final()->add_hidden_units(2);
    auto model = DenseModel::Create(c, 9, at::kCPU);
    const auto p = ByName(model->Parameters());
    EXPECT_EQ(p.at("cross.u_kernels.0.weight").sizes(),
              (std::vector<std::int64_t>{3, full ? 6 : 7}));
    EXPECT_EQ(p.size(), full ? 13U : 9U);
    EXPECT_EQ(p.at("output_mlp.weight").sizes(), (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(p.count("output_mlp.bias"), 0U);
    at::Tensor h = CrossV2Ref(p, full ? Layer(p, "backbone", 0, x) : x, 2);
    if (full) h = at::cat({h, Layer(p, "deep", 0, x)}, 1);  // deep reads x, not the backbone
    const at::Tensor want =
        at::linear(Layer(p, "final", 0, h), p.at("output_mlp.weight")).view({-1});
    EXPECT_TRUE(at::allclose(model->Forward(in.sparse, in.dense, false), want, 1e-5, 1e-6));
  }
}

}  // namespace
}  // namespace tzrec
