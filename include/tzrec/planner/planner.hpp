// tzrec/planner/planner.hpp — TorchRec-style embedding sharding planner (no libtorch).
//
// Follows torchrec 1.4 `torchrec/distributed/planner/*` (one file per stage under
// src/worker/planner/, listed in its planner_internal.hpp): enumerate sharding options per table,
// estimate perf (ms) and storage (bytes) per shard with TorchRec's formulas, reserve storage
// (HeuristicalStorageReservation), propose, partition greedily (GreedyPerfPartitioner), keep the
// best-rated feasible plan. Differences from TorchRec, on purpose:
//   * row_wise and table_row_wise are offered on CPU too (the worker emulates reduce-scatter on
//     Gloo), so a CPU topology gets all five types;
//   * the proposer is an exhaustive-then-greedy search over per-table options
//     (src/worker/planner/proposers.cpp).
// The vocabulary (ShardingType, EmbeddingOptimizerKind, Shard, ParameterSharding, ShardingPlan,
// FormatBytes) lives in include/tzrec/types/ (tzrec::types) so that libraries naming shards do
// not link the planner; this header includes it, so planner users see one API.
//
// Units: bytes for storage, bytes per millisecond for bandwidths (TorchRec's convention;
// GiB/s × 1024³ / 1000), milliseconds for perf.
// Errors: PlannerError (a tzrec::Error, exit code 3 kNoPlan) with a message naming the table and
// the fix; std::invalid_argument on a bad table spec, option or topology.
// Thread-safety: all functions are pure; types are values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tzrec/error.hpp"
#include "tzrec/types/sharding_plan.hpp"
#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

enum class ComputeDevice { kCpu, kCuda };
std::string_view ToString(ComputeDevice device);  // "cpu", "cuda"

// torchrec.distributed.planner.types.Topology (+ constants.py defaults).
struct Topology {
  static constexpr double kGiBps = 1024.0 * 1024.0 * 1024.0 / 1000.0;  // GiB/s in bytes/ms
  static constexpr double kDefaultHbmMemBw = 897 * kGiBps;
  static constexpr double kDefaultDdrMemBw = 51 * kGiBps;
  static constexpr double kDefaultIntraHostBw = 600 * kGiBps;
  static constexpr double kDefaultInterHostBw = 12.5 * kGiBps;
  static constexpr std::int64_t kDefaultHbmCap = 32LL << 30;
  static constexpr std::int64_t kDefaultDdrCap = 128LL << 30;
  static constexpr double kDefaultStorageReservePercent = 0.15;

  int world_size = 1;
  int local_world_size = 1;  // ranks per host; hosts = world_size / local_world_size
  ComputeDevice device = ComputeDevice::kCpu;
  std::int64_t hbm_cap = 0;               // bytes per rank (0 on CPU)
  std::int64_t ddr_cap = kDefaultDdrCap;  // bytes per rank
  double hbm_mem_bw = kDefaultHbmMemBw;
  double ddr_mem_bw = kDefaultDdrMemBw;
  double intra_host_bw = kDefaultIntraHostBw;                      // INTRA_NODE_BANDWIDTH
  double inter_host_bw = kDefaultInterHostBw;                      // CROSS_NODE_BANDWIDTH
  double storage_reserve_percent = kDefaultStorageReservePercent;  // STORAGE_RESERVE_PERCENT

  // Fills the bandwidths and reserve from INTRA_NODE_BANDWIDTH, CROSS_NODE_BANDWIDTH (bytes/ms,
  // as tzrec reads them) and STORAGE_RESERVE_PERCENT when set; throws std::invalid_argument on a
  // malformed value, naming the variable. Caps: ddr_cap = physical RAM / local_world_size, hbm_cap
  // given by the caller (GPU total memory) or 0 on CPU.
  static Topology FromEnvironment(int world_size, int local_world_size, ComputeDevice device,
                                  std::int64_t hbm_cap_bytes);
  int NumHosts() const { return world_size / local_world_size; }
  // Throws std::invalid_argument when world_size % local_world_size != 0 or a value is not
  // positive.
  void Validate() const;
  // "" when every rank runs on a host of the same size, as the planner assumes (TorchRec's
  // Topology has one local_world_size too), else what is wrong and the fix. local_world_sizes:
  // each rank's LOCAL_WORLD_SIZE, by rank (a 1+1+2 process layout over three nodes gives
  // {1, 1, 2, 2}).
  static std::string HostLayoutProblem(const std::vector<int>& local_world_sizes);
};

// Per-table constraints (TorchRec ParameterConstraints subset).
struct ParameterConstraints {
  std::vector<ShardingType> sharding_types;   // empty: all allowed
  std::optional<std::int64_t> min_partition;  // column_wise block lower bound
  std::vector<double> pooling_factors;        // per feature; empty: 1.0 each
};

// One embedding table as the planner sees it (one EmbeddingBagConfig).
struct TableSpec {
  std::string name;
  std::int64_t num_embeddings = 0;
  std::int64_t embedding_dim = 0;
  std::vector<std::string> feature_names;  // features pooled from this table (shared tables: >1)
  int element_bytes = 4;                   // fp32
  ParameterConstraints constraints;
};

// Raised when no feasible plan exists. what() names the table and the missing bytes, e.g.
// "table 'cat_0' (40000000 x 16, fp32) needs 5.2 GiB on one rank but the largest rank has 3.1 GiB
//  free after reservation (2.1 GiB missing): allow row_wise/column_wise for it, add ranks, or lower
//  STORAGE_RESERVE_PERCENT".
struct PlannerOptions {
  std::int64_t batch_size = 512;  // per-rank batch (TorchRec BATCH_SIZE default)
  EmbeddingOptimizerKind optimizer = EmbeddingOptimizerKind::kRowWiseAdagrad;
  std::int64_t dense_parameter_bytes = 0;  // non-embedding parameters (6× reserved, TorchRec)
};

// Shard sizes/offsets for one table and sharding type (torchrec sharding_plan.py
// calculate_shard_sizes_and_offsets); `host` picks the host for table_row_wise, `ranks` the
// placement for table_wise (1 entry) / column_wise (one per block). perf/storage left 0.
std::vector<Shard> CalculateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                   const std::vector<int>& ranks, int host = 0);
// Column-wise block width (MIN_CW_DIM 128 or min_partition rule).
std::int64_t ColumnWiseBlock(const TableSpec& table);

// --- Estimates (for tests and the `plan` command; src/worker/planner/estimators.cpp) ---

// CalculateShards plus TorchRec's estimates: perf_ms (EmbeddingPerfEstimator, §2.6: fused kernel
// at 1× device bandwidth, dense (data_parallel) at 0.5×; per-rank batch options.batch_size,
// pooling factors from the constraints) and storage (§2.7: table bytes of the shard + optimizer
// state + input/output bytes, in ddr_bytes on CPU and hbm_bytes on CUDA). For table_wise /
// column_wise an empty `ranks` places every shard on rank 0 (estimates do not depend on it).
// Throws std::invalid_argument on a bad table spec.
std::vector<Shard> EstimateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                  const PlannerOptions& options, const std::vector<int>& ranks = {},
                                  int host = 0);

// Bytes free on every rank after HeuristicalStorageReservation (§2.7): hbm = hbm_cap ×
// (1 − storage_reserve_percent) on CUDA (0 on CPU); then 6 × dense_parameter_bytes and the KJT
// reservation ⌈Σ_tables Σ_features pooling·batch·8⌉ × 20 are taken from hbm (CUDA) or ddr (CPU).
// Throws PlannerError(kInsufficientStorage, table "") when the reservation exceeds the capacity.
struct StorageCapacity {
  std::int64_t hbm = 0;
  std::int64_t ddr = 0;
};
StorageCapacity ReservedCapacity(const Topology& topo, const std::vector<TableSpec>& tables,
                                 const PlannerOptions& options);

// Plans `tables`. Throws PlannerError when nothing fits, std::invalid_argument on bad specs
// (duplicate names, non-positive sizes, a constraint naming an unknown type).
ShardingPlan Plan(const Topology& topology, const std::vector<TableSpec>& tables,
                  const PlannerOptions& options);

}  // namespace tzrec
