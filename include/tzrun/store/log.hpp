// tzrun/store/log.hpp — the tiny logging seam of the store library.
//
// The library does not depend on a logging framework; callers pass a LogSink (the tzrun app
// wires it to spdlog). A sink may be called concurrently from the server's I/O thread and
// from client threads, so it must be thread-safe; it must not call back into the Server.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace tzrun::store {

enum class LogLevel : std::uint8_t { kTrace, kDebug, kInfo, kWarning, kError };

/// Receives one formatted message (no trailing newline). An empty sink discards messages.
using LogSink = std::function<void(LogLevel, std::string_view)>;

}  // namespace tzrun::store
