// tzrec/error.hpp — the root of every error tzrec_train reports to its user.
//
// CLI11/gloo model: a typed error carries the exit code the process ends with, and its message
// says what failed, with which value, and what to do. Libraries throw a subclass for domain
// failures (a config value, an input row, a plan that does not fit, a peer that left); the one
// boundary in src/worker/app/main.cpp prints `what()` and returns `exit_code()`. Anything else
// that escapes (std::invalid_argument from a precondition check, c10::Error from libtorch) is a
// bug: exit 1 "internal error", never reported as the user's mistake.
//
// Exit codes (docs/troubleshooting.md "Exit codes"): 2 bad input, 3 no feasible sharding plan,
// 4 a collective or checkpoint failure, 1 internal.
//
// Thread-safety: immutable after construction; safe to copy and read from any thread.
#pragma once

#include <stdexcept>
#include <string>

namespace tzrec {

/// tzrec_train's exit codes.
enum class ExitCode : int {
  kInternal = 1,    ///< a bug in tzrec_train (or libtorch): report it
  kBadInput = 2,    ///< config, flag, input data or checkpoint the user gave is wrong
  kNoPlan = 3,      ///< no sharding plan fits the tables into the devices' memory
  kCollective = 4,  ///< a collective, a peer or a checkpoint write/read failed
};

/// Base of tzrec_train's typed errors.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, ExitCode code) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] ExitCode code() const noexcept { return code_; }
  [[nodiscard]] int exit_code() const noexcept { return static_cast<int>(code_); }

 private:
  ExitCode code_;
};

/// The user's input (flags, config, data files, checkpoint directory) is wrong: exit 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what, ExitCode::kBadInput) {}
};

}  // namespace tzrec
