// tzrun/base/system.hpp — small wrappers over the C library that both binaries share.
//
// errno_text and uuid4 are thread-safe; environ_map reads the process environment and must not
// race with setenv/putenv in another thread (POSIX gives environ no lock).
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace tzrun::base {

/// The message of errno value `err` ("No such file or directory"), thread-safe (no strerror).
std::string ErrnoText(int err);

/// The process environment as NAME -> value; entries without '=' or with an empty name skipped.
std::map<std::string, std::string> EnvironMap();

/// A random RFC 4122 version-4 UUID in its 36-character text form, as Python's
/// `str(uuid.uuid4())` (torchrun's default --rdzv-id under --standalone).
std::string Uuid4();

/// A duration for messages: "30 s" when whole seconds, "1.5 s" (truncated to tenths) above one
/// second, else "250 ms".
std::string DurationText(std::chrono::milliseconds d);

}  // namespace tzrun::base
