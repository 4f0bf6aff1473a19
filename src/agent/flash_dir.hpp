// tzrun agent internals: the flash-checkpoint directory (tzrun --flash-checkpoint).
//
// The agent owns one private directory on a memory-backed filesystem (/dev/shm) per run and
// hands it to every worker as TZRUN_FLASH_DIR. tzrec_train (--flash_checkpoint_steps N) writes
// its checkpoints there in the format of its disk checkpoints (model.ckpt-STEP/, written into
// .model.ckpt-STEP.tmp/ and renamed: a model.ckpt-STEP directory is always complete), so a
// restarted worker group resumes from memory, not from the last disk save. The directory lives
// as long as the agent: it survives worker restarts, and it is removed when the agent exits
// (by the agent, or by its guardian process when tzrun itself is SIGKILLed).
//
// Before removing it, the agent persists the newest flash checkpoint to the worker's model_dir
// when it is newer than every checkpoint there (the worker names model_dir in persist.json):
// copied into model_dir/.model.ckpt-STEP.tmp/, fsynced, renamed to model.ckpt-STEP (never
// replacing one) and model_dir fsynced — the atomic protocol of tzrec_train's own saves. It does
// not prune: tzrec_train's next save applies keep_checkpoint_max.
//
// Not thread-safe: used from the agent's supervision thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tzrun::agent::detail {

/// The step of a complete checkpoint directory name ("model.ckpt-120" -> 120), else nullopt.
std::optional<std::int64_t> CheckpointStep(const std::string& name);

/// The newest complete checkpoint (by step) directly under `dir`: its name, or nullopt.
std::optional<std::string> NewestCheckpoint(const std::string& dir);

class FlashDir {
 public:
  /// Creates a private directory (mode 0700) under `root` (/dev/shm unless given). Throws
  /// AgentError (125) naming the root when it cannot (no /dev/shm: pass a memory-backed root).
  static FlashDir Create(const std::string& root = "/dev/shm");

  [[nodiscard]] const std::string& Path() const noexcept { return path_; }

  /// Copies the newest flash checkpoint into the model_dir named by persist.json when it is
  /// newer than every checkpoint there. Returns the directory written, or nullopt (nothing to
  /// do). Failures are reported through `warn` (the run's outcome does not change).
  std::optional<std::string> PersistNewest(const std::function<void(const std::string&)>& warn);

  /// Removes the directory and everything in it (idempotent).
  void Remove() noexcept;

 private:
  std::string path_;
};

}  // namespace tzrun::agent::detail
