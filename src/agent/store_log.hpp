// tzrun agent internals: the store/rendezvous LogSink that writes to the agent's logger.
//
// Thread-safety: the returned sink may be called from any thread (spdlog loggers are
// thread-safe).
#pragma once

#include <memory>
#include <string>

#include "tzrun/store/log.hpp"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace tzrun::agent {

/// A LogSink that logs "<what>: <message>" to `log` at the matching level (trace and debug
/// both go to debug).
store::LogSink make_store_log(std::shared_ptr<spdlog::logger> log, std::string what);

}  // namespace tzrun::agent
