// The rank models mask_net, wukong and xdeepfm (src/worker/train/{mask_net,wukong,xdeepfm}.cpp):
// their wiring against references composed from ATen ops with the models' own parameters
// (TorchEasyRec tzrec/models/masknet.py, wukong.py, xdeepfm.py; the modules themselves are checked
// against torch in rank_modules_golden_test.cpp), their state-dict names, xDeepFM's "__wide"
// tables, and the config validation (src/worker/config/validate_rank_mask.cpp) naming the field.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/einsum.h>
#include <ATen/ops/layer_norm.h>
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
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

std::map<std::string, at::Tensor> ByName(const std::vector<Parameter>& ps) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : ps) out[p.name] = p.tensor.detach();
  return out;
}

at::Tensor Relu(std::map<std::string, at::Tensor>& p, const std::string& layer,
                const at::Tensor& x) {
  return at::relu(at::linear(x, p.at(layer + ".weight"), p.at(layer + ".bias")));
}

// A pipeline config (protobuf text) with id features a, b (dim 3), raw r, and `model`.
PipelineConfig Config(const std::string& model) {
  return ParsePipelineConfig(R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" }
feature_configs { id_feature { feature_name: "a" expression: "user:a" num_buckets: 10 embedding_dim: 3 } }
feature_configs { id_feature { feature_name: "b" expression: "item:b" num_buckets: 10 embedding_dim: 3 } }
feature_configs { raw_feature { feature_name: "r" expression: "item:r" } }
model_config { )" + model + R"(
  metrics { auc {} } losses { binary_cross_entropy {} } }
)",
                             "", "test.config")
      .config;
}

std::string ErrorOf(const std::string& model) {
  try {
    Config(model);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kMaskNet =
    R"(feature_groups { group_name: "all" feature_names: ["a", "r", "b"] }
  mask_net { mask_net_module { n_mask_blocks: 1 mask_block { reduction_ratio: 0.5 hidden_dim: 4 }
    top_mlp { hidden_units: [2] } } })";

TEST(RankMaskModels, MaskNetMatchesTheFormula) {
  auto model = DenseModel::Create(Config(kMaskNet), 3, at::kCPU);
  auto p = ByName(model->Parameters());
  EXPECT_EQ(p.count("output_linear.bias"), 0U);  // upstream: bias=False
  at::manual_seed(5);
  const at::Tensor a = at::randn({4, 3}), b = at::randn({4, 3}), r = at::randn({4, 1});
  const KeyedTensor kt({"a", "b"}, {3, 3}, at::cat({a, b}, 1));
  const at::Tensor e = at::cat({a, r, b}, 1);  // [B, 7]
  const std::string m = "mask_net_layer.";
  const at::Tensor ln =
      at::layer_norm(e, {7}, p.at(m + "ln_emb.weight"), p.at(m + "ln_emb.bias"), 1e-5);
  const std::string blk = m + "mask_blocks.0.";
  EXPECT_EQ(p.at(blk + "mask_generator.0.weight").size(0), 3);  // int(7 * 0.5)
  const at::Tensor w =
      at::linear(Relu(p, blk + "mask_generator.0", e), p.at(blk + "mask_generator.2.weight"),
                 p.at(blk + "mask_generator.2.bias"));
  const at::Tensor h = at::relu(
      at::layer_norm(at::linear(ln * w, p.at(blk + "ffn.0.weight"), p.at(blk + "ffn.0.bias")), {4},
                     p.at(blk + "ffn.1.weight"), p.at(blk + "ffn.1.bias"), 1e-5));
  const at::Tensor top = Relu(p, m + "top_mlp.mlp.0.perceptron.0", h);
  const at::Tensor want = at::linear(top, p.at("output_linear.weight")).view({-1});
  EXPECT_TRUE(at::allclose(model->Forward(kt, r, true), want, 1e-5, 1e-6));
}

// No WuKong layers: final sees [dense_mlp(dense), a, b] flattened, the dense feature first.
TEST(RankMaskModels, WuKongPutsTheDenseFeatureFirst) {
  const char* text = R"(feature_groups { group_name: "sparse" feature_names: ["a", "b"] }
    feature_groups { group_name: "dense" feature_names: ["r"] }
    wukong { dense_mlp { hidden_units: [3] } final { hidden_units: [2] } })";
  auto model = DenseModel::Create(Config(text), 3, at::kCPU);
  auto p = ByName(model->Parameters());
  at::manual_seed(6);
  const at::Tensor a = at::randn({4, 3}), b = at::randn({4, 3}), r = at::randn({4, 1});
  const KeyedTensor kt({"a", "b"}, {3, 3}, at::cat({a, b}, 1));
  const at::Tensor d = Relu(p, "dense_mlp.mlp.0.perceptron.0", r);
  const at::Tensor h = Relu(p, "final_mlp.mlp.0.perceptron.0", at::cat({d, a, b}, 1));
  const at::Tensor want =
      at::linear(h, p.at("output_mlp.weight"), p.at("output_mlp.bias")).view({-1});
  EXPECT_TRUE(at::allclose(model->Forward(kt, r, true), want, 1e-5, 1e-6));
}

TEST(RankMaskModels, WuKongLayersChainTheirFeatureNums) {
  const char* text = R"(feature_groups { group_name: "g" feature_names: ["a", "b"] }
    wukong { wukong_layers { lcb_feature_num: 2 fmb_feature_num: 3 compressed_feature_num: 2
               feature_num_mlp { hidden_units: [4] } }
             wukong_layers { lcb_feature_num: 1 fmb_feature_num: 1
               feature_num_mlp { hidden_units: [4] } }
             final { hidden_units: [2] } })";
  auto model = DenseModel::Create(Config(text), 3, at::kCPU);
  auto p = ByName(model->Parameters());
  EXPECT_EQ(p.at("_wukong_layers.0.lcb.weight").sizes(), at::IntArrayRef({2, 2}));
  EXPECT_EQ(p.at("_wukong_layers.0.residual_projection.weight").sizes(), at::IntArrayRef({2, 5}));
  EXPECT_EQ(p.at("_wukong_layers.1.fmb.weight").sizes(), at::IntArrayRef({5, 16}));  // default C
  EXPECT_EQ(p.at("_wukong_layers.1.fmb.feature_out_liner.weight").sizes(), at::IntArrayRef({3, 4}));
  EXPECT_EQ(p.at("final_mlp.mlp.0.perceptron.0.weight").size(1), 2 * 3);
  at::manual_seed(2);
  const KeyedTensor kt({"a", "b"}, {3, 3}, at::randn({4, 6}));
  EXPECT_EQ(model->Forward(kt, at::zeros({4, 1}), false).sizes(), at::IntArrayRef({4}));
}

constexpr const char* kXDeepFm =
    R"(feature_groups { group_name: "wide" feature_names: ["a", "b"] group_type: WIDE }
  feature_groups { group_name: "deep" feature_names: ["a", "r"] }
  xdeepfm { cin { cin_layer_size: [2] } deep { hidden_units: [3] } final { hidden_units: [2] }
    wide_embedding_dim: 5 })";

TEST(RankMaskModels, XDeepFmReadsTheWideTablesThroughTheCin) {
  const PipelineConfig c = Config(kXDeepFm);
  std::map<std::string, std::int64_t> dims;
  for (const auto& t : EmbeddingTables(c)) dims[t.name] = t.embedding_dim;
  EXPECT_EQ(dims.at("a_emb__wide"), 5);
  EXPECT_EQ(dims.at("b_emb__wide"), 5);
  auto model = DenseModel::Create(c, 3, at::kCPU);
  auto p = ByName(model->Parameters());
  at::manual_seed(8);
  const at::Tensor a = at::randn({4, 3}), aw = at::randn({4, 5}), bw = at::randn({4, 5});
  const at::Tensor r = at::randn({4, 1});
  const KeyedTensor kt({"a", "a__wide", "b__wide"}, {3, 5, 5}, at::cat({a, aw, bw}, 1));
  const at::Tensor x0 = at::stack({aw, bw}, 1);                             // [B, 2, 5]
  const at::Tensor w = p.at("cin.cin_layers.0.weight").reshape({2, 2, 2});  // [H, i, j]
  const at::Tensor cin = at::einsum("hij,bid,bjd->bh", {w, x0, x0}) +
                         5 * p.at("cin.cin_layers.0.bias");  // bias added on each of d = 5
  const at::Tensor deep = Relu(p, "deep.mlp.0.perceptron.0", at::cat({a, r}, 1));
  const at::Tensor h = Relu(p, "final.mlp.0.perceptron.0", at::cat({cin, deep}, 1));
  const at::Tensor want =
      at::linear(h, p.at("output_mlp.weight"), p.at("output_mlp.bias")).view({-1});
  EXPECT_TRUE(at::allclose(model->Forward(kt, r, true), want, 1e-4, 1e-5));
}

TEST(RankMaskModels, ConfigErrorsNameTheField) {
  const std::string mn_groups = R"(feature_groups { group_name: "all" feature_names: ["a", "b"] })";
  auto mask = [&](const std::string& module) {
    return ErrorOf(mn_groups + " mask_net { mask_net_module { " + module + " } }");
  };
  EXPECT_NE(mask("mask_block { hidden_dim: 4 } top_mlp { hidden_units: [2] }")
                .find("mask_net_module.n_mask_blocks"),
            std::string::npos);
  EXPECT_NE(mask("n_mask_blocks: 1 mask_block { hidden_dim: 4 }").find("mask_net_module.top_mlp"),
            std::string::npos);
  EXPECT_NE(mask("n_mask_blocks: 1 mask_block { hidden_dim: 4 aggregation_dim: 3 } top_mlp { "
                 "hidden_units: [2] }")
                .find("mask_block.aggregation_dim: 3 has no effect"),
            std::string::npos);
  EXPECT_NE(mask("n_mask_blocks: 1 mask_block { hidden_dim: 4 reduction_ratio: 0.1 } top_mlp { "
                 "hidden_units: [2] }")
                .find("mask_block.reduction_ratio"),
            std::string::npos);
  EXPECT_NE(ErrorOf(mn_groups + R"( feature_groups { group_name: "x" feature_names: ["r"] }
      mask_net { mask_net_module { n_mask_blocks: 1 mask_block { hidden_dim: 4 }
      top_mlp { hidden_units: [2] } } })")
                .find("MaskNet reads one feature group"),
            std::string::npos);
  const std::string wk = R"(feature_groups { group_name: "sparse" feature_names: ["a", "b"] }
      feature_groups { group_name: "dense" feature_names: ["r"] } )";
  EXPECT_NE(ErrorOf(wk + "wukong { dense_mlp { hidden_units: [8] } final { hidden_units: [2] } }")
                .find("wukong.dense_mlp.hidden_units: the last unit 8 must equal"),
            std::string::npos);
  EXPECT_NE(ErrorOf(wk + "wukong { dense_mlp { hidden_units: [3] } }").find("wukong.final"),
            std::string::npos);
  EXPECT_NE(ErrorOf(wk + R"(wukong { dense_mlp { hidden_units: [3] } final { hidden_units: [2] }
      wukong_layers { lcb_feature_num: 2 fmb_feature_num: 2 } })")
                .find("wukong_layers[0].feature_num_mlp"),
            std::string::npos);
  const std::string xd =
      R"(feature_groups { group_name: "wide" feature_names: ["a"] group_type: WIDE }
      feature_groups { group_name: "deep" feature_names: ["a"] } )";
  EXPECT_NE(ErrorOf(xd + "xdeepfm { deep { hidden_units: [2] } final { hidden_units: [2] } }")
                .find("xdeepfm.cin.cin_layer_size"),
            std::string::npos);
  EXPECT_NE(ErrorOf(xd + R"(xdeepfm { cin { cin_layer_size: [2] } deep { hidden_units: [2] }
      final { hidden_units: [2] } wide_init_fn: "nn.init.zeros_" })")
                .find("'wide_init_fn' (xDeepFM) is a TorchEasyRec option"),
            std::string::npos);
}

}  // namespace
}  // namespace tzrec
