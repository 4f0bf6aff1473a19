// Proposers (torchrec/distributed/planner/proposers.py): which option each table takes. In order:
//   1. greedy: every table at its lowest-perf option; while partitioning fails, move the table
//      whose current option has the largest max-shard storage to its next (by perf) option with a
//      smaller max-shard storage;
//   2. uniform: every table the same type, for each type all tables allow;
//   3. min-storage: every table at its option with the smallest max-shard storage;
//   4. exhaustive: every combination, when there are at most kExhaustiveLimit of them.
// Each proposal is partitioned (partitioner.cpp) and rated by the max over ranks of the summed
// shard perf (ties: smaller total perf, then the earlier proposal). Everything is deterministic.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec::planner_detail {
namespace {

constexpr std::size_t kExhaustiveLimit = 4096;

// The proposals tried so far and the best-rated feasible one.
class Search {
 public:
  Search(const std::vector<std::vector<Option>>& options, const Topology& topo,
         const StorageCapacity& capacity)
      : options_(options), topo_(topo), capacity_(capacity) {}

  // Partitions `index` unless tried before; true when it partitions.
  bool Evaluate(const std::vector<std::size_t>& index) {
    if (!tried_.insert(index).second) return false;
    Partitioned result = Partition(Pick(options_, index), topo_, capacity_);
    if (!result.ok) return false;
    if (!best_ || result.rating < best_->partitioned.rating ||
        (result.rating == best_->partitioned.rating &&
         result.total_perf < best_->partitioned.total_perf)) {
      best_ = Proposal{std::move(result), index};
    }
    return true;
  }

  const std::vector<std::vector<Option>>& Options() const { return options_; }
  std::optional<Proposal> TakeBest() { return std::move(best_); }

 private:
  const std::vector<std::vector<Option>>& options_;
  const Topology& topo_;
  const StorageCapacity& capacity_;
  std::set<std::vector<std::size_t>> tried_;
  std::optional<Proposal> best_;
};

// 1. Greedy.
void ProposeGreedy(Search& search) {
  const auto& options = search.Options();
  std::vector<std::size_t> index(options.size(), 0);
  while (!search.Evaluate(index)) {
    std::optional<std::size_t> move_table;
    std::size_t move_to = 0;
    std::int64_t largest = -1;
    for (std::size_t t = 0; t < options.size(); ++t) {
      const auto& opts = options[t];
      const std::int64_t current = opts[index[t]].max_shard_storage;
      for (std::size_t j = index[t] + 1; j < opts.size(); ++j) {
        if (opts[j].max_shard_storage < current) {
          if (current > largest) {
            largest = current;
            move_table = t;
            move_to = j;
          }
          break;
        }
      }
    }
    if (!move_table) break;
    index[*move_table] = move_to;
  }
}

// 2. Uniform: the same type for every table, when all allow it.
void ProposeUniform(Search& search) {
  const auto& options = search.Options();
  for (ShardingType type : AllShardingTypes()) {
    std::vector<std::size_t> index(options.size());
    bool allowed = true;
    for (std::size_t t = 0; t < options.size() && allowed; ++t) {
      const auto& opts = options[t];
      auto it =
          std::find_if(opts.begin(), opts.end(), [&](const Option& o) { return o.type == type; });
      allowed = it != opts.end();
      if (allowed) index[t] = static_cast<std::size_t>(it - opts.begin());
    }
    if (allowed) search.Evaluate(index);
  }
}

// 3. Minimum storage.
void ProposeMinStorage(Search& search) {
  const auto& options = search.Options();
  std::vector<std::size_t> min_storage(options.size());
  for (std::size_t t = 0; t < options.size(); ++t) min_storage[t] = MinStorageIndex(options[t]);
  search.Evaluate(min_storage);
}

// 4. Exhaustive when small.
void ProposeExhaustive(Search& search) {
  const auto& options = search.Options();
  std::size_t combinations = 1;
  for (const auto& opts : options) {
    combinations *= opts.size();
    if (combinations > kExhaustiveLimit) break;
  }
  if (combinations > kExhaustiveLimit) return;
  std::vector<std::size_t> index(options.size(), 0);
  for (bool done = false; !done;) {
    search.Evaluate(index);
    done = true;
    for (std::size_t t = options.size(); t-- > 0;) {  // odometer, last table fastest
      if (++index[t] < options[t].size()) {
        done = false;
        break;
      }
      index[t] = 0;
    }
  }
}

}  // namespace

std::vector<const Option*> Pick(const std::vector<std::vector<Option>>& options,
                                const std::vector<std::size_t>& index) {
  std::vector<const Option*> proposal(options.size());
  for (std::size_t t = 0; t < options.size(); ++t) proposal[t] = &options[t][index[t]];
  return proposal;
}

std::size_t MinStorageIndex(const std::vector<Option>& options) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < options.size(); ++i) {
    const Option& a = options[i];
    const Option& b = options[best];
    if (a.max_shard_storage < b.max_shard_storage ||
        (a.max_shard_storage == b.max_shard_storage && a.total_storage < b.total_storage)) {
      best = i;
    }
  }
  return best;
}

std::optional<Proposal> BestProposal(const std::vector<std::vector<Option>>& options_by_table,
                                     const Topology& topo, const StorageCapacity& capacity) {
  Search search(options_by_table, topo, capacity);
  ProposeGreedy(search);
  ProposeUniform(search);
  ProposeMinStorage(search);
  ProposeExhaustive(search);
  return search.TakeBest();
}

}  // namespace tzrec::planner_detail
