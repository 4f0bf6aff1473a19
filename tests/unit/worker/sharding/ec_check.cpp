// The sharded EmbeddingCollection against a composed-libtorch reference (part of
// tzrec_sharding_check, see sharding_check_main.cpp). Model: table t_seq read by the sequence
// feature "hist" (unpooled) and by "item" (pooled MEAN through PoolJagged: one shared table),
// table t_tag read by "tags" (unpooled). score_s = Σ_f Σ_{ids of f in s} e·u_f (item: its MEAN
// pooled row · u), loss = BCE with logits, mean over the local batch. The reference trains the
// whole tables as autograd leaves on the global batch (at::embedding, index_add segment sums) with
// the optimizer formula of include/tzrec/core/embedding.hpp written out (SGD, row-wise Adagrad
// with one accumulator per column block).
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/zeros.h>
#include <torch/autograd.h>

#include <sstream>
#include <string>
#include <vector>

#include "check_common.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/sharding/collective_plan.hpp"
#include "tzrec/sharding/sharded_ec.hpp"

namespace tzrec_check {

namespace {

using tzrec::ShardingType;

std::vector<tzrec::EmbeddingConfig> EcTables() {
  return {{"t_seq", 50, 8, {"hist", "item"}}, {"t_tag", 7, 16, {"tags"}}};
}

tzrec::ParameterConstraints EcConstraint(const std::string& plan, const std::string& table) {
  tzrec::ParameterConstraints c;
  c.min_partition = table == "t_seq" ? 4 : 8;  // column_wise: 2 blocks each
  if (plan == "mixed") {
    c.sharding_types = {table == "t_seq" ? ShardingType::kRowWise : ShardingType::kColumnWise};
  } else {
    c.sharding_types = {tzrec::ParseShardingType(plan)};
  }
  return c;
}

tzrec::KeyedJaggedTensor EcBatch(std::int64_t batch, int step, at::Tensor* labels) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(500 + static_cast<std::uint64_t>(step));
  const std::vector<std::int64_t> rows = {50, 50, 7};
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> values;
  for (std::int64_t r : rows) {
    at::Tensor len = at::randint(0, 4, {batch}, gen, at::kLong);
    lengths.push_back(len);
    values.push_back(at::randint(0, r, {len.sum().item<std::int64_t>()}, gen, at::kLong));
  }
  *labels = at::randint(0, 2, {batch}, gen, at::kLong).to(at::kFloat);
  return tzrec::KeyedJaggedTensor({"hist", "item", "tags"}, at::cat(values), at::cat(lengths));
}

// Scores [B] of per-feature jagged embeddings (hist, item, tags) with the fixed vectors u.
at::Tensor Score(const std::vector<tzrec::JaggedEmbedding>& e, const std::vector<at::Tensor>& u) {
  at::Tensor item = tzrec::PoolJagged(e[1], tzrec::PoolingType::kMean);
  at::Tensor s = at::matmul(item, u[1]);
  for (int f : {0, 2}) {
    s = s + at::matmul(tzrec::PoolJagged(e[static_cast<std::size_t>(f)], tzrec::PoolingType::kSum),
                       u[static_cast<std::size_t>(f)]);
  }
  return s;
}

void ReferenceUpdate(const std::string& opt, double lr, std::int64_t block, at::Tensor& w,
                     at::Tensor& acc) {
  at::NoGradGuard g;
  const at::Tensor grad = w.grad();
  if (opt == "sgd") {
    w.sub_(grad * lr);
  } else {  // rowwise_adagrad, one accumulator per (row, column block), eps 1e-8
    const auto rows = w.size(0);
    const auto blocks = w.size(1) / block;
    acc.add_((grad * grad).view({rows, blocks, block}).mean(2));
    const at::Tensor den = acc.sqrt().add(1e-8).repeat_interleave(block, 1);
    w.sub_(grad * lr / den);
  }
  w.mutable_grad().zero_();
}

}  // namespace

std::string CheckEc(const std::shared_ptr<tzrec::Comm>& comm, const tzrec::Topology& topo,
                    std::int64_t global_batch, int steps, const std::string& plan_name,
                    const std::string& opt_name) {
  const int rank = comm->Rank();
  const std::int64_t local_batch = global_batch / comm->WorldSize();
  const auto tables = EcTables();
  std::vector<tzrec::TableSpec> specs;
  for (const auto& t : tables)
    specs.push_back(tzrec::ToEcTableSpec(t, EcConstraint(plan_name, t.name)));
  const tzrec::ShardingPlan plan = PlanForCheck(*comm, topo, specs, local_batch, opt_name);
  tzrec::EmbeddingOptimizerConfig ocfg;
  ocfg.kind = tzrec::ParseEmbeddingOptimizerKind(opt_name);
  ocfg.lr = opt_name == "sgd" ? 0.5 : 0.05;
  tzrec::ShardedEmbeddingCollection ec(tables, plan, ocfg, 42, comm);
  std::vector<at::Tensor> ref_w;
  std::vector<at::Tensor> ref_acc;
  std::vector<std::int64_t> blocks;
  for (const auto& t : tables) {
    const tzrec::EmbeddingBagConfig b{t.name, t.num_embeddings, t.embedding_dim, {}};
    ref_w.push_back(tzrec::InitTableSlice(b, 42, 0, t.num_embeddings, 0, t.embedding_dim, at::kCPU)
                        .set_requires_grad(true));
    const auto& ps = plan.Get(t.name);
    blocks.push_back(ps.sharding_type == ShardingType::kColumnWise ? ps.shards.front().cols
                                                                   : t.embedding_dim);
    ref_acc.push_back(at::zeros({t.num_embeddings, t.embedding_dim / blocks.back()}));
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  const std::vector<at::Tensor> u = {at::rand({8}, gen) - 0.5, at::rand({8}, gen) - 0.5,
                                     at::rand({16}, gen) - 0.5};
  std::string problem;
  for (int step = 0; step < steps && problem.empty(); ++step) {
    at::Tensor labels;
    const auto global = EcBatch(global_batch, step, &labels);
    const auto local = global.SliceBatch(rank * local_batch, local_batch);
    const auto out = ec.Forward(local);
    at::binary_cross_entropy_with_logits(Score(out, u),
                                         labels.narrow(0, rank * local_batch, local_batch))
        .backward();
    std::vector<tzrec::JaggedEmbedding> ref;
    const std::vector<int> table_of = {0, 0, 1};
    for (std::size_t f = 0; f < 3; ++f) {
      const auto jt = global[global.Keys()[f]];
      ref.push_back(
          {at::embedding(ref_w[static_cast<std::size_t>(table_of[f])], jt.values), jt.lengths});
    }
    at::binary_cross_entropy_with_logits(Score(ref, u), labels).backward();
    const auto mine = local.ToJaggedTensors();
    for (std::size_t f = 0; f < 3 && problem.empty(); ++f) {
      const auto gjt = global[global.Keys()[f]];
      const std::int64_t begin = gjt.offsets[rank * local_batch].item<std::int64_t>();
      problem = Compare("step " + std::to_string(step) + " " + global.Keys()[f] + " values",
                        out[f].values, ref[f].values.narrow(0, begin, mine[f].values.numel()));
    }
    for (std::size_t t = 0; t < tables.size(); ++t) {
      ReferenceUpdate(opt_name, ocfg.lr, blocks[t], ref_w[t], ref_acc[t]);
    }
  }
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const at::Tensor full = ec.GatherTable(tables[t].name);
    if (problem.empty()) problem = Compare("EC table " + tables[t].name, full, ref_w[t]);
  }
  return problem;
}

}  // namespace tzrec_check
