// Multi-rank checkpoint check, launched through tzrun:
//   tzrun --standalone --nproc-per-node=N --no-python tzrec_checkpoint_check
//         --phase save|restore --dir MODEL_DIR --plan-type mixed|row_wise|column_wise|table_wise
// save: every rank fills its shards of four tables with a known function of (row, col) and saves
// step 42 (then checks that saving step 42 again fails on every rank). restore: every rank
// allocates its shards for the current world size and plan type, restores the latest checkpoint
// and checks every value: weights and element-wise optimizer state always; row-wise state where
// the saved column blocks match, sentinel (re-initialised) otherwise; dense from rank 0; cursors.
// bench (by hand, issue 6 item 7): save/restore GB/s against a raw write+fsync of the same bytes.
// Prints "PASS checkpoint_<phase> rank=R" or "FAIL <what> rank=R" (exit 1).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros_like.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/planner/planner.hpp"

namespace {

using namespace tzrec;
namespace fs = std::filesystem;

constexpr std::int64_t kStep = 42;
constexpr float kSentinel = -1.0f;

struct TableDef {
  const char* name;
  std::int64_t rows, dim, min_partition;
  const char* optimizer;  // "adam", "rowwise", "adagrad", "sgd"
  int salt;
};
const std::vector<TableDef> kTables = {
    {"ta", 37, 16, 8, "adam", 1},
    {"tb", 23, 8, 4, "rowwise", 2},
    {"tc", 11, 12, 4, "adagrad", 3},
    {"td", 5, 4, 4, "sgd", 4},
};

int g_rank = 0;
int g_failures = 0;

void Fail(const std::string& what) {
  std::printf("FAIL %s rank=%d\n", what.c_str(), g_rank);
  std::fflush(stdout);
  ++g_failures;
}

ShardingType TypeFor(const std::string& plan_type, int table_index) {
  if (plan_type == "mixed") {
    static const ShardingType kMixed[] = {ShardingType::kRowWise, ShardingType::kColumnWise,
                                          ShardingType::kTableWise, ShardingType::kDataParallel};
    return kMixed[table_index];
  }
  return ParseShardingType(plan_type);
}

ShardingPlan MakePlan(const std::string& plan_type, int world) {
  Topology topo;
  topo.world_size = world;
  topo.local_world_size = world;
  ShardingPlan plan;
  plan.world_size = world;
  plan.local_world_size = world;
  for (std::size_t t = 0; t < kTables.size(); ++t) {
    const TableDef& def = kTables[t];
    TableSpec spec;
    spec.name = def.name;
    spec.num_embeddings = def.rows;
    spec.embedding_dim = def.dim;
    spec.feature_names = {std::string(def.name) + "_f"};
    spec.constraints.min_partition = def.min_partition;
    ParameterSharding ps;
    ps.table = def.name;
    ps.sharding_type = TypeFor(plan_type, static_cast<int>(t));
    ps.compute_kernel = ps.sharding_type == ShardingType::kDataParallel ? "dense" : "fused";
    std::vector<int> ranks;
    if (ps.sharding_type == ShardingType::kTableWise) ranks = {static_cast<int>((t + 1) % world)};
    if (ps.sharding_type == ShardingType::kColumnWise) {
      const std::int64_t blocks = def.dim / ColumnWiseBlock(spec);
      for (std::int64_t b = 0; b < blocks; ++b) ranks.push_back(static_cast<int>((t + b) % world));
    }
    ps.shards = CalculateShards(spec, ps.sharding_type, topo, ranks);
    for (const auto& s : ps.shards) ps.ranks.push_back(s.rank);
    plan.tables.push_back(ps);
  }
  return plan;
}

at::Tensor Weight(const TableDef& def, const Shard& s) {
  auto rows = at::arange(s.row_offset, s.row_offset + s.rows, at::kFloat).unsqueeze(1);
  auto cols = at::arange(s.col_offset, s.col_offset + s.cols, at::kFloat).unsqueeze(0);
  return (rows * 100 + cols + def.salt * 100000).contiguous();
}
at::Tensor RowWiseState(const Shard& s) {
  return at::arange(s.row_offset, s.row_offset + s.rows, at::kFloat) * 10 + s.col_offset + 0.5;
}

// This rank's shards, filled with the functions (save) or the sentinel (restore).
std::vector<ShardState> LocalShards(const ShardingPlan& plan, int rank, bool filled) {
  std::vector<ShardState> out;
  for (std::size_t t = 0; t < kTables.size(); ++t) {
    const TableDef& def = kTables[t];
    for (const auto& s : plan.tables[t].shards) {
      if (s.rank != rank) continue;
      ShardState st;
      st.table = def.name;
      st.table_rows = def.rows;
      st.table_cols = def.dim;
      st.shard = s;
      const auto full = [&](at::IntArrayRef sizes) { return at::full(sizes, kSentinel); };
      const at::Tensor w = Weight(def, s);
      st.weight = filled ? w : full({s.rows, s.cols});
      const std::string opt = def.optimizer;
      if (opt == "adam") {
        st.optimizer.push_back({"momentum1", filled ? w + 0.5 : full({s.rows, s.cols})});
        st.optimizer.push_back({"momentum2", filled ? w + 0.25 : full({s.rows, s.cols})});
        st.optimizer.push_back({"step", at::scalar_tensor(filled ? kStep : -1, at::kLong)});
      } else if (opt == "rowwise") {
        st.optimizer.push_back({"momentum1", filled ? RowWiseState(s) : full({s.rows})});
      } else if (opt == "adagrad") {
        st.optimizer.push_back({"momentum1", filled ? w * 2 : full({s.rows, s.cols})});
      }
      out.push_back(std::move(st));
    }
  }
  return out;
}

at::Tensor DenseValue() {
  return at::arange(15, at::kFloat).reshape({3, 5}) * 1.5;
}
at::Tensor DenseOptValue() {
  return at::arange(15, at::kFloat).reshape({3, 5}) + 0.125;
}

void FillCommon(TrainState& state, const ShardingPlan& plan, int rank, bool filled) {
  state.step = filled ? kStep : 0;
  state.plan_json = plan.ToJson();
  state.shards = LocalShards(plan, rank, filled);
  // Only rank 0's dense values are saved: other ranks pass something else on purpose.
  const bool real = filled && rank == 0;
  state.dense.push_back({"dense.w", real ? DenseValue() : at::full({3, 5}, kSentinel)});
  state.dense_optimizer.push_back(
      {"dense.w.exp_avg", real ? DenseOptValue() : at::full({3, 5}, kSentinel)});
  state.data_cursor_json = nlohmann::json({{"rank", rank}, {"row", 1000 + rank}}).dump();
  state.extra_json = rank == 0 ? R"({"epoch":3})" : R"({"epoch":-1})";
}

int Save(const std::shared_ptr<Comm>& comm, const std::string& dir, const std::string& plan_type) {
  if (comm->Rank() == 0) fs::remove_all(dir);
  comm->Barrier();
  const ShardingPlan plan = MakePlan(plan_type, comm->WorldSize());
  TrainState state;
  FillCommon(state, plan, comm->Rank(), true);
  CheckpointManager manager(dir, 0, comm);
  const std::string path = manager.Save(state);
  if (manager.Latest().value_or("") != path) Fail("latest_after_save");
  if (!fs::exists(fs::path(path) / "metadata.json")) Fail("metadata_written");
  char own_name[64];
  std::snprintf(own_name, sizeof(own_name), "model-%06d-of-%06d.pt", comm->Rank(),
                comm->WorldSize());
  const std::string own = (fs::path(path) / own_name).string();
  if (!fs::exists(own)) Fail("own_model_file " + own);
  // A second save of the same step fails on every rank (agreed error, no hang).
  try {
    manager.Save(state);
    Fail("second_save_must_fail");
  } catch (const CheckpointError& e) {
    if (std::string(e.what()).find("already exists") == std::string::npos) {
      Fail(std::string("second_save_message: ") + e.what());
    }
  }
  if (manager.Latest().value_or("") != path) Fail("latest_after_failed_save");
  return 0;
}

int Restore(const std::shared_ptr<Comm>& comm, const std::string& dir,
            const std::string& plan_type) {
  const int rank = comm->Rank();
  const ShardingPlan plan = MakePlan(plan_type, comm->WorldSize());
  TrainState target;
  FillCommon(target, plan, rank, false);
  CheckpointManager manager(dir, 0, comm);
  const auto latest = manager.Latest();
  if (!latest) {
    Fail("no_checkpoint_in " + dir);
    return 1;
  }
  const RestoreInfo info = manager.Restore(*latest, target);
  if (info.step != kStep) Fail("step " + std::to_string(info.step));
  const ShardingPlan saved_plan = ShardingPlan::FromJson(info.saved_plan_json);
  if (info.saved_world_size != saved_plan.world_size) Fail("saved_world_size");
  if (static_cast<int>(info.data_cursors_json.size()) != info.saved_world_size)
    Fail("cursor_count");
  for (std::size_t r = 0; r < info.data_cursors_json.size(); ++r) {
    const auto cursor = nlohmann::json::parse(info.data_cursors_json[r]);
    if (cursor["rank"] != static_cast<int>(r) || cursor["row"] != 1000 + static_cast<int>(r)) {
      Fail("cursor " + info.data_cursors_json[r]);
    }
  }
  if (nlohmann::json::parse(info.extra_json)["epoch"] != 3) Fail("extra " + info.extra_json);
  if (!at::equal(target.dense[0].tensor, DenseValue())) Fail("dense");
  if (!at::equal(target.dense_optimizer[0].tensor, DenseOptValue())) Fail("dense_optimizer");

  int checked = 0;
  int reinitialised = 0;
  for (const auto& st : target.shards) {
    const TableDef& def = *std::find_if(kTables.begin(), kTables.end(),
                                        [&](const TableDef& d) { return st.table == d.name; });
    const Shard& s = st.shard;
    const std::string where = st.table + "[" + std::to_string(s.row_offset) + "," +
                              std::to_string(s.col_offset) + "]+[" + std::to_string(s.rows) + "," +
                              std::to_string(s.cols) + "]";
    const at::Tensor w = Weight(def, s);
    if (!at::equal(st.weight, w)) Fail("weight " + where);
    const std::string opt = def.optimizer;
    if (opt == "adam") {
      if (!at::equal(st.optimizer[0].tensor, w + 0.5)) Fail("momentum1 " + where);
      if (!at::equal(st.optimizer[1].tensor, w + 0.25)) Fail("momentum2 " + where);
      if (st.optimizer[2].tensor.item<std::int64_t>() != kStep) Fail("adam_step " + where);
    } else if (opt == "adagrad") {
      if (!at::equal(st.optimizer[0].tensor, w * 2)) Fail("adagrad_state " + where);
    } else if (opt == "rowwise") {
      // Restorable when every saved shard overlapping this one has the same columns.
      bool same_blocks = true;
      for (const auto& ss : saved_plan.Get(st.table).shards) {
        const bool rows_overlap =
            ss.row_offset < s.row_offset + s.rows && s.row_offset < ss.row_offset + ss.rows;
        const bool cols_overlap =
            ss.col_offset < s.col_offset + s.cols && s.col_offset < ss.col_offset + ss.cols;
        if (rows_overlap && cols_overlap && ss.rows > 0 &&
            (ss.col_offset != s.col_offset || ss.cols != s.cols)) {
          same_blocks = false;
        }
      }
      const at::Tensor want = same_blocks ? RowWiseState(s) : at::full({s.rows}, kSentinel);
      if (!at::equal(st.optimizer[0].tensor, want)) Fail("rowwise_state " + where);
      reinitialised += same_blocks ? 0 : 1;
    }
    ++checked;
  }
  std::printf(
      "rank=%d restored %d shards (%d row-wise states re-initialised) from world %d plan %s\n",
      rank, checked, reinitialised, info.saved_world_size, saved_plan.Hash().c_str());
  return 0;
}

// --phase bench --dir D --mb M: every rank saves a row-wise shard of one [rows, 128] fp32 table
// (M MiB per rank, plus Adagrad-sized state of the same size) and restores it; compares with a
// raw write+fsync of the same bytes. Prints GB/s (1e9 bytes/s) over all ranks on rank 0.
int Bench(const std::shared_ptr<Comm>& comm, const std::string& dir, std::int64_t mib) {
  using Clock = std::chrono::steady_clock;
  const int rank = comm->Rank();
  const int world = comm->WorldSize();
  const std::int64_t cols = 128;
  const std::int64_t rows_per_rank = mib * (1 << 20) / (cols * 4);
  if (rank == 0) fs::remove_all(dir);
  comm->Barrier();
  TrainState state;
  state.step = 1;
  ShardState st;
  st.table = "big";
  st.table_rows = rows_per_rank * world;
  st.table_cols = cols;
  st.shard.row_offset = rows_per_rank * rank;
  st.shard.rows = rows_per_rank;
  st.shard.cols = cols;
  st.shard.rank = rank;
  st.weight = at::rand({rows_per_rank, cols});
  st.optimizer.push_back({"momentum1", at::rand({rows_per_rank, cols})});
  state.shards.push_back(st);
  const double bytes = 2.0 * static_cast<double>(rows_per_rank * cols * 4) * world;

  CheckpointManager manager(dir, 0, comm);
  comm->Barrier();
  auto t0 = Clock::now();
  const std::string path = manager.Save(state);
  comm->Barrier();
  const double save_s = std::chrono::duration<double>(Clock::now() - t0).count();

  TrainState target = state;
  target.shards[0].weight = at::zeros_like(st.weight);
  target.shards[0].optimizer[0].tensor = at::zeros_like(st.optimizer[0].tensor);
  comm->Barrier();
  t0 = Clock::now();
  manager.Restore(path, target);
  comm->Barrier();
  const double restore_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!at::equal(target.shards[0].weight, st.weight)) Fail("bench_restore_weight");

  // Raw: the same bytes written with write(2) + fsync by every rank.
  const std::string raw = dir + "/raw-" + std::to_string(rank);
  comm->Barrier();
  t0 = Clock::now();
  {
    FILE* f = std::fopen(raw.c_str(), "wb");
    std::fwrite(st.weight.data_ptr(), 1, static_cast<std::size_t>(st.weight.nbytes()), f);
    std::fwrite(st.optimizer[0].tensor.data_ptr(), 1, static_cast<std::size_t>(st.weight.nbytes()),
                f);
    std::fflush(f);
    ::fsync(::fileno(f));
    std::fclose(f);
  }
  comm->Barrier();
  const double raw_s = std::chrono::duration<double>(Clock::now() - t0).count();
  fs::remove(raw);
  if (rank == 0) {
    std::printf(
        "bench world=%d bytes=%.0f save_s=%.3f restore_s=%.3f raw_write_s=%.3f "
        "save_gbps=%.3f restore_gbps=%.3f raw_write_gbps=%.3f save_vs_raw=%.2f\n",
        world, bytes, save_s, restore_s, raw_s, bytes / save_s / 1e9, bytes / restore_s / 1e9,
        bytes / raw_s / 1e9, raw_s / save_s);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string phase, dir, plan_type = "mixed";
  std::int64_t mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--phase")
      phase = argv[i + 1];
    else if (key == "--dir")
      dir = argv[i + 1];
    else if (key == "--plan-type")
      plan_type = argv[i + 1];
    else if (key == "--mb")
      mib = std::stoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s; use --phase save|restore --dir D --plan-type T\n",
                   argv[i]);
      return 2;
    }
  }
  if ((phase != "save" && phase != "restore" && phase != "bench") || dir.empty()) {
    std::fprintf(stderr,
                 "usage: %s --phase save|restore|bench --dir D [--plan-type "
                 "mixed|row_wise|column_wise|table_wise] [--mb MIB_PER_RANK (bench)]\n",
                 argv[0]);
    return 2;
  }
  try {
    auto comm = Comm::Init(DistEnv::FromEnvironment());
    g_rank = comm->Rank();
    const int rc = phase == "save"      ? Save(comm, dir, plan_type)
                   : phase == "restore" ? Restore(comm, dir, plan_type)
                                        : Bench(comm, dir, mib);
    comm->Barrier();
    if (rc != 0 || g_failures != 0) return 1;
    std::printf("PASS checkpoint_%s rank=%d world=%d plan=%s\n", phase.c_str(), g_rank,
                comm->WorldSize(), plan_type.c_str());
    return 0;
  } catch (const std::exception& e) {
    Fail(std::string("exception: ") + e.what());
    return 1;
  }
}
