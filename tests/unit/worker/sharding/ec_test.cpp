// ShardedEmbeddingCollection's pure parts (include/tzrec/sharding/sharded_ec.hpp): the planner
// gives EC tables only the four types TorchRec's EmbeddingCollection shards (no table_row_wise),
// a table_row_wise plan is refused, PoolJagged pools like the EBC and PadJagged pads like
// TorchRec's to_padded_dense (hand-computed values).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "tzrec/sharding/sharded_ec.hpp"

namespace tzrec {
namespace {

bool IsEcType(ShardingType t) {
  const auto& ec = EcShardingTypes();
  return std::find(ec.begin(), ec.end(), t) != ec.end();
}

TEST(ShardedEc, TableSpecOffersTorchRecEcTypes) {
  const EmbeddingConfig c{"t", 100, 8, {"hist", "item"}};
  EXPECT_EQ(ToEcTableSpec(c).constraints.sharding_types, EcShardingTypes());
  ParameterConstraints two;
  two.sharding_types = {ShardingType::kTableRowWise, ShardingType::kRowWise};
  EXPECT_EQ(ToEcTableSpec(c, two).constraints.sharding_types,
            std::vector<ShardingType>{ShardingType::kRowWise});
  ParameterConstraints twrw;
  twrw.sharding_types = {ShardingType::kTableRowWise};
  EXPECT_THROW(ToEcTableSpec(c, twrw), std::invalid_argument);
  EXPECT_FALSE(IsEcType(ShardingType::kTableRowWise));
}

TEST(ShardedEc, PlannerPicksValidTypesForEcTables) {
  Topology topo;
  topo.world_size = 4;
  topo.local_world_size = 2;
  topo.ddr_cap = 1LL << 30;
  // A large table the EBC planner may put table_row_wise across hosts, and small ones.
  const std::vector<EmbeddingConfig> tables = {
      {"big", 2000000, 64, {"hist", "item"}}, {"small", 10, 4, {"tag"}}, {"mid", 5000, 16, {"c"}}};
  std::vector<TableSpec> specs;
  for (const auto& t : tables) specs.push_back(ToEcTableSpec(t));
  const ShardingPlan plan = Plan(topo, specs, PlannerOptions{});
  ASSERT_EQ(plan.tables.size(), tables.size());
  for (const auto& ps : plan.tables) {
    EXPECT_TRUE(IsEcType(ps.sharding_type)) << ps.table << " " << ToString(ps.sharding_type);
  }
}

TEST(ShardedEc, RefusesTableRowWisePlan) {
  ShardingPlan plan;
  plan.world_size = 2;
  ParameterSharding ps;
  ps.table = "t";
  ps.sharding_type = ShardingType::kTableRowWise;
  plan.tables.push_back(ps);
  try {
    ShardedEmbeddingCollection ec({{"t", 10, 4, {"f"}}}, plan, EmbeddingOptimizerConfig{}, 1,
                                  nullptr);
    FAIL() << "table_row_wise accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'t' is planned table_row_wise"), std::string::npos);
  }
  plan.tables.clear();
  EXPECT_THROW(ShardedEmbeddingCollection({{"t", 10, 4, {"f"}}}, plan, EmbeddingOptimizerConfig{},
                                          1, nullptr),
               std::invalid_argument);
}

TEST(ShardedEc, PoolJaggedSumAndMean) {
  // 3 samples with 2, 0, 1 ids; D = 2.
  const JaggedEmbedding e{at::tensor({1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F}).view({3, 2}),
                          at::tensor({2, 0, 1}, at::kLong)};
  const at::Tensor sum = PoolJagged(e, PoolingType::kSum);
  EXPECT_TRUE(at::equal(sum, at::tensor({4.0F, 6.0F, 0.0F, 0.0F, 5.0F, 6.0F}).view({3, 2})));
  const at::Tensor mean = PoolJagged(e, PoolingType::kMean);
  EXPECT_TRUE(at::equal(mean, at::tensor({2.0F, 3.0F, 0.0F, 0.0F, 5.0F, 6.0F}).view({3, 2})));
}

TEST(ShardedEc, PadJaggedToPaddedDense) {
  // 3 samples with 2, 0, 3 ids; D = 2; padded to 2 items (sample 2's third item is dropped).
  at::Tensor values = at::tensor({1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F, 7.0F, 8.0F, 9.0F, 10.0F})
                          .view({5, 2})
                          .requires_grad_(true);
  const JaggedEmbedding e{values, at::tensor({2, 0, 3}, at::kLong)};
  const at::Tensor padded = PadJagged(e, 2);
  EXPECT_TRUE(at::equal(padded.detach(), at::tensor({1.0F, 2.0F, 3.0F, 4.0F, 0.0F, 0.0F, 0.0F, 0.0F,
                                                     5.0F, 6.0F, 7.0F, 8.0F})
                                             .view({3, 2, 2})));
  // Gradients reach the kept items only.
  (padded * at::tensor({1.0F, 2.0F}).view({1, 1, 2})).sum().backward();
  EXPECT_TRUE(at::equal(
      values.grad(),
      at::tensor({1.0F, 2.0F, 1.0F, 2.0F, 1.0F, 2.0F, 1.0F, 2.0F, 0.0F, 0.0F}).view({5, 2})));
  // Longer than every row: zeros after each; an empty batch: [0, L, D].
  const at::Tensor wide = PadJagged(JaggedEmbedding{values.detach(), e.lengths}, 4);
  EXPECT_TRUE(at::equal(wide[1], at::zeros({4, 2})));
  EXPECT_TRUE(at::equal(wide[2].narrow(0, 0, 3), values.detach().narrow(0, 2, 3)));
  const JaggedEmbedding none{at::zeros({0, 2}), at::zeros({0}, at::kLong)};
  EXPECT_EQ(PadJagged(none, 3).sizes(), (std::vector<std::int64_t>{0, 3, 2}));
}

}  // namespace
}  // namespace tzrec
