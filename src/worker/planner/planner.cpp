// TorchRec-style sharding planner: shard math, perf/storage estimates, storage reservation,
// proposers and the greedy partitioner (notes: shared/reference/torchrec-sharding.md §2.5–2.9).
//
// Search: every table gets one ShardingOption per allowed sharding type. Proposals, in order:
//   1. greedy: every table at its lowest-perf option; while partitioning fails, move the table
//      whose current option has the largest max-shard storage to its next (by perf) option with a
//      smaller max-shard storage;
//   2. uniform: every table the same type, for each type all tables allow;
//   3. min-storage: every table at its option with the smallest max-shard storage;
//   4. exhaustive: every combination, when there are at most kExhaustiveLimit of them.
// Each proposal is partitioned (GreedyPerfPartitioner) and rated by the max over ranks of the
// summed shard perf (ties: smaller total perf, then the earlier proposal). Everything is
// deterministic.
#include "tzrec/planner/planner.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tzrec {
namespace {

// planner/constants.py
constexpr double kBigIntBytes = 8.0;  // BIGINT_DTYPE: id bytes
constexpr double kOutputBytes = 4.0;  // fp32 pooled outputs and their a2a/reduce-scatter
constexpr double kBwdComputeMultiplier = 2.0;
constexpr double kBatchedCopyPerfFactor = 2.455;
constexpr double kDpElementwiseKernelsPerfFactor = 9.22;
constexpr std::int64_t kFullBlockEmbDim = 128;
constexpr double kHalfBlockPenalty = 1.15;
constexpr double kQuarterBlockPenalty = 1.75;
constexpr std::int64_t kMinCwDim = 128;
constexpr std::int64_t kMinLookupDim = 32;  // TW/CW lookup reads at least 32 columns
constexpr std::int64_t kDenseReservationMultiplier = 6;
constexpr std::int64_t kKjtReservationMultiplier = 20;
constexpr std::size_t kExhaustiveLimit = 4096;

enum class Collective { kAllToAll, kReduceScatter, kAllGather, kAllReduce };

bool IsUniform(ShardingType type) {
  return type == ShardingType::kDataParallel || type == ShardingType::kRowWise;
}

std::string JoinTypes(const std::vector<ShardingType>& types) {
  std::string out;
  for (ShardingType type : types) {
    if (!out.empty()) out += ", ";
    out += ToString(type);
  }
  return out;
}

const std::vector<ShardingType>& AllowedTypes(const TableSpec& table) {
  return table.constraints.sharding_types.empty() ? AllShardingTypes()
                                                  : table.constraints.sharding_types;
}

void ValidateTable(const TableSpec& table) {
  const std::string where = "table '" + table.name + "'";
  if (table.name.empty()) {
    throw std::invalid_argument("a table has an empty name: give every table a unique name");
  }
  if (table.num_embeddings <= 0) {
    throw std::invalid_argument(where + ": num_embeddings is " +
                                std::to_string(table.num_embeddings) + "; it must be > 0");
  }
  if (table.embedding_dim <= 0) {
    throw std::invalid_argument(where + ": embedding_dim is " +
                                std::to_string(table.embedding_dim) + "; it must be > 0");
  }
  if (table.element_bytes <= 0) {
    throw std::invalid_argument(where + ": element_bytes is " +
                                std::to_string(table.element_bytes) +
                                "; it must be > 0 (4 = fp32)");
  }
  if (table.feature_names.empty()) {
    throw std::invalid_argument(where + " has no feature_names; list the features pooled from it");
  }
  const auto& pf = table.constraints.pooling_factors;
  if (!pf.empty() && pf.size() != table.feature_names.size()) {
    throw std::invalid_argument(
        where + " has " + std::to_string(pf.size()) + " pooling factors for " +
        std::to_string(table.feature_names.size()) + " features; give one per feature or none");
  }
  for (double factor : pf) {
    if (!std::isfinite(factor) || factor < 0) {
      throw std::invalid_argument(where + ": pooling factor " + std::to_string(factor) +
                                  " is invalid; it must be a finite number >= 0");
    }
  }
  if (table.constraints.min_partition && *table.constraints.min_partition <= 0) {
    throw std::invalid_argument(where + ": min_partition is " +
                                std::to_string(*table.constraints.min_partition) +
                                "; it must be > 0");
  }
  for (ShardingType type : table.constraints.sharding_types) {
    const int value = static_cast<int>(type);
    if (value < 0 || value > static_cast<int>(ShardingType::kTableRowWise)) {
      throw std::invalid_argument(where + ": a constraint names unknown sharding type " +
                                  std::to_string(value) +
                                  "; valid: " + JoinTypes(AllShardingTypes()));
    }
  }
}

void ValidateTables(const std::vector<TableSpec>& tables) {
  std::unordered_set<std::string> names;
  for (const TableSpec& table : tables) {
    ValidateTable(table);
    if (!names.insert(table.name).second) {
      throw std::invalid_argument("duplicate table name '" + table.name +
                                  "': table names must be unique");
    }
  }
}

void ValidateOptions(const PlannerOptions& options) {
  if (options.batch_size <= 0) {
    throw std::invalid_argument("batch_size is " + std::to_string(options.batch_size) +
                                "; the per-rank batch must be > 0");
  }
  if (options.dense_parameter_bytes < 0) {
    throw std::invalid_argument("dense_parameter_bytes is " +
                                std::to_string(options.dense_parameter_bytes) +
                                "; it must be >= 0");
  }
}

// Shard sizes and offsets without placement (TW/CW on rank 0).
std::vector<Shard> ShardSizes(const TableSpec& table, ShardingType type, const Topology& topo,
                              int host) {
  const std::int64_t rows = table.num_embeddings;
  const std::int64_t dim = table.embedding_dim;
  std::vector<Shard> shards;
  auto row_blocks = [&](int parts, int first_rank) {
    const std::int64_t block = (rows + parts - 1) / parts;
    for (int i = 0; i < parts; ++i) {
      Shard shard;
      shard.row_offset = std::min<std::int64_t>(block * i, rows);
      shard.rows = std::clamp<std::int64_t>(rows - block * i, 0, block);
      shard.cols = dim;
      shard.rank = first_rank + i;
      shards.push_back(shard);
    }
  };
  switch (type) {
    case ShardingType::kDataParallel:
      for (int r = 0; r < topo.world_size; ++r) {
        Shard shard;
        shard.rows = rows;
        shard.cols = dim;
        shard.rank = r;
        shards.push_back(shard);
      }
      break;
    case ShardingType::kTableWise: {
      Shard shard;
      shard.rows = rows;
      shard.cols = dim;
      shards.push_back(shard);
      break;
    }
    case ShardingType::kColumnWise: {
      const std::int64_t block = ColumnWiseBlock(table);
      for (std::int64_t col = 0; col < dim; col += block) {
        Shard shard;
        shard.col_offset = col;
        shard.rows = rows;
        shard.cols = std::min(block, dim - col);
        shards.push_back(shard);
      }
      break;
    }
    case ShardingType::kRowWise:
      row_blocks(topo.world_size, 0);
      break;
    case ShardingType::kTableRowWise:
      if (host < 0 || host >= topo.num_hosts()) {
        throw std::invalid_argument("table '" + table.name + "': host " + std::to_string(host) +
                                    " is out of range; there are " +
                                    std::to_string(topo.num_hosts()) + " hosts");
      }
      row_blocks(topo.local_world_size, host * topo.local_world_size);
      break;
  }
  return shards;
}

void PlaceShards(const TableSpec& table, ShardingType type, const Topology& topo,
                 const std::vector<int>& ranks, std::vector<Shard>& shards) {
  if (type != ShardingType::kTableWise && type != ShardingType::kColumnWise) return;
  if (ranks.size() != shards.size()) {
    throw std::invalid_argument("table '" + table.name + "': " + std::string(ToString(type)) +
                                " has " + std::to_string(shards.size()) + " shard(s) but " +
                                std::to_string(ranks.size()) +
                                " rank(s) were given; pass one rank per shard");
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= topo.world_size) {
      throw std::invalid_argument("table '" + table.name + "': rank " + std::to_string(ranks[i]) +
                                  " is outside the world of " + std::to_string(topo.world_size) +
                                  " ranks");
    }
    shards[i].rank = ranks[i];
  }
}

// Σ_f L_f·B (ids per rank) and Σ_f B (pooled outputs per rank).
struct Workload {
  double inputs = 0;
  double outputs = 0;
};

Workload TableWorkload(const TableSpec& table, const PlannerOptions& options) {
  Workload work;
  const double batch = static_cast<double>(options.batch_size);
  for (std::size_t f = 0; f < table.feature_names.size(); ++f) {
    const double pooling =
        table.constraints.pooling_factors.empty() ? 1.0 : table.constraints.pooling_factors[f];
    work.inputs += pooling * 1.0 * batch;  // L_f · P_f · B_f, P_f = NUM_POOLINGS = 1
    work.outputs += 1.0 * batch;           // P_f · B_f (pooled)
  }
  return work;
}

// kernel_bw_lookup: dense (data_parallel) 0.5×, fused 1× of the device memory bandwidth.
double DeviceBandwidth(const Topology& topo, ShardingType type) {
  const double bw = topo.device == ComputeDevice::kCuda ? topo.hbm_mem_bw : topo.ddr_mem_bw;
  return type == ShardingType::kDataParallel ? 0.5 * bw : bw;
}

// BasicCommsBandwidths.get_bw.
double CommBandwidth(const Topology& topo, int world_size, int local_world_size,
                     Collective collective) {
  if (collective == Collective::kAllReduce) return topo.inter_host_bw * local_world_size;
  return world_size <= local_world_size ? topo.intra_host_bw : topo.inter_host_bw;
}

double ShardPerf(const TableSpec& table, ShardingType type, const Topology& topo,
                 const Workload& work, std::int64_t shard_rows, std::int64_t shard_cols) {
  const double world = topo.world_size;
  const double local = topo.local_world_size;
  const double dim = static_cast<double>(shard_cols);
  const double table_bytes = table.element_bytes;
  const double device_bw = DeviceBandwidth(topo, type);
  const double inputs = work.inputs;
  const double outputs = work.outputs;
  switch (type) {
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise: {
      const double input_read = std::ceil(inputs * world * kBigIntBytes);
      const double lookup =
          inputs * world * static_cast<double>(std::max(shard_cols, kMinLookupDim)) * table_bytes;
      const double output_write = outputs * world * dim * kOutputBytes;
      double penalty = 1.0;
      if (shard_cols < kFullBlockEmbDim) {
        penalty = shard_cols >= 64 ? kHalfBlockPenalty : kQuarterBlockPenalty;
      }
      const double a2a_bw =
          CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllToAll);
      const double fwd_comms = output_write / a2a_bw;
      const double fwd_compute = (input_read + lookup + output_write) * penalty / device_bw;
      const double bwd_comms = output_write / a2a_bw;
      const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
      return fwd_compute + fwd_comms + bwd_compute + bwd_comms;
    }
    case ShardingType::kRowWise: {
      const double per_rank_inputs = inputs / world;
      const double input_read = std::ceil(per_rank_inputs * world * kBigIntBytes);
      const double lookup = per_rank_inputs * world * dim * table_bytes;
      const double output_write = outputs * world * dim * kOutputBytes;
      const double fwd_comms =
          output_write /
          CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kReduceScatter);
      const double fwd_compute = (input_read + lookup + output_write) / device_bw;
      const double bwd_comms =
          output_write /
          CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllGather);
      const double bwd_batched_copy = output_write * kBatchedCopyPerfFactor / device_bw;
      const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
      return fwd_compute + fwd_comms + bwd_compute + bwd_comms + bwd_batched_copy;
    }
    case ShardingType::kTableRowWise: {
      const double per_rank_inputs = inputs / local;
      const double input_read = std::ceil(per_rank_inputs * world * kBigIntBytes);
      const double lookup = per_rank_inputs * world * dim * table_bytes;
      const double output_write = outputs * world * dim * kOutputBytes;
      const double intra_bw = CommBandwidth(topo, topo.local_world_size, topo.local_world_size,
                                            Collective::kReduceScatter);
      double fwd_comms = output_write / intra_bw;
      double bwd_comms = output_write / intra_bw;
      if (topo.world_size > topo.local_world_size) {
        const double cross =
            outputs * (world / local) * dim * kOutputBytes /
            CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllToAll);
        fwd_comms += cross;
        bwd_comms += cross;
      }
      const double fwd_compute = (input_read + lookup + output_write) / device_bw;
      const double bwd_batched_copy = output_write * kBatchedCopyPerfFactor / device_bw;
      const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
      return fwd_compute + fwd_comms + bwd_compute + bwd_comms + bwd_batched_copy;
    }
    case ShardingType::kDataParallel: {
      const double input_read = std::ceil(inputs * kBigIntBytes);
      const double lookup = inputs * dim * table_bytes;
      const double output_write = outputs * dim * table_bytes;
      const double tensor = static_cast<double>(shard_rows) * dim * table_bytes;
      const double fwd_compute = (input_read + lookup + output_write) / device_bw;
      const double nodes = std::min(world / local, 2.0);
      double all_reduce =
          tensor * (2 * nodes - 1) / nodes /
          CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllReduce);
      if (topo.world_size > 2 * topo.local_world_size) all_reduce *= 2;
      const double optimizer_kernels = tensor * kDpElementwiseKernelsPerfFactor / device_bw;
      const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
      return fwd_compute + bwd_compute + all_reduce + optimizer_kernels;
    }
  }
  return 0;
}

double OptimizerMultiplier(EmbeddingOptimizerKind kind, std::int64_t dim) {
  switch (kind) {
    case EmbeddingOptimizerKind::kSgd:
      return 0.0;
    case EmbeddingOptimizerKind::kAdam:
      return 2.0;
    case EmbeddingOptimizerKind::kRowWiseAdagrad:
      return 1.0 / static_cast<double>(dim);
    case EmbeddingOptimizerKind::kAdagrad:
      return 1.0;
  }
  return 1.0;
}

// calculate_shard_storages (PipelineType.NONE): tensor + optimizer + input + output bytes.
std::int64_t ShardStorage(const TableSpec& table, ShardingType type, const Topology& topo,
                          const PlannerOptions& options, const Workload& work,
                          std::int64_t shard_rows, std::int64_t shard_cols) {
  const double world = topo.world_size;
  const double local = topo.local_world_size;
  const std::int64_t tensor = shard_rows * shard_cols * table.element_bytes;
  const auto optimizer = static_cast<std::int64_t>(std::ceil(
      static_cast<double>(tensor) * OptimizerMultiplier(options.optimizer, table.embedding_dim)));
  const bool empty = shard_rows * shard_cols == 0;
  double input = 0;
  double output = 0;
  switch (type) {
    case ShardingType::kDataParallel:
      input = std::ceil(work.inputs * kBigIntBytes);
      output = std::ceil(work.outputs * static_cast<double>(shard_cols) * kOutputBytes);
      break;
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise:
      input = std::ceil(work.inputs * world * kBigIntBytes);
      output = std::ceil(work.outputs * world * static_cast<double>(shard_cols) * kOutputBytes);
      break;
    case ShardingType::kRowWise:
      if (!empty) {
        input = std::ceil(work.inputs / world * world * kBigIntBytes);
        output = std::ceil(work.outputs * world * static_cast<double>(shard_cols) * kOutputBytes);
      }
      break;
    case ShardingType::kTableRowWise:
      if (!empty) {
        input = std::ceil(work.inputs / local * world * kBigIntBytes);
        output = std::ceil(work.outputs * world * static_cast<double>(shard_cols) * kOutputBytes);
      }
      break;
  }
  return tensor + optimizer + static_cast<std::int64_t>(input) + static_cast<std::int64_t>(output);
}

void FillEstimates(const TableSpec& table, ShardingType type, const Topology& topo,
                   const PlannerOptions& options, std::vector<Shard>& shards) {
  const Workload work = TableWorkload(table, options);
  for (Shard& shard : shards) {
    shard.perf_ms = ShardPerf(table, type, topo, work, shard.rows, shard.cols);
    const std::int64_t bytes =
        ShardStorage(table, type, topo, options, work, shard.rows, shard.cols);
    if (topo.device == ComputeDevice::kCuda) {
      shard.hbm_bytes = bytes;
      shard.ddr_bytes = 0;
    } else {
      shard.hbm_bytes = 0;
      shard.ddr_bytes = bytes;
    }
  }
}

// One ShardingOption: a table with a type, its shard sizes and estimates (placement open).
struct Option {
  ShardingType type = ShardingType::kTableWise;
  std::vector<Shard> shards;
  double total_perf = 0;
  std::int64_t total_storage = 0;
  std::int64_t max_shard_storage = 0;
};

Option MakeOption(const TableSpec& table, ShardingType type, const Topology& topo,
                  const PlannerOptions& options) {
  Option option;
  option.type = type;
  option.shards = ShardSizes(table, type, topo, 0);
  FillEstimates(table, type, topo, options, option.shards);
  for (const Shard& shard : option.shards) {
    const std::int64_t bytes = shard.hbm_bytes + shard.ddr_bytes;
    option.total_perf += shard.perf_ms;
    option.total_storage += bytes;
    option.max_shard_storage = std::max(option.max_shard_storage, bytes);
  }
  return option;
}

// Options of one table sorted by total perf (ties: type order).
std::vector<Option> TableOptions(const TableSpec& table, const std::vector<ShardingType>& types,
                                 const Topology& topo, const PlannerOptions& options) {
  std::vector<Option> result;
  std::set<ShardingType> seen;
  for (ShardingType type : types) {
    if (seen.insert(type).second) result.push_back(MakeOption(table, type, topo, options));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const Option& a, const Option& b) { return a.total_perf < b.total_perf; });
  return result;
}

struct RankState {
  std::int64_t hbm = 0;
  std::int64_t ddr = 0;
  double perf = 0;
};

std::int64_t Deficit(const Shard& shard, const RankState& rank) {
  return std::max<std::int64_t>(0, shard.hbm_bytes - rank.hbm) +
         std::max<std::int64_t>(0, shard.ddr_bytes - rank.ddr);
}

// Free bytes of `rank` in the memory `shard` lives in (HBM on CUDA, DDR on CPU).
std::int64_t FreeBytes(const Shard& shard, const RankState& rank) {
  return shard.hbm_bytes > 0 ? rank.hbm : rank.ddr;
}

void Take(const Shard& shard, RankState& rank) {
  rank.hbm -= shard.hbm_bytes;
  rank.ddr -= shard.ddr_bytes;
  rank.perf += shard.perf_ms;
}

struct Failure {
  std::size_t table = 0;
  std::int64_t shard_bytes = 0;  // the shard that found no rank
  std::int64_t free_bytes = 0;   // free bytes of the best candidate rank at that moment
  std::int64_t missing = 0;      // shard_bytes − free_bytes (> 0)
};

struct Partitioned {
  bool ok = false;
  std::vector<std::vector<Shard>> shards;  // per table, placed
  std::vector<RankState> ranks;
  Failure failure;
  double rating = 0;      // max over ranks of Σ perf
  double total_perf = 0;  // Σ over ranks
};

// GreedyPerfPartitioner over one proposal (one option per table).
Partitioned Partition(const std::vector<const Option*>& proposal, const Topology& topo,
                      const StorageCapacity& capacity) {
  Partitioned out;
  out.ranks.assign(static_cast<std::size_t>(topo.world_size),
                   RankState{capacity.hbm, capacity.ddr, 0.0});
  out.shards.resize(proposal.size());
  for (std::size_t t = 0; t < proposal.size(); ++t) out.shards[t] = proposal[t]->shards;
  auto fail = [&](std::size_t table, const Shard& shard, std::int64_t missing,
                  std::int64_t free_bytes) {
    out.ok = false;
    out.failure.table = table;
    out.failure.shard_bytes = shard.hbm_bytes + shard.ddr_bytes;
    out.failure.free_bytes = free_bytes;
    out.failure.missing = std::max<std::int64_t>(1, missing);
    return out;
  };

  // 1. Uniform options (data_parallel, row_wise): shard i on rank i.
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    if (!IsUniform(proposal[t]->type)) continue;
    for (Shard& shard : out.shards[t]) {
      RankState& rank = out.ranks[static_cast<std::size_t>(shard.rank)];
      const std::int64_t deficit = Deficit(shard, rank);
      if (deficit > 0) return fail(t, shard, deficit, FreeBytes(shard, rank));
      Take(shard, rank);
    }
  }

  // Larger options first (stable: table order on ties).
  auto by_storage_desc = [&](std::vector<std::size_t>& order) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return proposal[a]->total_storage > proposal[b]->total_storage;
    });
  };

  // 2. Host-level options (table_row_wise): the least-loaded host whose ranks all have room.
  std::vector<std::size_t> host_level;
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    if (proposal[t]->type == ShardingType::kTableRowWise) host_level.push_back(t);
  }
  by_storage_desc(host_level);
  const int hosts = topo.num_hosts();
  const int local = topo.local_world_size;
  for (std::size_t t : host_level) {
    std::vector<int> order(static_cast<std::size_t>(hosts));
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> host_perf(static_cast<std::size_t>(hosts), 0.0);
    for (int h = 0; h < hosts; ++h) {
      for (int i = 0; i < local; ++i) {
        host_perf[static_cast<std::size_t>(h)] +=
            out.ranks[static_cast<std::size_t>(h * local + i)].perf;
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return host_perf[static_cast<std::size_t>(a)] < host_perf[static_cast<std::size_t>(b)];
    });
    std::vector<Shard>& shards = out.shards[t];
    int chosen = -1;
    std::int64_t best_missing = std::numeric_limits<std::int64_t>::max();
    std::size_t worst_shard = 0;
    std::int64_t worst_free = 0;
    for (int h : order) {
      std::int64_t missing = 0;
      std::size_t host_worst = 0;
      for (std::size_t i = 0; i < shards.size(); ++i) {
        const std::int64_t deficit =
            Deficit(shards[i], out.ranks[static_cast<std::size_t>(h * local) + i]);
        if (deficit > missing) {
          missing = deficit;
          host_worst = i;
        }
      }
      if (missing == 0) {
        chosen = h;
        break;
      }
      if (missing < best_missing) {
        best_missing = missing;
        worst_shard = host_worst;
        worst_free = FreeBytes(shards[host_worst],
                               out.ranks[static_cast<std::size_t>(h * local) + host_worst]);
      }
    }
    if (chosen < 0) return fail(t, shards[worst_shard], best_missing, worst_free);
    for (std::size_t i = 0; i < shards.size(); ++i) {
      shards[i].rank = chosen * local + static_cast<int>(i);
      Take(shards[i], out.ranks[static_cast<std::size_t>(shards[i].rank)]);
    }
  }

  // 3. Device-level shards (table_wise, column_wise blocks): largest first, each to the rank with
  //    the least accumulated perf (then lowest rank) that has room.
  struct Item {
    std::size_t table;
    std::size_t shard;
    std::int64_t bytes;
  };
  std::vector<Item> items;
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    const ShardingType type = proposal[t]->type;
    if (type != ShardingType::kTableWise && type != ShardingType::kColumnWise) continue;
    for (std::size_t s = 0; s < out.shards[t].size(); ++s) {
      const Shard& shard = out.shards[t][s];
      items.push_back({t, s, shard.hbm_bytes + shard.ddr_bytes});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  std::vector<int> rank_order(static_cast<std::size_t>(topo.world_size));
  for (const Item& item : items) {
    Shard& shard = out.shards[item.table][item.shard];
    std::iota(rank_order.begin(), rank_order.end(), 0);
    std::stable_sort(rank_order.begin(), rank_order.end(), [&](int a, int b) {
      return out.ranks[static_cast<std::size_t>(a)].perf <
             out.ranks[static_cast<std::size_t>(b)].perf;
    });
    int chosen = -1;
    std::int64_t best_missing = std::numeric_limits<std::int64_t>::max();
    std::int64_t best_free = 0;
    for (int r : rank_order) {
      const std::int64_t deficit = Deficit(shard, out.ranks[static_cast<std::size_t>(r)]);
      if (deficit == 0) {
        chosen = r;
        break;
      }
      if (deficit < best_missing) {
        best_missing = deficit;
        best_free = FreeBytes(shard, out.ranks[static_cast<std::size_t>(r)]);
      }
    }
    if (chosen < 0) return fail(item.table, shard, best_missing, best_free);
    shard.rank = chosen;
    Take(shard, out.ranks[static_cast<std::size_t>(chosen)]);
  }

  out.ok = true;
  for (const RankState& rank : out.ranks) {
    out.rating = std::max(out.rating, rank.perf);
    out.total_perf += rank.perf;
  }
  return out;
}

std::vector<const Option*> Pick(const std::vector<std::vector<Option>>& options,
                                const std::vector<std::size_t>& index) {
  std::vector<const Option*> proposal(options.size());
  for (std::size_t t = 0; t < options.size(); ++t) proposal[t] = &options[t][index[t]];
  return proposal;
}

// Index of the option with the smallest max-shard storage (ties: total storage, perf order).
std::size_t MinStorageIndex(const std::vector<Option>& options) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < options.size(); ++i) {
    const Option& a = options[i];
    const Option& b = options[best];
    if (a.max_shard_storage < b.max_shard_storage ||
        (a.max_shard_storage == b.max_shard_storage && a.total_storage < b.total_storage)) {
      best = i;
    }
  }
  return best;
}

std::string DescribeTable(const TableSpec& table) {
  std::string type = table.element_bytes == 4   ? "fp32"
                     : table.element_bytes == 2 ? "fp16"
                     : table.element_bytes == 8 ? "fp64"
                                                : std::to_string(table.element_bytes) + "-byte";
  return "table '" + table.name + "' (" + std::to_string(table.num_embeddings) + " x " +
         std::to_string(table.embedding_dim) + ", " + type + ")";
}

// The usual fixes for too little storage; the reserve percentage only shrinks HBM.
std::string StorageFixes(const Topology& topo) {
  return topo.device == ComputeDevice::kCuda
             ? "add ranks, raise the per-rank HBM capacity, or lower STORAGE_RESERVE_PERCENT"
             : "add ranks or raise the per-rank DDR capacity";
}

std::string ResourceName(const Topology& topo) {
  return topo.device == ComputeDevice::kCuda ? "HBM" : "DDR";
}

std::optional<double> ReadEnvDouble(const char* name) {
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(raw, &end);
  while (end != nullptr && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (errno != 0 || end == raw || (end != nullptr && *end != '\0') || !std::isfinite(value)) {
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + raw +
                                "' is not a number; unset it or give a plain number");
  }
  return value;
}

std::int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) {
    return static_cast<std::int64_t>(pages) * static_cast<std::int64_t>(page_size);
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return Topology::kDefaultDdrCap;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names

std::string_view ToString(ShardingType type) {
  switch (type) {
    case ShardingType::kDataParallel:
      return "data_parallel";
    case ShardingType::kTableWise:
      return "table_wise";
    case ShardingType::kColumnWise:
      return "column_wise";
    case ShardingType::kRowWise:
      return "row_wise";
    case ShardingType::kTableRowWise:
      return "table_row_wise";
  }
  return "unknown";
}

ShardingType ParseShardingType(std::string_view text) {
  for (ShardingType type : AllShardingTypes()) {
    if (ToString(type) == text) return type;
  }
  throw std::invalid_argument("unknown sharding type '" + std::string(text) +
                              "'; valid: " + JoinTypes(AllShardingTypes()));
}

const std::vector<ShardingType>& AllShardingTypes() {
  static const std::vector<ShardingType> kAll = {
      ShardingType::kDataParallel, ShardingType::kTableWise, ShardingType::kColumnWise,
      ShardingType::kRowWise, ShardingType::kTableRowWise};
  return kAll;
}

std::string_view ToString(ComputeDevice device) {
  return device == ComputeDevice::kCuda ? "cuda" : "cpu";
}

std::string_view ToString(EmbeddingOptimizerKind kind) {
  switch (kind) {
    case EmbeddingOptimizerKind::kSgd:
      return "sgd";
    case EmbeddingOptimizerKind::kAdagrad:
      return "adagrad";
    case EmbeddingOptimizerKind::kRowWiseAdagrad:
      return "rowwise_adagrad";
    case EmbeddingOptimizerKind::kAdam:
      return "adam";
  }
  return "unknown";
}

EmbeddingOptimizerKind ParseEmbeddingOptimizerKind(std::string_view text) {
  for (auto kind : {EmbeddingOptimizerKind::kSgd, EmbeddingOptimizerKind::kAdagrad,
                    EmbeddingOptimizerKind::kRowWiseAdagrad, EmbeddingOptimizerKind::kAdam}) {
    if (ToString(kind) == text) return kind;
  }
  throw std::invalid_argument("unknown embedding optimizer '" + std::string(text) +
                              "'; valid: sgd, adagrad, rowwise_adagrad, adam");
}

std::string FormatBytes(std::int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const bool negative = bytes < 0;
  double value = std::abs(static_cast<double>(bytes));
  if (value < 1024) return std::to_string(bytes) + " B";
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%s%.1f %s", negative ? "-" : "", value, kUnits[unit]);
  return buffer;
}

// ---------------------------------------------------------------------------------------------
// Topology

Topology Topology::FromEnvironment(int world_size, int local_world_size, ComputeDevice device,
                                   std::int64_t hbm_cap_bytes) {
  Topology topo;
  topo.world_size = world_size;
  topo.local_world_size = local_world_size;
  topo.device = device;
  if (local_world_size <= 0) {
    throw std::invalid_argument("local_world_size is " + std::to_string(local_world_size) +
                                "; it must be > 0 (LOCAL_WORLD_SIZE / --local-world-size)");
  }
  topo.hbm_cap = device == ComputeDevice::kCuda ? hbm_cap_bytes : 0;
  topo.ddr_cap = PhysicalMemoryBytes() / local_world_size;
  if (auto bw = ReadEnvDouble("INTRA_NODE_BANDWIDTH")) topo.intra_host_bw = *bw;
  if (auto bw = ReadEnvDouble("CROSS_NODE_BANDWIDTH")) topo.inter_host_bw = *bw;
  if (auto pct = ReadEnvDouble("STORAGE_RESERVE_PERCENT")) topo.storage_reserve_percent = *pct;
  topo.Validate();
  return topo;
}

void Topology::Validate() const {
  if (world_size <= 0) {
    throw std::invalid_argument("world_size is " + std::to_string(world_size) + "; it must be > 0");
  }
  if (local_world_size <= 0) {
    throw std::invalid_argument("local_world_size is " + std::to_string(local_world_size) +
                                "; it must be > 0");
  }
  if (world_size % local_world_size != 0) {
    throw std::invalid_argument(
        "world_size " + std::to_string(world_size) + " is not a multiple of local_world_size " +
        std::to_string(local_world_size) + "; every host must run the same number of ranks");
  }
  if (hbm_cap < 0 || ddr_cap < 0) {
    throw std::invalid_argument("negative storage capacity (hbm_cap " + std::to_string(hbm_cap) +
                                ", ddr_cap " + std::to_string(ddr_cap) + " bytes)");
  }
  if (device == ComputeDevice::kCuda && hbm_cap <= 0) {
    throw std::invalid_argument("hbm_cap is " + std::to_string(hbm_cap) +
                                " on a cuda topology; give the GPU memory per rank");
  }
  if (device == ComputeDevice::kCpu && ddr_cap <= 0) {
    throw std::invalid_argument("ddr_cap is " + std::to_string(ddr_cap) +
                                " on a cpu topology; give the host memory per rank");
  }
  const std::pair<const char*, double> bandwidths[] = {{"hbm_mem_bw", hbm_mem_bw},
                                                       {"ddr_mem_bw", ddr_mem_bw},
                                                       {"INTRA_NODE_BANDWIDTH", intra_host_bw},
                                                       {"CROSS_NODE_BANDWIDTH", inter_host_bw}};
  for (const auto& [name, value] : bandwidths) {
    if (!(value > 0) || !std::isfinite(value)) {
      throw std::invalid_argument(std::string(name) + " is " + std::to_string(value) +
                                  "; a bandwidth must be > 0 bytes/ms");
    }
  }
  if (!(storage_reserve_percent >= 0 && storage_reserve_percent < 1)) {
    throw std::invalid_argument("STORAGE_RESERVE_PERCENT is " +
                                std::to_string(storage_reserve_percent) +
                                "; it must be in [0, 1), e.g. 0.15");
  }
}

// ---------------------------------------------------------------------------------------------
// Shards and estimates

std::int64_t ColumnWiseBlock(const TableSpec& table) {
  const std::int64_t dim = table.embedding_dim;
  const std::int64_t lower = table.constraints.min_partition.value_or(kMinCwDim);
  for (std::int64_t block = std::max<std::int64_t>(lower, 1); block < dim; ++block) {
    if (dim % block == 0 && block % 4 == 0) return block;
  }
  return dim;
}

std::vector<Shard> CalculateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                   const std::vector<int>& ranks, int host) {
  ValidateTable(table);
  topo.Validate();
  std::vector<Shard> shards = ShardSizes(table, type, topo, host);
  PlaceShards(table, type, topo, ranks, shards);
  return shards;
}

std::vector<Shard> EstimateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                  const PlannerOptions& options, const std::vector<int>& ranks,
                                  int host) {
  ValidateTable(table);
  ValidateOptions(options);
  topo.Validate();
  std::vector<Shard> shards = ShardSizes(table, type, topo, host);
  if (!ranks.empty()) PlaceShards(table, type, topo, ranks, shards);
  FillEstimates(table, type, topo, options, shards);
  return shards;
}

StorageCapacity ReservedCapacity(const Topology& topo, const std::vector<TableSpec>& tables,
                                 const PlannerOptions& options) {
  topo.Validate();
  ValidateTables(tables);
  ValidateOptions(options);
  StorageCapacity capacity;
  const bool cuda = topo.device == ComputeDevice::kCuda;
  capacity.hbm = cuda ? static_cast<std::int64_t>((1.0 - topo.storage_reserve_percent) *
                                                  static_cast<double>(topo.hbm_cap))
                      : 0;
  capacity.ddr = topo.ddr_cap;
  double ids = 0;
  for (const TableSpec& table : tables) ids += TableWorkload(table, options).inputs;
  const std::int64_t kjt =
      static_cast<std::int64_t>(std::ceil(ids * kBigIntBytes)) * kKjtReservationMultiplier;
  const std::int64_t dense = kDenseReservationMultiplier * options.dense_parameter_bytes;
  std::int64_t& primary = cuda ? capacity.hbm : capacity.ddr;
  const std::int64_t before = primary;
  primary -= kjt + dense;
  if (primary < 0) {
    throw PlannerError(PlannerError::Kind::kInsufficientStorage, "", -primary,
                       "the storage reservation does not fit on one rank: " + ResourceName(topo) +
                           " " + FormatBytes(before) + " per rank" +
                           (cuda ? " (after the " +
                                       std::to_string(static_cast<int>(
                                           std::lround(topo.storage_reserve_percent * 100))) +
                                       "% STORAGE_RESERVE_PERCENT reserve)"
                                 : std::string()) +
                           " minus " + FormatBytes(dense) + " for dense parameters (6x) and " +
                           FormatBytes(kjt) + " for input batches leaves " + FormatBytes(primary) +
                           ": raise the per-rank capacity or lower the batch size" +
                           (cuda ? std::string(" or STORAGE_RESERVE_PERCENT") : std::string()));
  }
  return capacity;
}

// ---------------------------------------------------------------------------------------------
// Plan

ShardingPlan Plan(const Topology& topology, const std::vector<TableSpec>& tables,
                  const PlannerOptions& options) {
  topology.Validate();
  ValidateTables(tables);
  ValidateOptions(options);
  const StorageCapacity capacity = ReservedCapacity(topology, tables, options);

  ShardingPlan plan;
  plan.world_size = topology.world_size;
  plan.local_world_size = topology.local_world_size;
  if (tables.empty()) return plan;

  const std::size_t count = tables.size();
  std::vector<std::vector<Option>> options_by_table(count);
  for (std::size_t t = 0; t < count; ++t) {
    options_by_table[t] = TableOptions(tables[t], AllowedTypes(tables[t]), topology, options);
  }

  std::optional<Partitioned> best;
  std::vector<std::size_t> best_index;
  std::set<std::vector<std::size_t>> tried;
  auto evaluate = [&](const std::vector<std::size_t>& index) -> bool {
    if (!tried.insert(index).second) return false;
    Partitioned result = Partition(Pick(options_by_table, index), topology, capacity);
    if (!result.ok) return false;
    if (!best || result.rating < best->rating ||
        (result.rating == best->rating && result.total_perf < best->total_perf)) {
      best = std::move(result);
      best_index = index;
    }
    return true;
  };

  // 1. Greedy.
  {
    std::vector<std::size_t> index(count, 0);
    while (!evaluate(index)) {
      std::optional<std::size_t> move_table;
      std::size_t move_to = 0;
      std::int64_t largest = -1;
      for (std::size_t t = 0; t < count; ++t) {
        const auto& opts = options_by_table[t];
        const std::int64_t current = opts[index[t]].max_shard_storage;
        for (std::size_t j = index[t] + 1; j < opts.size(); ++j) {
          if (opts[j].max_shard_storage < current) {
            if (current > largest) {
              largest = current;
              move_table = t;
              move_to = j;
            }
            break;
          }
        }
      }
      if (!move_table) break;
      index[*move_table] = move_to;
    }
  }
  // 2. Uniform: the same type for every table, when all allow it.
  for (ShardingType type : AllShardingTypes()) {
    std::vector<std::size_t> index(count);
    bool allowed = true;
    for (std::size_t t = 0; t < count && allowed; ++t) {
      const auto& opts = options_by_table[t];
      auto it =
          std::find_if(opts.begin(), opts.end(), [&](const Option& o) { return o.type == type; });
      allowed = it != opts.end();
      if (allowed) index[t] = static_cast<std::size_t>(it - opts.begin());
    }
    if (allowed) evaluate(index);
  }
  // 3. Minimum storage.
  std::vector<std::size_t> min_storage(count);
  for (std::size_t t = 0; t < count; ++t) min_storage[t] = MinStorageIndex(options_by_table[t]);
  evaluate(min_storage);
  // 4. Exhaustive when small.
  std::size_t combinations = 1;
  for (const auto& opts : options_by_table) {
    combinations *= opts.size();
    if (combinations > kExhaustiveLimit) break;
  }
  if (combinations <= kExhaustiveLimit) {
    std::vector<std::size_t> index(count, 0);
    for (bool done = false; !done;) {
      evaluate(index);
      done = true;
      for (std::size_t t = count; t-- > 0;) {  // odometer, last table fastest
        if (++index[t] < options_by_table[t].size()) {
          done = false;
          break;
        }
        index[t] = 0;
      }
    }
  }

  if (best) {
    for (std::size_t t = 0; t < count; ++t) {
      const Option& option = options_by_table[t][best_index[t]];
      ParameterSharding sharding;
      sharding.table = tables[t].name;
      sharding.sharding_type = option.type;
      sharding.compute_kernel = option.type == ShardingType::kDataParallel ? "dense" : "fused";
      sharding.shards = best->shards[t];
      for (const Shard& shard : sharding.shards) {
        if (std::find(sharding.ranks.begin(), sharding.ranks.end(), shard.rank) ==
                sharding.ranks.end() ||
            option.type == ShardingType::kColumnWise) {
          sharding.ranks.push_back(shard.rank);
        }
      }
      plan.tables.push_back(std::move(sharding));
    }
    return plan;
  }

  // No feasible plan: find the table to blame.
  const std::string resource = ResourceName(topology);
  const std::int64_t rank_free =
      topology.device == ComputeDevice::kCuda ? capacity.hbm : capacity.ddr;
  const std::string per_rank_free = FormatBytes(rank_free);
  for (std::size_t t = 0; t < count; ++t) {
    // Each allowed option alone on an empty cluster.
    std::optional<Failure> allowed_best;
    for (const Option& option : options_by_table[t]) {
      std::vector<const Option*> alone = {&option};
      Partitioned result = Partition(alone, topology, capacity);
      if (result.ok) {
        allowed_best.reset();
        break;
      }
      if (!allowed_best || result.failure.missing < allowed_best->missing) {
        allowed_best = result.failure;
        allowed_best->table = t;
      }
    }
    if (!allowed_best) continue;
    std::vector<ShardingType> fitting;
    for (ShardingType type : AllShardingTypes()) {
      Option option = MakeOption(tables[t], type, topology, options);
      if (Partition({&option}, topology, capacity).ok) fitting.push_back(type);
    }
    const std::string needs = "needs " + FormatBytes(allowed_best->shard_bytes) + " of " +
                              resource + " on one rank but the best rank has " +
                              FormatBytes(allowed_best->free_bytes) + " free after reservation (" +
                              FormatBytes(allowed_best->missing) + " missing)";
    if (!fitting.empty()) {
      throw PlannerError(
          PlannerError::Kind::kStrictConstraints, tables[t].name, allowed_best->missing,
          DescribeTable(tables[t]) + " allows only " + JoinTypes(AllowedTypes(tables[t])) +
              " (sharding_types constraint), and with those it " + needs + ": allow " +
              JoinTypes(fitting) + " for it in its sharding_types constraint, or add ranks");
    }
    throw PlannerError(PlannerError::Kind::kInsufficientStorage, tables[t].name,
                       allowed_best->missing,
                       DescribeTable(tables[t]) + " " + needs +
                           " even with its smallest sharding: " + StorageFixes(topology));
  }

  // Every table fits alone, but not all together: report the min-storage proposal's failure.
  Partitioned constrained = Partition(Pick(options_by_table, min_storage), topology, capacity);
  const Failure failure = constrained.failure;
  const TableSpec& table = tables[failure.table];
  std::int64_t needed = 0;
  for (std::size_t t = 0; t < count; ++t) {
    needed += options_by_table[t][min_storage[t]].total_storage;
  }
  const std::int64_t total_free = rank_free * topology.world_size;
  const std::string summary =
      "the tables need at least " + FormatBytes(needed) + " of " + resource + " in all, the " +
      std::to_string(topology.world_size) + " rank(s) have " + FormatBytes(total_free) + " (" +
      per_rank_free + " each after reservation" +
      (needed > total_free ? ", " + FormatBytes(needed - total_free) + " short" : std::string()) +
      "); " + DescribeTable(table) + " is the first that no longer fits: its shard of " +
      FormatBytes(failure.shard_bytes) + " finds at most " + FormatBytes(failure.free_bytes) +
      " free (" + FormatBytes(failure.missing) + " missing)";
  // Would the tables fit without constraints?
  std::vector<std::vector<Option>> unconstrained(count);
  std::vector<std::size_t> unconstrained_min(count);
  bool constrained_any = false;
  for (std::size_t t = 0; t < count; ++t) {
    constrained_any = constrained_any || !tables[t].constraints.sharding_types.empty();
    unconstrained[t] = TableOptions(tables[t], AllShardingTypes(), topology, options);
    unconstrained_min[t] = MinStorageIndex(unconstrained[t]);
  }
  if (constrained_any && Partition(Pick(unconstrained, unconstrained_min), topology, capacity).ok) {
    throw PlannerError(PlannerError::Kind::kStrictConstraints, table.name, failure.missing,
                       summary +
                           "; without the sharding_types constraints the tables fit: allow "
                           "more sharding types (e.g. row_wise) for '" +
                           table.name + "' (allowed now: " + JoinTypes(AllowedTypes(table)) + ")");
  }
  throw PlannerError(PlannerError::Kind::kInsufficientStorage, table.name,
                     std::max(failure.missing, needed - total_free),
                     summary + ": " + StorageFixes(topology));
}

}  // namespace tzrec
