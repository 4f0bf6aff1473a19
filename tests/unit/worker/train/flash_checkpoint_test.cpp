// Flash checkpoints' pure decisions (src/worker/train/flash_checkpoint.hpp): which checkpoint a
// restarted group resumes, and the refusals of --flash_checkpoint_steps.
#include "flash_checkpoint.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

std::string Message(std::int64_t steps, const char* dir, int world, int local_world) {
  try {
    FlashDirFor(steps, dir, world, local_world);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(FlashCheckpoint, ResumesTheNewerCheckpointAndTheDiskOneOnATie) {
  const std::string disk = "/m/model.ckpt-20", flash = "/dev/shm/f/model.ckpt-26";
  EXPECT_EQ(NewerCheckpoint(disk, flash), flash);
  EXPECT_EQ(NewerCheckpoint("/m/model.ckpt-30", flash), "/m/model.ckpt-30");
  EXPECT_EQ(NewerCheckpoint("/m/model.ckpt-26", flash), "/m/model.ckpt-26");
  EXPECT_EQ(NewerCheckpoint(std::nullopt, flash), flash);
  EXPECT_EQ(NewerCheckpoint(disk, std::nullopt), disk);
  EXPECT_FALSE(NewerCheckpoint(std::nullopt, std::nullopt));
  // 100 > 99 by step, although "model.ckpt-100" < "model.ckpt-99" as text.
  EXPECT_EQ(NewerCheckpoint("/m/model.ckpt-99", "/f/model.ckpt-100"), "/f/model.ckpt-100");
}

TEST(FlashCheckpoint, StepsAreRefusedRatherThanIgnored) {
  const std::string tmp = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(FlashDirFor(5, tmp.c_str(), 2, 2), tmp);
  EXPECT_NE(Message(-1, tmp.c_str(), 2, 2).find("--flash_checkpoint_steps -1: must be >= 0"),
            std::string::npos);
  EXPECT_NE(Message(5, nullptr, 2, 2).find("TZRUN_FLASH_DIR is not set"), std::string::npos);
  EXPECT_NE(Message(5, nullptr, 2, 2).find("tzrun --flash-checkpoint"), std::string::npos);
  EXPECT_NE(Message(5, "", 2, 2).find("TZRUN_FLASH_DIR is not set"), std::string::npos);
  EXPECT_NE(Message(5, "/no/such/dir", 2, 2).find("'/no/such/dir' is not a directory"),
            std::string::npos);
  EXPECT_NE(Message(5, tmp.c_str(), 4, 2).find("4 ranks on hosts of 2 (LOCAL_WORLD_SIZE)"),
            std::string::npos);
}

}  // namespace
}  // namespace tzrec
