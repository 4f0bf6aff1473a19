// `tzrec_train plan`: read table specs from JSON (plan_tables.cpp), plan, print the table and
// hash, optionally write the plan JSON atomically. See src/worker/app/plan_command.hpp for flags
// and exit codes.
#include "plan_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "tzrec/error.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUnexpected = 1;
constexpr int kExitBadInput = static_cast<int>(ExitCode::kBadInput);
constexpr int kExitNoPlan = static_cast<int>(ExitCode::kNoPlan);

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

// The flags of `tzrec_train plan`.
struct PlanFlags {
  std::string tables_path;
  int world_size = 1;
  std::optional<int> local_world_size;
  std::string device = "cpu";
  std::optional<double> hbm_cap_gb;
  std::optional<double> ddr_cap_gb;
  std::optional<std::int64_t> batch_size;
  std::optional<std::string> optimizer;
  std::string output;
};

void AddPlanOptions(CLI::App& app, PlanFlags& flags) {
  app.add_option("--tables", flags.tables_path,
                 "JSON file: {\"tables\":[{\"name\",\"num_embeddings\",\"embedding_dim\","
                 "\"feature_names\",[\"pooling_factor\",\"sharding_types\",\"min_partition\"]}],"
                 " [\"batch_size\", \"optimizer\", \"dense_parameter_bytes\"]}")
      ->required();
  app.add_option("--world-size", flags.world_size, "Number of ranks (default: $WORLD_SIZE or 1)")
      ->envname("WORLD_SIZE")
      ->check(CLI::PositiveNumber);
  app.add_option("--local-world-size", flags.local_world_size,
                 "Ranks per host (default: $LOCAL_WORLD_SIZE or the world size)")
      ->envname("LOCAL_WORLD_SIZE")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", flags.device, "Compute device of the ranks")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--hbm-cap-gb", flags.hbm_cap_gb,
                 "GPU memory per rank in GiB (default: 80; --device cuda only)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ddr-cap-gb", flags.ddr_cap_gb,
                 "Host memory per rank in GiB (default: physical RAM / local world size)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", flags.batch_size,
                 "Per-rank batch size (overrides the file; default 512)")
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", flags.optimizer,
                 "Embedding optimizer (overrides the file; default rowwise_adagrad)")
      ->check(CLI::IsMember({"sgd", "adagrad", "rowwise_adagrad", "adam"}));
  app.add_option("--output", flags.output, "Write the plan JSON here (atomically)");
}

// Throws InputError (exit 2) for --hbm-cap-gb with --device cpu: CPU ranks have no HBM, so the
// value would be dropped (planned with hbm 0) rather than used.
Topology PlanTopology(const PlanFlags& flags) {
  const ComputeDevice compute = flags.device == "cuda" ? ComputeDevice::kCuda : ComputeDevice::kCpu;
  if (compute == ComputeDevice::kCpu && flags.hbm_cap_gb) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", *flags.hbm_cap_gb);
    throw InputError(std::string("--hbm-cap-gb ") + value +
                     " is GPU memory, but --device is cpu (CPU ranks have no HBM; their tables "
                     "live in host memory, --ddr-cap-gb); remove --hbm-cap-gb or plan for "
                     "--device cuda");
  }
  const int local = flags.local_world_size.value_or(flags.world_size);
  const std::int64_t hbm_cap =
      compute == ComputeDevice::kCuda ? GiBToBytes(flags.hbm_cap_gb.value_or(80.0)) : 0;
  Topology topology = Topology::FromEnvironment(flags.world_size, local, compute, hbm_cap);
  if (flags.ddr_cap_gb) topology.ddr_cap = GiBToBytes(*flags.ddr_cap_gb);
  topology.Validate();
  return topology;
}

// Defaults, then the file, then the flags.
PlannerOptions PlanOptions(const PlanFlags& flags, const TablesFile& file) {
  PlannerOptions options;
  if (file.batch_size) options.batch_size = *file.batch_size;
  if (flags.batch_size) options.batch_size = *flags.batch_size;
  if (file.optimizer) options.optimizer = *file.optimizer;
  if (flags.optimizer) options.optimizer = ParseEmbeddingOptimizerKind(*flags.optimizer);
  if (file.dense_parameter_bytes) options.dense_parameter_bytes = *file.dense_parameter_bytes;
  return options;
}

// Plans, prints the header line, the table and the hash; writes --output. Throws on failure.
void PlanAndPrint(const PlanFlags& flags) {
  const TablesFile file = ReadTablesFile(flags.tables_path);
  const Topology topology = PlanTopology(flags);
  const PlannerOptions options = PlanOptions(flags, file);
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
  if (!flags.output.empty()) {
    WriteAtomically(flags.output, plan.ToJson(2) + "\n");
    text += "plan written to " + flags.output + "\n";
  }
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

int RunPlanCommand(int argc, char** argv) {
  CLI::App app{"Compute a TorchRec-style embedding sharding plan for a table list and print it.",
               "tzrec_train plan"};
  PlanFlags flags;
  AddPlanOptions(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  try {
    PlanAndPrint(flags);
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
