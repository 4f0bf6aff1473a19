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
  if (backend == "c10d" || backend == "etcd-v2") {
    auto o = std::move(params.dynamic_options);
    o.log = std::move(log);
    auto h = MakeDynamicRendezvous(std::move(o), interrupt);
    h->SetInterrupt(interrupt);
    return h;
  }
  if (backend == "etcd") {
    auto o = std::move(params.etcd_options);
    o.log = std::move(log);
    auto h = MakeEtcdRendezvous(std::move(o), interrupt);
    h->SetInterrupt(interrupt);
    return h;
  }
  throw ConfigError("--rdzv-backend=" + backend +
                    " is not a known rendezvous backend; use "
                    "static, c10d, etcd-v2 or etcd");
}

}  // namespace tzrun::rendezvous
