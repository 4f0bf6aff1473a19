// tzrun/error.hpp — the root of every error the tzrun launcher reports to its user.
//
// CLI11's model: an error carries the exit code the process ends with, and its message already
// says what failed, with which value, and what to do. Layers throw a subclass (cli::UsageError,
// rendezvous::RendezvousError, agent errors, ...) and the one boundary in src/app/main.cpp prints
// `what()` and returns `ExitCode()`. Anything else that escapes (std::exception from a library)
// is an internal error: exit 1 with "internal error", never blamed on the user's input.
//
// Exit codes follow docs/launcher.md ("Exit codes"): a worker's own code (or 128+signal) for
// worker failures, 2 usage, 125 infrastructure (store bind, spawn, log dir), 126/127 worker not
// executable / not found.
//
// Thread-safety: immutable after construction; safe to copy and read from any thread.
#pragma once

#include <stdexcept>
#include <string>

namespace tzrun {

/// Exit codes tzrun itself chooses (worker failures propagate the worker's own code).
namespace exit_code {
inline constexpr int kInternal = 1;          ///< a bug in tzrun: report it
inline constexpr int kUsage = 2;             ///< bad command line, environment or config value
inline constexpr int kInfrastructure = 125;  ///< store bind, spawn, log dir, rendezvous failure
inline constexpr int kNotExecutable = 126;   ///< the worker program exists but cannot be run
inline constexpr int kNotFound = 127;        ///< the worker program was not found
}  // namespace exit_code

/// Base of tzrun's typed errors: a message for the user and the process exit code.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  [[nodiscard]] int ExitCode() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace tzrun
