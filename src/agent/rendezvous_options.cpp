#include "rendezvous_options.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "agent_error.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/params.hpp"

namespace tzrun::agent {

using rendezvous::ConfBool;
using rendezvous::ConfPositiveInt;
using rendezvous::ConfSeconds;
using rendezvous::ParseEndpoint;

bool IsDynamic(const LaunchConfig& cfg) {
  return cfg.standalone || cfg.rdzv_backend != "static";
}

void ValidateTopology(const LaunchConfig& cfg) {
  if (cfg.nproc_per_node < 1) {
    throw AgentError("--nproc-per-node resolved to " + std::to_string(cfg.nproc_per_node) +
                         "; pass a positive number of workers",
                     exit_code::kUsage);
  }
  if (!IsDynamic(cfg) && (cfg.node_rank < 0 || cfg.node_rank >= cfg.max_nodes)) {
    throw AgentError("--node-rank=" + std::to_string(cfg.node_rank) + " must be < --nnodes (" +
                         std::to_string(cfg.max_nodes) +
                         ") for the static rendezvous; give each node a distinct rank in 0.." +
                         std::to_string(cfg.max_nodes - 1),
                     exit_code::kUsage);
  }
}

rendezvous::StaticOptions StaticOptions(const LaunchConfig& cfg) {
  rendezvous::StaticOptions o;
  o.run_id = cfg.rdzv_id;
  o.nnodes = cfg.max_nodes;
  o.node_rank = cfg.node_rank;
  if (!cfg.rdzv_endpoint.empty()) {
    const auto ep = ParseEndpoint(cfg.rdzv_endpoint, -1);
    o.master_addr = ep.host;
    o.master_port = ep.port;
  } else {
    o.master_addr = cfg.master_addr;
    if (o.master_addr.size() >= 2 && o.master_addr.front() == '[' && o.master_addr.back() == ']') {
      o.master_addr = o.master_addr.substr(1, o.master_addr.size() - 2);
    }
    o.master_port = cfg.master_port;
    // torchrun's default port on a one-node job: a second such job on the host moves aside.
    o.port_fallback = cfg.max_nodes == 1 && !cfg.master_port_explicit;
  }
  if (auto t = ConfSeconds(cfg.rdzv_conf, "timeout")) o.timeout = *t;
  if (auto t = ConfSeconds(cfg.rdzv_conf, "read_timeout")) o.read_timeout = *t;
  if (auto t = ConfSeconds(cfg.rdzv_conf, "close_timeout")) o.close_timeout = *t;
  return o;
}

namespace {

// A --rdzv-conf file path: "" when absent, else it must name a readable file.
std::string ConfFile(const rendezvous::ConfMap& c, const char* key) {
  const auto it = c.find(key);
  if (it == c.end() || it->second.empty()) return "";
  if (::access(it->second.c_str(), R_OK) != 0) {
    throw rendezvous::ConfigError(std::string("--rdzv-conf ") + key + "=" + it->second +
                                  ": cannot read the file (" + base::ErrnoText(errno) +
                                  "); give the path of a PEM file this user can read");
  }
  return it->second;
}

// python-etcd's etcd.Client(cert=, ca_cert=) as torchrun builds it: a certificate with its key
// file, or a certificate alone (a PEM holding both); a key alone, which torchrun ignores, and
// certificates over http are refused (params.hpp).
rendezvous::EtcdTls EtcdTlsConf(const rendezvous::ConfMap& c, bool https, const char* cert,
                                const char* key, const char* ca) {
  rendezvous::EtcdTls t;
  t.https = https;
  t.cert_file = ConfFile(c, cert);
  t.key_file = ConfFile(c, key);
  if (t.cert_file.empty() && !t.key_file.empty()) {
    throw rendezvous::ConfigError(std::string("--rdzv-conf ") + key + ": a key file without " +
                                  cert + " (torchrun ignores it); add " + cert +
                                  "=<client certificate> or drop the key");
  }
  t.ca_file = ConfFile(c, ca);
  if (!https && (!t.cert_file.empty() || !t.ca_file.empty())) {
    throw rendezvous::ConfigError(std::string("--rdzv-conf ") + (t.ca_file.empty() ? cert : ca) +
                                  ": a certificate needs protocol=https (the protocol is http); "
                                  "add protocol=https or drop the key");
  }
  return t;
}

// The etcd-v2 keys of torchrun's etcd_rendezvous_backend.py: protocol http|https (stripped, any
// case), ssl_cert, ssl_cert_key, ca_cert; the c10d-only keys are refused by name.
rendezvous::EtcdTls CheckEtcdConf(const rendezvous::ConfMap& c) {
  bool https = false;
  if (auto it = c.find("protocol"); it != c.end()) {
    const auto v = base::Lower(base::Strip(it->second));
    if (v != "http" && v != "https") {
      throw rendezvous::ConfigError("--rdzv-conf protocol=" + it->second +
                                    ": the protocol must be http or https");
    }
    https = v == "https";
  }
  for (const char* key : {"is_host", "store_type"}) {
    if (c.contains(key)) {
      throw rendezvous::ConfigError(std::string("--rdzv-conf ") + key +
                                    ": only the c10d backend has it (under etcd-v2 the state "
                                    "and the store are in etcd); drop the key");
    }
  }
  return EtcdTlsConf(c, https, "ssl_cert", "ssl_cert_key", "ca_cert");
}

// The legacy etcd backend reads timeout, last_call_timeout, etcd_prefix, protocol (exactly http
// or https) and cert, key, cacert (etcd_rendezvous.py); tzrun adds read_timeout. The keys of the
// other dynamic backends would do nothing there: refused by name.
rendezvous::EtcdTls CheckLegacyEtcdConf(const rendezvous::ConfMap& c) {
  bool https = false;
  if (auto it = c.find("protocol"); it != c.end()) {
    if (it->second != "http" && it->second != "https") {
      throw rendezvous::ConfigError("--rdzv-conf protocol=" + it->second +
                                    ": the legacy etcd backend takes protocol=http or "
                                    "protocol=https (lower case, as torchrun's)");
    }
    https = it->second == "https";
  }
  for (const char* key :
       {"join_timeout", "close_timeout", "heartbeat_timeout", "keep_alive_interval",
        "keep_alive_max_attempt", "is_host", "store_type", "ssl_cert", "ssl_cert_key", "ca_cert"}) {
    if (c.contains(key)) {
      throw rendezvous::ConfigError(
          std::string("--rdzv-conf ") + key +
          ": the legacy etcd backend has no such setting (it reads timeout, "
          "last_call_timeout, etcd_prefix, protocol, cert, key, cacert, read_timeout); drop the "
          "key or use --rdzv-backend=etcd-v2");
    }
  }
  return EtcdTlsConf(c, https, "cert", "key", "cacert");
}

// c10d's --rdzv-conf store_type (c10d_rendezvous_backend.py create_backend: stripped, any case;
// "tcp" by default): nullopt for tcp, the FileStore path for file (the endpoint as given; "" =
// a temporary file). The TCP-only keys torchrun ignores under file are refused by name.
std::optional<std::string> FileStorePath(const LaunchConfig& cfg) {
  const auto& c = cfg.rdzv_conf;
  const auto it = c.find("store_type");
  const std::string type = it == c.end() ? "tcp" : base::Lower(base::Strip(it->second));
  if (type == "tcp") return std::nullopt;
  if (type != "file") {
    throw rendezvous::ConfigError("--rdzv-conf store_type=" + it->second +
                                  ": the c10d store type is tcp or file (torchrun's choices); "
                                  "use store_type=tcp or store_type=file");
  }
  if (cfg.standalone) {
    throw rendezvous::ConfigError(
        "--rdzv-conf store_type=file with --standalone: torchrun would keep the store in a file "
        "named 'localhost:0' in the working directory (--standalone's endpoint taken as a path); "
        "drop store_type=file, or use --rdzv-backend=c10d --rdzv-endpoint=<file> instead of "
        "--standalone");
  }
  for (const char* key : {"is_host", "read_timeout"}) {
    if (c.contains(key)) {
      throw rendezvous::ConfigError(
          std::string("--rdzv-conf ") + key +
          ": only the TCP store has it (torchrun ignores it under store_type=file: nobody hosts "
          "a FileStore, whose calls wait up to 300 s); drop the key");
    }
  }
  return cfg.rdzv_endpoint;
}

}  // namespace

std::chrono::milliseconds MonitorInterval(const LaunchConfig& cfg) {
  const double ms = std::min(cfg.monitor_interval * 1000.0, 86'400'000.0);  // the CLI checked > 0
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::milliseconds(static_cast<std::int64_t>(ms)));
}

rendezvous::DynamicOptions DynamicOptions(const LaunchConfig& cfg, const std::string& local_addr) {
  rendezvous::DynamicOptions o;
  const bool etcd = !cfg.standalone && cfg.rdzv_backend == "etcd-v2";
  o.backend = etcd ? "etcd-v2" : "c10d";
  o.run_id = cfg.rdzv_id;
  o.min_nodes = cfg.min_nodes;
  o.max_nodes = cfg.max_nodes;
  o.local_addr = local_addr;
  const auto& c = cfg.rdzv_conf;
  if (etcd) o.etcd_tls = CheckEtcdConf(c);
  o.store_file = FileStorePath(cfg);
  if (!o.store_file) o.endpoint = ParseEndpoint(cfg.rdzv_endpoint, etcd ? 2379 : 29400);
  o.is_host = ConfBool(c, "is_host");
  if (auto t = ConfSeconds(c, "join_timeout")) o.join_timeout = *t;
  if (auto t = ConfSeconds(c, "last_call_timeout")) o.last_call_timeout = *t;
  if (auto t = ConfSeconds(c, "close_timeout")) o.close_timeout = *t;
  if (auto t = ConfSeconds(c, "read_timeout")) o.read_timeout = *t;
  if (auto t = ConfSeconds(c, "heartbeat_timeout")) o.heartbeat_timeout = *t;
  if (auto t = ConfSeconds(c, "keep_alive_interval")) o.keep_alive_interval = *t;
  if (auto n = ConfPositiveInt(c, "keep_alive_max_attempt")) o.keep_alive_max_attempt = *n;
  o.watch_interval = MonitorInterval(cfg);
  return o;
}

rendezvous::EtcdOptions EtcdOptions(const LaunchConfig& cfg, const std::string& local_addr) {
  rendezvous::EtcdOptions o;
  o.run_id = cfg.rdzv_id;
  o.min_nodes = cfg.min_nodes;
  o.max_nodes = cfg.max_nodes;
  o.endpoint = ParseEndpoint(cfg.rdzv_endpoint, 2379);
  o.local_addr = local_addr;
  const auto& c = cfg.rdzv_conf;
  o.tls = CheckLegacyEtcdConf(c);
  if (auto it = c.find("etcd_prefix"); it != c.end()) o.prefix = it->second;
  if (auto t = ConfSeconds(c, "timeout")) o.timeout = *t;
  if (auto t = ConfSeconds(c, "last_call_timeout")) o.last_call_timeout = *t;
  if (auto t = ConfSeconds(c, "read_timeout")) o.read_timeout = *t;
  o.poll_interval = MonitorInterval(cfg);  // torchrun's agent checks num_nodes_waiting each tick
  return o;
}

rendezvous::HandlerParams HandlerParams(const LaunchConfig& cfg, const std::string& local_addr) {
  rendezvous::HandlerParams p;
  p.backend = cfg.standalone ? "c10d" : cfg.rdzv_backend;
  if (p.backend == "static") p.static_options = StaticOptions(cfg);
  if (p.backend == "c10d" || p.backend == "etcd-v2") {
    p.dynamic_options = DynamicOptions(cfg, local_addr);
  }
  if (p.backend == "etcd") p.etcd_options = EtcdOptions(cfg, local_addr);
  return p;
}

}  // namespace tzrun::agent
