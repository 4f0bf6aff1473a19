// tzrun/rendezvous/factory.hpp — builds the rendezvous handler for a backend name.
//
// Upstream: the handler registry (torch/distributed/elastic/rendezvous/registry.py).
// Backends: `static` (static_rendezvous.hpp) and `c10d` (dynamic_rendezvous.hpp). etcd and
// etcd-v2 are not supported (ConfigError with the alternative).
//
// The launcher turns its command line into HandlerParams (launch_agent →
// RendezvousParameters in torch/distributed/launcher/api.py); that conversion lives in the
// agent (src/agent/rendezvous_options.cpp), so this library does not depend on the
// launcher's configuration.
//
// Thread-safety: reentrant.
#pragma once

#include <memory>
#include <string>

#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/rendezvous/etcd_rendezvous.hpp"
#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/rendezvous/static_rendezvous.hpp"

namespace tzrun::rendezvous {

/// What make_handler needs: the backend and the options of that backend (the other
/// backend's options are ignored). The `log` members of the options are replaced by the
/// `log` argument of make_handler.
struct HandlerParams {
  std::string backend = "static";  ///< "static", "c10d", "etcd-v2" or "etcd" (--standalone is c10d)
  StaticOptions static_options;    ///< used when backend == "static"
  EtcdOptions etcd_options;        ///< used when backend == "etcd" (legacy)
  DynamicOptions dynamic_options;  ///< used when backend == "c10d" or "etcd-v2"
};

/// The handler for params.backend. The c10d handler connects to or hosts its store here
/// (blocking; `interrupt` is honoured). Throws ConfigError for an unknown backend or a bad
/// option, RendezvousConnectionError when the store cannot be hosted/reached.
[[nodiscard]] std::unique_ptr<Handler> MakeHandler(HandlerParams params, store::LogSink log,
                                                   const Interrupt& interrupt = {});

}  // namespace tzrun::rendezvous
