#include "flash_checkpoint.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

std::optional<std::int64_t> StepOf(const std::string& dir) {
  const std::string name = fs::path(dir).filename().string();
  const std::string prefix = "model.ckpt-";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
  try {
    return std::stoll(name.substr(prefix.size()));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::int64_t DirBytes(const std::string& dir) {
  std::int64_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) n += static_cast<std::int64_t>(it->file_size(ec));
  }
  return n;
}

}  // namespace

std::optional<std::string> NewerCheckpoint(const std::optional<std::string>& a,
                                           const std::optional<std::string>& b) {
  if (!a || !b) return a ? a : b;
  return StepOf(*b).value_or(-1) > StepOf(*a).value_or(-1) ? b : a;
}

std::string FlashDirFor(std::int64_t steps, const char* env_dir, int world, int local_world) {
  const std::string flag = "--flash_checkpoint_steps " + std::to_string(steps);
  if (steps < 0) throw ConfigError(flag + ": must be >= 0 (0: no flash checkpoints)");
  if (env_dir == nullptr || *env_dir == '\0') {
    throw ConfigError(flag +
                      ": TZRUN_FLASH_DIR is not set; flash checkpoints are held in memory by "
                      "tzrun's agent: launch with tzrun --flash-checkpoint, or drop the flag");
  }
  std::error_code ec;
  if (!fs::is_directory(env_dir, ec)) {
    throw ConfigError(flag + ": TZRUN_FLASH_DIR '" + env_dir +
                      "' is not a directory; launch with tzrun --flash-checkpoint");
  }
  if (local_world != world) {
    throw ConfigError(flag + ": " + std::to_string(world) + " ranks on hosts of " +
                      std::to_string(local_world) +
                      " (LOCAL_WORLD_SIZE): each host's agent would hold only its own ranks' "
                      "files; use flash checkpoints on one-host jobs, or drop the flag");
  }
  return env_dir;
}

FlashCheckpoints::FlashCheckpoints(std::int64_t steps, const std::string& model_dir,
                                   std::int64_t keep_max, std::shared_ptr<Comm> comm)
    : steps_(steps), model_dir_(fs::absolute(model_dir).string()), rank_(comm->Rank()) {
  if (steps == 0) return;
  const char* lws = std::getenv("LOCAL_WORLD_SIZE");
  const int local_world = lws != nullptr ? std::atoi(lws) : comm->WorldSize();
  dir_ = FlashDirFor(steps, std::getenv("TZRUN_FLASH_DIR"), comm->WorldSize(), local_world);
  manager_ = std::make_unique<CheckpointManager>(dir_, 1, std::move(comm));
  if (rank_ == 0) {
    const fs::path hint = fs::path(dir_) / "persist.json";
    const fs::path tmp = fs::path(dir_) / ".persist.json.tmp";
    std::ofstream(tmp)
        << nlohmann::json{{"model_dir", model_dir_}, {"keep_checkpoint_max", keep_max}}.dump();
    fs::rename(tmp, hint);
  }
}

std::optional<std::string> FlashCheckpoints::Newer(const std::optional<std::string>& disk) const {
  if (!manager_) return disk;
  return NewerCheckpoint(disk, manager_->Latest());
}

std::string FlashCheckpoints::SaveForDisk(const TrainState& state) {
  // A flash save of this very step (the last step is often one) is staged as it is. Every rank
  // sees the same directory (one host), so the ranks agree on skipping the collective Save.
  const std::optional<std::string> latest = manager_->Latest();
  const std::string dir = latest && StepOf(*latest) == state.step ? *latest : manager_->Save(state);
  const fs::path name = fs::path(dir).filename();
  if (rank_ == 0) {  // stage by hard links: the next flash save may prune `dir` itself
    const fs::path staged = fs::path(dir_) / "persist" / name;
    const fs::path tmp = fs::path(dir_) / "persist" / ("." + name.string() + ".tmp");
    fs::remove_all(tmp);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const fs::path to = tmp / fs::relative(e.path(), dir);
      if (e.is_directory()) {
        fs::create_directories(to);
      } else {
        fs::create_directories(to.parent_path());
        fs::create_hard_link(e.path(), to);
      }
    }
    fs::rename(tmp, staged);  // the agent only takes complete model.ckpt-STEP names
  }
  return (fs::path(model_dir_) / name).string();
}

bool FlashCheckpoints::IsFlash(const std::string& dir) const {
  return !dir_.empty() && fs::path(dir).parent_path() == fs::path(dir_);
}

void FlashCheckpoints::Save(const TrainState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = manager_->Save(state);
  if (rank_ == 0) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "tzrec_train: flash checkpoint " << dir << " (" << DirBytes(dir) / 1000 << " kB, "
              << static_cast<std::int64_t>(ms) << " ms)" << std::endl;
  }
}

}  // namespace tzrec
