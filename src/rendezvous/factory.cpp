#include "tzrun/rendezvous/factory.hpp"

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/params.hpp"

namespace tzrun::rendezvous {

StaticOptions static_options(const LaunchConfig& cfg) {
  StaticOptions o;
  o.run_id = cfg.rdzv_id;
  o.nnodes = cfg.max_nodes;
  o.node_rank = cfg.node_rank;
  if (!cfg.rdzv_endpoint.empty()) {
    const auto ep = parse_endpoint(cfg.rdzv_endpoint, -1);
    o.master_addr = ep.host;
    o.master_port = ep.port;
  } else {
    o.master_addr = cfg.master_addr;
    if (o.master_addr.size() >= 2 && o.master_addr.front() == '[' && o.master_addr.back() == ']') {
      o.master_addr = o.master_addr.substr(1, o.master_addr.size() - 2);
    }
    o.master_port = cfg.master_port;
  }
  if (auto t = conf_seconds(cfg.rdzv_conf, "timeout")) o.timeout = *t;
  if (auto t = conf_seconds(cfg.rdzv_conf, "read_timeout")) o.read_timeout = *t;
  if (auto t = conf_seconds(cfg.rdzv_conf, "close_timeout")) o.close_timeout = *t;
  return o;
}

DynamicOptions dynamic_options(const LaunchConfig& cfg, const std::string& local_addr) {
  DynamicOptions o;
  o.run_id = cfg.rdzv_id;
  o.min_nodes = cfg.min_nodes;
  o.max_nodes = cfg.max_nodes;
  o.endpoint = parse_endpoint(cfg.rdzv_endpoint, 29400);
  o.local_addr = local_addr;
  const auto& c = cfg.rdzv_conf;
  if (auto it = c.find("store_type"); it != c.end() && it->second != "tcp") {
    throw ConfigError("--rdzv-conf store_type=" + it->second +
                      ": tzrun supports only store_type=tcp (the FileStore variant is not "
                      "implemented); drop the key");
  }
  o.is_host = conf_bool(c, "is_host");
  if (auto t = conf_seconds(c, "join_timeout")) o.join_timeout = *t;
  if (auto t = conf_seconds(c, "last_call_timeout")) o.last_call_timeout = *t;
  if (auto t = conf_seconds(c, "close_timeout")) o.close_timeout = *t;
  if (auto t = conf_seconds(c, "read_timeout")) o.read_timeout = *t;
  if (auto t = conf_seconds(c, "heartbeat_timeout")) o.heartbeat_timeout = *t;
  if (auto t = conf_seconds(c, "keep_alive_interval")) o.keep_alive_interval = *t;
  if (auto n = conf_positive_int(c, "keep_alive_max_attempt")) o.keep_alive_max_attempt = *n;
  return o;
}

std::unique_ptr<Handler> make_handler(const LaunchConfig& cfg, const std::string& local_addr,
                                      store::LogSink log, const Interrupt& interrupt) {
  const std::string backend = cfg.standalone ? "c10d" : cfg.rdzv_backend;
  if (backend == "static") {
    auto o = static_options(cfg);
    o.log = std::move(log);
    auto h = make_static_rendezvous(std::move(o));
    h->set_interrupt(interrupt);
    return h;
  }
  if (backend == "c10d") {
    auto o = dynamic_options(cfg, local_addr);
    o.log = std::move(log);
    auto h = make_dynamic_rendezvous(std::move(o), interrupt);
    h->set_interrupt(interrupt);
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
