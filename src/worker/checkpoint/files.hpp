// Internal: the checkpoint directory's names and the filesystem steps of the atomic protocol
// (include/tzrec/checkpoint/checkpoint.hpp "Atomicity"). Every failure throws CheckpointError
// naming the path and errno.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tzrec/checkpoint/checkpoint.hpp"

namespace tzrec::checkpoint_detail {

using Json = nlohmann::ordered_json;

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kFormatName = "tzrec_checkpoint";
inline constexpr const char* kMetadataFile = "metadata.json";
inline constexpr const char* kPlanFile = "plan/plan.json";
inline constexpr const char* kCkptPrefix = "model.ckpt-";

// "[tzrec checkpoint] warning: <message>" on stderr.
void Warn(const std::string& message);

// "model-000001-of-000002.pt" for kind "model", rank 1, world 2.
std::string RankFileName(const char* kind, int rank, int world_size);
std::string CkptDirName(std::int64_t step);  // "model.ckpt-STEP"
std::string TmpDirName(std::int64_t step);   // ".model.ckpt-STEP.tmp"
// "model.ckpt-123" → 123; anything else → nullopt.
std::optional<std::int64_t> StepOfDirName(const std::string& name);
// ".model.ckpt-STEP.tmp" (a leftover of a killed save or prune).
bool IsTmpDirName(const std::string& name);

// Writes `text` to `path`, fsyncs and closes it; returns the byte count.
std::int64_t WriteTextFileSync(const std::string& path, const std::string& text);
void FsyncDir(const std::string& path);
std::string ReadTextFile(const std::string& path);
// Renames `from` to `to`, failing when `to` exists (rename(2) alone would replace an empty dir).
void RenameNoReplace(const std::string& from, const std::string& to);

// Parses and checks dir/metadata.json; with check_files, every listed file must exist with its
// recorded size. Throws CheckpointError naming the file.
Json LoadMetadata(const std::filesystem::path& dir, bool check_files);

}  // namespace tzrec::checkpoint_detail
