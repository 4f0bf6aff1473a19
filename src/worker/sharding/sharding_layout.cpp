// ShardingLayout::Build: the pure layout of a ShardedEmbeddingBagCollection (see
// sharding_layout.hpp for the orders it fixes).
#include "sharding_layout.hpp"

#include <stdexcept>
#include <string>

namespace tzrec {
namespace {

// Output keys in EBC order, with their column bases; validates the tables.
void AddFeatures(const std::vector<EmbeddingBagConfig>& tables, ShardingLayout& layout) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto& cfg = tables[t];
    if (cfg.feature_names.empty() || cfg.num_embeddings <= 0 || cfg.embedding_dim <= 0) {
      throw std::invalid_argument("table '" + cfg.name +
                                  "' needs rows > 0, dim > 0 and at least one feature");
    }
    for (const auto& f : cfg.feature_names) {
      layout.features.push_back(ShardingLayout::Feature{f, static_cast<int>(t), layout.total_dim,
                                                        cfg.pooling == PoolingType::kMean});
      layout.total_dim += cfg.embedding_dim;
      layout.any_mean = layout.any_mean || cfg.pooling == PoolingType::kMean;
    }
  }
  const auto& features = layout.features;
  for (std::size_t i = 0; i < features.size(); ++i) {
    for (std::size_t j = i + 1; j < features.size(); ++j) {
      if (features[i].name == features[j].name) {
        throw std::invalid_argument("feature '" + features[i].name +
                                    "' is listed by two tables: give each table its own features");
      }
    }
  }
}

// The units of one sharded table.
void AddTableUnits(const EmbeddingBagConfig& cfg, int t, const ParameterSharding& ps, int world,
                   ShardingLayout& layout) {
  // Reduce-scatter needs one shard per rank (row_wise; table_row_wise on a single host).
  bool one_per_rank = static_cast<int>(ps.shards.size()) == world;
  for (int i = 0; one_per_rank && i < world; ++i) {
    one_per_rank = ps.shards[static_cast<std::size_t>(i)].rank == i;
  }
  const bool row_split =
      ps.sharding_type == ShardingType::kRowWise || ps.sharding_type == ShardingType::kTableRowWise;
  if (ps.shards.empty()) {
    throw std::invalid_argument("sharding plan has no shard for table '" + cfg.name + "'");
  }
  for (const Shard& s : ps.shards) {
    if (s.rank < 0 || s.rank >= world || s.row_offset < 0 || s.col_offset < 0 ||
        s.row_offset + s.rows > cfg.num_embeddings || s.col_offset + s.cols > cfg.embedding_dim) {
      throw std::invalid_argument(
          "sharding plan shard of table '" + cfg.name + "' (rank " + std::to_string(s.rank) +
          ", offsets " + std::to_string(s.row_offset) + "," + std::to_string(s.col_offset) +
          ") does not fit the table " + std::to_string(cfg.num_embeddings) + " x " +
          std::to_string(cfg.embedding_dim) + ": re-plan for these tables");
    }
    ShardingLayout::Unit u;
    u.table = t;
    u.shard = s;
    u.group = (row_split && one_per_rank) ? ShardingLayout::OutGroup::kReduceScatter
                                          : ShardingLayout::OutGroup::kAllToAll;
    u.full_rows = s.row_offset == 0 && s.rows == cfg.num_embeddings;
    if (!row_split || one_per_rank || s.rows > 0) {
      layout.units.push_back(u);
    }
  }
}

// Units, data-parallel tables, routes per destination and this rank's local units.
void AddUnitsAndRoutes(const ShardingPlan& plan, const std::vector<EmbeddingBagConfig>& tables,
                       ShardingLayout& layout) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const ParameterSharding& ps = plan.Get(tables[t].name);
    if (ps.sharding_type == ShardingType::kDataParallel) {
      layout.dp_index[static_cast<int>(t)] = static_cast<int>(layout.dp_tables.size());
      layout.dp_tables.push_back(static_cast<int>(t));
      continue;
    }
    layout.any_sharded = true;
    AddTableUnits(tables[t], static_cast<int>(t), ps, layout.world, layout);
  }
  // Routes per destination, ordered (table, feature, unit): features are already in table order.
  layout.routes.assign(static_cast<std::size_t>(layout.world), {});
  for (std::size_t fi = 0; fi < layout.features.size(); ++fi) {
    for (std::size_t ui = 0; ui < layout.units.size(); ++ui) {
      if (layout.units[ui].table == layout.features[fi].table) {
        layout.routes[static_cast<std::size_t>(layout.units[ui].shard.rank)].push_back(
            ShardingLayout::Route{static_cast<int>(ui), static_cast<int>(fi)});
      }
    }
  }
  for (std::size_t ui = 0; ui < layout.units.size(); ++ui) {
    ShardingLayout::Unit& u = layout.units[ui];
    if (u.shard.rank != layout.rank) continue;
    u.local = static_cast<int>(layout.local_units.size());
    layout.local_units.push_back(static_cast<int>(ui));
  }
  for (std::size_t fi = 0; fi < layout.features.size(); ++fi) {
    if (layout.dp_index.count(layout.features[fi].table) != 0U) {
      layout.dp_features.push_back(static_cast<int>(fi));
    }
  }
}

// The output columns of the routes of `routes` whose unit travels by `group`.
void AppendColumns(const ShardingLayout& layout, const std::vector<ShardingLayout::Route>& routes,
                   ShardingLayout::OutGroup group, std::vector<std::int64_t>& map,
                   std::int64_t* cols) {
  for (const ShardingLayout::Route& ro : routes) {
    const ShardingLayout::Unit& u = layout.units[static_cast<std::size_t>(ro.unit)];
    if (u.group != group) continue;
    const ShardingLayout::Feature& f = layout.features[static_cast<std::size_t>(ro.feature)];
    for (std::int64_t c = 0; c < u.shard.cols; ++c)
      map.push_back(f.col_base + u.shard.col_offset + c);
    if (cols != nullptr) *cols += u.shard.cols;
  }
}

// Column maps of the output dist.
void AddColumnMaps(ShardingLayout& layout) {
  const int world = layout.world;
  layout.a2a_cols_per_rank.assign(static_cast<std::size_t>(world), 0);
  for (int q = 0; q < world; ++q) {
    AppendColumns(layout, layout.routes[static_cast<std::size_t>(q)],
                  ShardingLayout::OutGroup::kAllToAll, layout.a2a_colmap,
                  &layout.a2a_cols_per_rank[static_cast<std::size_t>(q)]);
  }
  layout.any_a2a = !layout.a2a_colmap.empty();
  AppendColumns(layout, layout.routes[static_cast<std::size_t>(layout.rank)],
                ShardingLayout::OutGroup::kReduceScatter, layout.rs_colmap, nullptr);
  layout.rs_cols = static_cast<std::int64_t>(layout.rs_colmap.size());
  layout.a2a_runs.assign(static_cast<std::size_t>(world), {});
  std::size_t at_col = 0;
  for (int q = 0; q < world; ++q) {
    auto& runs = layout.a2a_runs[static_cast<std::size_t>(q)];
    for (std::int64_t c = 0; c < layout.a2a_cols_per_rank[static_cast<std::size_t>(q)]; ++c) {
      const std::int64_t dst = layout.a2a_colmap[at_col++];
      if (!runs.empty() && runs.back().dst + runs.back().len == dst) {
        ++runs.back().len;
      } else {
        runs.push_back({c, dst, 1});
      }
    }
  }
  const auto& a2a_map = layout.a2a_colmap;
  if (layout.rs_colmap.empty() && layout.dp_features.empty() &&
      static_cast<std::int64_t>(a2a_map.size()) == layout.total_dim) {
    std::vector<bool> seen(a2a_map.size(), false);
    bool permutation = true;
    for (const std::int64_t c : a2a_map) {
      permutation =
          permutation && c >= 0 && c < layout.total_dim && !seen[static_cast<std::size_t>(c)];
      if (permutation) seen[static_cast<std::size_t>(c)] = true;
    }
    layout.a2a_covers_output = permutation;
  }
}

}  // namespace

ShardingLayout ShardingLayout::Build(const ShardingPlan& plan,
                                     const std::vector<EmbeddingBagConfig>& tables, int this_rank,
                                     int world_size) {
  if (plan.world_size != world_size) {
    throw std::invalid_argument("sharding plan is for world size " +
                                std::to_string(plan.world_size) + " but this job has " +
                                std::to_string(world_size) +
                                " ranks: re-plan for the current world size");
  }
  ShardingLayout layout;
  layout.rank = this_rank;
  layout.world = world_size;
  AddFeatures(tables, layout);
  AddUnitsAndRoutes(plan, tables, layout);
  AddColumnMaps(layout);
  return layout;
}

}  // namespace tzrec
