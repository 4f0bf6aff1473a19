// tzrec_ebc_bench — forward+backward throughput of the sharded EmbeddingBagCollection.
//
//   tzrun --standalone --nproc-per-node=2 --no-python build/bin/tzrec_ebc_bench
//       --tables tables.json [--batch 4096] [--iters 20] [--warmup 3] [--sharding table_wise]
//       [--optimizer rowwise_adagrad]
// tables.json: {"tables":[{"name","num_embeddings","embedding_dim","feature_names"}...]}
// (tables.py). Each step: a random KJT (one id per feature per sample, uniform ids), Forward, loss
// = sum of the pooled output, backward (output-dist backward + fused optimizer). Rank 0 prints one
// JSON line:
// {"impl":"tzrec","world":W,"batch":B,"iters":N,"seconds":..,"lookups_per_s":..,"gb_per_s":..}
// lookups = ids of all ranks per second; bytes = lookups*dim*4*3 (forward read, backward
// read-modify-write) + lookups*4*2 (row-wise Adagrad state read+write) — the same definition as
// torchrec_ebc.py.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <malloc.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/core/embedding.hpp"
#include "tzrec/sharding/collective_plan.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"

namespace {

struct BenchArgs {
  std::string tables_path;
  std::int64_t batch = 4096;
  int iters = 20;
  int warmup = 3;
  std::string sharding = "table_wise";
  std::string optimizer = "rowwise_adagrad";
};

// false (after printing the flag) on an unknown flag.
bool ParseArgs(int argc, char** argv, BenchArgs* args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--tables")
      args->tables_path = v;
    else if (k == "--batch")
      args->batch = std::stoll(v);
    else if (k == "--iters")
      args->iters = std::stoi(v);
    else if (k == "--warmup")
      args->warmup = std::stoi(v);
    else if (k == "--sharding")
      args->sharding = v;
    else if (k == "--optimizer")
      args->optimizer = v;
    else {
      std::cerr << "tzrec_ebc_bench: unknown flag " << k << '\n';
      return false;
    }
  }
  return true;
}

std::vector<tzrec::EmbeddingBagConfig> ReadTables(const std::string& tables_path) {
  std::ifstream in(tables_path);
  if (!in) throw std::runtime_error("cannot read --tables '" + tables_path + "'");
  const auto doc = nlohmann::json::parse(in);
  std::vector<tzrec::EmbeddingBagConfig> tables;
  for (const auto& t : doc.at("tables")) {
    tzrec::EmbeddingBagConfig c;
    c.name = t.at("name").get<std::string>();
    c.num_embeddings = t.at("num_embeddings").get<std::int64_t>();
    c.embedding_dim = t.at("embedding_dim").get<std::int64_t>();
    c.feature_names = t.at("feature_names").get<std::vector<std::string>>();
    tables.push_back(c);
  }
  return tables;
}

tzrec::ShardingPlan PlanTables(tzrec::Comm& comm,
                               const std::vector<tzrec::EmbeddingBagConfig>& tables,
                               const BenchArgs& args) {
  tzrec::Topology topo;
  topo.world_size = comm.WorldSize();
  topo.local_world_size = comm.LocalWorldSize();
  std::vector<tzrec::TableSpec> specs;
  tzrec::ParameterConstraints cons;
  cons.sharding_types = {tzrec::ParseShardingType(args.sharding)};
  for (const auto& t : tables) specs.push_back(tzrec::ToTableSpec(t, cons));
  tzrec::PlannerOptions popts;
  popts.batch_size = args.batch;
  popts.optimizer = tzrec::ParseEmbeddingOptimizerKind(args.optimizer);
  return tzrec::CollectivePlan(comm, topo, specs, popts);
}

// The features of all tables in order: their keys, the rows of their table, the sum of dims.
struct Features {
  std::vector<std::string> keys;
  std::vector<std::int64_t> rows;
  std::int64_t dim_sum = 0;
};

Features FeaturesOf(const std::vector<tzrec::EmbeddingBagConfig>& tables) {
  Features out;
  for (const auto& t : tables) {
    for (const auto& f : t.feature_names) {
      out.keys.push_back(f);
      out.rows.push_back(t.num_embeddings);
      out.dim_sum += t.embedding_dim;
    }
  }
  return out;
}

// Four random KJTs: one uniform id per feature per sample, seeded by the rank.
std::vector<tzrec::KeyedJaggedTensor> RandomBatches(const Features& features, std::int64_t batch,
                                                    int rank) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + static_cast<std::uint64_t>(rank));
  auto make_batch = [&]() {
    std::vector<at::Tensor> values;
    for (std::int64_t r : features.rows) {
      values.push_back(at::randint(0, r, {batch}, gen, at::kLong));
    }
    return tzrec::KeyedJaggedTensor(
        features.keys, at::cat(values),
        at::ones({static_cast<std::int64_t>(features.keys.size()) * batch}, at::kLong));
  };
  std::vector<tzrec::KeyedJaggedTensor> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(make_batch());
  return batches;
}

void RunBench(const BenchArgs& args) {
  const auto tables = ReadTables(args.tables_path);
  auto comm = tzrec::Comm::Init(tzrec::DistEnv::FromEnvironment());
  const auto plan = PlanTables(*comm, tables, args);
  tzrec::EmbeddingOptimizerConfig ocfg;
  ocfg.kind = tzrec::ParseEmbeddingOptimizerKind(args.optimizer);
  tzrec::ShardedEmbeddingBagCollection ebc(tables, plan, ocfg, 1, comm);

  const Features features = FeaturesOf(tables);
  const auto batches = RandomBatches(features, args.batch, comm->Rank());
  auto step = [&](int i) {
    const tzrec::KeyedTensor kt =
        ebc.Forward(batches[static_cast<std::size_t>(i) % batches.size()]);
    kt.Values().sum().backward();
  };
  for (int i = 0; i < args.warmup; ++i) step(i);
  comm->Barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iters; ++i) step(i);
  comm->Barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double n_keys = static_cast<double>(features.keys.size());
  const double lookups =
      n_keys * static_cast<double>(args.batch) * comm->WorldSize() * args.iters / seconds;
  const double avg_dim = static_cast<double>(features.dim_sum) / n_keys;
  const double bytes = lookups * avg_dim * 4 * 3 + lookups * 4 * 2;
  if (comm->Rank() == 0) {
    nlohmann::json out = {{"impl", "tzrec"},           {"world", comm->WorldSize()},
                          {"batch", args.batch},       {"iters", args.iters},
                          {"sharding", args.sharding}, {"seconds", seconds},
                          {"lookups_per_s", lookups},  {"gb_per_s", bytes / 1e9}};
    std::cout << out.dump() << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Large step temporaries stay in the heap instead of mmap/munmap + page faults per step.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  BenchArgs args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  try {
    RunBench(args);
  } catch (const std::exception& e) {
    std::cerr << "tzrec_ebc_bench: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
