// DataCursor: consumed global rows, merge across ranks, split of the rest (see
// tzrec/input/input.hpp).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tzrec/input/input.hpp"

namespace tzrec {
namespace {

// [[begin, end], ...] within [0, total_rows); `what` names the field in errors.
std::vector<RowRange> ParseRanges(const nlohmann::json& list, std::int64_t total_rows,
                                  const std::string& what) {
  if (!list.is_array()) {
    throw std::invalid_argument("data cursor: '" + what + "' is not an array of [begin, end]");
  }
  std::vector<RowRange> ranges;
  for (const auto& r : list) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) {
      throw std::invalid_argument("data cursor: " + what + " entry " + r.dump() +
                                  " is not [begin, end] with integers");
    }
    RowRange range{r[0].get<std::int64_t>(), r[1].get<std::int64_t>()};
    if (range.begin < 0 || range.begin > range.end || range.end > total_rows) {
      throw std::invalid_argument("data cursor: " + what + " range [" +
                                  std::to_string(range.begin) + ", " + std::to_string(range.end) +
                                  ") is not within [0, " + std::to_string(total_rows) +
                                  ") or has begin > end");
    }
    ranges.push_back(range);
  }
  return NormalizeRanges(std::move(ranges));
}

// The "shuffle" object of a cursor.
DataCursor::Replay ParseReplay(const nlohmann::json& j, std::int64_t total_rows) {
  if (!j.is_object() || !j.contains("world") || !j["world"].is_number_integer() ||
      j["world"].get<std::int64_t>() < 1 || !j.contains("epoch_base") || !j.contains("batches") ||
      !j["batches"].is_array() || j["batches"].size() != j["world"].get<std::size_t>()) {
    throw std::invalid_argument(
        "data cursor: 'shuffle' must be {\"world\": W >= 1, \"epoch_base\": [[begin, end], "
        "...], \"batches\": [W integers]}, got " +
        j.dump());
  }
  DataCursor::Replay r;
  r.world = j["world"].get<int>();
  r.epoch_base = ParseRanges(j["epoch_base"], total_rows, "shuffle.epoch_base");
  for (const auto& b : j["batches"]) {
    if (!b.is_number_integer() || b.get<std::int64_t>() < -1) {
      throw std::invalid_argument("data cursor: shuffle.batches entry " + b.dump() +
                                  " is not an integer >= -1");
    }
    r.batches.push_back(b.get<std::int64_t>());
  }
  return r;
}

}  // namespace

std::vector<RowRange> NormalizeRanges(std::vector<RowRange> ranges) {
  std::erase_if(ranges, [](const RowRange& r) { return r.end <= r.begin; });
  std::sort(ranges.begin(), ranges.end(),
            [](const RowRange& a, const RowRange& b) { return a.begin < b.begin; });
  std::vector<RowRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::string DataCursor::ToJson() const {
  nlohmann::json j;
  j["total_rows"] = total_rows;
  j["epochs_completed"] = epochs_completed;
  auto ranges = nlohmann::json::array();
  for (const auto& r : consumed) ranges.push_back({r.begin, r.end});
  j["consumed"] = std::move(ranges);
  if (replay) {
    auto base = nlohmann::json::array();
    for (const auto& r : replay->epoch_base) base.push_back({r.begin, r.end});
    j["shuffle"] = {
        {"world", replay->world}, {"epoch_base", std::move(base)}, {"batches", replay->batches}};
  }
  return j.dump();
}

DataCursor DataCursor::FromJson(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("data cursor: not valid JSON (") + e.what() +
                                "); expected {\"total_rows\": N, \"epochs_completed\": E, "
                                "\"consumed\": [[begin, end], ...]}");
  }
  if (!j.is_object())
    throw std::invalid_argument("data cursor: expected a JSON object, got " + j.dump());
  auto integer = [&](const char* key) -> std::int64_t {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      throw std::invalid_argument(std::string("data cursor: '") + key +
                                  "' is missing or not an integer in " + json);
    }
    const auto v = j[key].get<std::int64_t>();
    if (v < 0) {
      throw std::invalid_argument(std::string("data cursor: '") + key + "' is negative (" +
                                  std::to_string(v) + ")");
    }
    return v;
  };
  DataCursor c;
  c.total_rows = integer("total_rows");
  c.epochs_completed = integer("epochs_completed");
  if (!j.contains("consumed") || !j["consumed"].is_array()) {
    throw std::invalid_argument(
        "data cursor: 'consumed' is missing or not an array of [begin, end]");
  }
  c.consumed = ParseRanges(j["consumed"], c.total_rows, "consumed");
  if (j.contains("shuffle")) c.replay = ParseReplay(j["shuffle"], c.total_rows);
  return c;
}

namespace {

// The ranks' replays as one (see DataCursor::Merge), or nullopt.
std::optional<DataCursor::Replay> MergeReplays(const std::vector<DataCursor>& per_rank) {
  std::optional<DataCursor::Replay> out;
  for (const auto& c : per_rank) {
    if (!c.replay) return std::nullopt;
    if (!out) {
      out = c.replay;
      continue;
    }
    if (c.replay->world != out->world || c.replay->epoch_base != out->epoch_base ||
        c.replay->batches.size() != out->batches.size()) {
      return std::nullopt;
    }
    for (std::size_t r = 0; r < out->batches.size(); ++r) {
      const std::int64_t v = c.replay->batches[r];
      if (v < 0) continue;
      if (out->batches[r] >= 0 && out->batches[r] != v) return std::nullopt;
      out->batches[r] = v;
    }
  }
  return out;
}

}  // namespace

DataCursor DataCursor::Merge(const std::vector<DataCursor>& per_rank) {
  if (per_rank.empty()) throw std::invalid_argument("DataCursor::Merge: no cursors to merge");
  DataCursor out;
  out.total_rows = per_rank.front().total_rows;
  out.epochs_completed = per_rank.front().epochs_completed;
  std::vector<RowRange> all;
  for (std::size_t i = 0; i < per_rank.size(); ++i) {
    const auto& c = per_rank[i];
    if (c.total_rows != out.total_rows || c.epochs_completed != out.epochs_completed) {
      throw std::invalid_argument("DataCursor::Merge: cursor " + std::to_string(i) +
                                  " has total_rows=" + std::to_string(c.total_rows) +
                                  ", epochs_completed=" + std::to_string(c.epochs_completed) +
                                  " but cursor 0 has total_rows=" + std::to_string(out.total_rows) +
                                  ", epochs_completed=" + std::to_string(out.epochs_completed) +
                                  "; all ranks must read the same files and be in the same epoch");
    }
    all.insert(all.end(), c.consumed.begin(), c.consumed.end());
  }
  out.consumed = NormalizeRanges(std::move(all));
  out.replay = MergeReplays(per_rank);
  return out;
}

std::int64_t DataCursor::ConsumedRows() const {
  std::int64_t n = 0;
  for (const auto& r : consumed) n += r.Size();
  return n;
}

std::vector<RowRange> DataCursor::Assign(int rank, int world) const {
  if (world < 1 || rank < 0 || rank >= world) {
    throw std::invalid_argument("DataCursor::Assign: rank " + std::to_string(rank) +
                                " is not in [0, world=" + std::to_string(world) + ")");
  }
  // Unconsumed rows, in order.
  std::vector<RowRange> free;
  std::int64_t pos = 0;
  for (const auto& r : NormalizeRanges(consumed)) {
    const auto b = std::clamp<std::int64_t>(r.begin, 0, total_rows);
    const auto e = std::clamp<std::int64_t>(r.end, 0, total_rows);
    if (b > pos) free.push_back({pos, b});
    pos = std::max(pos, e);
  }
  if (pos < total_rows) free.push_back({pos, total_rows});
  std::int64_t remaining = 0;
  for (const auto& r : free) remaining += r.Size();
  const std::int64_t base = remaining / world;
  const std::int64_t extra = remaining % world;
  const std::int64_t skip = rank * base + std::min<std::int64_t>(rank, extra);
  std::int64_t take = base + (rank < extra ? 1 : 0);
  std::vector<RowRange> out;
  std::int64_t offset = 0;  // free rows before the current range
  for (const auto& r : free) {
    if (take == 0) break;
    const std::int64_t lo = std::max<std::int64_t>(skip - offset, 0);
    if (lo < r.Size()) {
      const std::int64_t n = std::min(take, r.Size() - lo);
      out.push_back({r.begin + lo, r.begin + lo + n});
      take -= n;
    }
    offset += r.Size();
  }
  return out;
}

}  // namespace tzrec
