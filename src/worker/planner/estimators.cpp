// Estimators: perf (ms) and storage (bytes) of one shard with TorchRec's formulas
// (torchrec/distributed/planner/shard_estimators.py EmbeddingPerfEstimator and
// calculate_shard_storages, PipelineType.NONE; constants from planner/constants.py).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec {
namespace planner_detail {
namespace {

// planner/constants.py
constexpr double kOutputBytes = 4.0;  // fp32 pooled outputs and their a2a/reduce-scatter
constexpr double kBwdComputeMultiplier = 2.0;
constexpr double kBatchedCopyPerfFactor = 2.455;
constexpr double kDpElementwiseKernelsPerfFactor = 9.22;
constexpr std::int64_t kFullBlockEmbDim = 128;
constexpr double kHalfBlockPenalty = 1.15;
constexpr double kQuarterBlockPenalty = 1.75;
constexpr std::int64_t kMinLookupDim = 32;  // TW/CW lookup reads at least 32 columns

enum class Collective { kAllToAll, kReduceScatter, kAllGather, kAllReduce };

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

// What every per-type perf formula reads: the world, the shard's columns and the workload.
struct PerfInputs {
  double world = 0;
  double local = 0;
  double dim = 0;  // shard columns
  double table_bytes = 0;
  double device_bw = 0;
  double inputs = 0;
  double outputs = 0;
  std::int64_t shard_rows = 0;
  std::int64_t shard_cols = 0;
};

// table_wise and column_wise: every rank's ids to the owner, pooled outputs back by all-to-all.
double TableWisePerf(const Topology& topo, const PerfInputs& p) {
  const double input_read = std::ceil(p.inputs * p.world * kBigIntBytes);
  const double lookup = p.inputs * p.world *
                        static_cast<double>(std::max(p.shard_cols, kMinLookupDim)) * p.table_bytes;
  const double output_write = p.outputs * p.world * p.dim * kOutputBytes;
  double penalty = 1.0;
  if (p.shard_cols < kFullBlockEmbDim) {
    penalty = p.shard_cols >= 64 ? kHalfBlockPenalty : kQuarterBlockPenalty;
  }
  const double a2a_bw =
      CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllToAll);
  const double fwd_comms = output_write / a2a_bw;
  const double fwd_compute = (input_read + lookup + output_write) * penalty / p.device_bw;
  const double bwd_comms = output_write / a2a_bw;
  const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
  return fwd_compute + fwd_comms + bwd_compute + bwd_comms;
}

// row_wise: ids bucketized over all ranks, partial outputs reduce-scattered.
double RowWisePerf(const Topology& topo, const PerfInputs& p) {
  const double per_rank_inputs = p.inputs / p.world;
  const double input_read = std::ceil(per_rank_inputs * p.world * kBigIntBytes);
  const double lookup = per_rank_inputs * p.world * p.dim * p.table_bytes;
  const double output_write = p.outputs * p.world * p.dim * kOutputBytes;
  const double fwd_comms =
      output_write /
      CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kReduceScatter);
  const double fwd_compute = (input_read + lookup + output_write) / p.device_bw;
  const double bwd_comms =
      output_write /
      CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllGather);
  const double bwd_batched_copy = output_write * kBatchedCopyPerfFactor / p.device_bw;
  const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
  return fwd_compute + fwd_comms + bwd_compute + bwd_comms + bwd_batched_copy;
}

// table_row_wise: row_wise inside one host, plus the cross-host all-to-all of the outputs.
double TableRowWisePerf(const Topology& topo, const PerfInputs& p) {
  const double per_rank_inputs = p.inputs / p.local;
  const double input_read = std::ceil(per_rank_inputs * p.world * kBigIntBytes);
  const double lookup = per_rank_inputs * p.world * p.dim * p.table_bytes;
  const double output_write = p.outputs * p.world * p.dim * kOutputBytes;
  const double intra_bw =
      CommBandwidth(topo, topo.local_world_size, topo.local_world_size, Collective::kReduceScatter);
  double fwd_comms = output_write / intra_bw;
  double bwd_comms = output_write / intra_bw;
  if (topo.world_size > topo.local_world_size) {
    const double cross =
        p.outputs * (p.world / p.local) * p.dim * kOutputBytes /
        CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllToAll);
    fwd_comms += cross;
    bwd_comms += cross;
  }
  const double fwd_compute = (input_read + lookup + output_write) / p.device_bw;
  const double bwd_batched_copy = output_write * kBatchedCopyPerfFactor / p.device_bw;
  const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
  return fwd_compute + fwd_comms + bwd_compute + bwd_comms + bwd_batched_copy;
}

// data_parallel: local lookups, the gradient all-reduced, the optimizer run elementwise.
double DataParallelPerf(const Topology& topo, const PerfInputs& p) {
  const double input_read = std::ceil(p.inputs * kBigIntBytes);
  const double lookup = p.inputs * p.dim * p.table_bytes;
  const double output_write = p.outputs * p.dim * p.table_bytes;
  const double tensor = static_cast<double>(p.shard_rows) * p.dim * p.table_bytes;
  const double fwd_compute = (input_read + lookup + output_write) / p.device_bw;
  const double nodes = std::min(p.world / p.local, 2.0);
  double all_reduce =
      tensor * (2 * nodes - 1) / nodes /
      CommBandwidth(topo, topo.world_size, topo.local_world_size, Collective::kAllReduce);
  if (topo.world_size > 2 * topo.local_world_size) all_reduce *= 2;
  const double optimizer_kernels = tensor * kDpElementwiseKernelsPerfFactor / p.device_bw;
  const double bwd_compute = fwd_compute * kBwdComputeMultiplier;
  return fwd_compute + bwd_compute + all_reduce + optimizer_kernels;
}

double ShardPerf(const TableSpec& table, ShardingType type, const Topology& topo,
                 const Workload& work, std::int64_t shard_rows, std::int64_t shard_cols) {
  PerfInputs p;
  p.world = topo.world_size;
  p.local = topo.local_world_size;
  p.dim = static_cast<double>(shard_cols);
  p.table_bytes = table.element_bytes;
  p.device_bw = DeviceBandwidth(topo, type);
  p.inputs = work.inputs;
  p.outputs = work.outputs;
  p.shard_rows = shard_rows;
  p.shard_cols = shard_cols;
  switch (type) {
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise:
      return TableWisePerf(topo, p);
    case ShardingType::kRowWise:
      return RowWisePerf(topo, p);
    case ShardingType::kTableRowWise:
      return TableRowWisePerf(topo, p);
    case ShardingType::kDataParallel:
      return DataParallelPerf(topo, p);
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

}  // namespace

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

}  // namespace planner_detail

std::vector<Shard> EstimateShards(const TableSpec& table, ShardingType type, const Topology& topo,
                                  const PlannerOptions& options, const std::vector<int>& ranks,
                                  int host) {
  planner_detail::ValidateTable(table);
  planner_detail::ValidateOptions(options);
  topo.Validate();
  std::vector<Shard> shards = planner_detail::ShardSizes(table, type, topo, host);
  if (!ranks.empty()) planner_detail::PlaceShards(table, type, topo, ranks, shards);
  planner_detail::FillEstimates(table, type, topo, options, shards);
  return shards;
}

}  // namespace tzrec
