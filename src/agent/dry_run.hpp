// tzrun agent internals: --dry-run — print the resolved run (store endpoint, configuration,
// every worker's argv and the environment torchrun would give it) without starting anything.
//
// Thread-safety: writes to stdout; reads the process environment.
#pragma once

#include "tzrun/launch_config.hpp"

namespace tzrun::agent {

/// Prints the plan of `cfg` on stdout and returns 0. Throws what building the workers
/// throws (AgentError, WorkerSetupError, rendezvous::ConfigError) before printing the
/// worker lines.
int DryRun(LaunchConfig cfg);

}  // namespace tzrun::agent
