// GreedyPerfPartitioner over one proposal (torchrec/distributed/planner/partitioners.py): uniform
// options first (shard i on rank i), then host-level (table_row_wise) options on the least-loaded
// host with room, then device-level shards (table_wise, column_wise blocks), largest first, each
// on the rank with the least accumulated perf that has room.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec::planner_detail {
namespace {

bool IsUniform(ShardingType type) {
  return type == ShardingType::kDataParallel || type == ShardingType::kRowWise;
}

std::int64_t Deficit(const Shard& shard, const RankState& rank) {
  return std::max<std::int64_t>(0, shard.hbm_bytes - rank.hbm) +
         std::max<std::int64_t>(0, shard.ddr_bytes - rank.ddr);
}

// Free bytes of `rank` in the memory `shard` lives in (HBM on CUDA, DDR on CPU).
std::int64_t FreeBytes(const Shard& shard, const RankState& rank) {
  return shard.hbm_bytes > 0 ? rank.hbm : rank.ddr;
}

void Take(const Shard& shard, RankState& rank) {
  rank.hbm -= shard.hbm_bytes;
  rank.ddr -= shard.ddr_bytes;
  rank.perf += shard.perf_ms;
}

// Records that `shard` of `table` found no rank; always returns false.
bool Fail(Partitioned& out, std::size_t table, const Shard& shard, std::int64_t missing,
          std::int64_t free_bytes) {
  out.ok = false;
  out.failure.table = table;
  out.failure.shard_bytes = shard.hbm_bytes + shard.ddr_bytes;
  out.failure.free_bytes = free_bytes;
  out.failure.missing = std::max<std::int64_t>(1, missing);
  return false;
}

// 1. Uniform options (data_parallel, row_wise): shard i on rank i.
bool PlaceUniform(const std::vector<const Option*>& proposal, Partitioned& out) {
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    if (!IsUniform(proposal[t]->type)) continue;
    for (Shard& shard : out.shards[t]) {
      RankState& rank = out.ranks[static_cast<std::size_t>(shard.rank)];
      const std::int64_t deficit = Deficit(shard, rank);
      if (deficit > 0) return Fail(out, t, shard, deficit, FreeBytes(shard, rank));
      Take(shard, rank);
    }
  }
  return true;
}

// Larger options first (stable: table order on ties).
void SortByStorageDesc(const std::vector<const Option*>& proposal,
                       std::vector<std::size_t>& order) {
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return proposal[a]->total_storage > proposal[b]->total_storage;
  });
}

// Hosts by accumulated perf, least loaded first (stable: host order on ties).
std::vector<int> HostsByLoad(const Topology& topo, const Partitioned& out) {
  const int hosts = topo.NumHosts();
  const int local = topo.local_world_size;
  std::vector<int> order(static_cast<std::size_t>(hosts));
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> host_perf(static_cast<std::size_t>(hosts), 0.0);
  for (int h = 0; h < hosts; ++h) {
    for (int i = 0; i < local; ++i) {
      host_perf[static_cast<std::size_t>(h)] +=
          out.ranks[static_cast<std::size_t>(h * local + i)].perf;
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return host_perf[static_cast<std::size_t>(a)] < host_perf[static_cast<std::size_t>(b)];
  });
  return order;
}

// Places the table_row_wise table `t` on the least-loaded host whose ranks all have room.
bool PlaceOnHost(std::size_t t, const Topology& topo, Partitioned& out) {
  const int local = topo.local_world_size;
  std::vector<Shard>& shards = out.shards[t];
  int chosen = -1;
  std::int64_t best_missing = std::numeric_limits<std::int64_t>::max();
  std::size_t worst_shard = 0;
  std::int64_t worst_free = 0;
  for (int h : HostsByLoad(topo, out)) {
    std::int64_t missing = 0;
    std::size_t host_worst = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const std::int64_t deficit =
          Deficit(shards[i], out.ranks[static_cast<std::size_t>(h * local) + i]);
      if (deficit > missing) {
        missing = deficit;
        host_worst = i;
      }
    }
    if (missing == 0) {
      chosen = h;
      break;
    }
    if (missing < best_missing) {
      best_missing = missing;
      worst_shard = host_worst;
      worst_free = FreeBytes(shards[host_worst],
                             out.ranks[static_cast<std::size_t>(h * local) + host_worst]);
    }
  }
  if (chosen < 0) return Fail(out, t, shards[worst_shard], best_missing, worst_free);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    shards[i].rank = chosen * local + static_cast<int>(i);
    Take(shards[i], out.ranks[static_cast<std::size_t>(shards[i].rank)]);
  }
  return true;
}

// 2. Host-level options (table_row_wise), larger first.
bool PlaceHostLevel(const std::vector<const Option*>& proposal, const Topology& topo,
                    Partitioned& out) {
  std::vector<std::size_t> host_level;
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    if (proposal[t]->type == ShardingType::kTableRowWise) host_level.push_back(t);
  }
  SortByStorageDesc(proposal, host_level);
  for (std::size_t t : host_level) {
    if (!PlaceOnHost(t, topo, out)) return false;
  }
  return true;
}

struct Item {
  std::size_t table;
  std::size_t shard;
  std::int64_t bytes;
};

// Device-level shards (table_wise, column_wise blocks), largest first (stable).
std::vector<Item> DeviceLevelItems(const std::vector<const Option*>& proposal,
                                   const Partitioned& out) {
  std::vector<Item> items;
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    const ShardingType type = proposal[t]->type;
    if (type != ShardingType::kTableWise && type != ShardingType::kColumnWise) continue;
    for (std::size_t s = 0; s < out.shards[t].size(); ++s) {
      const Shard& shard = out.shards[t][s];
      items.push_back({t, s, shard.hbm_bytes + shard.ddr_bytes});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  return items;
}

// 3. Each device-level shard to the rank with the least accumulated perf (then lowest rank) that
//    has room.
bool PlaceDeviceLevel(const std::vector<const Option*>& proposal, const Topology& topo,
                      Partitioned& out) {
  std::vector<int> rank_order(static_cast<std::size_t>(topo.world_size));
  for (const Item& item : DeviceLevelItems(proposal, out)) {
    Shard& shard = out.shards[item.table][item.shard];
    std::iota(rank_order.begin(), rank_order.end(), 0);
    std::stable_sort(rank_order.begin(), rank_order.end(), [&](int a, int b) {
      return out.ranks[static_cast<std::size_t>(a)].perf <
             out.ranks[static_cast<std::size_t>(b)].perf;
    });
    int chosen = -1;
    std::int64_t best_missing = std::numeric_limits<std::int64_t>::max();
    std::int64_t best_free = 0;
    for (int r : rank_order) {
      const std::int64_t deficit = Deficit(shard, out.ranks[static_cast<std::size_t>(r)]);
      if (deficit == 0) {
        chosen = r;
        break;
      }
      if (deficit < best_missing) {
        best_missing = deficit;
        best_free = FreeBytes(shard, out.ranks[static_cast<std::size_t>(r)]);
      }
    }
    if (chosen < 0) return Fail(out, item.table, shard, best_missing, best_free);
    shard.rank = chosen;
    Take(shard, out.ranks[static_cast<std::size_t>(chosen)]);
  }
  return true;
}

}  // namespace

Partitioned Partition(const std::vector<const Option*>& proposal, const Topology& topo,
                      const StorageCapacity& capacity) {
  Partitioned out;
  out.ranks.assign(static_cast<std::size_t>(topo.world_size),
                   RankState{capacity.hbm, capacity.ddr, 0.0});
  out.shards.resize(proposal.size());
  for (std::size_t t = 0; t < proposal.size(); ++t) out.shards[t] = proposal[t]->shards;
  if (!PlaceUniform(proposal, out) || !PlaceHostLevel(proposal, topo, out) ||
      !PlaceDeviceLevel(proposal, topo, out)) {
    return out;
  }
  out.ok = true;
  for (const RankState& rank : out.ranks) {
    out.rating = std::max(out.rating, rank.perf);
    out.total_perf += rank.perf;
  }
  return out;
}

}  // namespace tzrec::planner_detail
