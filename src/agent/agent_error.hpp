// tzrun agent internals: the agent's own error and its control-flow signal.
//
// Not thread-safe concerns: plain value types.
#pragma once

#include "tzrun/error.hpp"

namespace tzrun::agent {

/// An error that ends the run with a specific exit code (message already says what to do),
/// e.g. a worker log file that cannot be opened (125) or a bad --nproc-per-node (2).
class AgentError : public tzrun::Error {
 public:
  using Error::Error;
};

/// Thrown out of a blocking rendezvous wait when a handled signal arrived. Not an error:
/// Agent::run ends with 128 + the signal number.
struct Interrupted {};

}  // namespace tzrun::agent
