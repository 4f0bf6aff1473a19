// `tzrec_train plan`: read table specs from JSON, plan, print the table and hash, optionally write
// the plan JSON atomically. See include/tzrec/planner/plan_command.hpp for flags and exit codes.
#include "tzrec/planner/plan_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/planner/planner.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUnexpected = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitNoPlan = 3;

using Json = nlohmann::json;

// Input errors (exit 2): tzrec::InputError (tzrec/error.hpp).

void CheckKeys(const Json& object, const std::vector<std::string>& valid, const std::string& where,
               const std::string& file) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    const std::string closest = tzrun::base::closest_name(key, valid);
    const std::string all = tzrun::base::join(valid, ", ");
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

struct TablesFile {
  std::vector<TableSpec> tables;
  std::optional<std::int64_t> batch_size;
  std::optional<EmbeddingOptimizerKind> optimizer;
  std::optional<std::int64_t> dense_parameter_bytes;
};

TablesFile ReadTablesFile(const std::string& path) {
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
  const std::vector<std::string> table_keys = {"name",          "num_embeddings", "embedding_dim",
                                               "feature_names", "pooling_factor", "sharding_types",
                                               "min_partition"};
  const Json& tables = root["tables"];
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const Json& entry = tables[i];
    std::string where = "tables[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw InputError(path + ": " + where + " must be an object");
    CheckKeys(entry, table_keys, where, path);
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
    if (entry.contains("pooling_factor")) {
      const Json& pooling = entry["pooling_factor"];
      if (pooling.is_array()) {
        for (const Json& factor : pooling) {
          table.constraints.pooling_factors.push_back(
              GetNumber(factor, where + ".pooling_factor[]", path));
        }
      } else {
        table.constraints.pooling_factors.assign(
            table.feature_names.size(), GetNumber(pooling, where + ".pooling_factor", path));
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
    result.tables.push_back(std::move(table));
  }
  return result;
}

void WriteAtomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw InputError("cannot create '" + temp + "' for --output: " + std::strerror(errno) +
                       "; check that the directory exists and is writable");
    }
    out << text;
    out.flush();
    if (!out) {
      const int error = errno;
      out.close();
      std::remove(temp.c_str());
      throw InputError("cannot write '" + temp + "': " + std::strerror(error));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temp.c_str());
    throw InputError("cannot rename '" + temp + "' to '" + path + "': " + std::strerror(error));
  }
}

std::int64_t GiBToBytes(double gib) {
  return static_cast<std::int64_t>(std::llround(gib * 1024.0 * 1024.0 * 1024.0));
}

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tzrec_train plan: error: %s\n", message.c_str());
  std::fflush(stderr);
  return code;
}

}  // namespace

int RunPlanCommand(int argc, char** argv) {
  CLI::App app{"Compute a TorchRec-style embedding sharding plan for a table list and print it.",
               "tzrec_train plan"};
  std::string tables_path;
  int world_size = 1;
  std::optional<int> local_world_size;
  std::string device = "cpu";
  std::optional<double> hbm_cap_gb;
  std::optional<double> ddr_cap_gb;
  std::optional<std::int64_t> batch_size;
  std::optional<std::string> optimizer;
  std::string output;
  app.add_option("--tables", tables_path,
                 "JSON file: {\"tables\":[{\"name\",\"num_embeddings\",\"embedding_dim\","
                 "\"feature_names\",[\"pooling_factor\",\"sharding_types\",\"min_partition\"]}],"
                 " [\"batch_size\", \"optimizer\", \"dense_parameter_bytes\"]}")
      ->required();
  app.add_option("--world-size", world_size, "Number of ranks (default: $WORLD_SIZE or 1)")
      ->envname("WORLD_SIZE")
      ->check(CLI::PositiveNumber);
  app.add_option("--local-world-size", local_world_size,
                 "Ranks per host (default: $LOCAL_WORLD_SIZE or the world size)")
      ->envname("LOCAL_WORLD_SIZE")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", device, "Compute device of the ranks")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--hbm-cap-gb", hbm_cap_gb, "GPU memory per rank in GiB (default: 80 on cuda)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ddr-cap-gb", ddr_cap_gb,
                 "Host memory per rank in GiB (default: physical RAM / local world size)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", batch_size,
                 "Per-rank batch size (overrides the file; default 512)")
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", optimizer,
                 "Embedding optimizer (overrides the file; default rowwise_adagrad)")
      ->check(CLI::IsMember({"sgd", "adagrad", "rowwise_adagrad", "adam"}));
  app.add_option("--output", output, "Write the plan JSON here (atomically)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }

  try {
    const TablesFile file = ReadTablesFile(tables_path);
    const ComputeDevice compute = device == "cuda" ? ComputeDevice::kCuda : ComputeDevice::kCpu;
    const int local = local_world_size.value_or(world_size);
    const std::int64_t hbm_cap =
        compute == ComputeDevice::kCuda ? GiBToBytes(hbm_cap_gb.value_or(80.0)) : 0;
    Topology topology = Topology::FromEnvironment(world_size, local, compute, hbm_cap);
    if (ddr_cap_gb) topology.ddr_cap = GiBToBytes(*ddr_cap_gb);
    if (compute == ComputeDevice::kCpu && hbm_cap_gb) topology.hbm_cap = 0;
    topology.Validate();

    PlannerOptions options;
    if (file.batch_size) options.batch_size = *file.batch_size;
    if (batch_size) options.batch_size = *batch_size;
    if (file.optimizer) options.optimizer = *file.optimizer;
    if (optimizer) options.optimizer = ParseEmbeddingOptimizerKind(*optimizer);
    if (file.dense_parameter_bytes) options.dense_parameter_bytes = *file.dense_parameter_bytes;

    const ShardingPlan plan = Plan(topology, file.tables, options);
    std::string text =
        "tzrec_train plan: " + std::to_string(file.tables.size()) + " table(s), world " +
        std::to_string(topology.world_size) + " (" + std::to_string(topology.local_world_size) +
        " per host), " + std::string(ToString(topology.device)) + ", per-rank batch " +
        std::to_string(options.batch_size) + ", optimizer " +
        std::string(ToString(options.optimizer)) + ", per-rank caps hbm " +
        FormatBytes(topology.hbm_cap) + " ddr " + FormatBytes(topology.ddr_cap) + "\n\n";
    text += plan.ToTable();
    text += "\nplan hash: " + plan.Hash() + "\n";
    if (!output.empty()) {
      WriteAtomically(output, plan.ToJson(2) + "\n");
      text += "plan written to " + output + "\n";
    }
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return kExitOk;
  } catch (const PlannerError& e) {
    return Fail(kExitNoPlan, std::string("no feasible sharding plan: ") + e.what());
  } catch (const InputError& e) {
    return Fail(kExitBadInput, e.what());
  } catch (const std::invalid_argument& e) {
    return Fail(kExitBadInput, e.what());
  } catch (const std::exception& e) {
    return Fail(kExitUnexpected, e.what());
  }
}

}  // namespace tzrec
