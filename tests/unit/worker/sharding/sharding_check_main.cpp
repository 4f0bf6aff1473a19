// tzrec_sharding_check — the sharded EmbeddingBagCollection equals unsharded training.
//
// Run as N ranks under the launcher:
//   tzrun --standalone --nproc-per-node=N --no-python build/bin/tzrec_sharding_check [--device
//   cpu|cuda]
//        [--steps S] [--global-batch G] [--local-world-size L] [--plans a,b] [--optimizers a,b]
// For every plan (each of the five sharding types for all tables, and a mixed plan) and every
// embedding optimizer, each rank trains S steps of a small model (sharded EBC → linear → BCE with
// logits, mean over its local batch; dense gradients averaged by DenseSync, SGD on the dense part)
// on its slice of a seeded global batch, and compares with an unsharded EmbeddingBagCollection +
// the same dense part trained in-process on the whole global batch: pooled outputs (its rows), the
// global loss (mean of the ranks' losses) and, after the last step, every table (gathered from the
// shards) and the dense weights must agree within rtol 1e-5 (atol 1e-7).
// Output: "PASS <plan>/<optimizer> rank=R world=W" or "FAIL <plan>/<optimizer> rank=R world=W:
// <what>"; exit 0 all passed, 1 a mismatch, 2 a set-up error.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "check_common.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/core/kjt.hpp"
#include "tzrec/planner/planner.hpp"
#include "tzrec/sharding/collective_plan.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"

namespace {

using tzrec::ShardingType;

struct Args {
  std::string device = "cpu";
  int steps = 3;
  std::int64_t global_batch = 12;
  int local_world_size = 0;  // 0: from the environment
  std::vector<std::string> plans = {"data_parallel", "table_wise",     "column_wise",
                                    "row_wise",      "table_row_wise", "mixed"};
  std::vector<std::string> optimizers = {"sgd", "adagrad", "rowwise_adagrad", "adam"};
};

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("flag " + k + " needs a value");
      return argv[++i];
    };
    if (k == "--device")
      a.device = value();
    else if (k == "--steps")
      a.steps = std::stoi(value());
    else if (k == "--global-batch")
      a.global_batch = std::stoll(value());
    else if (k == "--local-world-size")
      a.local_world_size = std::stoi(value());
    else if (k == "--plans")
      a.plans = SplitCommas(value());
    else if (k == "--optimizers")
      a.optimizers = SplitCommas(value());
    else
      throw std::invalid_argument("unknown flag " + k);
  }
  return a;
}

std::vector<tzrec::EmbeddingBagConfig> Tables() {
  using tzrec::PoolingType;
  return {
      {"t_user", 1000, 16, {"user_id"}, PoolingType::kSum},
      {"t_shared", 37, 8, {"item_a", "item_b"}, PoolingType::kMean},
      {"t_wide", 300, 32, {"cat"}, PoolingType::kSum},
      {"t_small", 5, 4, {"tag"}, PoolingType::kSum},
  };
}

// Per-table constraints of a plan name.
tzrec::ParameterConstraints Constraint(const std::string& plan, const std::string& table) {
  tzrec::ParameterConstraints c;
  if (table == "t_wide") c.min_partition = 8;  // column_wise: 4 blocks of 8
  if (plan == "mixed") {
    if (table == "t_user") c.sharding_types = {ShardingType::kRowWise};
    if (table == "t_shared") c.sharding_types = {ShardingType::kDataParallel};
    if (table == "t_wide") c.sharding_types = {ShardingType::kColumnWise};
    if (table == "t_small") c.sharding_types = {ShardingType::kTableWise};
  } else {
    c.sharding_types = {tzrec::ParseShardingType(plan)};
  }
  return c;
}

// Global batch of step `step`: ids per feature with 0-3 ids per sample; weights on odd steps.
tzrec::KeyedJaggedTensor GlobalBatch(const std::vector<tzrec::EmbeddingBagConfig>& tables,
                                     std::int64_t batch, int step, at::Tensor* labels) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + static_cast<std::uint64_t>(step));
  std::vector<std::string> keys;
  std::vector<at::Tensor> lengths;
  std::vector<at::Tensor> values;
  for (const auto& t : tables) {
    for (const auto& f : t.feature_names) {
      keys.push_back(f);
      at::Tensor len = at::randint(0, 4, {batch}, gen, at::kLong);
      const std::int64_t n = len.sum().item<std::int64_t>();
      lengths.push_back(len);
      values.push_back(at::randint(0, t.num_embeddings, {n}, gen, at::kLong));
    }
  }
  at::Tensor v = at::cat(values);
  std::optional<at::Tensor> weights;
  if (step % 2 == 1) weights = at::rand({v.numel()}, gen) + 0.5;
  *labels = at::randint(0, 2, {batch}, gen, at::kLong).to(at::kFloat);
  return tzrec::KeyedJaggedTensor(keys, v, at::cat(lengths), weights);
}

struct Dense {
  at::Tensor w;  // [D, 1]
  at::Tensor b;  // [1]
  Dense(std::int64_t dim, const at::Device& device) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
    w = (at::rand({dim, 1}, gen) - 0.5).to(device).set_requires_grad(true);
    b = at::zeros({1}, at::TensorOptions().device(device)).set_requires_grad(true);
  }
  at::Tensor Loss(const at::Tensor& x, const at::Tensor& labels) const {
    return at::binary_cross_entropy_with_logits(at::matmul(x, w).view({-1}) + b, labels);
  }
  void Step(double lr) {
    c10::NoGradGuard g;
    w.sub_(w.grad() * lr);
    b.sub_(b.grad() * lr);
    w.mutable_grad().zero_();
    b.mutable_grad().zero_();
  }
};

tzrec::EmbeddingOptimizerConfig OptimizerConfig(const std::string& name) {
  tzrec::EmbeddingOptimizerConfig c;
  c.kind = tzrec::ParseEmbeddingOptimizerKind(name);
  c.lr = name == "sgd" ? 0.5 : 0.05;
  return c;
}

// "" when close, else a description of the largest difference.
std::string Compare(const std::string& what, const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.detach().to(at::kCPU).to(at::kDouble);
  const at::Tensor w = want.detach().to(at::kCPU).to(at::kDouble);
  if (g.sizes() != w.sizes()) {
    std::ostringstream o;
    o << what << ": shape " << g.sizes() << " != " << w.sizes();
    return o.str();
  }
  if (g.numel() == 0) return "";
  const at::Tensor excess = (g - w).abs() - (w.abs() * 1e-5 + 1e-7);
  const double worst = excess.max().item<double>();
  if (worst <= 0) return "";
  const std::int64_t i = excess.view({-1}).argmax().item<std::int64_t>();
  std::ostringstream o;
  o << what << ": element " << i << " is " << g.view({-1})[i].item<double>() << ", reference "
    << w.view({-1})[i].item<double>();
  return o.str();
}

// The reference: one unsharded EBC per table (a column-wise table's row-wise Adagrad keeps one
// accumulator per column block, as the shards do).
std::vector<tzrec::EmbeddingBagCollection> ReferenceEbcs(
    const std::vector<tzrec::EmbeddingBagConfig>& tables, const tzrec::ShardingPlan& plan,
    const tzrec::EmbeddingOptimizerConfig& ocfg, const at::Device& device) {
  std::vector<tzrec::EmbeddingBagCollection> reference;
  for (const auto& t : tables) {
    auto tcfg = ocfg;
    const auto& ps = plan.Get(t.name);
    if (ps.sharding_type == ShardingType::kColumnWise && ps.shards.size() > 1) {
      tcfg.rowwise_block_cols = ps.shards.front().cols;
    }
    reference.emplace_back(std::vector<tzrec::EmbeddingBagConfig>{t}, tcfg, 42, device);
  }
  return reference;
}

// One plan x optimizer: args.steps sharded steps against the unsharded reference on the global
// batch. Returns "" or the first mismatch; throws what the planner, the EBC or a collective throws.
std::string CheckOne(const Args& args, const std::shared_ptr<tzrec::Comm>& comm,
                     const tzrec::Topology& topo,
                     const std::vector<tzrec::EmbeddingBagConfig>& tables,
                     const std::string& plan_name, const std::string& opt_name) {
  const int rank = comm->Rank();
  const int world = comm->WorldSize();
  const at::Device device = comm->Device();
  const std::int64_t local_batch = args.global_batch / world;
  std::string problem;
  std::vector<tzrec::TableSpec> specs;
  for (const auto& t : tables)
    specs.push_back(tzrec::ToTableSpec(t, Constraint(plan_name, t.name)));
  const tzrec::ShardingPlan plan =
      tzrec_check::PlanForCheck(*comm, topo, specs, local_batch, opt_name);
  const auto ocfg = OptimizerConfig(opt_name);
  tzrec::ShardedEmbeddingBagCollection sharded(tables, plan, ocfg, 42, comm);
  std::vector<tzrec::EmbeddingBagCollection> reference = ReferenceEbcs(tables, plan, ocfg, device);
  std::int64_t dim = 0;
  for (const auto& t : tables)
    dim += t.embedding_dim * static_cast<std::int64_t>(t.feature_names.size());
  Dense dense(dim, device);
  Dense ref_dense(dim, device);
  tzrec::DenseSync sync(comm, {dense.w, dense.b});
  sync.BroadcastParameters(0);
  for (int step = 0; step < args.steps && problem.empty(); ++step) {
    at::Tensor labels;
    const tzrec::KeyedJaggedTensor global = GlobalBatch(tables, args.global_batch, step, &labels);
    const tzrec::KeyedJaggedTensor local = global.SliceBatch(rank * local_batch, local_batch);
    const at::Tensor local_labels = labels.narrow(0, rank * local_batch, local_batch).to(device);
    // Sharded step.
    const tzrec::KeyedTensor kt = sharded.Forward(local);
    at::Tensor loss = dense.Loss(kt.Values(), local_labels);
    loss.backward();
    sync.AllReduceGradients();
    dense.Step(0.1);
    at::Tensor global_loss = loss.detach().clone().view({1});
    comm->AllReduceSum(global_loss);
    global_loss = global_loss / static_cast<double>(world);
    // Reference step.
    std::vector<at::Tensor> ref_parts;
    const tzrec::KeyedJaggedTensor global_dev = global.To(device);
    for (auto& ebc : reference) ref_parts.push_back(ebc.Forward(global_dev).Values());
    const at::Tensor ref_values = at::cat(ref_parts, 1);
    at::Tensor ref_loss = ref_dense.Loss(ref_values, labels.to(device));
    ref_loss.backward();
    ref_dense.Step(0.1);
    const std::string s = std::to_string(step);
    problem = Compare("step " + s + " pooled output", kt.Values(),
                      ref_values.narrow(0, rank * local_batch, local_batch));
    if (problem.empty()) problem = Compare("step " + s + " loss", global_loss, ref_loss.view({1}));
  }
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const at::Tensor full = sharded.GatherTable(tables[i].name);
    if (problem.empty()) {
      problem = Compare("table " + tables[i].name + " after training", full,
                        reference[i].Weight(tables[i].name));
    }
  }
  if (problem.empty()) problem = Compare("dense weight", dense.w, ref_dense.w);
  return problem;
}

enum class CaseResult { kPassed, kFailed, kThrew };

// Runs one check and prints its PASS / FAIL line; an exception is a FAIL that ends the run.
template <typename Check>
CaseResult RunCase(const std::string& label, int rank, int world, Check&& check) {
  std::string problem;
  try {
    problem = check();
  } catch (const std::exception& e) {
    std::cerr << "tzrec_sharding_check: " << label << " rank " << rank << ": " << e.what() << '\n';
    std::cout << "FAIL " << label << " rank=" << rank << " world=" << world
              << ": threw (see stderr)" << std::endl;
    return CaseResult::kThrew;
  }
  std::cout << (problem.empty() ? "PASS " : "FAIL ") << label << " rank=" << rank
            << " world=" << world << (problem.empty() ? "" : ": " + problem) << std::endl;
  return problem.empty() ? CaseResult::kPassed : CaseResult::kFailed;
}

}  // namespace

namespace tzrec_check {
std::string Compare(const std::string& what, const at::Tensor& got, const at::Tensor& want) {
  return ::Compare(what, got, want);
}
tzrec::ShardingPlan PlanForCheck(tzrec::Comm& comm, const tzrec::Topology& topo,
                                 const std::vector<tzrec::TableSpec>& specs,
                                 std::int64_t local_batch, const std::string& opt_name) {
  tzrec::PlannerOptions popts;
  popts.batch_size = local_batch;
  popts.optimizer = tzrec::ParseEmbeddingOptimizerKind(opt_name);
  return tzrec::CollectivePlan(comm, topo, specs, popts);
}
}  // namespace tzrec_check

int main(int argc, char** argv) {
  Args args;
  std::shared_ptr<tzrec::Comm> comm;
  try {
    args = ParseArgs(argc, argv);
    tzrec::DistEnv env = tzrec::DistEnv::FromEnvironment();
    if (args.local_world_size > 0) env.local_world_size = args.local_world_size;
    comm = tzrec::Comm::Init(
        env, args.device == "cuda" ? tzrec::BackendKind::kNccl : tzrec::BackendKind::kGloo);
  } catch (const std::exception& e) {
    std::cerr << "tzrec_sharding_check: set-up failed: " << e.what() << '\n';
    return 2;
  }
  const int rank = comm->Rank();
  const int world = comm->WorldSize();
  if (args.global_batch % world != 0) {
    std::cerr << "tzrec_sharding_check: --global-batch " << args.global_batch
              << " is not divisible by the world size " << world << '\n';
    return 2;
  }
  const auto tables = Tables();
  tzrec::Topology topo;
  topo.world_size = world;
  topo.local_world_size =
      args.local_world_size > 0 ? args.local_world_size : comm->LocalWorldSize();
  topo.device = args.device == "cuda" ? tzrec::ComputeDevice::kCuda : tzrec::ComputeDevice::kCpu;
  if (topo.device == tzrec::ComputeDevice::kCuda) topo.hbm_cap = 8LL << 30;
  topo.ddr_cap = 8LL << 30;

  bool failed = false;
  for (const std::string& plan_name : args.plans) {
    for (const std::string& opt_name : args.optimizers) {
      const CaseResult result = RunCase(plan_name + "/" + opt_name, rank, world, [&] {
        return CheckOne(args, comm, topo, tables, plan_name, opt_name);
      });
      if (result == CaseResult::kThrew) return 2;
      failed = failed || result == CaseResult::kFailed;
    }
  }
  for (const char* plan_name :
       {"data_parallel", "table_wise", "column_wise", "row_wise", "mixed"}) {
    for (const char* opt_name : {"sgd", "rowwise_adagrad"}) {
      const std::string label = std::string("ec/") + plan_name + "/" + opt_name;
      const CaseResult result = RunCase(label, rank, world, [&] {
        return tzrec_check::CheckEc(comm, topo, args.global_batch, args.steps, plan_name, opt_name);
      });
      if (result == CaseResult::kThrew) return 2;
      failed = failed || result == CaseResult::kFailed;
    }
  }
  return failed ? 1 : 0;
}
