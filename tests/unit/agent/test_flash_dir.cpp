// The flash-checkpoint directory (src/agent/flash_dir.hpp): checkpoint names, the newest one,
// and persisting it into a model_dir (only when newer, atomically, never replacing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent_error.hpp"
#include "flash_dir.hpp"

namespace tzrun::agent::detail {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Scratch {
  fs::path root = fs::temp_directory_path() / ("tzrun_flash_test_" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(root); }
  ~Scratch() { fs::remove_all(root); }
};

TEST(FlashDir, CheckpointStepReadsOnlyCompleteCheckpointNames) {
  EXPECT_EQ(CheckpointStep("model.ckpt-120"), 120);
  EXPECT_EQ(CheckpointStep("model.ckpt-0"), 0);
  EXPECT_FALSE(CheckpointStep(".model.ckpt-120.tmp"));
  EXPECT_FALSE(CheckpointStep("model.ckpt-"));
  EXPECT_FALSE(CheckpointStep("model.ckpt-12a"));
  EXPECT_FALSE(CheckpointStep("persist.json"));
  EXPECT_FALSE(CheckpointStep("model.ckpt-99999999999999999999"));
}

TEST(FlashDir, NewestCheckpointComparesStepsNotNames) {
  Scratch s;
  fs::create_directories(s.root / "model.ckpt-9");
  fs::create_directories(s.root / "model.ckpt-10");
  fs::create_directories(s.root / ".model.ckpt-11.tmp");
  Write(s.root / "model.ckpt-12", "a file, not a checkpoint directory");
  EXPECT_EQ(NewestCheckpoint(s.root.string()), "model.ckpt-10");
  EXPECT_FALSE(NewestCheckpoint((s.root / "missing").string()));
}

TEST(FlashDir, CreateMakesAPrivateDirectoryAndRemoveDeletesIt) {
  Scratch s;
  FlashDir d = FlashDir::Create(s.root.string());
  ASSERT_TRUE(fs::is_directory(d.Path()));
  EXPECT_EQ(fs::path(d.Path()).parent_path(), s.root);
  EXPECT_EQ(fs::status(d.Path()).permissions() & fs::perms::all, fs::perms::owner_all);
  Write(fs::path(d.Path()) / "model.ckpt-1" / "x", "1");
  const std::string path = d.Path();
  d.Remove();
  EXPECT_FALSE(fs::exists(path));
  d.Remove();  // idempotent
  EXPECT_THROW(FlashDir::Create((s.root / "no" / "such").string()), AgentError);
}

TEST(FlashDir, PersistNewestCopiesOnlyANewerCheckpoint) {
  Scratch s;
  FlashDir d = FlashDir::Create(s.root.string());
  const fs::path flash(d.Path());
  const fs::path model = s.root / "model";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& m) { warnings.push_back(m); };
  Write(flash / "model.ckpt-8" / "metadata.json", "{\"step\": 8}");
  Write(flash / "model.ckpt-8" / "plan" / "plan.json", "{}");
  EXPECT_FALSE(d.PersistNewest(warn));  // no persist.json: the workers named no model_dir
  Write(flash / "persist.json", "{\"model_dir\": \"" + model.string() + "\"}");
  fs::create_directories(model / "model.ckpt-8");
  EXPECT_FALSE(d.PersistNewest(warn));  // the same step on disk wins
  fs::remove(model / "model.ckpt-8");
  fs::create_directories(model / "model.ckpt-6");
  const auto dst = d.PersistNewest(warn);
  ASSERT_TRUE(dst);
  EXPECT_EQ(*dst, (model / "model.ckpt-8").string());
  EXPECT_EQ(Read(model / "model.ckpt-8" / "metadata.json"), "{\"step\": 8}");
  EXPECT_EQ(Read(model / "model.ckpt-8" / "plan" / "plan.json"), "{}");
  EXPECT_FALSE(fs::exists(model / ".model.ckpt-8.tmp"));
  EXPECT_TRUE(warnings.empty());
  Write(flash / "persist.json", "[1]");
  fs::create_directories(flash / "model.ckpt-9");
  EXPECT_FALSE(d.PersistNewest(warn));  // a bad hint is reported, not thrown
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("persisting flash checkpoint model.ckpt-9"), std::string::npos);
  d.Remove();
}

TEST(FlashDir, PersistStagedCopiesOldestFirstPrunesAndDropsTheStagedLinks) {
  Scratch s;
  FlashDir d = FlashDir::Create(s.root.string());
  const fs::path flash(d.Path());
  const fs::path model = s.root / "model";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& m) { warnings.push_back(m); };
  EXPECT_TRUE(d.PersistStaged(warn).empty());  // nothing staged
  Write(flash / "persist.json",
        "{\"model_dir\": \"" + model.string() + "\", \"keep_checkpoint_max\": 2}");
  for (int step : {5, 10, 15}) {
    Write(flash / "persist" / ("model.ckpt-" + std::to_string(step)) / "metadata.json",
          std::to_string(step));
  }
  fs::create_directories(flash / "persist" / ".model.ckpt-20.tmp");  // staging in progress
  Write(model / "model.ckpt-1" / "metadata.json", "1");              // an older disk one
  const auto written = d.PersistStaged(warn);
  ASSERT_EQ(written.size(), 3U);
  EXPECT_EQ(written[0], (model / "model.ckpt-5").string());
  EXPECT_EQ(written[2], (model / "model.ckpt-15").string());
  EXPECT_FALSE(fs::exists(model / "model.ckpt-1"));  // keep_checkpoint_max 2
  EXPECT_FALSE(fs::exists(model / "model.ckpt-5"));
  EXPECT_EQ(Read(model / "model.ckpt-10" / "metadata.json"), "10");
  EXPECT_EQ(Read(model / "model.ckpt-15" / "metadata.json"), "15");
  EXPECT_FALSE(fs::exists(flash / "persist" / "model.ckpt-10"));      // links dropped
  EXPECT_TRUE(fs::exists(flash / "persist" / ".model.ckpt-20.tmp"));  // not taken half-staged
  // A checkpoint already in model_dir is never replaced.
  Write(flash / "persist" / "model.ckpt-15" / "metadata.json", "other");
  EXPECT_TRUE(d.PersistStaged(warn).empty());
  EXPECT_EQ(Read(model / "model.ckpt-15" / "metadata.json"), "15");
  EXPECT_TRUE(warnings.empty());
  d.Remove();
}

}  // namespace
}  // namespace tzrun::agent::detail
