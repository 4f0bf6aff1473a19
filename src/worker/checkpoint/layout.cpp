// The pure parts of a checkpoint (layout.hpp): descriptors, their merge into the metadata, and the
// geometry of a resharding restore.
#include "layout.hpp"

#include <algorithm>
#include <map>

#include "tzrec/types/sharding_plan.hpp"

namespace tzrec::checkpoint_detail {

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

std::string ShardName(const std::string& table, const Shard& s) {
  return "table '" + table + "' shard [" + std::to_string(s.row_offset) + ", " +
         std::to_string(s.col_offset) + "] + [" + std::to_string(s.rows) + ", " +
         std::to_string(s.cols) + "]";
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

namespace {

// One shard's entry of DescribeLocal, after checking it against its table and its tensors.
Json DescribeShard(const ShardState& s) {
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
  return Json({{"table", s.table},
               {"table_shape", {s.table_rows, s.table_cols}},
               {"offsets", {s.shard.row_offset, s.shard.col_offset}},
               {"sizes", {s.shard.rows, s.shard.cols}},
               {"dtype", std::string(c10::toString(s.weight.scalar_type()))},
               {"states", states}});
}

// {"<name>": {"shape", "dtype"}} of rank 0's dense tensors (`what`: "dense" or "dense optimizer").
Json DescribeDense(const std::vector<NamedTensor>& tensors, const std::string& what) {
  Json out = Json::object();
  for (const auto& d : tensors) {
    if (d.name.empty() || !d.tensor.defined()) {
      throw CheckpointError(what + " tensor '" + d.name + "' has an empty name or is undefined");
    }
    if (out.contains(d.name))
      throw CheckpointError(what + " tensor '" + d.name + "' is listed twice");
    out[d.name] = {{"shape", ShapeVector(d.tensor)},
                   {"dtype", std::string(c10::toString(d.tensor.scalar_type()))}};
  }
  return out;
}

// Rank r's entry `j` of its "shards".
ShardDesc ParseShardDesc(const Json& j, std::size_t r) {
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
  return d;
}

// Marks the shard the lowest rank holding each distinct (table, offsets, sizes) writes; checks
// that the written shards of a table are disjoint.
void MarkWritten(std::vector<ShardDesc>& all) {
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
}

// Checks the written shards of every table cover it.
void CheckCoverage(const std::vector<ShardDesc>& all,
                   const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& shapes) {
  std::map<std::string, std::int64_t> area;
  for (const auto& d : all) {
    if (d.written) area[d.table] += d.shard.rows * d.shard.cols;
  }
  for (const auto& [table, shape] : shapes) {
    if (area[table] != shape.first * shape.second) {
      throw CheckpointError("the ranks' shards of table '" + table + "' cover " +
                            std::to_string(area[table]) + " of its " +
                            std::to_string(shape.first * shape.second) +
                            " cells; every rank must pass all of its shards");
    }
  }
}

}  // namespace

Json DescribeLocal(const TrainState& local, int rank) {
  Json shards = Json::array();
  for (const auto& s : local.shards) shards.push_back(DescribeShard(s));
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
    desc["dense"] = DescribeDense(local.dense, "dense");
    desc["dense_optimizer"] = DescribeDense(local.dense_optimizer, "dense optimizer");
  }
  return desc;
}

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
      ShardDesc d = ParseShardDesc(j, r);
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
  MarkWritten(all);
  CheckCoverage(all, shapes);
  return all;
}

namespace {

// The "tables" section: every table's shape and its written shards.
Json TablesMetadata(const std::vector<ShardDesc>& all, int world) {
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
  return tables;
}

}  // namespace

Json BuildMetadata(const std::vector<ShardDesc>& all, const std::vector<Json>& descs,
                   std::int64_t step, int world, bool has_plan, const Json& files) {
  Json cursors = Json::array();
  for (const auto& d : descs) cursors.push_back(d.at("cursor"));
  return {{"format", kFormatName},
          {"format_version", kFormatVersion},
          {"step", step},
          {"world_size", world},
          {"plan_hash", descs[0].at("plan_hash")},
          {"plan_file", has_plan ? Json(kPlanFile) : Json()},
          {"tables", TablesMetadata(all, world)},
          {"dense", {{"file", RankFileName("model", 0, world)}, {"tensors", descs[0].at("dense")}}},
          {"dense_optimizer",
           {{"file", RankFileName("optimizer", 0, world)},
            {"tensors", descs[0].at("dense_optimizer")}}},
          {"data_cursors", cursors},
          {"extra", descs[0].at("extra")},
          {"files", files}};
}

Interval Intersect(std::int64_t a0, std::int64_t an, std::int64_t b0, std::int64_t bn) {
  return {std::max(a0, b0), std::min(a0 + an, b0 + bn)};
}

Overlap OverlapOf(const Shard& target, const Shard& saved) {
  return {Intersect(target.row_offset, target.rows, saved.row_offset, saved.rows),
          Intersect(target.col_offset, target.cols, saved.col_offset, saved.cols)};
}

Slice WeightSlice(const Shard& target, const Shard& saved, const Overlap& o) {
  Slice s;
  s.src_row = o.rows.begin - saved.row_offset;
  s.src_col = o.cols.begin - saved.col_offset;
  s.dst_row = o.rows.begin - target.row_offset;
  s.dst_col = o.cols.begin - target.col_offset;
  s.rows = o.rows.Size();
  s.cols = o.cols.Size();
  return s;
}

std::optional<Slice> BlockSlice(const Shard& target, const Shard& saved, const Overlap& o,
                                std::int64_t width) {
  if (width <= 0 || (o.cols.begin - target.col_offset) % width != 0 ||
      (o.cols.begin - saved.col_offset) % width != 0 || o.cols.Size() % width != 0) {
    return std::nullopt;
  }
  Slice s = WeightSlice(target, saved, o);
  s.src_col /= width;
  s.dst_col /= width;
  s.cols /= width;
  return s;
}

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

}  // namespace tzrec::checkpoint_detail
