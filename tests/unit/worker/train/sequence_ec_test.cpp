// The EmbeddingCollection path of attention sequences (src/worker/train/sparse_arch.hpp) against
// the per-position path it replaced (issue 14): there each item t of a sequence f was looked up as
// its own pooled EBC key "<f>__seq<t>" in f's table (row b's t-th id, none past its length) and
// the encoder read those keys side by side. The reference rebuilds that path: a world-1
// ShardedEmbeddingBagCollection over every table of the config plus the per-position keys. The same
// multi_tower_din config, seed and batches must give, step after step of training (fused row-wise
// Adagrad or Adam on the tables, SGD on the dense parameters), the same encoder inputs, pooled
// query features, logits, table rows and dense parameters.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sparse_arch.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/train/loss.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {
namespace {

constexpr std::int64_t kLen = 5;    // clicks' sequence_length
constexpr std::int64_t kBatch = 6;  // rows per batch

// multi_tower_din: towers over "user" (user, own table) and "item" (item, MEAN pooled, table
// item_emb), a DIN tower over SEQUENCE group "seq" {item, clicks} (clicks in item_emb).
PipelineConfig DinConfig() {
  PipelineConfig c;
  auto* user = c.add_feature_configs()->mutable_id_feature();
  user->set_feature_name("user");
  user->set_num_buckets(7);
  user->set_embedding_dim(4);
  auto* item = c.add_feature_configs()->mutable_id_feature();
  item->set_feature_name("item");
  item->set_num_buckets(20);
  item->set_embedding_dim(4);
  item->set_embedding_name("item_emb");
  item->set_pooling("mean");
  auto* clicks = c.add_feature_configs()->mutable_sequence_id_feature();
  clicks->set_feature_name("clicks");
  clicks->set_sequence_length(kLen);
  clicks->set_num_buckets(20);
  clicks->set_embedding_dim(4);
  clicks->set_embedding_name("item_emb");
  auto* model = c.mutable_model_config();
  for (const std::string name : {"user", "item"}) {
    auto* g = model->add_feature_groups();
    g->set_group_name(name);
    g->add_feature_names(name);
  }
  auto* seq = model->add_feature_groups();
  seq->set_group_name("seq");
  seq->set_group_type(protos::SEQUENCE);
  seq->add_feature_names("item");
  seq->add_feature_names("clicks");
  auto* din = model->mutable_multi_tower_din();
  for (const std::string name : {"user", "item"}) {
    auto* tower = din->add_towers();
    tower->set_input(name);
    tower->mutable_mlp()->add_hidden_units(8);
  }
  auto* dt = din->add_din_towers();
  dt->set_input("seq");
  dt->mutable_attn_mlp()->add_hidden_units(8);
  din->mutable_final()->add_hidden_units(4);
  return c;
}

// Random batch `step`: user, item (one id each) and clicks (0..kLen ids), plus labels.
KeyedJaggedTensor RandomBatch(int step, at::Tensor* labels) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(900 + static_cast<std::uint64_t>(step));
  const at::Tensor lengths = at::randint(0, kLen + 1, {kBatch}, gen, at::kLong);
  const std::int64_t n = lengths.sum().item<std::int64_t>();
  const at::Tensor ones = at::ones({kBatch}, at::kLong);
  *labels = at::randint(0, 2, {kBatch}, gen, at::kLong).to(at::kFloat);
  return KeyedJaggedTensor({"user", "item", "clicks"},
                           at::cat({at::randint(0, 7, {kBatch}, gen, at::kLong),
                                    at::randint(0, 20, {kBatch}, gen, at::kLong),
                                    at::randint(0, 20, {n}, gen, at::kLong)}),
                           at::cat({ones, ones, lengths}));
}

ShardingPlan TableWisePlan(const std::vector<TableSpec>& specs) {
  Topology topo;
  topo.ddr_cap = 1LL << 40;
  ParameterConstraints tw;
  tw.sharding_types = {ShardingType::kTableWise};
  std::vector<TableSpec> all = specs;
  for (auto& s : all) s.constraints = tw;
  return Plan(topo, all, PlannerOptions{});
}

std::string PositionKey(std::int64_t t) {
  return "clicks__seq" + std::to_string(t);
}

// The replaced path: clicks' item t as its own key of item_emb.
class PerPositionReference {
 public:
  PerPositionReference(const PipelineConfig& c, const EmbeddingOptimizerConfig& opt,
                       std::shared_ptr<Comm> comm) {
    std::vector<EmbeddingBagConfig> tables = AllEmbeddingTables(c);
    std::vector<TableSpec> specs;
    for (auto& t : tables) {
      for (std::int64_t p = 0; t.name == "item_emb" && p < kLen; ++p)
        t.feature_names.push_back(PositionKey(p));
      specs.push_back(ToTableSpec(t));
    }
    ebc_ = std::make_unique<ShardedEmbeddingBagCollection>(tables, TableWisePlan(specs), opt, 11,
                                                           std::move(comm));
  }

  // The pooled keys plus "clicks__seq" (the position keys side by side) and "clicks__seqlen".
  KeyedTensor Forward(const KeyedJaggedTensor& kjt) {
    const JaggedTensor clicks = kjt["clicks"];
    const at::Tensor starts = at::cumsum(clicks.lengths, 0) - clicks.lengths;
    std::vector<std::string> keys;
    std::vector<JaggedTensor> positions;
    for (std::int64_t t = 0; t < kLen; ++t) {
      const at::Tensor has = clicks.lengths > t;
      JaggedTensor jt;
      jt.values = clicks.values.index_select(0, at::masked_select(starts + t, has));
      jt.lengths = has.to(at::kLong);
      keys.push_back(PositionKey(t));
      positions.push_back(jt);
    }
    const KeyedTensor pooled = ebc_->Forward(
        KeyedJaggedTensor::Concat({kjt, KeyedJaggedTensor::FromJaggedTensors(keys, positions)}));
    std::vector<std::string> out_keys = pooled.Keys();
    std::vector<std::int64_t> widths = pooled.LengthPerKey();
    out_keys.push_back("clicks__seq");
    widths.push_back(kLen * 4);
    out_keys.push_back("clicks__seqlen");
    widths.push_back(1);
    const at::Tensor values = at::cat(
        {pooled.Values(), pooled.Regroup(keys), clicks.lengths.to(at::kFloat).unsqueeze(1)}, 1);
    return KeyedTensor(out_keys, widths, values);
  }

  at::Tensor Table(const std::string& name) { return ebc_->GatherTable(name); }

 private:
  std::unique_ptr<ShardedEmbeddingBagCollection> ebc_;
};

at::Tensor TableOf(SparseArch& arch, const std::string& name) {
  for (const auto& s : arch.LocalShards()) {
    if (s.table == name) return s.weight;
  }
  return at::Tensor();
}

// One training step of a model: logits, BCE loss, backward (the fused table update), dense SGD.
at::Tensor Step(DenseModel& dense, const KeyedTensor& input, const at::Tensor& labels) {
  const at::Tensor logits = dense.Forward(input, at::zeros({kBatch, 0}), /*training=*/true);
  BceWithLogitsLoss(logits, labels, at::Tensor()).backward();
  at::NoGradGuard no_grad;
  for (const auto& p : dense.Parameters()) {
    p.tensor.sub_(p.tensor.grad() * 0.1);
    p.tensor.mutable_grad() = at::Tensor();
  }
  return logits.detach();
}

void CheckSamePath(EmbeddingOptimizerKind kind) {
  SCOPED_TRACE(static_cast<int>(kind));
  const PipelineConfig c = DinConfig();
  ASSERT_EQ(SequenceTableNames(c), (std::vector<std::string>{"item_emb"}));
  EmbeddingOptimizerConfig opt;
  opt.kind = kind;
  opt.lr = 0.05;
  auto comm = Comm::Init(DistEnv{}, BackendKind::kGloo);
  PerPositionReference ref(c, opt, comm);
  SparseArch arch(c, TableWisePlan(SparseTableSpecs(c)), opt, 11, comm);
  auto dense_ref = DenseModel::Create(c, 7, at::kCPU);
  auto dense_ec = DenseModel::Create(c, 7, at::kCPU);
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE(step);
    at::Tensor labels;
    const KeyedJaggedTensor kjt = RandomBatch(step, &labels);
    const KeyedTensor a = ref.Forward(kjt);
    const KeyedTensor b = arch.Forward(kjt);
    for (const std::string key : {"user", "item", "clicks__seq", "clicks__seqlen"}) {
      EXPECT_TRUE(at::allclose(a[key], b[key], 1e-6, 1e-7)) << key << a[key] << b[key];
    }
    const at::Tensor la = Step(*dense_ref, a, labels);
    const at::Tensor lb = Step(*dense_ec, b, labels);
    EXPECT_TRUE(at::allclose(la, lb, 1e-5, 1e-6)) << la << lb;
  }
  for (const std::string table : {"user_emb", "item_emb"}) {
    EXPECT_TRUE(at::allclose(ref.Table(table), TableOf(arch, table), 1e-5, 1e-6)) << table;
  }
  EXPECT_FALSE(at::equal(TableOf(arch, "item_emb"),
                         InitTableSlice(EmbeddingBagConfig{"item_emb", 20, 4, {"item"}}, 11, 0, 20,
                                        0, 4, at::kCPU)));  // trained
  for (std::size_t i = 0; i < dense_ref->Parameters().size(); ++i) {
    EXPECT_TRUE(at::allclose(dense_ref->Parameters()[i].tensor, dense_ec->Parameters()[i].tensor,
                             1e-5, 1e-6))
        << dense_ref->Parameters()[i].name;
  }
}

TEST(Model, SequenceEcMatchesPerPositionPath) {
  CheckSamePath(EmbeddingOptimizerKind::kRowWiseAdagrad);
  CheckSamePath(EmbeddingOptimizerKind::kAdam);
}

}  // namespace
}  // namespace tzrec
