// tzrun/store/spdlog_sink.hpp — a LogSink (log.hpp) that writes to an spdlog logger.
//
// Header-only, in its own CMake target tzrun::store_spdlog (links spdlog), so tzrun::store
// itself depends on nothing but asio and Threads; not installed with the store's other headers
// (cmake/Install.cmake). The one place that maps store::LogLevel to spdlog levels; the tzrun
// app (`tzrun store`, the agent's store) uses it.
//
// Thread-safety: the sink may be called from any thread if the logger's sinks are thread-safe
// (the *_mt sinks); it holds a shared_ptr to the logger.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tzrun/store/log.hpp"

namespace tzrun::store {

/// The spdlog level of `level` (kWarning -> warn, kError -> err, the others by name).
inline spdlog::level::level_enum ToSpdlogLevel(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarning:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

/// A sink logging each message at its mapped level, as "PREFIX: message" when `prefix` is not
/// empty (e.g. "store" or "rendezvous"), else the message alone. `logger` must not be null.
inline LogSink SpdlogSink(std::shared_ptr<spdlog::logger> logger, std::string prefix = {}) {
  return [logger = std::move(logger), prefix = std::move(prefix)](LogLevel level,
                                                                  std::string_view message) {
    if (prefix.empty()) {
      logger->log(ToSpdlogLevel(level), "{}", message);
    } else {
      logger->log(ToSpdlogLevel(level), "{}: {}", prefix, message);
    }
  };
}

}  // namespace tzrun::store
