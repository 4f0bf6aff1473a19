// tzrun agent internals: the launcher configuration as the rendezvous sees it.
//
// Upstream: torch/distributed/launcher/api.py (launch_agent builds RendezvousParameters
// from LaunchConfig). The rendezvous library (include/tzrun/rendezvous/factory.hpp) takes
// only rendezvous-level parameters; this is where the launcher's flags become them.
//
// rdzv-conf keys read (others are ignored, as torchrun does):
//   static: timeout (900), read_timeout (60), close_timeout (30; end-of-job wait of node 0)
//   c10d:   join_timeout (600), last_call_timeout (30), close_timeout (30), read_timeout (60),
//           heartbeat_timeout (5), keep_alive_interval (5), keep_alive_max_attempt (3),
//           is_host (inferred), store_type (tcp, or file: torch's FileStore at the
//           --rdzv-endpoint path, a temporary file without one; is_host and read_timeout are
//           refused with it, --standalone too)
// Durations are seconds and may have fractions.
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "tzrun/launch_config.hpp"
#include "tzrun/rendezvous/factory.hpp"

namespace tzrun::agent {

/// True for the elastic c10d rendezvous (--rdzv-backend other than static, or --standalone).
[[nodiscard]] bool IsDynamic(const LaunchConfig& cfg);

/// Checks what needs no rendezvous: a positive --nproc-per-node and, for the static
/// backend, --node-rank < --nnodes. Throws AgentError (usage, 2).
void ValidateTopology(const LaunchConfig& cfg);

/// Options of the static backend for `cfg` (endpoint: --rdzv-endpoint HOST:PORT or
/// --master-addr/--master-port, brackets of an IPv6 --master-addr removed).
/// Throws rendezvous::ConfigError.
[[nodiscard]] rendezvous::StaticOptions StaticOptions(const LaunchConfig& cfg);

/// --monitor-interval as a duration (at least 1 ms): the c10d watcher's longest wait between
/// two reads of the rendezvous state (DynamicOptions::watch_interval).
[[nodiscard]] std::chrono::milliseconds MonitorInterval(const LaunchConfig& cfg);

/// Options of the c10d and etcd-v2 backends for `cfg`; `local_addr` is --local-addr or the
/// FQDN. Throws rendezvous::ConfigError (e.g. store_type other than tcp or file, TCP-only keys
/// with store_type=file; under etcd-v2 the TLS keys and the c10d-only keys).
[[nodiscard]] rendezvous::DynamicOptions DynamicOptions(const LaunchConfig& cfg,
                                                        const std::string& local_addr);

/// Options of the legacy etcd backend (default port 2379; rdzv-conf timeout,
/// last_call_timeout, etcd_prefix, read_timeout). Throws rendezvous::ConfigError for the TLS
/// keys (cacert, cert, key, protocol other than http) and the other backends' keys.
[[nodiscard]] rendezvous::EtcdOptions EtcdOptions(const LaunchConfig& cfg,
                                                  const std::string& local_addr);

/// What rendezvous::make_handler needs for `cfg` (--standalone → c10d). Only the chosen
/// backend's options are filled; an unknown backend is left to make_handler to reject.
/// Throws rendezvous::ConfigError.
[[nodiscard]] rendezvous::HandlerParams HandlerParams(const LaunchConfig& cfg,
                                                      const std::string& local_addr);

}  // namespace tzrun::agent
