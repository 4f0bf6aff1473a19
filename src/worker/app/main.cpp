// tzrec_train — the libtorch training worker that tzrun supervises.
//
//   tzrun --nproc-per-node=N tzrec_train --pipeline_config_path CONFIG [--train_input_path ...]
//         [--eval_input_path ...] [--model_dir DIR] [--continue_train] [--edit_config_json JSON]
//         [--fine_tune_checkpoint CKPT]    train and evaluate (TorchEasyRec's tzrec.train_eval)
//   tzrec_train train_eval ...             the same, named
//   tzrun --nproc-per-node=N tzrec_train eval --pipeline_config_path CONFIG
//         [--checkpoint_path DIR] [--eval_input_path ...] [--eval_result_filename F]
//                                          evaluate a checkpoint, distributed (tzrec.eval)
//   tzrec_train plan --tables TABLES.json  print and write a ShardingPlan without training
//   tzrec_train export --model_dir DIR --export_dir OUT     single-process model from a checkpoint
//   tzrec_train predict --scripted_model_path OUT --predict_input_path FILE
//         [--predict_output_path F] [--reserved_columns A,B] [--output_columns probs]
//                                          score a file with an export (tzrec.predict)
//   tzrec_train config-reference           the pipeline config keys as markdown
//   tzrec_train --version
// Unknown arguments are ignored with a warning, misspelt flags refused (src/worker/app/flags.hpp).
// Exit codes: 0 success; 2 bad input (the message names it and the fix); 3 no feasible plan;
// 4 a collective or checkpoint failure; 1 internal error.
//
// This file is the one exit-code boundary of tzrec_train (include/tzrec/error.hpp): a tzrec::Error
// prints "tzrec_train <command> rank <R>: <label>: <message>" and exits with its code; c10::Error
// and any other exception are internal errors (exit 1), never reported as the user's mistake.
#include <c10/util/Exception.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <functional>
#include <iostream>
#include <string>

#include "failure.hpp"
#include "plan_command.hpp"
#include "tzrec/error.hpp"
#ifdef TZREC_WITH_TRAIN
#include "commands.hpp"
#include "tzrec/config/config.hpp"
#endif

namespace {

constexpr const char* kUsage =
    "usage: tzrec_train [train_eval] --pipeline_config_path CONFIG [options]\n"
    "       tzrec_train <command> [options]\n"
    "\n"
    "commands:\n"
    "  train_eval        train and evaluate (the default when the first argument is an option);\n"
    "                    run under tzrun: tzrun --nproc-per-node=N tzrec_train "
    "--pipeline_config_path ...\n"
    "  eval              evaluate a checkpoint on every rank (TorchEasyRec tzrec.eval); run "
    "under tzrun\n"
    "  plan              plan how embedding tables are sharded over the ranks (TorchRec planner)\n"
    "  export            write a single-process model from a checkpoint of any world size\n"
    "  predict           score an input file with an exported model (TorchEasyRec tzrec.predict)\n"
    "  config-reference  print every pipeline config key (markdown)\n"
    "\n"
    "  <command> --help  options of a command;  --version  the version\n";

// "tzrec_train <command>[ rank <RANK>]": the prefix of every error line.
std::string Who(const std::string& command) {
  const char* rank = std::getenv("RANK");
  return "tzrec_train " + command + (rank != nullptr ? std::string(" rank ") + rank : "");
}

// RANK as a number; -1 when unset or not a number (outside a launcher).
int MyRank() {
  const char* rank = std::getenv("RANK");
  if (rank == nullptr || *rank == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(rank, &end, 10);
  return *end == '\0' && value >= 0 ? static_cast<int>(value) : -1;
}

// The error that ends a command: one stderr line and the torchelastic error file (failure.hpp).
int Fail(const std::string& who, const std::string& label, const std::string& message,
         int exit_code, int origin_rank) {
  const tzrec::FailureText text =
      tzrec::DescribeFailure(who, label, message, exit_code, origin_rank, MyRank(),
                             static_cast<std::int64_t>(std::time(nullptr)));
  tzrec::WriteStderr(text.console);
  const char* error_file = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (error_file != nullptr && *error_file != '\0') {
    const std::string why = tzrec::WriteErrorFile(error_file, text.error_json);
    if (!why.empty()) tzrec::WriteStderr(who + ": warning: TORCHELASTIC_ERROR_FILE: " + why + "\n");
  }
  return exit_code;
}

// Runs a command and maps what escapes it to an exit code with a one-line message.
int Report(const std::string& command, const std::function<int()>& body) {
  const std::string who = Who(command);
  try {
    return body();
  } catch (const tzrec::Error& e) {
    return Fail(who, e.Label(), e.what(), e.ExitCode(), e.OriginRank());
  } catch (const c10::Error& e) {
    // A libtorch error: its message without the C++ backtrace.
    return Fail(who, "internal error in libtorch", e.what_without_backtrace(),
                static_cast<int>(tzrec::ExitCode::kInternal), -1);
  } catch (const std::exception& e) {
    return Fail(who, "internal error", e.what(), static_cast<int>(tzrec::ExitCode::kInternal), -1);
  }
}

int Dispatch(const std::string& command, int argc, char** argv) {
  if (command == "plan") return tzrec::RunPlanCommand(argc - 1, argv + 1);
#ifdef TZREC_WITH_TRAIN
  if (command == "train_eval" || command == "train") {
    return Report("train_eval", [&] { return tzrec::RunTrainEval(argc - 1, argv + 1); });
  }
  if (command.rfind("--", 0) == 0) {
    return Report("train_eval", [&] { return tzrec::RunTrainEval(argc, argv); });
  }
  if (command == "eval") {
    return Report("eval", [&] { return tzrec::RunEval(argc - 1, argv + 1); });
  }
  if (command == "export") {
    return Report("export", [&] { return tzrec::RunExport(argc - 1, argv + 1); });
  }
  if (command == "predict") {
    return Report("predict", [&] { return tzrec::RunPredict(argc - 1, argv + 1); });
  }
  if (command == "config-reference") {
    std::cout << tzrec::ConfigReferenceMarkdown();
    return 0;
  }
#endif
  std::cerr << "tzrec_train: unknown command '" << command
            << "'; run 'tzrec_train --help' for the commands\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // A training step allocates many large temporaries; glibc would mmap/munmap each one and the
  // page faults cost more than the lookups (3x on the embedding benchmark). Keep them in the heap.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "--version") {
    std::cout << "tzrec_train " << TZRUN_VERSION << '\n';
    return 0;
  }
  return Dispatch(command, argc, argv);
}
