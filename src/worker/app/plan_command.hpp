// src/worker/app/plan_command.hpp — `tzrec_train plan`: compute and print a sharding plan offline
// (private to tzrec_train and its tests; target tzrec::app_plan).
//
//   tzrec_train plan --tables FILE [--world-size N] [--local-world-size N] [--device cpu|cuda]
//                    [--hbm-cap-gb X] [--ddr-cap-gb X] [--batch-size N] [--optimizer NAME]
//                    [--output FILE]
//
// FILE is JSON: {"tables":[{"name", "num_embeddings", "embedding_dim", "feature_names":[...],
// "pooling_factor" (number or one per feature, optional), "sharding_types" (optional list),
// "min_partition" (optional)}], "batch_size" (optional), "optimizer" (optional),
// "dense_parameter_bytes" (optional)}. Unknown keys are rejected, naming the closest valid key.
//
// Prints ShardingPlan::ToTable() and "plan hash: <16 hex>" on stdout; with --output also writes
// ShardingPlan::ToJson() to FILE atomically (temp file in the same directory, then rename).
// --hbm-cap-gb is refused with --device cpu (exit 2).
// Exit codes: 0 success (and --help), 2 bad input (flags, file, JSON, environment values:
// tzrec::InputError, std::invalid_argument), 3 no feasible plan (PlannerError; its message on
// stderr), 1 unexpected failure. Errors are one "tzrec_train plan: error: ..." line on stderr,
// never a stack trace.
// Thread-safety: reads the environment (WORLD_SIZE, LOCAL_WORLD_SIZE, INTRA_NODE_BANDWIDTH,
// CROSS_NODE_BANDWIDTH, STORAGE_RESERVE_PERCENT); call from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tzrec/planner/planner.hpp"

namespace tzrec {

// argv[0] is "plan". Returns the process exit code (see above).
int RunPlanCommand(int argc, char** argv);

// The --tables file (format above).
struct TablesFile {
  std::vector<TableSpec> tables;
  std::optional<std::int64_t> batch_size;
  std::optional<EmbeddingOptimizerKind> optimizer;
  std::optional<std::int64_t> dense_parameter_bytes;
};

// Reads and checks the --tables file; throws tzrec::InputError naming the file, the field and the
// fix (unreadable file, bad JSON, unknown key with the closest valid one, wrong type).
TablesFile ReadTablesFile(const std::string& path);

}  // namespace tzrec
