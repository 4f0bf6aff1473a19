// CheckpointManager (include/tzrec/checkpoint/checkpoint.hpp): metadata, the atomic directory
// protocol and the resharding restore. The .pt files are read and written by pt_file.cpp.
#include "tzrec/checkpoint/checkpoint.hpp"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc, _GNU_SOURCE)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "pt_file.hpp"
#include "tzrec/types/sharding_plan.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using checkpoint_detail::ReadPtFile;
using checkpoint_detail::WritePtFile;

constexpr int kFormatVersion = 1;
constexpr const char* kFormatName = "tzrec_checkpoint";
constexpr const char* kMetadataFile = "metadata.json";
constexpr const char* kPlanFile = "plan/plan.json";
constexpr const char* kCkptPrefix = "model.ckpt-";

void Warn(const std::string& message) {
  std::fprintf(stderr, "[tzrec checkpoint] warning: %s\n", message.c_str());
  std::fflush(stderr);
}

std::string RankFileName(const char* kind, int rank, int world_size) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%s-%06d-of-%06d.pt", kind, rank, world_size);
  return buf;
}

std::string CkptDirName(std::int64_t step) {
  return kCkptPrefix + std::to_string(step);
}
std::string TmpDirName(std::int64_t step) {
  return "." + CkptDirName(step) + ".tmp";
}

// "model.ckpt-123" → 123; anything else → nullopt.
std::optional<std::int64_t> StepOfDirName(const std::string& name) {
  const std::string prefix = kCkptPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return {};
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {};
  }
  return std::stoll(digits);
}

std::string ShapeString(at::IntArrayRef sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

std::vector<std::int64_t> ShapeVector(const at::Tensor& t) {
  return t.sizes().vec();
}

std::string ShardKey(const std::string& table, const std::string& what, const Shard& s) {
  return table + "/" + what + "/" + std::to_string(s.row_offset) + "_" +
         std::to_string(s.col_offset);
}

// --- filesystem with fsync ----------------------------------------------------------------

std::int64_t WriteTextFileSync(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CheckpointError("cannot create '" + path + "': " + std::strerror(errno) +
                          "; check that model_dir is writable");
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw CheckpointError("writing '" + path + "' failed: " + std::strerror(err) +
                            "; check free space in model_dir");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw CheckpointError("fsync/close of '" + path + "' failed: " + std::strerror(errno));
  }
  return static_cast<std::int64_t>(text.size());
}

void FsyncDir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw CheckpointError("cannot open directory '" + path +
                          "' to fsync it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    throw CheckpointError("fsync of directory '" + path + "' failed: " + std::strerror(err));
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Renames `from` to `to`, failing when `to` exists (rename(2) alone would replace an empty dir).
void RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {  // filesystem without RENAME_NOREPLACE
    std::error_code ec;
    if (fs::exists(to, ec)) {
      err = EEXIST;
    } else if (::rename(from.c_str(), to.c_str()) == 0) {
      return;
    } else {
      err = errno;
    }
  }
  throw CheckpointError("renaming '" + from + "' to '" + to + "' failed: " + std::strerror(err) +
                        (err == EEXIST ? "; a checkpoint of this step already exists (remove it "
                                         "or save at another step)"
                                       : ""));
}

// --- collectives over strings -------------------------------------------------------------

std::vector<std::string> AllGatherStrings(Comm& comm, const std::string& text) {
  const int world = comm.world_size();
  if (world == 1) return {text};
  const auto device = comm.device();
  at::Tensor length = at::full({1}, static_cast<std::int64_t>(text.size()),
                               at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor lengths = comm.AllGather(length).to(at::kCPU).contiguous();
  const std::int64_t max_len = std::max<std::int64_t>(lengths.max().item<std::int64_t>(), 1);
  at::Tensor bytes = at::zeros({max_len}, at::TensorOptions().dtype(at::kByte));
  if (!text.empty()) std::memcpy(bytes.data_ptr<std::uint8_t>(), text.data(), text.size());
  const at::Tensor all = comm.AllGather(bytes.to(device)).to(at::kCPU).contiguous();
  const auto* data = reinterpret_cast<const char*>(all.data_ptr<std::uint8_t>());
  const auto* lens = lengths.data_ptr<std::int64_t>();
  std::vector<std::string> out(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r)
    out[static_cast<std::size_t>(r)].assign(data + r * max_len, static_cast<std::size_t>(lens[r]));
  return out;
}

// Every rank passes its error ("" when fine); every rank throws the first one if any rank failed.
void AgreeOnErrors(Comm& comm, const std::string& local_error, const std::string& what) {
  const auto errors = AllGatherStrings(comm, local_error);
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) {
      throw CheckpointError(what + " failed on rank " + std::to_string(r) + ": " + errors[r]);
    }
  }
}

// Rank 0 did something alone; everyone learns its error (and throws it).
void AgreeWithRank0(Comm& comm, const std::string& rank0_error, const std::string& what) {
  const std::string error = comm.BroadcastString(rank0_error, 0);
  if (!error.empty()) throw CheckpointError(what + " failed on rank 0: " + error);
}

// A CPU, contiguous tensor owning exactly its bytes (what a .pt record stores).
at::Tensor Compact(const at::Tensor& tensor) {
  at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
  const auto bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
  if (t.storage_offset() != 0 || t.storage().nbytes() != bytes) {
    t = t.clone(at::MemoryFormat::Contiguous);
  }
  return t;
}

Json ParseJsonOr(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text.empty() ? std::string("{}") : text);
  } catch (const std::exception& e) {
    throw CheckpointError(what + " is not valid JSON (" + e.what() + "): '" + text.substr(0, 200) +
                          "'");
  }
}

// Cursors: objects and arrays are stored as JSON, anything else as a JSON string.
Json CursorToJson(const std::string& cursor) {
  try {
    Json j = Json::parse(cursor);
    if (j.is_object() || j.is_array()) return j;
  } catch (const std::exception&) {
  }
  return Json(cursor);
}
std::string CursorFromJson(const Json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

// --- save descriptors -----------------------------------------------------------------------

struct ShardDesc {
  std::string table;
  std::int64_t table_rows = 0, table_cols = 0;
  Shard shard;
  std::string dtype;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> states;  // name, shape
  int owner = 0;  // process rank that writes it
  bool written = false;
};

Json DescribeLocal(const TrainState& local, int rank) {
  Json shards = Json::array();
  for (const auto& s : local.shards) {
    const std::string where = "shard of table '" + s.table + "' at offsets [" +
                              std::to_string(s.shard.row_offset) + ", " +
                              std::to_string(s.shard.col_offset) + "]";
    if (s.table.empty()) throw CheckpointError("a ShardState has an empty table name");
    if (s.table_rows <= 0 || s.table_cols <= 0) {
      throw CheckpointError(where + ": table shape [" + std::to_string(s.table_rows) + ", " +
                            std::to_string(s.table_cols) + "] must be positive");
    }
    if (s.shard.row_offset < 0 || s.shard.col_offset < 0 || s.shard.rows < 0 || s.shard.cols < 0 ||
        s.shard.row_offset + s.shard.rows > s.table_rows ||
        s.shard.col_offset + s.shard.cols > s.table_cols) {
      throw CheckpointError(where + " with sizes [" + std::to_string(s.shard.rows) + ", " +
                            std::to_string(s.shard.cols) + "] lies outside the table [" +
                            std::to_string(s.table_rows) + ", " + std::to_string(s.table_cols) +
                            "]; fix the plan");
    }
    if (!s.weight.defined() || s.weight.dim() != 2 || s.weight.size(0) != s.shard.rows ||
        s.weight.size(1) != s.shard.cols) {
      throw CheckpointError(where + ": weight is " +
                            (s.weight.defined() ? ShapeString(s.weight.sizes()) : "undefined") +
                            ", expected [" + std::to_string(s.shard.rows) + ", " +
                            std::to_string(s.shard.cols) + "]");
    }
    Json states = Json::array();
    for (const auto& st : s.optimizer) {
      if (st.name.empty() || !st.tensor.defined()) {
        throw CheckpointError(where + ": optimizer state '" + st.name +
                              "' has an empty name or an undefined tensor");
      }
      states.push_back({{"name", st.name}, {"shape", ShapeVector(st.tensor)}});
    }
    shards.push_back({{"table", s.table},
                      {"table_shape", {s.table_rows, s.table_cols}},
                      {"offsets", {s.shard.row_offset, s.shard.col_offset}},
                      {"sizes", {s.shard.rows, s.shard.cols}},
                      {"dtype", std::string(c10::toString(s.weight.scalar_type()))},
                      {"states", states}});
  }
  Json desc = {
      {"step", local.step}, {"shards", shards}, {"cursor", CursorToJson(local.data_cursor_json)}};
  if (rank == 0) {
    desc["extra"] = ParseJsonOr(local.extra_json, "extra_json");
    desc["plan_hash"] = "";
    if (!local.plan_json.empty()) {
      try {
        desc["plan_hash"] = ShardingPlan::FromJson(local.plan_json).Hash();
      } catch (const std::exception& e) {
        throw CheckpointError(std::string("plan_json does not parse as a ShardingPlan: ") +
                              e.what());
      }
    }
    Json dense = Json::object();
    for (const auto& d : local.dense) {
      if (d.name.empty() || !d.tensor.defined()) {
        throw CheckpointError("dense tensor '" + d.name + "' has an empty name or is undefined");
      }
      if (dense.contains(d.name))
        throw CheckpointError("dense tensor '" + d.name + "' is listed twice");
      dense[d.name] = {{"shape", ShapeVector(d.tensor)},
                       {"dtype", std::string(c10::toString(d.tensor.scalar_type()))}};
    }
    Json dense_opt = Json::object();
    for (const auto& d : local.dense_optimizer) {
      if (d.name.empty() || !d.tensor.defined()) {
        throw CheckpointError("dense optimizer tensor '" + d.name +
                              "' has an empty name or is undefined");
      }
      if (dense_opt.contains(d.name)) {
        throw CheckpointError("dense optimizer tensor '" + d.name + "' is listed twice");
      }
      dense_opt[d.name] = {{"shape", ShapeVector(d.tensor)},
                           {"dtype", std::string(c10::toString(d.tensor.scalar_type()))}};
    }
    desc["dense"] = dense;
    desc["dense_optimizer"] = dense_opt;
  }
  return desc;
}

// The same on every rank: checks the ranks agree and decides which rank writes which shard.
std::vector<ShardDesc> MergeDescriptors(const std::vector<Json>& descs) {
  const std::int64_t step = descs[0].at("step").get<std::int64_t>();
  std::vector<ShardDesc> all;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> shapes;
  for (std::size_t r = 0; r < descs.size(); ++r) {
    const auto rank_step = descs[r].at("step").get<std::int64_t>();
    if (rank_step != step) {
      throw CheckpointError("ranks disagree on the step: rank 0 saves step " +
                            std::to_string(step) + ", rank " + std::to_string(r) + " step " +
                            std::to_string(rank_step) + "; call Save at the same step everywhere");
    }
    for (const auto& j : descs[r].at("shards")) {
      ShardDesc d;
      d.table = j.at("table").get<std::string>();
      d.table_rows = j.at("table_shape")[0].get<std::int64_t>();
      d.table_cols = j.at("table_shape")[1].get<std::int64_t>();
      d.shard.row_offset = j.at("offsets")[0].get<std::int64_t>();
      d.shard.col_offset = j.at("offsets")[1].get<std::int64_t>();
      d.shard.rows = j.at("sizes")[0].get<std::int64_t>();
      d.shard.cols = j.at("sizes")[1].get<std::int64_t>();
      d.shard.rank = static_cast<int>(r);
      d.dtype = j.at("dtype").get<std::string>();
      for (const auto& st : j.at("states")) {
        d.states.emplace_back(st.at("name").get<std::string>(),
                              st.at("shape").get<std::vector<std::int64_t>>());
      }
      d.owner = static_cast<int>(r);
      auto [it, inserted] = shapes.emplace(d.table, std::make_pair(d.table_rows, d.table_cols));
      if (!inserted && it->second != std::make_pair(d.table_rows, d.table_cols)) {
        throw CheckpointError("ranks disagree on the shape of table '" + d.table + "': [" +
                              std::to_string(it->second.first) + ", " +
                              std::to_string(it->second.second) + "] vs [" +
                              std::to_string(d.table_rows) + ", " + std::to_string(d.table_cols) +
                              "] on rank " + std::to_string(r));
      }
      all.push_back(std::move(d));
    }
  }
  // Write each distinct (table, offsets, sizes) once, by the lowest rank holding it; check that
  // the written shards of a table are disjoint and cover it.
  std::map<std::string, std::vector<std::size_t>> by_table;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto& d = all[i];
    if (d.shard.rows == 0 || d.shard.cols == 0) continue;
    bool duplicate = false;
    for (std::size_t k : by_table[d.table]) {
      const Shard& o = all[k].shard;
      if (o.row_offset == d.shard.row_offset && o.col_offset == d.shard.col_offset &&
          o.rows == d.shard.rows && o.cols == d.shard.cols) {
        duplicate = true;
        break;
      }
      const bool overlap = d.shard.row_offset < o.row_offset + o.rows &&
                           o.row_offset < d.shard.row_offset + d.shard.rows &&
                           d.shard.col_offset < o.col_offset + o.cols &&
                           o.col_offset < d.shard.col_offset + d.shard.cols;
      if (overlap) {
        throw CheckpointError("shards of table '" + d.table + "' overlap without being replicas: " +
                              "rank " + std::to_string(all[k].owner) + " and rank " +
                              std::to_string(d.owner) + "; the plan is inconsistent");
      }
    }
    if (!duplicate) {
      d.written = true;
      by_table[d.table].push_back(i);
    }
  }
  for (const auto& [table, shape] : shapes) {
    std::int64_t area = 0;
    for (std::size_t k : by_table[table]) area += all[k].shard.rows * all[k].shard.cols;
    if (area != shape.first * shape.second) {
      throw CheckpointError("the ranks' shards of table '" + table + "' cover " +
                            std::to_string(area) + " of its " +
                            std::to_string(shape.first * shape.second) +
                            " cells; every rank must pass all of its shards");
    }
  }
  return all;
}

// --- restore planning ------------------------------------------------------------------------

struct CopyOp {
  std::string key;                              // record in the source file
  std::vector<std::int64_t> src_shape;          // shape recorded in metadata
  bool scalar = false;                          // scalar state: max over sources
  bool whole = false;                           // dense: the whole tensor
  std::int64_t r0 = 0, nr = 0, c0 = 0, nc = 0;  // source slice in [rows, blocks] units
  at::Tensor dst;                               // view into the target (2-D, or scalar / whole)
  std::shared_ptr<bool> assigned;               // scalar: set once a source was copied
};

struct Interval {
  std::int64_t begin, end;
};
Interval Intersect(std::int64_t a0, std::int64_t an, std::int64_t b0, std::int64_t bn) {
  return {std::max(a0, b0), std::min(a0 + an, b0 + bn)};
}

// State tensor as [rows, blocks] with block width bw; nullopt when not of that form.
struct BlockLayout {
  std::int64_t blocks = 0, width = 0;
  bool one_dim = false;
};
std::optional<BlockLayout> LayoutOf(const std::vector<std::int64_t>& shape, std::int64_t rows,
                                    std::int64_t cols) {
  if (shape.empty() || shape.size() > 2 || shape[0] != rows) return {};
  BlockLayout l;
  l.one_dim = shape.size() == 1;
  l.blocks = l.one_dim ? 1 : shape[1];
  if (l.blocks <= 0 || cols % l.blocks != 0) return {};
  l.width = cols / l.blocks;
  return l;
}

std::string ShardName(const std::string& table, const Shard& s) {
  return "table '" + table + "' shard [" + std::to_string(s.row_offset) + ", " +
         std::to_string(s.col_offset) + "] + [" + std::to_string(s.rows) + ", " +
         std::to_string(s.cols) + "]";
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
  const int rank = comm.rank();
  const int world = comm.world_size();
  const fs::path model_dir(model_dir_);
  const fs::path final_dir = model_dir / CkptDirName(local.step);
  const fs::path tmp_dir = model_dir / TmpDirName(local.step);

  // 1. Describe, gather, agree on what is written where.
  std::string error;
  Json desc;
  try {
    if (local.step < 0)
      throw CheckpointError("step " + std::to_string(local.step) + " is negative");
    desc = DescribeLocal(local, rank);
  } catch (const std::exception& e) {
    error = e.what();
  }
  AgreeOnErrors(comm, error, "checkpoint save (step " + std::to_string(local.step) + ")");
  std::vector<Json> descs;
  for (const auto& text : AllGatherStrings(comm, desc.dump())) descs.push_back(Json::parse(text));
  const std::vector<ShardDesc> all = MergeDescriptors(descs);  // same result (or throw) everywhere

  // 2. Rank 0 prepares the temporary directory.
  if (rank == 0) {
    error.clear();
    try {
      std::error_code ec;
      fs::create_directories(model_dir, ec);
      if (ec)
        throw CheckpointError("cannot create model_dir '" + model_dir_ + "': " + ec.message());
      for (const auto& entry : fs::directory_iterator(model_dir)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 4 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
            StepOfDirName(name.substr(1, name.size() - 5))) {
          fs::remove_all(entry.path(), ec);  // leftover of a killed save
          if (ec) Warn("cannot remove leftover '" + entry.path().string() + "': " + ec.message());
        }
      }
      if (fs::exists(final_dir)) {
        throw CheckpointError("checkpoint '" + final_dir.string() +
                              "' already exists; remove it or save at another step");
      }
      fs::create_directories(tmp_dir / "plan", ec);
      if (ec) throw CheckpointError("cannot create '" + tmp_dir.string() + "': " + ec.message());
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  AgreeWithRank0(comm, error, "checkpoint save (step " + std::to_string(local.step) + ")");

  // 3. Every rank writes its two files.
  const std::string model_file = RankFileName("model", rank, world);
  const std::string optim_file = RankFileName("optimizer", rank, world);
  error.clear();
  Json written;
  try {
    std::vector<NamedTensor> model_entries;
    std::vector<NamedTensor> optim_entries;
    std::size_t global_index = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {  // this rank's entries of `all`, in order
      if (all[i].owner != rank) continue;
      const ShardState& s = local.shards[global_index++];
      if (!all[i].written) continue;
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
    const auto model_bytes = WritePtFile((tmp_dir / model_file).string(), model_entries);
    const auto optim_bytes = WritePtFile((tmp_dir / optim_file).string(), optim_entries);
    written = Json::array({{{"name", model_file}, {"bytes", model_bytes}, {"rank", rank}},
                           {{"name", optim_file}, {"bytes", optim_bytes}, {"rank", rank}}});
  } catch (const std::exception& e) {
    error = e.what();
  }
  const auto results = AllGatherStrings(comm, error.empty() ? written.dump() : "!" + error);
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].empty() && results[r][0] == '!') {
      if (rank == 0) {
        std::error_code ec;
        fs::remove_all(tmp_dir, ec);
      }
      throw CheckpointError("checkpoint save (step " + std::to_string(local.step) +
                            ") failed on rank " + std::to_string(r) + ": " + results[r].substr(1));
    }
  }

  // 4. Rank 0: plan, metadata (last), fsync, rename, fsync model_dir, prune.
  error.clear();
  if (rank == 0) {
    try {
      Json files = Json::array();
      for (const auto& text : results) {
        for (const auto& f : Json::parse(text)) files.push_back(f);
      }
      if (!local.plan_json.empty()) {
        const auto bytes = WriteTextFileSync((tmp_dir / kPlanFile).string(), local.plan_json);
        files.push_back({{"name", kPlanFile}, {"bytes", bytes}, {"rank", 0}});
      }
      FsyncDir((tmp_dir / "plan").string());

      Json tables = Json::object();
      for (const auto& d : all) {
        if (!tables.contains(d.table)) {
          tables[d.table] = {{"shape", {d.table_rows, d.table_cols}}, {"shards", Json::array()}};
        }
        if (!d.written) continue;
        Json states = Json::object();
        for (const auto& [name, shape] : d.states) {
          states[name] = {{"key", ShardKey(d.table, name, d.shard)}, {"shape", shape}};
        }
        tables[d.table]["shards"].push_back(
            {{"offsets", {d.shard.row_offset, d.shard.col_offset}},
             {"sizes", {d.shard.rows, d.shard.cols}},
             {"rank", d.owner},
             {"dtype", d.dtype},
             {"model_file", RankFileName("model", d.owner, world)},
             {"weight_key", ShardKey(d.table, "weight", d.shard)},
             {"optimizer_file", RankFileName("optimizer", d.owner, world)},
             {"optimizer", states}});
      }
      Json cursors = Json::array();
      for (const auto& d : descs) cursors.push_back(d.at("cursor"));
      Json meta = {
          {"format", kFormatName},
          {"format_version", kFormatVersion},
          {"step", local.step},
          {"world_size", world},
          {"plan_hash", descs[0].at("plan_hash")},
          {"plan_file", local.plan_json.empty() ? Json() : Json(kPlanFile)},
          {"tables", tables},
          {"dense", {{"file", RankFileName("model", 0, world)}, {"tensors", descs[0].at("dense")}}},
          {"dense_optimizer",
           {{"file", RankFileName("optimizer", 0, world)},
            {"tensors", descs[0].at("dense_optimizer")}}},
          {"data_cursors", cursors},
          {"extra", descs[0].at("extra")},
          {"files", files}};
      WriteTextFileSync((tmp_dir / kMetadataFile).string(), meta.dump(2) + "\n");
      FsyncDir(tmp_dir.string());
      RenameNoReplace(tmp_dir.string(), final_dir.string());
      FsyncDir(model_dir.string());
    } catch (const std::exception& e) {
      error = e.what();
      std::error_code ec;
      fs::remove_all(tmp_dir, ec);
    }
    if (error.empty() && keep_max_ > 0) {
      std::vector<std::pair<std::int64_t, fs::path>> existing;
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
        if (!entry.is_directory()) continue;
        if (auto step = StepOfDirName(entry.path().filename().string())) {
          existing.emplace_back(*step, entry.path());
        }
      }
      std::sort(existing.begin(), existing.end());
      std::int64_t excess = static_cast<std::int64_t>(existing.size()) - keep_max_;
      for (std::size_t i = 0; excess > 0 && i < existing.size(); ++i) {
        if (existing[i].first == local.step) continue;  // never the one just written
        // Rename first (atomic), then delete: a kill mid-removal leaves only a temporary
        // directory, which Latest() ignores and the next Save removes.
        const fs::path doomed = existing[i].second.parent_path() /
                                ("." + existing[i].second.filename().string() + ".tmp");
        fs::rename(existing[i].second, doomed, ec);
        fs::remove_all(ec ? existing[i].second : doomed, ec);
        if (ec)
          Warn("keep_checkpoint_max: cannot remove '" + existing[i].second.string() +
               "': " + ec.message());
        --excess;
      }
    }
  }
  AgreeWithRank0(comm, error, "checkpoint save (step " + std::to_string(local.step) + ")");
  return final_dir.string();
}

namespace {

// Parses and checks dir/metadata.json; with check_files, every listed file must exist with its
// recorded size. Throws CheckpointError naming the file.
Json LoadMetadata(const fs::path& dir, bool check_files) {
  const fs::path path = dir / kMetadataFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw CheckpointError("checkpoint '" + dir.string() + "' has no " + kMetadataFile +
                          " (an incomplete save?); restore from another checkpoint");
  }
  Json meta;
  try {
    meta = Json::parse(ReadTextFile(path.string()));
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint metadata '" + path.string() + "' is corrupt: " + e.what());
  }
  if (!meta.is_object() || meta.value("format", "") != kFormatName || !meta.contains("files") ||
      !meta.contains("tables") || !meta.contains("step") || !meta.contains("world_size")) {
    throw CheckpointError("checkpoint metadata '" + path.string() +
                          "' is not a tzrec_train checkpoint (format/files/tables/step missing)");
  }
  const int version = meta.value("format_version", 0);
  if (version > kFormatVersion) {
    throw CheckpointError("checkpoint metadata '" + path.string() + "' has format_version " +
                          std::to_string(version) + "; this tzrec_train reads up to " +
                          std::to_string(kFormatVersion) + " (use a newer build)");
  }
  if (check_files) {
    for (const auto& f : meta.at("files")) {
      const fs::path file = dir / f.at("name").get<std::string>();
      const auto want = f.at("bytes").get<std::int64_t>();
      const auto have = fs::file_size(file, ec);
      if (ec) {
        throw CheckpointError("checkpoint file '" + file.string() + "' listed in " + path.string() +
                              " is missing: " + ec.message());
      }
      if (static_cast<std::int64_t>(have) != want) {
        throw CheckpointError("checkpoint file '" + file.string() +
                              "' is truncated or corrupt: " + std::to_string(have) +
                              " bytes on disk, " + kMetadataFile + " records " +
                              std::to_string(want) + "; restore from another checkpoint");
      }
    }
  }
  return meta;
}

}  // namespace

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

RestoreInfo CheckpointManager::Restore(const std::string& dir_text, TrainState& target) {
  Comm& comm = *comm_;
  const fs::path dir(dir_text);
  RestoreInfo info;
  info.dir = dir_text;
  // Tables the model has on any rank (for the "saved but unused" warning); gathered before any
  // step that can fail, so every rank reaches this collective.
  std::string local_tables;
  for (const auto& s : target.shards) local_tables += s.table + "\n";
  std::set<std::string> model_tables;
  for (const auto& text : AllGatherStrings(comm, local_tables)) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) model_tables.insert(line);
  }
  std::string error;
  try {
    c10::NoGradGuard no_grad;  // target views are taken and written without autograd
    const Json meta = LoadMetadata(dir, /*check_files=*/true);
    const fs::path meta_path = dir / kMetadataFile;
    info.step = meta.at("step").get<std::int64_t>();
    info.saved_world_size = meta.at("world_size").get<int>();
    if (meta.contains("plan_file") && meta["plan_file"].is_string()) {
      info.saved_plan_json = ReadTextFile((dir / meta["plan_file"].get<std::string>()).string());
    }
    for (const auto& c : meta.at("data_cursors"))
      info.data_cursors_json.push_back(CursorFromJson(c));
    info.extra_json = meta.contains("extra") ? meta["extra"].dump() : "{}";

    std::map<std::string, std::vector<CopyOp>> ops;  // by file name
    const Json& tables = meta.at("tables");
    for (auto& s : target.shards) {
      const std::string where = ShardName(s.table, s.shard);
      if (!tables.contains(s.table)) {
        throw CheckpointError("table '" + s.table + "' is not in checkpoint '" +
                              meta_path.string() + "' (it has " + std::to_string(tables.size()) +
                              " tables); check the model config or start without --continue_train");
      }
      const Json& t = tables[s.table];
      const auto rows = t.at("shape")[0].get<std::int64_t>();
      const auto cols = t.at("shape")[1].get<std::int64_t>();
      if (rows != s.table_rows || cols != s.table_cols) {
        throw CheckpointError("table '" + s.table + "' is [" + std::to_string(s.table_rows) + ", " +
                              std::to_string(s.table_cols) + "] now but [" + std::to_string(rows) +
                              ", " + std::to_string(cols) + "] in '" + meta_path.string() +
                              "'; embedding shapes cannot change on restore");
      }
      if (!s.weight.defined() || s.weight.dim() != 2 || s.weight.size(0) != s.shard.rows ||
          s.weight.size(1) != s.shard.cols) {
        throw CheckpointError(where + ": target weight is " +
                              (s.weight.defined() ? ShapeString(s.weight.sizes()) : "undefined") +
                              ", expected [" + std::to_string(s.shard.rows) + ", " +
                              std::to_string(s.shard.cols) + "]");
      }
      if (s.shard.rows == 0 || s.shard.cols == 0) continue;
      // Weight: intersections with every saved shard.
      std::int64_t covered = 0;
      struct Overlap {
        const Json* saved;
        Shard shard;
        Interval r, c;
      };
      std::vector<Overlap> overlaps;
      for (const auto& saved : t.at("shards")) {
        Shard ss;
        ss.row_offset = saved.at("offsets")[0].get<std::int64_t>();
        ss.col_offset = saved.at("offsets")[1].get<std::int64_t>();
        ss.rows = saved.at("sizes")[0].get<std::int64_t>();
        ss.cols = saved.at("sizes")[1].get<std::int64_t>();
        const Interval r = Intersect(s.shard.row_offset, s.shard.rows, ss.row_offset, ss.rows);
        const Interval c = Intersect(s.shard.col_offset, s.shard.cols, ss.col_offset, ss.cols);
        if (r.begin >= r.end || c.begin >= c.end) continue;
        overlaps.push_back({&saved, ss, r, c});
        covered += (r.end - r.begin) * (c.end - c.begin);
        CopyOp op;
        op.key = saved.at("weight_key").get<std::string>();
        op.src_shape = {ss.rows, ss.cols};
        op.r0 = r.begin - ss.row_offset;
        op.nr = r.end - r.begin;
        op.c0 = c.begin - ss.col_offset;
        op.nc = c.end - c.begin;
        op.dst = s.weight.narrow(0, r.begin - s.shard.row_offset, op.nr)
                     .narrow(1, c.begin - s.shard.col_offset, op.nc);
        ops[saved.at("model_file").get<std::string>()].push_back(std::move(op));
      }
      if (covered != s.shard.rows * s.shard.cols) {
        throw CheckpointError(where + ": the shards in '" + meta_path.string() + "' cover " +
                              std::to_string(covered) + " of its " +
                              std::to_string(s.shard.rows * s.shard.cols) +
                              " cells; the checkpoint is incomplete");
      }
      // Optimizer state: all-or-nothing per state tensor.
      for (auto& st : s.optimizer) {
        std::vector<std::pair<std::string, CopyOp>> state_ops;
        std::string problem;
        const bool scalar = st.tensor.dim() == 0;
        const auto target_layout =
            scalar ? std::nullopt : LayoutOf(ShapeVector(st.tensor), s.shard.rows, s.shard.cols);
        if (!scalar && !target_layout) {
          problem =
              "its shape " + ShapeString(st.tensor.sizes()) + " is not [rows], [rows, blocks]";
        }
        auto assigned = std::make_shared<bool>(false);
        for (const auto& o : overlaps) {
          if (!problem.empty()) break;
          const Json& saved_states = o.saved->at("optimizer");
          if (!saved_states.contains(st.name)) {
            problem = "the checkpoint has no '" + st.name + "' for saved shard [" +
                      std::to_string(o.shard.row_offset) + ", " +
                      std::to_string(o.shard.col_offset) + "]";
            break;
          }
          const Json& ss = saved_states[st.name];
          const auto shape = ss.at("shape").get<std::vector<std::int64_t>>();
          CopyOp op;
          op.key = ss.at("key").get<std::string>();
          op.src_shape = shape;
          if (scalar) {
            if (!shape.empty()) {
              problem = "it is a scalar here but " + ShapeString(shape) + " in the checkpoint";
              break;
            }
            op.scalar = true;
            op.dst = st.tensor;
            op.assigned = assigned;
          } else {
            const auto src_layout = LayoutOf(shape, o.shard.rows, o.shard.cols);
            const std::int64_t w = target_layout->width;
            if (!src_layout || src_layout->width != w ||
                (o.c.begin - s.shard.col_offset) % w != 0 ||
                (o.c.begin - o.shard.col_offset) % w != 0 || (o.c.end - o.c.begin) % w != 0) {
              problem = "its column blocks (" + std::to_string(target_layout->blocks) +
                        " of width " + std::to_string(w) + " at column " +
                        std::to_string(s.shard.col_offset) + ") do not match the saved " +
                        ShapeString(shape) + " of shard [" + std::to_string(o.shard.row_offset) +
                        ", " + std::to_string(o.shard.col_offset) + "] + [" +
                        std::to_string(o.shard.rows) + ", " + std::to_string(o.shard.cols) + "]";
              break;
            }
            op.r0 = o.r.begin - o.shard.row_offset;
            op.nr = o.r.end - o.r.begin;
            op.c0 = (o.c.begin - o.shard.col_offset) / w;
            op.nc = (o.c.end - o.c.begin) / w;
            at::Tensor dst2d = target_layout->one_dim ? st.tensor.unsqueeze(1) : st.tensor;
            op.dst = dst2d.narrow(0, o.r.begin - s.shard.row_offset, op.nr)
                         .narrow(1, (o.c.begin - s.shard.col_offset) / w, op.nc);
          }
          state_ops.emplace_back(o.saved->at("optimizer_file").get<std::string>(), std::move(op));
        }
        if (!problem.empty()) {
          Warn("rank " + std::to_string(comm.rank()) + ": optimizer state '" + st.name + "' of " +
               where + " is re-initialised: " + problem);
          continue;
        }
        for (auto& [file, op] : state_ops) ops[file].push_back(std::move(op));
      }
    }
    if (comm.rank() == 0) {
      for (const auto& [name, t] : tables.items()) {
        if (!model_tables.count(name))
          Warn("table '" + name + "' of " + meta_path.string() + " is not in the model; ignored");
      }
    }
    // Dense parameters and dense optimizer state: from rank 0's files, by name.
    const auto plan_dense = [&](const char* section, std::vector<NamedTensor>& tensors) {
      const Json& sec = meta.at(section);
      const std::string file = sec.at("file").get<std::string>();
      const Json& saved = sec.at("tensors");
      std::set<std::string> names;
      for (auto& d : tensors) {
        names.insert(d.name);
        if (!saved.contains(d.name)) {
          throw CheckpointError(
              std::string(section) + " tensor '" + d.name + "' is not in '" +
              (dir / file).string() + "' (" + std::to_string(saved.size()) +
              " saved); check the model config or start without --continue_train");
        }
        const auto shape = saved[d.name].at("shape").get<std::vector<std::int64_t>>();
        if (!d.tensor.defined() || ShapeVector(d.tensor) != shape) {
          throw CheckpointError(std::string(section) + " tensor '" + d.name + "' is " +
                                (d.tensor.defined() ? ShapeString(d.tensor.sizes()) : "undefined") +
                                " now but " + ShapeString(shape) + " in '" + (dir / file).string() +
                                "'; dense shapes cannot change on restore");
        }
        CopyOp op;
        op.key = "dense/" + d.name;
        op.src_shape = shape;
        op.whole = true;
        op.dst = d.tensor;
        ops[file].push_back(std::move(op));
      }
      if (comm.rank() == 0) {
        // One line per section: an export or --ignore_restore_optimizer skips every optimizer
        // tensor.
        std::vector<std::string> skipped;
        for (const auto& [name, v] : saved.items()) {
          if (!names.count(name)) skipped.push_back(name);
        }
        if (!skipped.empty()) {
          Warn(std::to_string(skipped.size()) + " " + section + " tensor(s) of " +
               meta_path.string() + " are not in the model and were ignored (first: '" +
               skipped.front() + "')");
        }
      }
    };
    plan_dense("dense", target.dense);
    plan_dense("dense_optimizer", target.dense_optimizer);

    // Execute, one file at a time.
    for (auto& [file, file_ops] : ops) {
      const std::string path = (dir / file).string();
      std::map<std::string, at::Tensor> records;
      for (auto& nt : ReadPtFile(path)) records.emplace(std::move(nt.name), std::move(nt.tensor));
      for (auto& op : file_ops) {
        auto it = records.find(op.key);
        if (it == records.end()) {
          throw CheckpointError("checkpoint file '" + path + "' has no record '" + op.key +
                                "' that " + kMetadataFile + " lists; the checkpoint is corrupt");
        }
        const at::Tensor& src = it->second;
        if (ShapeVector(src) != op.src_shape) {
          throw CheckpointError("record '" + op.key + "' of checkpoint file '" + path + "' is " +
                                ShapeString(src.sizes()) + " but " + kMetadataFile + " says " +
                                ShapeString(op.src_shape) + "; the checkpoint is corrupt");
        }
        if (op.whole) {
          op.dst.copy_(src);
        } else if (op.scalar) {
          if (*op.assigned) {
            op.dst.copy_(at::maximum(op.dst, src.to(op.dst.device(), op.dst.scalar_type())));
          } else {
            op.dst.copy_(src);
            *op.assigned = true;
          }
        } else {
          const at::Tensor src2d = src.dim() == 1 ? src.unsqueeze(1) : src;
          op.dst.copy_(src2d.narrow(0, op.r0, op.nr).narrow(1, op.c0, op.nc));
        }
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  AgreeOnErrors(comm, error, "checkpoint restore from '" + dir_text + "'");
  return info;
}

}  // namespace tzrec
