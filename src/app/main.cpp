// tzrun — entry point: parse, build, run, map the outcome to an exit code.
//   tzrun [torchrun options] training_script [args...]   launch workers (docs/launcher.md)
//   tzrun store [options]                                 standalone c10d store (docs/store.md)
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "store_command.hpp"
#include "tzrun/agent/agent.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/cli/cli.hpp"
#include "tzrun/error.hpp"
#include "tzrun/launch_config.hpp"
#include "tzrun/platform/platform.hpp"

namespace {

/// The one place a tzrun::Error becomes the process exit status: its message on stderr
/// (cli::UsageError's what() is already the complete argparse text: usage block, then
/// "tzrun: error: <message>"; every other error is one line that gets that prefix).
int Report(const tzrun::Error& e) {
  if (dynamic_cast<const tzrun::cli::UsageError*>(&e) != nullptr) {
    std::fprintf(stderr, "%s\n", e.what());
  } else {
    std::fprintf(stderr, "tzrun: error: %s\n", e.what());
  }
  return e.ExitCode();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "store") {
    return tzrun::app::StoreMain(argc - 1, argv + 1);
  }
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto outcome = tzrun::cli::Parse(args, tzrun::base::EnvironMap());
    if (outcome.kind != tzrun::cli::ParseOutcome::Kind::kRun) {
      std::fputs(outcome.text.c_str(), stdout);
      return tzrun::ExitCode::kSuccess;
    }
    const auto& cfg = outcome.config;
    const bool quiet =
        cfg.log_level == "error" || cfg.log_level == "critical" || cfg.log_level == "off";
    if (!quiet) {
      for (const auto& w : outcome.warnings)
        std::fprintf(stderr, "tzrun: warning: %s\n", w.c_str());
    }
    // One line naming the platform whose variables were applied (docs/multinode.md);
    // always shown for --dry-run, before the agent prints the resolved run.
    if ((outcome.platform.kind != tzrun::platform::Kind::kNone && !quiet) || cfg.dry_run) {
      std::fprintf(stderr, "%s\n", tzrun::platform::SummaryLine(outcome.platform, cfg).c_str());
      std::fflush(stderr);
    }
    return tzrun::agent::Run(outcome.config);
  } catch (const tzrun::Error& e) {
    return Report(e);
  } catch (const std::exception& e) {
    // Not a typed error: a bug in tzrun, not the user's input.
    std::fprintf(stderr, "tzrun: error: internal error: %s\n", e.what());
    return tzrun::exit_code::kInternal;
  }
}
