// tzrec/checkpoint/checkpoint.hpp — tzrec_train checkpoints in TorchEasyRec's directory layout,
// written atomically by every rank and restorable at any world size and sharding plan.
//
// Layout of one checkpoint (model_dir/model.ckpt-STEP/):
//   model-{rank:06d}-of-{world:06d}.pt      dict name → tensor, written by every rank:
//                                            "<table>/weight/<row_off>_<col_off>" for each of the
//                                            rank's shards, and "dense/<name>" (rank 0 only)
//   optimizer-{rank:06d}-of-{world:06d}.pt  "<table>/<state>/<row_off>_<col_off>" (momentum1,
//                                            momentum2, step, ...) and "dense/<name>" (rank 0 only)
//   metadata.json                            format version, step, world_size, plan hash, every
//                                            table's global shape and every saved shard's offsets,
//                                            sizes, rank, files, keys and state shapes; dense
//                                            names, dtypes and shapes; every rank's data cursor;
//                                            extra; the byte size of every file (checked on load)
//   plan/plan.json                           the ShardingPlan (ShardingPlan::ToJson) of rank 0
// The .pt files are torch.save zip archives (the format torch::pickle_save writes): Python's
// `torch.load(path)` returns a dict of CPU tensors. Tensors are always stored on CPU, contiguous.
// Replicated shards (data_parallel: several ranks hold the same [offsets, sizes]) are written once,
// by the lowest rank holding them.
//
// Atomicity: all ranks write into model_dir/.model.ckpt-STEP.tmp/ and fsync; rank 0 then writes
// plan/plan.json and metadata.json (last), fsyncs, renames the directory to model.ckpt-STEP (never
// replacing an existing one) and fsyncs model_dir. A kill at any moment leaves either no
// model.ckpt-STEP or a complete one. Leftover .tmp directories are removed by the next Save and
// ignored by Latest(). After the rename rank 0 prunes to the newest keep_max checkpoints.
//
// Resharding on Restore: every target shard gets the intersection of every saved shard of its
// table by global (row, col) offsets. Optimizer state tensors are treated as [rows, blocks] with
// block width cols/blocks ([rows] = one block over the shard's columns, [rows, cols] =
// element-wise); a target state is filled when each of its column blocks equals a saved block
// (always true for element-wise state), otherwise it is left as allocated (re-initialised) and a
// warning goes to stderr. Scalar state ("step") is copied from a saved shard of the table that
// overlaps the target shard (the largest value when several do).
//
// Collectives: Save and Restore must be called by every rank of `comm` in the same order. Errors on
// one rank are agreed on (AgreeOnFirstError, tzrec/comm/agree.hpp), so every rank throws the lowest
// failing rank's error, "checkpoint save (step S) failed on rank R: ..." (CheckpointError, exit 4),
// rather than leaving others waiting. Thread-safety: a CheckpointManager is used from one
// thread; Latest() only reads the filesystem.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/error.hpp"
#include "tzrec/types/sharding_types.hpp"

namespace tzrec {

// Raised for every checkpoint failure; what() names the file (or directory) and the problem, e.g.
// "checkpoint file '/m/model.ckpt-10/model-000001-of-000002.pt' is truncated: 1234 bytes on disk,
//  metadata.json records 5678; restore from an older checkpoint".
struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

// One embedding shard of this rank: rows [row_offset, +rows) x cols [col_offset, +cols) of a table
// of global shape [table_rows, table_cols]. data_parallel replicas are one shard covering the
// table.
struct ShardState {
  std::string table;
  std::int64_t table_rows = 0, table_cols = 0;
  Shard shard;        // offsets, sizes, rank (tzrec/types/sharding_types.hpp)
  at::Tensor weight;  // [rows, cols]: Save reads it; Restore writes into it in place
  std::vector<NamedTensor> optimizer;  // "momentum1" [rows, cols] or [rows] or [rows, blocks],
                                       // "momentum2", "step" (scalar int64): Save reads; Restore
                                       // writes in place (any device, any dtype: copy_ converts)
};

struct TrainState {
  std::int64_t step = 0;
  std::string plan_json;  // ShardingPlan::ToJson(); may be empty (no sparse tables)
  std::vector<ShardState> shards;
  std::vector<NamedTensor> dense;            // dense (replicated) parameters; rank 0's are saved
  std::vector<NamedTensor> dense_optimizer;  // dense optimizer state tensors; rank 0's are saved
  std::string data_cursor_json;              // this rank's DataCursor JSON (opaque; kept per rank)
  std::string extra_json = "{}";  // e.g. grad scaler, epoch (must be JSON; rank 0's is kept)
};

struct RestoreInfo {
  std::string dir;
  std::int64_t step = 0;
  int saved_world_size = 0;
  std::string saved_plan_json;                 // plan/plan.json ("" when none was saved)
  std::vector<std::string> data_cursors_json;  // every saved rank's cursor, by saved rank
  std::string extra_json;                      // rank 0's extra_json at save time
};

class CheckpointManager {
 public:
  // Checkpoints live in model_dir (created by Save when missing). keep_max 0 keeps every
  // checkpoint; keep_max K > 0 keeps the newest K after each Save. Throws CheckpointError for an
  // empty model_dir, a negative keep_max or a null comm.
  CheckpointManager(std::string model_dir, std::int64_t keep_max, std::shared_ptr<Comm> comm);

  // Collective. Writes model_dir/model.ckpt-STEP/ atomically and returns its path. Throws
  // CheckpointError (on every rank) when model.ckpt-STEP already exists, the ranks disagree on the
  // step or a table's global shape, extra_json/plan_json do not parse, a shard's tensors do not
  // match its sizes, or a write fails (the message names the rank and the file).
  std::string Save(const TrainState& local);

  // Newest valid checkpoint directory under model_dir (metadata.json parses and every file it
  // lists exists with the recorded size), or nullopt. Ignores .tmp directories. Local, no
  // collective.
  std::optional<std::string> Latest() const;

  // Collective. Fills target's tensors (allocated for the CURRENT plan and world size) from `dir`
  // as described at the top of this file; dense parameters and dense optimizer state come from
  // rank 0's files by name. Throws CheckpointError naming the file and the problem: missing or
  // corrupt metadata.json, a table of the target absent from the checkpoint, a table's global
  // shape changed, a target shard not fully covered by saved shards, a dense tensor missing or of
  // another shape, a truncated or corrupt .pt file. Saved tables or dense tensors the target does
  // not have are ignored with a warning on stderr (rank 0).
  RestoreInfo Restore(const std::string& dir, TrainState& target);

  const std::string& ModelDir() const { return model_dir_; }

 private:
  std::string model_dir_;
  std::int64_t keep_max_;
  std::shared_ptr<Comm> comm_;
};

}  // namespace tzrec
