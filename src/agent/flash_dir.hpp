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
// Persisting (the worker names model_dir and keep_checkpoint_max in persist.json): a checkpoint the
// worker wants on disk (its save_checkpoints_steps saves) is staged by hard links under
// persist/model.ckpt-STEP/ (instant on tmpfs, and immune to the flash directory's own pruning);
// the agent's persister thread (FlashPersister) copies each staged one into
// model_dir/.model.ckpt-STEP.tmp/, fsyncs, renames it to model.ckpt-STEP (never replacing one),
// fsyncs model_dir — the atomic protocol of tzrec_train's own saves — prunes model_dir to the
// newest keep_checkpoint_max complete checkpoints (rename to .tmp, then delete) and drops the
// staged links. At exit, after a last pass, the newest flash checkpoint is persisted too when it
// is newer than every checkpoint in model_dir.
//
// Thread-safety: a FlashDir is used by one thread at a time (the persister thread, then the
// agent's thread after FlashPersister::Stop()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

  /// Persists every staged checkpoint (persist/model.ckpt-STEP/), oldest first, then prunes
  /// model_dir; returns the directories written. Failures go to `warn` (the staged copy stays
  /// for the next pass).
  std::vector<std::string> PersistStaged(const std::function<void(const std::string&)>& warn);

  /// Removes the directory and everything in it (idempotent).
  void Remove() noexcept;

 private:
  std::string path_;
};

/// Runs FlashDir::PersistStaged every 200 ms on its own thread until Stop().
class FlashPersister {
 public:
  FlashPersister(FlashDir& dir, std::function<void(const std::string&)> info,
                 std::function<void(const std::string&)> warn);
  ~FlashPersister();
  FlashPersister(const FlashPersister&) = delete;
  FlashPersister& operator=(const FlashPersister&) = delete;
  /// Stops and joins the thread (idempotent); a pass in progress completes first.
  void Stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tzrun::agent::detail
