// ReadTablesFile: the --tables JSON of `tzrec_train plan` (src/worker/app/plan_command.hpp).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan_command.hpp"
#include "tzrec/error.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

using Json = nlohmann::json;

void CheckKeys(const Json& object, const std::vector<std::string>& valid, const std::string& where,
               const std::string& file) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    const std::string closest = tzrun::base::ClosestName(key, valid);
    const std::string all = tzrun::base::Join(valid, ", ");
    throw InputError(file + ": unknown key '" + key + "' in " + where + "; did you mean '" +
                     closest + "'? (valid keys: " + all + ")");
  }
}

std::int64_t GetInt(const Json& value, const std::string& where, const std::string& file) {
  if (!value.is_number_integer()) {
    throw InputError(file + ": " + where + " must be an integer, got " + value.dump());
  }
  return value.get<std::int64_t>();
}

double GetNumber(const Json& value, const std::string& where, const std::string& file) {
  if (!value.is_number()) {
    throw InputError(file + ": " + where + " must be a number, got " + value.dump());
  }
  return value.get<double>();
}

std::string GetString(const Json& value, const std::string& where, const std::string& file) {
  if (!value.is_string()) {
    throw InputError(file + ": " + where + " must be a string, got " + value.dump());
  }
  return value.get<std::string>();
}

Json ParseRoot(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw InputError("cannot read --tables file '" + path + "': " + std::strerror(errno) +
                     "; pass an existing JSON file");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Json root;
  try {
    root = Json::parse(buffer.str());
  } catch (const Json::parse_error& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  if (!root.is_object())
    throw InputError(path + ": the top level must be an object {\"tables\": [...]}");
  CheckKeys(root, {"tables", "batch_size", "optimizer", "dense_parameter_bytes"}, "the top level",
            path);
  return root;
}

// pooling_factor, sharding_types and min_partition of one table entry.
void ReadConstraints(const Json& entry, const std::string& where, const std::string& path,
                     TableSpec& table) {
  if (entry.contains("pooling_factor")) {
    const Json& pooling = entry["pooling_factor"];
    if (pooling.is_array()) {
      for (const Json& factor : pooling) {
        table.constraints.pooling_factors.push_back(
            GetNumber(factor, where + ".pooling_factor[]", path));
      }
    } else {
      table.constraints.pooling_factors.assign(table.feature_names.size(),
                                               GetNumber(pooling, where + ".pooling_factor", path));
    }
  }
  if (entry.contains("sharding_types")) {
    const Json& types = entry["sharding_types"];
    if (!types.is_array()) {
      throw InputError(path + ": " + where + ".sharding_types must be a list of strings");
    }
    for (const Json& type : types) {
      try {
        table.constraints.sharding_types.push_back(
            ParseShardingType(GetString(type, where + ".sharding_types[]", path)));
      } catch (const std::invalid_argument& e) {
        throw InputError(path + ": " + where + ".sharding_types: " + e.what());
      }
    }
  }
  if (entry.contains("min_partition")) {
    table.constraints.min_partition =
        GetInt(entry["min_partition"], where + ".min_partition", path);
  }
}

// tables[i].
TableSpec ReadTable(const Json& entry, std::size_t i, const std::string& path) {
  static const std::vector<std::string> kTableKeys = {
      "name",           "num_embeddings", "embedding_dim", "feature_names",
      "pooling_factor", "sharding_types", "min_partition"};
  std::string where = "tables[" + std::to_string(i) + "]";
  if (!entry.is_object()) throw InputError(path + ": " + where + " must be an object");
  CheckKeys(entry, kTableKeys, where, path);
  for (const char* required : {"name", "num_embeddings", "embedding_dim", "feature_names"}) {
    if (!entry.contains(required)) {
      throw InputError(path + ": " + where + " lacks \"" + required + "\"");
    }
  }
  TableSpec table;
  table.name = GetString(entry["name"], where + ".name", path);
  where += " ('" + table.name + "')";
  table.num_embeddings = GetInt(entry["num_embeddings"], where + ".num_embeddings", path);
  table.embedding_dim = GetInt(entry["embedding_dim"], where + ".embedding_dim", path);
  const Json& features = entry["feature_names"];
  if (!features.is_array()) {
    throw InputError(path + ": " + where + ".feature_names must be a list of strings");
  }
  for (const Json& feature : features) {
    table.feature_names.push_back(GetString(feature, where + ".feature_names[]", path));
  }
  ReadConstraints(entry, where, path, table);
  return table;
}

}  // namespace

TablesFile ReadTablesFile(const std::string& path) {
  Json root = ParseRoot(path);
  TablesFile result;
  if (root.contains("batch_size"))
    result.batch_size = GetInt(root["batch_size"], "batch_size", path);
  if (root.contains("optimizer")) {
    try {
      result.optimizer =
          ParseEmbeddingOptimizerKind(GetString(root["optimizer"], "optimizer", path));
    } catch (const std::invalid_argument& e) {
      throw InputError(path + ": " + e.what());
    }
  }
  if (root.contains("dense_parameter_bytes")) {
    result.dense_parameter_bytes =
        GetInt(root["dense_parameter_bytes"], "dense_parameter_bytes", path);
  }
  if (!root.contains("tables") || !root["tables"].is_array()) {
    throw InputError(path +
                     ": needs \"tables\": a list of {\"name\", \"num_embeddings\", "
                     "\"embedding_dim\", \"feature_names\"} objects");
  }
  const Json& tables = root["tables"];
  for (std::size_t i = 0; i < tables.size(); ++i) {
    result.tables.push_back(ReadTable(tables[i], i, path));
  }
  return result;
}

}  // namespace tzrec
