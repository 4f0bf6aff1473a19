// ShardingPlan: lookup, JSON round-trip and placement hash (include/tzrec/types/sharding_plan.hpp).
#include "tzrec/types/sharding_plan.hpp"

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tzrec {
namespace {

using Json = nlohmann::ordered_json;

Json PlanToJson(const ShardingPlan& plan, bool with_estimates) {
  Json tables = Json::object();
  for (const ParameterSharding& sharding : plan.tables) {
    Json shards = Json::array();
    for (const Shard& shard : sharding.shards) {
      Json entry = Json::object();
      entry["offsets"] = {shard.row_offset, shard.col_offset};
      entry["sizes"] = {shard.rows, shard.cols};
      entry["rank"] = shard.rank;
      if (with_estimates) {
        entry["perf_ms"] = shard.perf_ms;
        entry["ddr_bytes"] = shard.ddr_bytes;
        entry["hbm_bytes"] = shard.hbm_bytes;
      }
      shards.push_back(std::move(entry));
    }
    Json table = Json::object();
    table["sharding_type"] = std::string(ToString(sharding.sharding_type));
    table["compute_kernel"] = sharding.compute_kernel;
    table["ranks"] = sharding.ranks;
    table["shards"] = std::move(shards);
    tables[sharding.table] = std::move(table);
  }
  Json root = Json::object();
  root["world_size"] = plan.world_size;
  root["local_world_size"] = plan.local_world_size;
  root["tables"] = std::move(tables);
  return root;
}

[[noreturn]] void Bad(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("sharding plan JSON: field '" + field + "' " + problem);
}

const Json& Field(const Json& object, const std::string& key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) Bad(where + key, "is missing");
  return *it;
}

std::int64_t IntField(const Json& object, const std::string& key, const std::string& where,
                      std::int64_t min_value) {
  const Json& value = Field(object, key, where);
  if (!value.is_number_integer()) Bad(where + key, "must be an integer, got " + value.dump());
  const auto result = value.get<std::int64_t>();
  if (result < min_value) {
    Bad(where + key,
        "is " + std::to_string(result) + "; it must be >= " + std::to_string(min_value));
  }
  return result;
}

std::pair<std::int64_t, std::int64_t> PairField(const Json& object, const std::string& key,
                                                const std::string& where) {
  const Json& value = Field(object, key, where);
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() ||
      !value[1].is_number_integer()) {
    Bad(where + key, "must be [rows, cols] integers, got " + value.dump());
  }
  const auto first = value[0].get<std::int64_t>();
  const auto second = value[1].get<std::int64_t>();
  if (first < 0 || second < 0) Bad(where + key, "must not be negative, got " + value.dump());
  return {first, second};
}
}  // namespace

const ParameterSharding& ShardingPlan::Get(std::string_view table) const {
  for (const ParameterSharding& sharding : tables) {
    if (sharding.table == table) return sharding;
  }
  throw std::out_of_range("sharding plan has no table '" + std::string(table) +
                          "'; re-plan with this table or check its name");
}

std::string ShardingPlan::ToJson(int indent) const {
  return PlanToJson(*this, true).dump(indent);
}

ShardingPlan ShardingPlan::FromJson(std::string_view json) {
  Json root;
  try {
    root = Json::parse(json.begin(), json.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("sharding plan JSON does not parse: ") + e.what());
  }
  if (!root.is_object()) Bad("<root>", "must be an object");
  ShardingPlan plan;
  plan.world_size = static_cast<int>(IntField(root, "world_size", "", 1));
  plan.local_world_size = static_cast<int>(IntField(root, "local_world_size", "", 1));
  const Json& tables = Field(root, "tables", "");
  if (!tables.is_object()) Bad("tables", "must be an object keyed by table name");
  for (const auto& [name, entry] : tables.items()) {
    const std::string where = "tables." + name + ".";
    if (!entry.is_object()) Bad("tables." + name, "must be an object");
    ParameterSharding sharding;
    sharding.table = name;
    const Json& type = Field(entry, "sharding_type", where);
    if (!type.is_string()) Bad(where + "sharding_type", "must be a string");
    try {
      sharding.sharding_type = ParseShardingType(type.get<std::string>());
    } catch (const std::invalid_argument& e) {
      Bad(where + "sharding_type", e.what());
    }
    const Json& kernel = Field(entry, "compute_kernel", where);
    if (!kernel.is_string()) Bad(where + "compute_kernel", "must be a string");
    sharding.compute_kernel = kernel.get<std::string>();
    const Json& ranks = Field(entry, "ranks", where);
    if (!ranks.is_array()) Bad(where + "ranks", "must be an array of ranks");
    for (const Json& rank : ranks) {
      if (!rank.is_number_integer() || rank.get<std::int64_t>() < 0 ||
          rank.get<std::int64_t>() >= plan.world_size) {
        Bad(where + "ranks", "holds " + rank.dump() + ", not a rank in [0, world_size)");
      }
      sharding.ranks.push_back(rank.get<int>());
    }
    const Json& shards = Field(entry, "shards", where);
    if (!shards.is_array() || shards.empty()) Bad(where + "shards", "must be a non-empty array");
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const std::string at = where + "shards[" + std::to_string(i) + "].";
      const Json& item = shards[i];
      if (!item.is_object()) Bad(where + "shards[" + std::to_string(i) + "]", "must be an object");
      Shard shard;
      std::tie(shard.row_offset, shard.col_offset) = PairField(item, "offsets", at);
      std::tie(shard.rows, shard.cols) = PairField(item, "sizes", at);
      const std::int64_t rank = IntField(item, "rank", at, 0);
      if (rank >= plan.world_size) {
        Bad(at + "rank", "is " + std::to_string(rank) + ", outside world_size " +
                             std::to_string(plan.world_size));
      }
      shard.rank = static_cast<int>(rank);
      if (auto it = item.find("perf_ms"); it != item.end()) {
        if (!it->is_number()) Bad(at + "perf_ms", "must be a number");
        shard.perf_ms = it->get<double>();
      }
      if (item.contains("ddr_bytes")) shard.ddr_bytes = IntField(item, "ddr_bytes", at, 0);
      if (item.contains("hbm_bytes")) shard.hbm_bytes = IntField(item, "hbm_bytes", at, 0);
      sharding.shards.push_back(shard);
    }
    plan.tables.push_back(std::move(sharding));
  }
  return plan;
}

std::string ShardingPlan::Hash() const {
  const std::string text = PlanToJson(*this, false).dump(-1);
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV prime
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

}  // namespace tzrec
