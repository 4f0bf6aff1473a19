// tzrun/rendezvous/errors.hpp — exceptions of the rendezvous component.
//
// Mirrors torch/distributed/elastic/rendezvous/api.py (RendezvousError and subclasses).
// Every message says what failed, with which value (run id, endpoint, timeout) and what to
// do. The agent maps them to exit codes: ConfigError → 2 (usage), GracefulExit → 0, all
// others → 125 (infrastructure).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace tzrun::rendezvous {

class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad --rdzv-* value (endpoint, rdzv-conf key, nnodes for the backend).
class ConfigError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

/// The rendezvous did not complete in time (join_timeout / static timeout).
class RendezvousTimeoutError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

/// The rendezvous was closed (the job ended) and admits no new nodes. exit_code() is the
/// exit code of the node that closed it after its final failure, when it said so.
class RendezvousClosedError : public RendezvousError {
 public:
  explicit RendezvousClosedError(const std::string& what, std::optional<int> exit_code = {})
      : RendezvousError(what), exit_code_(exit_code) {}
  [[nodiscard]] std::optional<int> exit_code() const noexcept { return exit_code_; }

 private:
  std::optional<int> exit_code_;
};

/// The rendezvous store cannot be reached, or the connection to it broke.
class RendezvousConnectionError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

/// The shared state in the store is not something tzrun wrote (corrupt, or a Python
/// torchrun agent uses the same run id: the two cannot share a c10d rendezvous).
class RendezvousStateError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

/// This node is not needed (it waited in the redundancy list and the job ended): the
/// agent exits 0 without running anything.
class RendezvousGracefulExit : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

}  // namespace tzrun::rendezvous
