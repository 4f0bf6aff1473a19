// tzrun agent internals: the agent's console logger ("tzrun.agent", glog-like lines on
// stderr as torchrun's own: "W1129 18:01:12.922000 5745 tzrun/agent] ...").
//
// Thread-safety: make_logger registers nothing; the logger itself is thread-safe.
#pragma once

#include <spdlog/fwd.h>  // spdlog::logger, declared only

#include <memory>
#include <string>

namespace tzrun::agent {

/// The logger at --log-level `level` (python logging names, case-insensitive: debug, info,
/// warning, error, critical/fatal, off; anything else is warning). Returns the registered
/// "tzrun.agent" logger instead when one exists (tests install their own).
std::shared_ptr<spdlog::logger> MakeLogger(const std::string& level);

}  // namespace tzrun::agent
