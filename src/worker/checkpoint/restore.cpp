// CheckpointManager::Restore (include/tzrec/checkpoint/checkpoint.hpp "Resharding on Restore"):
// read and check metadata.json, plan every copy from the saved shards into the target's tensors
// (geometry in layout.cpp), then read each file once and apply its copies.
#include <ATen/core/Tensor.h>
#include <ATen/ops/maximum.h>
#include <c10/core/GradMode.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "files.hpp"
#include "layout.hpp"
#include "phase.hpp"
#include "pt_file.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;
using namespace checkpoint_detail;  // NOLINT(google-build-using-namespace): this TU's own detail

struct CopyOp {
  std::string key;                      // record in the source file
  std::vector<std::int64_t> src_shape;  // shape recorded in metadata
  bool scalar = false;                  // scalar state: max over sources
  bool whole = false;                   // dense: the whole tensor
  Slice slice;                          // source → target rectangle in [rows, blocks] units
  at::Tensor dst;                       // the target tensor (2-D view, or scalar / whole)
  std::shared_ptr<bool> assigned;       // scalar: set once a source was copied
};
using CopyPlan = std::map<std::string, std::vector<CopyOp>>;  // by file name

// A saved shard of the target's table that overlaps the target shard.
struct SavedOverlap {
  const Json* saved;
  Shard shard;
  Overlap overlap;
};

struct RestoreTarget {
  const fs::path& dir;
  const Json& meta;
  int rank;
  [[nodiscard]] std::string MetaPath() const { return (dir / kMetadataFile).string(); }
};

// Tables the model has on any rank (for the "saved but unused" warning). Collective.
std::set<std::string> ModelTables(Comm& comm, const TrainState& target) {
  std::string local_tables;
  for (const auto& s : target.shards) local_tables += s.table + "\n";
  std::set<std::string> model_tables;
  for (const auto& text : AllGatherStrings(comm, local_tables)) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) model_tables.insert(line);
  }
  return model_tables;
}

RestoreInfo ReadRestoreInfo(const std::string& dir_text, const Json& meta) {
  const fs::path dir(dir_text);
  RestoreInfo info;
  info.dir = dir_text;
  info.step = meta.at("step").get<std::int64_t>();
  info.saved_world_size = meta.at("world_size").get<int>();
  if (meta.contains("plan_file") && meta["plan_file"].is_string()) {
    info.saved_plan_json = ReadTextFile((dir / meta["plan_file"].get<std::string>()).string());
  }
  for (const auto& c : meta.at("data_cursors")) info.data_cursors_json.push_back(CursorFromJson(c));
  info.extra_json = meta.contains("extra") ? meta["extra"].dump() : "{}";
  return info;
}

// The saved table of target shard `s`, checked against it.
const Json& SavedTable(const RestoreTarget& t, const ShardState& s) {
  const Json& tables = t.meta.at("tables");
  if (!tables.contains(s.table)) {
    throw CheckpointError("table '" + s.table + "' is not in checkpoint '" + t.MetaPath() +
                          "' (it has " + std::to_string(tables.size()) +
                          " tables); check the model config or start without --continue_train");
  }
  const Json& table = tables[s.table];
  const auto rows = table.at("shape")[0].get<std::int64_t>();
  const auto cols = table.at("shape")[1].get<std::int64_t>();
  if (rows != s.table_rows || cols != s.table_cols) {
    throw CheckpointError("table '" + s.table + "' is [" + std::to_string(s.table_rows) + ", " +
                          std::to_string(s.table_cols) + "] now but [" + std::to_string(rows) +
                          ", " + std::to_string(cols) + "] in '" + t.MetaPath() +
                          "'; embedding shapes cannot change on restore");
  }
  if (!s.weight.defined() || s.weight.dim() != 2 || s.weight.size(0) != s.shard.rows ||
      s.weight.size(1) != s.shard.cols) {
    throw CheckpointError(ShardName(s.table, s.shard) + ": target weight is " +
                          (s.weight.defined() ? ShapeString(s.weight.sizes()) : "undefined") +
                          ", expected [" + std::to_string(s.shard.rows) + ", " +
                          std::to_string(s.shard.cols) + "]");
  }
  return table;
}

// Weight copies from every saved shard that overlaps `s`; throws unless they cover it.
std::vector<SavedOverlap> PlanWeight(const RestoreTarget& t, const Json& table, ShardState& s,
                                     CopyPlan& ops) {
  std::vector<SavedOverlap> overlaps;
  std::int64_t covered = 0;
  for (const auto& saved : table.at("shards")) {
    Shard ss;
    ss.row_offset = saved.at("offsets")[0].get<std::int64_t>();
    ss.col_offset = saved.at("offsets")[1].get<std::int64_t>();
    ss.rows = saved.at("sizes")[0].get<std::int64_t>();
    ss.cols = saved.at("sizes")[1].get<std::int64_t>();
    const Overlap o = OverlapOf(s.shard, ss);
    if (o.Empty()) continue;
    overlaps.push_back({&saved, ss, o});
    covered += o.Cells();
    CopyOp op;
    op.key = saved.at("weight_key").get<std::string>();
    op.src_shape = {ss.rows, ss.cols};
    op.slice = WeightSlice(s.shard, ss, o);
    op.dst = s.weight.narrow(0, op.slice.dst_row, op.slice.rows)
                 .narrow(1, op.slice.dst_col, op.slice.cols);
    ops[saved.at("model_file").get<std::string>()].push_back(std::move(op));
  }
  if (covered != s.shard.rows * s.shard.cols) {
    throw CheckpointError(ShardName(s.table, s.shard) + ": the shards in '" + t.MetaPath() +
                          "' cover " + std::to_string(covered) + " of its " +
                          std::to_string(s.shard.rows * s.shard.cols) +
                          " cells; the checkpoint is incomplete");
  }
  return overlaps;
}

// The copy of state `st` from one saved overlap into `op`; "" or why it cannot be restored.
std::string PlanStateCopy(const ShardState& s, NamedTensor& st,
                          const std::optional<BlockLayout>& target_layout, const SavedOverlap& o,
                          CopyOp& op) {
  const Json& saved_states = o.saved->at("optimizer");
  if (!saved_states.contains(st.name)) {
    return "the checkpoint has no '" + st.name + "' for saved shard [" +
           std::to_string(o.shard.row_offset) + ", " + std::to_string(o.shard.col_offset) + "]";
  }
  const Json& ss = saved_states[st.name];
  const auto shape = ss.at("shape").get<std::vector<std::int64_t>>();
  op.key = ss.at("key").get<std::string>();
  op.src_shape = shape;
  if (!target_layout) {  // scalar
    if (!shape.empty())
      return "it is a scalar here but " + ShapeString(shape) + " in the checkpoint";
    op.scalar = true;
    op.dst = st.tensor;
    return "";
  }
  const auto src_layout = LayoutOf(shape, o.shard.rows, o.shard.cols);
  const std::int64_t w = target_layout->width;
  const auto slice = BlockSlice(s.shard, o.shard, o.overlap, w);
  if (!src_layout || src_layout->width != w || !slice) {
    return "its column blocks (" + std::to_string(target_layout->blocks) + " of width " +
           std::to_string(w) + " at column " + std::to_string(s.shard.col_offset) +
           ") do not match the saved " + ShapeString(shape) + " of shard [" +
           std::to_string(o.shard.row_offset) + ", " + std::to_string(o.shard.col_offset) +
           "] + [" + std::to_string(o.shard.rows) + ", " + std::to_string(o.shard.cols) + "]";
  }
  op.slice = *slice;
  const at::Tensor dst2d = target_layout->one_dim ? st.tensor.unsqueeze(1) : st.tensor;
  op.dst = dst2d.narrow(0, slice->dst_row, slice->rows).narrow(1, slice->dst_col, slice->cols);
  return "";
}

// Optimizer state: all-or-nothing per state tensor (a state that cannot be restored is left as
// allocated, with a warning).
void PlanStates(const RestoreTarget& t, ShardState& s, const std::vector<SavedOverlap>& overlaps,
                CopyPlan& ops) {
  for (auto& st : s.optimizer) {
    std::vector<std::pair<std::string, CopyOp>> state_ops;
    std::string problem;
    const bool scalar = st.tensor.dim() == 0;
    const auto target_layout =
        scalar ? std::nullopt : LayoutOf(ShapeVector(st.tensor), s.shard.rows, s.shard.cols);
    if (!scalar && !target_layout) {
      problem = "its shape " + ShapeString(st.tensor.sizes()) + " is not [rows], [rows, blocks]";
    }
    auto assigned = std::make_shared<bool>(false);
    for (const auto& o : overlaps) {
      if (!problem.empty()) break;
      CopyOp op;
      op.assigned = assigned;
      problem = PlanStateCopy(s, st, target_layout, o, op);
      if (problem.empty()) {
        state_ops.emplace_back(o.saved->at("optimizer_file").get<std::string>(), std::move(op));
      }
    }
    if (!problem.empty()) {
      Warn("rank " + std::to_string(t.rank) + ": optimizer state '" + st.name + "' of " +
           ShardName(s.table, s.shard) + " is re-initialised: " + problem);
      continue;
    }
    for (auto& [file, op] : state_ops) ops[file].push_back(std::move(op));
  }
}

void WarnUnusedTables(const RestoreTarget& t, const std::set<std::string>& model_tables) {
  for (const auto& [name, table] : t.meta.at("tables").items()) {
    if (!model_tables.count(name))
      Warn("table '" + name + "' of " + t.MetaPath() + " is not in the model; ignored");
  }
}

// Dense parameters and dense optimizer state: from rank 0's files, by name.
void PlanDense(const RestoreTarget& t, const char* section, std::vector<NamedTensor>& tensors,
               CopyPlan& ops) {
  const Json& sec = t.meta.at(section);
  const std::string file = sec.at("file").get<std::string>();
  const Json& saved = sec.at("tensors");
  std::set<std::string> names;
  for (auto& d : tensors) {
    names.insert(d.name);
    if (!saved.contains(d.name)) {
      const std::string fix =
          std::string(section) == "dense_optimizer"
              ? "the config's dense optimizer differs from the checkpoint's; pass "
                "--ignore_restore_optimizer to restore the weights alone (fresh optimizer state)"
              : "check the model config or start without --continue_train";
      throw CheckpointError(std::string(section) + " tensor '" + d.name + "' is not in '" +
                            (t.dir / file).string() + "' (" + std::to_string(saved.size()) +
                            " saved); " + fix);
    }
    const auto shape = saved[d.name].at("shape").get<std::vector<std::int64_t>>();
    if (!d.tensor.defined() || ShapeVector(d.tensor) != shape) {
      throw CheckpointError(std::string(section) + " tensor '" + d.name + "' is " +
                            (d.tensor.defined() ? ShapeString(d.tensor.sizes()) : "undefined") +
                            " now but " + ShapeString(shape) + " in '" + (t.dir / file).string() +
                            "'; dense shapes cannot change on restore");
    }
    CopyOp op;
    op.key = "dense/" + d.name;
    op.src_shape = shape;
    op.whole = true;
    op.dst = d.tensor;
    ops[file].push_back(std::move(op));
  }
  if (t.rank != 0) return;
  // One line per section whose saved tensors are only partly in the model. A section the caller
  // restores nothing of (optimizer state on export, eval, --ignore_restore_optimizer)
  // is left out by choice: no warning.
  if (tensors.empty()) return;
  std::vector<std::string> skipped;
  for (const auto& [name, v] : saved.items()) {
    if (!names.count(name)) skipped.push_back(name);
  }
  if (!skipped.empty()) {
    Warn(std::to_string(skipped.size()) + " " + section + " tensor(s) of " + t.MetaPath() +
         " are not in the model and were ignored (first: '" + skipped.front() + "')");
  }
}

void ApplyCopy(CopyOp& op, const at::Tensor& src) {
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
    op.dst.copy_(src2d.narrow(0, op.slice.src_row, op.slice.rows)
                     .narrow(1, op.slice.src_col, op.slice.cols));
  }
}

// Reads each file once and applies its copies.
void ExecuteCopies(const fs::path& dir, CopyPlan& ops) {
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
      if (ShapeVector(it->second) != op.src_shape) {
        throw CheckpointError("record '" + op.key + "' of checkpoint file '" + path + "' is " +
                              ShapeString(it->second.sizes()) + " but " + kMetadataFile + " says " +
                              ShapeString(op.src_shape) + "; the checkpoint is corrupt");
      }
      ApplyCopy(op, it->second);
    }
  }
}

}  // namespace

RestoreInfo CheckpointManager::Restore(const std::string& dir_text, TrainState& target) {
  Comm& comm = *comm_;
  // Gathered before any step that can fail, so every rank reaches this collective.
  const std::set<std::string> model_tables = ModelTables(comm, target);
  return Phase(comm, "checkpoint restore from '" + dir_text + "'", [&] {
    c10::NoGradGuard no_grad;  // target views are taken and written without autograd
    const fs::path dir(dir_text);
    const Json meta = LoadMetadata(dir, /*check_files=*/true);
    RestoreInfo info = ReadRestoreInfo(dir_text, meta);
    const RestoreTarget t{dir, meta, comm.Rank()};
    CopyPlan ops;
    for (auto& s : target.shards) {
      const Json& table = SavedTable(t, s);
      if (s.shard.rows == 0 || s.shard.cols == 0) continue;
      const auto overlaps = PlanWeight(t, table, s, ops);
      PlanStates(t, s, overlaps, ops);
    }
    if (t.rank == 0) WarnUnusedTables(t, model_tables);
    PlanDense(t, "dense", target.dense, ops);
    PlanDense(t, "dense_optimizer", target.dense_optimizer, ops);
    ExecuteCopies(dir, ops);
    return info;
  });
}

}  // namespace tzrec
