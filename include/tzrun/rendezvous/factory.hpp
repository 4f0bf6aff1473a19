// tzrun/rendezvous/factory.hpp — builds the rendezvous handler a LaunchConfig asks for.
//
// Upstream: torch/distributed/launcher/api.py (launch_agent → RendezvousParameters) and the
// handler registry (torch/distributed/elastic/rendezvous/registry.py). Backends: `static`
// (static_rendezvous.hpp) and `c10d` (dynamic_rendezvous.hpp; also --standalone). etcd and
// etcd-v2 are not supported (ConfigError with the alternative).
//
// rdzv-conf keys read (others are ignored, as torchrun does):
//   static: timeout (900), read_timeout (60), close_timeout (30; end-of-job wait of node 0)
//   c10d:   join_timeout (600), last_call_timeout (30), close_timeout (30), read_timeout (60),
//           heartbeat_timeout (5), keep_alive_interval (5), keep_alive_max_attempt (3),
//           is_host (inferred), store_type (tcp only)
// Durations are seconds and may have fractions.
//
// Thread-safety: reentrant.
#pragma once

#include <memory>
#include <string>

#include "tzrun/launch_config.hpp"
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/rendezvous/static_rendezvous.hpp"

namespace tzrun::rendezvous {

/// Options of the static backend for `cfg` (endpoint: --rdzv-endpoint HOST:PORT or
/// --master-addr/--master-port). Throws ConfigError.
[[nodiscard]] StaticOptions static_options(const LaunchConfig& cfg);

/// Options of the c10d backend for `cfg`; `local_addr` is --local-addr or the FQDN.
/// Throws ConfigError.
[[nodiscard]] DynamicOptions dynamic_options(const LaunchConfig& cfg,
                                             const std::string& local_addr);

/// The handler for cfg.rdzv_backend (--standalone → c10d). The c10d handler connects to or
/// hosts its store here (blocking; `interrupt` is honoured). Throws ConfigError for a bad
/// configuration, RendezvousConnectionError when the store cannot be hosted/reached.
[[nodiscard]] std::unique_ptr<Handler> make_handler(const LaunchConfig& cfg,
                                                    const std::string& local_addr,
                                                    store::LogSink log,
                                                    const Interrupt& interrupt = {});

}  // namespace tzrun::rendezvous
