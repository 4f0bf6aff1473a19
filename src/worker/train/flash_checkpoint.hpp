// src/worker/train/flash_checkpoint.hpp — tzrec_train's flash checkpoints (train_eval
// --flash_checkpoint_steps N, private to tzrec::train).
//
// Every N steps train_eval writes a checkpoint — the format and atomic protocol of its disk
// checkpoints (include/tzrec/checkpoint/checkpoint.hpp), keeping only the newest — into the
// memory-backed directory tzrun's agent owns (tzrun --flash-checkpoint sets TZRUN_FLASH_DIR;
// src/agent/flash_dir.hpp). The step is blocked for the serialisation into memory only (no disk
// I/O; fsync on tmpfs is free). A worker group restarted by tzrun (--max-restarts) with
// --continue_train resumes from the newer of the newest disk checkpoint and the flash one
// (disk on a tie), so a crash loses at most N steps, not save_checkpoints_steps.
// Disk saves (save_checkpoints_steps, and the last step) go through memory too: the checkpoint is
// written into TZRUN_FLASH_DIR like a flash one and staged (hard links under persist/), and tzrun's
// agent copies it into model_dir in the background, atomically, applying keep_checkpoint_max
// (src/agent/flash_dir.hpp); the step is held for the write into memory only. Rank 0 names
// model_dir and keep_checkpoint_max in TZRUN_FLASH_DIR/persist.json. At exit the agent persists
// what is staged, and a flash checkpoint newer than every disk one.
//
// Refused (ConfigError, exit 2) rather than ignored: N < 0; N > 0 without TZRUN_FLASH_DIR (not
// under tzrun --flash-checkpoint); N > 0 on several hosts (WORLD_SIZE != LOCAL_WORLD_SIZE: each
// agent would hold only its own ranks' files). Thread-safety: one thread, like
// CheckpointManager; Save is collective.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/comm.hpp"

namespace tzrec {

// The newer of two checkpoint directories by their model.ckpt-STEP step; `a` on a tie (the
// disk one); nullopt when both are. Pure.
std::optional<std::string> NewerCheckpoint(const std::optional<std::string>& a,
                                           const std::optional<std::string>& b);

// The flash directory for --flash_checkpoint_steps `steps` > 0 given TZRUN_FLASH_DIR (`env_dir`,
// nullptr when unset), WORLD_SIZE and LOCAL_WORLD_SIZE; throws ConfigError as above. Pure.
std::string FlashDirFor(std::int64_t steps, const char* env_dir, int world, int local_world);

class FlashCheckpoints {
 public:
  // steps 0: disabled (Due is always false, Newer returns its argument). Reads TZRUN_FLASH_DIR
  // and LOCAL_WORLD_SIZE; rank 0 writes persist.json naming model_dir and keep_max
  // (keep_checkpoint_max, applied by the agent).
  FlashCheckpoints(std::int64_t steps, const std::string& model_dir, std::int64_t keep_max,
                   std::shared_ptr<Comm> comm);

  [[nodiscard]] bool Due(std::int64_t step) const { return steps_ > 0 && step % steps_ == 0; }
  // The newer of `disk` and the newest flash checkpoint.
  [[nodiscard]] std::optional<std::string> Newer(const std::optional<std::string>& disk) const;
  [[nodiscard]] bool IsFlash(const std::string& dir) const;
  [[nodiscard]] bool Enabled() const { return steps_ > 0; }
  // Collective: writes the flash checkpoint of `state` (rank 0 prints its size and time).
  void Save(const TrainState& state);
  // Collective: a disk save through memory (above); returns the model_dir path the agent
  // writes (model_dir/model.ckpt-STEP).
  std::string SaveForDisk(const TrainState& state);

 private:
  std::int64_t steps_ = 0;
  std::string dir_;
  std::string model_dir_;
  std::unique_ptr<CheckpointManager> manager_;
  int rank_ = 0;
};

}  // namespace tzrec
