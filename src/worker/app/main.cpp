// tzrec_train — the libtorch training worker that tzrun supervises.
//
//   tzrec_train plan --tables TABLES.json [--world-size N ...]   print and write a ShardingPlan
//   tzrec_train --version
// Exit codes: 0 success; 2 bad input (message names it and the fix); 3 no feasible plan.
#include <cstring>
#include <iostream>
#include <string>

#include "tzrun/worker/plan_command.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tzrec_train <command> [options]\n"
    "\n"
    "commands:\n"
    "  plan      plan how embedding tables are sharded over the ranks (TorchRec planner);\n"
    "            prints the plan as a table and writes it as JSON with --output\n"
    "            (tzrec_train plan --help for its options)\n"
    "\n"
    "  --version print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "--version") {
    std::cout << "tzrec_train " << TZRUN_VERSION << '\n';
    return 0;
  }
  if (command == "plan") {
    return tzrec::RunPlanCommand(argc - 1, argv + 1);
  }
  std::cerr << "tzrec_train: unknown command '" << command << "'; run 'tzrec_train --help' for the commands\n";
  return 2;
}
