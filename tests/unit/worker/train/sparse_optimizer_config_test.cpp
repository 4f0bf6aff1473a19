// The sparse optimizer as a pipeline config sets it: ParsePipelineConfig (validation) →
// SparseOptimizerFromConfig → the fused row update (EmbeddingOptimizerState::Apply). The reference
// is FBGEMM's rowwise_adagrad CPU update (fbgemm_gpu/codegen/genscript/optimizers.py,
// split_weight_update_cpu), written out here in double:
//   g2 = mean((g + [L2] wd * w)^2);  s += g2;  m = lr / (sqrt(s) + eps)
//   L2:       w = (1 - m * wd) * w - m * g
//   DECOUPLE: w = (1 - lr * wd) * w - m * g
//   NONE:     w = w - m * g (weight_decay ignored, so validation refuses it)
// Only the rows a step touches are updated (decayed too).
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "train_common.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

// A valid pipeline whose sparse optimizer is rowwise_adagrad_optimizer { `fields` }.
std::string Pipeline(const std::string& fields) {
  return R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { rowwise_adagrad_optimizer { )" +
         fields + R"( } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" }
feature_configs { id_feature { feature_name: "u" expression: "user:u" num_buckets: 4 embedding_dim: 3 } }
model_config {
  feature_groups { group_name: "all" feature_names: "u" group_type: DEEP }
  multi_tower { towers { input: "all" mlp { hidden_units: [4] } } }
  metrics { auc {} }
  losses { binary_cross_entropy {} }
}
)";
}

using Table = std::vector<std::vector<double>>;

const Table kInit = {{0.5, -1.0, 2.0}, {1.0, 1.0, 1.0}, {-0.25, 0.75, -1.5}, {3.0, -2.0, 0.1}};
// Two steps on rows {0, 2}: summed gradients per row.
const std::vector<Table> kGrads = {{{0.2, -0.4, 1.0}, {-0.3, 0.1, 0.05}},
                                   {{0.1, 0.3, -0.2}, {0.6, -0.5, 0.4}}};
const std::vector<std::int64_t> kRows = {0, 2};

// The rows after the two steps, trained by tzrec's kernel with the config's optimizer.
at::Tensor Trained(const std::string& fields) {
  const LoadedConfig c = ParsePipelineConfig(Pipeline(fields));
  const EmbeddingOptimizerConfig o =
      SparseOptimizerFromConfig(c.config.train_config().sparse_optimizer());
  EmbeddingOptimizerState state(o, 4, 3, at::kCPU);
  std::vector<float> init;
  for (const auto& row : kInit) init.insert(init.end(), row.begin(), row.end());
  at::Tensor w = at::tensor(init, at::kFloat).reshape({4, 3});
  const at::Tensor rows = at::tensor(kRows, at::kLong);
  for (const Table& step : kGrads) {
    std::vector<float> g;
    for (const auto& row : step) g.insert(g.end(), row.begin(), row.end());
    state.Apply(w, rows, at::tensor(g, at::kFloat).reshape({2, 3}));
  }
  return w;
}

// FBGEMM's formula (above); mode 0 NONE, 1 L2, 2 DECOUPLE.
at::Tensor Fbgemm(double lr, double wd, int mode) {
  const double eps = 1e-8;  // FBGEMM's default, as TorchEasyRec leaves it
  Table w = kInit;
  std::vector<double> s(4, 0.0);
  for (const Table& step : kGrads) {
    for (std::size_t j = 0; j < kRows.size(); ++j) {
      auto& row = w[kRows[j]];
      double sum = 0;
      for (std::size_t d = 0; d < 3; ++d) {
        const double g = step[j][d] + (mode == 1 ? wd * row[d] : 0.0);
        sum += g * g;
      }
      double& acc = s[kRows[j]];
      acc += sum / 3;
      const double m = lr / (std::sqrt(acc) + eps);
      const double correction = mode == 1 ? 1 - m * wd : mode == 2 ? 1 - lr * wd : 1.0;
      for (std::size_t d = 0; d < 3; ++d) row[d] = correction * row[d] - m * step[j][d];
    }
  }
  std::vector<float> flat;
  for (const auto& row : w) flat.insert(flat.end(), row.begin(), row.end());
  return at::tensor(flat, at::kFloat).reshape({4, 3});
}

TEST(SparseOptimizerConfig, RowWiseAdagradDecoupleAsFbgemm) {
  const at::Tensor plain = Trained("lr: 0.1");
  const at::Tensor decouple = Trained("lr: 0.1 weight_decay: 0.5 weight_decay_mode: DECOUPLE");
  const at::Tensor l2 = Trained("lr: 0.1 weight_decay: 0.5 weight_decay_mode: L2");
  EXPECT_TRUE(at::allclose(plain, Fbgemm(0.1, 0.0, 0), 1e-6, 1e-6)) << plain;
  EXPECT_TRUE(at::allclose(decouple, Fbgemm(0.1, 0.5, 2), 1e-6, 1e-6)) << decouple;
  EXPECT_TRUE(at::allclose(l2, Fbgemm(0.1, 0.5, 1), 1e-6, 1e-6)) << l2;
  // DECOUPLE changes the trained rows against weight_decay 0, differently from L2, ...
  const at::Tensor touched = at::tensor(kRows, at::kLong);
  EXPECT_GT((decouple.index_select(0, touched) - plain.index_select(0, touched))
                .abs()
                .min()
                .item<float>(),
            1e-3F);
  EXPECT_FALSE(at::allclose(decouple, l2, 1e-4, 1e-4));
  // ... and leaves the untouched rows (1, 3) as they were.
  for (const std::int64_t r : {1, 3}) EXPECT_TRUE(at::equal(decouple[r], plain[r])) << r;
  // weight_decay 0 with DECOUPLE is weight_decay 0.
  EXPECT_TRUE(at::equal(Trained("lr: 0.1 weight_decay_mode: DECOUPLE"), plain));
  // weight_decay with NONE (FBGEMM ignores it) is refused, naming both fixes.
  try {
    ParsePipelineConfig(Pipeline("lr: 0.1 weight_decay: 0.5"));
    ADD_FAILURE() << "weight_decay with weight_decay_mode NONE was accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rowwise_adagrad_optimizer.weight_decay: 0.5 with weight_decay_mode NONE"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("set weight_decay_mode: L2"), std::string::npos) << m;
    EXPECT_NE(m.find("DECOUPLE"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tzrec
