// tzrun/rendezvous/errors.hpp — exceptions of the rendezvous component.
//
// Mirrors torch/distributed/elastic/rendezvous/api.py (RendezvousError and subclasses).
// Every message says what failed, with which value (run id, endpoint, timeout) and what to
// do. Each carries the exit code tzrun ends with (tzrun::Error, include/tzrun/error.hpp):
// ConfigError → 2 (usage), GracefulExit → 0 (not an error for the user: the agent logs it
// and exits successfully), RendezvousClosedError → the closing node's exit code when it
// sent one, all others → 125 (infrastructure).
#pragma once

#include <optional>
#include <string>

#include "tzrun/error.hpp"

namespace tzrun::rendezvous {

class RendezvousError : public tzrun::Error {
 public:
  explicit RendezvousError(const std::string& what,
                           int exit_code = ::tzrun::exit_code::kInfrastructure)
      : Error(what, exit_code) {}
};

/// A bad --rdzv-* value (endpoint, rdzv-conf key, nnodes for the backend).
class ConfigError : public RendezvousError {
 public:
  explicit ConfigError(const std::string& what)
      : RendezvousError(what, ::tzrun::exit_code::kUsage) {}
};

/// The rendezvous did not complete in time (join_timeout / static timeout).
class RendezvousTimeoutError : public RendezvousError {
 public:
  explicit RendezvousTimeoutError(const std::string& what) : RendezvousError(what) {}
};

/// The rendezvous was closed (the job ended) and admits no new nodes. CloserExitCode()
/// is the exit code of the node that closed it after its final failure, when it said so;
/// ExitCode() is that code, or 125 when it did not.
class RendezvousClosedError : public RendezvousError {
 public:
  explicit RendezvousClosedError(const std::string& what, std::optional<int> closer_exit_code = {})
      : RendezvousError(what, closer_exit_code.value_or(::tzrun::exit_code::kInfrastructure)),
        closer_exit_code_(closer_exit_code) {}
  [[nodiscard]] std::optional<int> CloserExitCode() const noexcept { return closer_exit_code_; }

 private:
  std::optional<int> closer_exit_code_;
};

/// The rendezvous store cannot be reached, or the connection to it broke.
class RendezvousConnectionError : public RendezvousError {
 public:
  explicit RendezvousConnectionError(const std::string& what) : RendezvousError(what) {}
};

/// The shared state in the store is not something tzrun wrote (corrupt, or a Python
/// torchrun agent uses the same run id: the two cannot share a c10d rendezvous).
class RendezvousStateError : public RendezvousError {
 public:
  explicit RendezvousStateError(const std::string& what) : RendezvousError(what) {}
};

/// This node is not needed (it waited in the redundancy list and the job ended): the
/// agent exits 0 without running anything (ExitCode() is 0).
class RendezvousGracefulExit : public RendezvousError {
 public:
  explicit RendezvousGracefulExit(const std::string& what) : RendezvousError(what, 0) {}
};

}  // namespace tzrun::rendezvous
