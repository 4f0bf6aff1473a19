// CheckpointManager (include/tzrec/checkpoint/checkpoint.hpp): construction, Latest, and Save as
// agreed phases — describe and merge (layout.cpp), prepare the temporary directory, write the rank
// files, commit (metadata last, fsync, atomic rename), prune. Restore is in restore.cpp.
#include "tzrec/checkpoint/checkpoint.hpp"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "files.hpp"
#include "layout.hpp"
#include "phase.hpp"
#include "pt_file.hpp"
#include "tzrec/types/sharding_plan.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;
using namespace checkpoint_detail;  // NOLINT(google-build-using-namespace): this TU's own detail

struct SavePaths {
  fs::path model_dir, final_dir, tmp_dir;
};

// A CPU, contiguous tensor owning exactly its bytes (what a .pt record stores).
at::Tensor Compact(const at::Tensor& tensor) {
  at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
  const auto bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
  if (t.storage_offset() != 0 || t.storage().nbytes() != bytes) {
    t = t.clone(at::MemoryFormat::Contiguous);
  }
  return t;
}

// Rank 0: removes leftover .tmp directories, refuses an existing checkpoint of this step and
// creates the temporary directory.
void PrepareTmpDir(const SavePaths& p) {
  std::error_code ec;
  fs::create_directories(p.model_dir, ec);
  if (ec) {
    throw CheckpointError("cannot create model_dir '" + p.model_dir.string() +
                          "': " + ec.message());
  }
  for (const auto& entry : fs::directory_iterator(p.model_dir)) {
    if (IsTmpDirName(entry.path().filename().string())) {
      fs::remove_all(entry.path(), ec);  // leftover of a killed save
      if (ec) Warn("cannot remove leftover '" + entry.path().string() + "': " + ec.message());
    }
  }
  if (fs::exists(p.final_dir)) {
    throw CheckpointError("checkpoint '" + p.final_dir.string() +
                          "' already exists; remove it or save at another step");
  }
  fs::create_directories(p.tmp_dir / "plan", ec);
  if (ec) throw CheckpointError("cannot create '" + p.tmp_dir.string() + "': " + ec.message());
}

// Every rank: its model and optimizer files; returns their {"name", "bytes", "rank"} entries.
Json WriteRankFiles(const TrainState& local, const std::vector<ShardDesc>& all, int rank, int world,
                    const SavePaths& p) {
  std::vector<NamedTensor> model_entries;
  std::vector<NamedTensor> optim_entries;
  std::size_t global_index = 0;
  for (const auto& d : all) {  // this rank's entries of `all`, in order
    if (d.owner != rank) continue;
    const ShardState& s = local.shards[global_index++];
    if (!d.written) continue;
    model_entries.push_back({ShardKey(s.table, "weight", s.shard), Compact(s.weight)});
    for (const auto& st : s.optimizer) {
      optim_entries.push_back({ShardKey(s.table, st.name, s.shard), Compact(st.tensor)});
    }
  }
  if (rank == 0) {
    for (const auto& d : local.dense)
      model_entries.push_back({"dense/" + d.name, Compact(d.tensor)});
    for (const auto& d : local.dense_optimizer) {
      optim_entries.push_back({"dense/" + d.name, Compact(d.tensor)});
    }
  }
  const std::string model_file = RankFileName("model", rank, world);
  const std::string optim_file = RankFileName("optimizer", rank, world);
  const auto model_bytes = WritePtFile((p.tmp_dir / model_file).string(), model_entries);
  const auto optim_bytes = WritePtFile((p.tmp_dir / optim_file).string(), optim_entries);
  return Json::array({{{"name", model_file}, {"bytes", model_bytes}, {"rank", rank}},
                      {{"name", optim_file}, {"bytes", optim_bytes}, {"rank", rank}}});
}

// Rank 0: plan, metadata (last), fsync, rename, fsync model_dir. On failure the temporary
// directory is removed.
void Commit(const TrainState& local, const std::vector<ShardDesc>& all,
            const std::vector<Json>& descs, const std::vector<std::string>& written, int world,
            const SavePaths& p) {
  try {
    Json files = Json::array();
    for (const auto& text : written) {
      for (const auto& f : Json::parse(text)) files.push_back(f);
    }
    if (!local.plan_json.empty()) {
      const auto bytes = WriteTextFileSync((p.tmp_dir / kPlanFile).string(), local.plan_json);
      files.push_back({{"name", kPlanFile}, {"bytes", bytes}, {"rank", 0}});
    }
    FsyncDir((p.tmp_dir / "plan").string());
    const Json meta = BuildMetadata(all, descs, local.step, world, !local.plan_json.empty(), files);
    WriteTextFileSync((p.tmp_dir / kMetadataFile).string(), meta.dump(2) + "\n");
    FsyncDir(p.tmp_dir.string());
    RenameNoReplace(p.tmp_dir.string(), p.final_dir.string());
    FsyncDir(p.model_dir.string());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(p.tmp_dir, ec);
    throw;
  }
}

// "" when dir is a checkpoint tzrec_train completed (its metadata.json names this step and every
// file it lists has its recorded size: what Latest() would restore), else why not.
std::string WhyIncomplete(const fs::path& dir, std::int64_t step) {
  try {
    const Json meta = LoadMetadata(dir, /*check_files=*/true);
    if (meta.at("step").get<std::int64_t>() == step) return "";
    return "its metadata.json records step " + std::to_string(meta.at("step").get<std::int64_t>());
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Rank 0: keeps the newest keep_max complete checkpoints (never the one just written). A
// directory named like a checkpoint that is not complete (a damaged or hand-copied one) is neither
// counted nor removed, so it cannot push a valid older checkpoint out; it is named in a warning.
void Prune(const fs::path& model_dir, std::int64_t keep_max, std::int64_t step) {
  std::vector<std::pair<std::int64_t, fs::path>> existing;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    if (!entry.is_directory()) continue;
    if (auto s = StepOfDirName(entry.path().filename().string())) {
      const std::string why = *s == step ? "" : WhyIncomplete(entry.path(), *s);
      if (why.empty()) {
        existing.emplace_back(*s, entry.path());
      } else {
        Warn("keep_checkpoint_max: '" + entry.path().string() +
             "' is not a complete checkpoint and is neither counted nor removed (" + why +
             "); remove it by hand if it is not needed");
      }
    }
  }
  std::sort(existing.begin(), existing.end());
  std::int64_t excess = static_cast<std::int64_t>(existing.size()) - keep_max;
  for (std::size_t i = 0; excess > 0 && i < existing.size(); ++i) {
    if (existing[i].first == step) continue;
    // Rename first (atomic), then delete: a kill mid-removal leaves only a temporary directory,
    // which Latest() ignores and the next Save removes.
    const fs::path doomed =
        existing[i].second.parent_path() / ("." + existing[i].second.filename().string() + ".tmp");
    fs::rename(existing[i].second, doomed, ec);
    fs::remove_all(ec ? existing[i].second : doomed, ec);
    if (ec) {
      Warn("keep_checkpoint_max: cannot remove '" + existing[i].second.string() +
           "': " + ec.message());
    }
    --excess;
  }
}

}  // namespace

CheckpointManager::CheckpointManager(std::string model_dir, std::int64_t keep_max,
                                     std::shared_ptr<Comm> comm)
    : model_dir_(std::move(model_dir)), keep_max_(keep_max), comm_(std::move(comm)) {
  if (model_dir_.empty())
    throw CheckpointError("CheckpointManager: model_dir is empty; pass --model_dir");
  if (keep_max_ < 0) {
    throw CheckpointError("CheckpointManager: keep_max " + std::to_string(keep_max_) +
                          " is negative; use 0 to keep every checkpoint");
  }
  if (!comm_) throw CheckpointError("CheckpointManager: comm is null; pass Comm::Init(...)");
}

std::string CheckpointManager::Save(const TrainState& local) {
  Comm& comm = *comm_;
  const int rank = comm.Rank();
  const int world = comm.WorldSize();
  const std::string context = "checkpoint save (step " + std::to_string(local.step) + ")";
  const SavePaths p{fs::path(model_dir_), fs::path(model_dir_) / CkptDirName(local.step),
                    fs::path(model_dir_) / TmpDirName(local.step)};

  // 1. Describe, gather, agree on what is written where.
  const Json desc = Phase(comm, context, [&] {
    if (local.step < 0)
      throw CheckpointError("step " + std::to_string(local.step) + " is negative");
    return DescribeLocal(local, rank);
  });
  std::vector<Json> descs;
  for (const auto& text : AllGatherStrings(comm, desc.dump())) descs.push_back(Json::parse(text));
  const std::vector<ShardDesc> all = MergeDescriptors(descs);  // same result (or throw) everywhere

  // 2. Rank 0 prepares the temporary directory.
  Phase(comm, context, [&] {
    if (rank == 0) PrepareTmpDir(p);
  });

  // 3. Every rank writes its two files (and fsyncs them).
  Json written;
  try {
    written = Phase(comm, context, [&] { return WriteRankFiles(local, all, rank, world, p); });
  } catch (...) {
    std::error_code ec;
    if (rank == 0) fs::remove_all(p.tmp_dir, ec);
    throw;
  }
  const auto results = AllGatherStrings(comm, written.dump());

  // 4. Rank 0 commits and prunes.
  Phase(comm, context, [&] {
    if (rank != 0) return;
    Commit(local, all, descs, results, world, p);
    if (keep_max_ > 0) Prune(p.model_dir, keep_max_, local.step);
  });
  return p.final_dir.string();
}

std::optional<std::string> CheckpointManager::Latest() const {
  std::error_code ec;
  if (!fs::is_directory(model_dir_, ec)) return std::nullopt;
  std::vector<std::pair<std::int64_t, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(model_dir_, ec)) {
    if (!entry.is_directory(ec)) continue;
    if (auto step = StepOfDirName(entry.path().filename().string())) {
      found.emplace_back(*step, entry.path());
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [step, dir] : found) {
    try {
      const Json meta = LoadMetadata(dir, /*check_files=*/true);
      if (meta.at("step").get<std::int64_t>() == step) return dir.string();
    } catch (const std::exception&) {
      // invalid: skip to an older one
    }
  }
  return std::nullopt;
}

}  // namespace tzrec
