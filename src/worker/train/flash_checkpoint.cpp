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
                                   std::shared_ptr<Comm> comm)
    : steps_(steps), rank_(comm->Rank()) {
  if (steps == 0) return;
  const char* lws = std::getenv("LOCAL_WORLD_SIZE");
  const int local_world = lws != nullptr ? std::atoi(lws) : comm->WorldSize();
  dir_ = FlashDirFor(steps, std::getenv("TZRUN_FLASH_DIR"), comm->WorldSize(), local_world);
  manager_ = std::make_unique<CheckpointManager>(dir_, 1, std::move(comm));
  if (rank_ == 0) {
    const fs::path hint = fs::path(dir_) / "persist.json";
    const fs::path tmp = fs::path(dir_) / ".persist.json.tmp";
    std::ofstream(tmp) << nlohmann::json{{"model_dir", fs::absolute(model_dir).string()}}.dump();
    fs::rename(tmp, hint);
  }
}

std::optional<std::string> FlashCheckpoints::Newer(const std::optional<std::string>& disk) const {
  if (!manager_) return disk;
  return NewerCheckpoint(disk, manager_->Latest());
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
