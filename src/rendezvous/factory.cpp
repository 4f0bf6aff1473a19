#include "tzrun/rendezvous/factory.hpp"

#include <utility>

#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous {

std::unique_ptr<Handler> MakeHandler(HandlerParams params, store::LogSink log,
                                     const Interrupt& interrupt) {
  const std::string& backend = params.backend;
  if (backend == "static") {
    auto o = std::move(params.static_options);
    o.log = std::move(log);
    auto h = MakeStaticRendezvous(std::move(o));
    h->SetInterrupt(interrupt);
    return h;
  }
  if (backend == "c10d") {
    auto o = std::move(params.dynamic_options);
    o.log = std::move(log);
    auto h = MakeDynamicRendezvous(std::move(o), interrupt);
    h->SetInterrupt(interrupt);
    return h;
  }
  if (backend == "etcd" || backend == "etcd-v2") {
    throw ConfigError("--rdzv-backend=" + backend +
                      " is not supported by tzrun; use --rdzv-backend=c10d (the agent matching "
                      "--rdzv-endpoint hosts the rendezvous store, no etcd needed) or static");
  }
  throw ConfigError("--rdzv-backend=" + backend +
                    " is not a known rendezvous backend; use "
                    "static or c10d");
}

}  // namespace tzrun::rendezvous
