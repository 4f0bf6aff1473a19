// ShardingPlan::ToTable and FormatBytes: the human plan table `tzrec_train plan` and the training
// log print (TorchRec's planner/stats.py role). See include/tzrec/types/sharding_plan.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tzrec/types/sharding_plan.hpp"

namespace tzrec {
namespace {

std::string Pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string FormatMs(double ms) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.4f", ms);
  return buffer;
}

std::string RenderRows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : Pad(row[c], widths[c]) + "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string FormatBytes(std::int64_t bytes) {
  static const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const bool negative = bytes < 0;
  double value = std::abs(static_cast<double>(bytes));
  if (value < 1024) return std::to_string(bytes) + " B";
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%s%.1f %s", negative ? "-" : "", value, k_units[unit]);
  return buffer;
}

std::string ShardingPlan::ToTable() const {
  std::vector<std::vector<std::string>> rows = {
      {"table", "type", "kernel", "ranks", "shards (rows x cols @ rank)", "perf ms", "storage"}};
  std::map<int, std::int64_t> rank_hbm;
  std::map<int, std::int64_t> rank_ddr;
  std::map<int, double> rank_perf;
  for (int r = 0; r < world_size; ++r) {
    rank_hbm[r] = 0;
    rank_ddr[r] = 0;
    rank_perf[r] = 0;
  }
  for (const ParameterSharding& sharding : tables) {
    std::string ranks;
    for (int rank : sharding.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
    std::string shards;
    double perf = 0;
    std::int64_t storage = 0;
    for (const Shard& shard : sharding.shards) {
      shards += (shards.empty() ? "" : " ") + std::to_string(shard.rows) + "x" +
                std::to_string(shard.cols) + "@" + std::to_string(shard.rank);
      perf += shard.perf_ms;
      storage += shard.hbm_bytes + shard.ddr_bytes;
      rank_hbm[shard.rank] += shard.hbm_bytes;
      rank_ddr[shard.rank] += shard.ddr_bytes;
      rank_perf[shard.rank] += shard.perf_ms;
    }
    rows.push_back({sharding.table, std::string(ToString(sharding.sharding_type)),
                    sharding.compute_kernel, ranks, shards, FormatMs(perf), FormatBytes(storage)});
  }
  std::string out = RenderRows(rows);
  std::vector<std::vector<std::string>> totals = {{"rank", "hbm", "ddr", "perf ms"}};
  for (const auto& [rank, perf] : rank_perf) {
    totals.push_back({std::to_string(rank), FormatBytes(rank_hbm[rank]),
                      FormatBytes(rank_ddr[rank]), FormatMs(perf)});
  }
  out += "\nper-rank totals (world " + std::to_string(world_size) + ", " +
         std::to_string(local_world_size) + " per host):\n";
  out += RenderRows(totals);
  return out;
}

}  // namespace tzrec
