// tzrec/error.hpp — the root of every error tzrec_train reports to its user.
//
// CLI11/gloo model: a typed error carries the exit code the process ends with, and its message
// says what failed, with which value, and what to do. Libraries throw a subclass for domain
// failures (a config value, an input row, a plan that does not fit, a peer that left); the one
// boundary in src/worker/app/main.cpp prints "tzrec_train <command> rank <R>: <label>: what()" and
// returns `exit_code()`. Anything else that escapes (std::invalid_argument from a precondition
// check, c10::Error from libtorch) is a bug: exit 1 "internal error", never reported as the user's
// mistake.
//
// Every subclass is declared here, as c10d declares all of its error types in one header
// (torch/csrc/distributed/c10d/exception.h), so the cross-rank agreement
// (include/tzrec/comm/agree.hpp) can rebuild any of them without depending on the libraries that
// throw them. The subclasses and their labels (docs/troubleshooting.md "Exit codes"):
//   InputError       exit 2, no label (bad data, flags)      thrown by input, train, app
//   ConfigError      exit 2, "config"                        thrown by config
//   PlannerError     exit 3, "no feasible sharding plan"     thrown by planner
//   CommError        exit 4, "collective failed"             thrown by comm
//   CheckpointError  exit 4, "checkpoint"                    thrown by checkpoint
//   InternalError    exit 1, "internal error"                another rank's unexpected exception
// Errors agreed on across ranks (include/tzrec/comm/agree.hpp) keep their class on every rank.
//
// Errors agreed on across ranks also carry the rank that raised them first (OriginRank), so the
// boundary prints the message in full on that rank only.
//
// Thread-safety: immutable once thrown (SetOriginRank is called before the throw); safe to copy
// and read from any thread.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

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
  /// `label` is the kind the boundary prints before the message ("config", "checkpoint", ...;
  /// empty: none). It must be a string literal (it is kept as a pointer).
  Error(const std::string& what, tzrec::ExitCode code, const char* label = "")
      : std::runtime_error(what), code_(code), label_(label) {}
  [[nodiscard]] tzrec::ExitCode Code() const noexcept { return code_; }
  [[nodiscard]] int ExitCode() const noexcept { return static_cast<int>(code_); }
  [[nodiscard]] const char* Label() const noexcept { return label_; }
  /// The rank that raised this error when every rank agreed on it (include/tzrec/comm/agree.hpp);
  /// -1 for an error this process raised itself.
  [[nodiscard]] int OriginRank() const noexcept { return origin_rank_; }
  void SetOriginRank(int rank) noexcept { origin_rank_ = rank; }

 private:
  tzrec::ExitCode code_;
  const char* label_;
  int origin_rank_ = -1;
};

/// The user's input (flags, data files, rows) is wrong: exit 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what, tzrec::ExitCode::kBadInput) {}
};

/// A failure that is not the user's (a precondition bug, a libtorch error) carried as a typed
/// error, e.g. when another rank's unexpected exception is agreed on: exit 1.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what)
      : Error(what, tzrec::ExitCode::kInternal, "internal error") {}
};

/// A pipeline config value, key or file is wrong (include/tzrec/config/config.hpp): exit 2.
class ConfigError : public Error {  // exit 2 (tzrec/error.hpp)
 public:
  explicit ConfigError(const std::string& what)
      : Error(what, tzrec::ExitCode::kBadInput, "config") {}
};

/// No sharding plan fits (include/tzrec/planner/planner.hpp): exit 3, naming the table, the
/// missing bytes and the fix (TorchRec's PlannerError, torchrec/distributed/planner/types.py).
class PlannerError : public Error {
 public:
  enum class Kind { kInsufficientStorage, kStrictConstraints };
  PlannerError(Kind kind, std::string table, std::int64_t missing_bytes, const std::string& message)
      : Error(message, tzrec::ExitCode::kNoPlan, "no feasible sharding plan"),
        kind_(kind),
        table_(std::move(table)),
        missing_bytes_(missing_bytes) {}
  Kind FailureKind() const { return kind_; }
  const std::string& Table() const { return table_; }
  std::int64_t MissingBytes() const { return missing_bytes_; }

 private:
  Kind kind_;
  std::string table_;
  std::int64_t missing_bytes_;
};

/// A collective failed or a peer left (include/tzrec/comm/comm.hpp): exit 4.
class CommError : public Error {  // exit 4 (tzrec/error.hpp)
 public:
  explicit CommError(const std::string& what)
      : Error(what, tzrec::ExitCode::kCollective, "collective failed") {}
};

/// A checkpoint could not be written or read (include/tzrec/checkpoint/checkpoint.hpp): exit 4,
/// like a failed collective.
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& what,
                           tzrec::ExitCode code = tzrec::ExitCode::kCollective)
      : Error(what, code, "checkpoint") {}
};

}  // namespace tzrec
