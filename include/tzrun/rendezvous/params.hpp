// tzrun/rendezvous/params.hpp — parsing of --rdzv-endpoint and --rdzv-conf values, and the
// "is this endpoint my machine" test that decides who hosts the c10d rendezvous store.
//
// Upstream: torch/distributed/elastic/rendezvous/utils.py (parse_rendezvous_endpoint,
// _matches_machine_hostname) and api.py (RendezvousParameters.get_as_bool/get_as_int).
// Differences: durations accept fractions of a second ("0.5"), which torchrun's int() does
// not; errors are ConfigError naming the key and the value.
//
// Thread-safety: reentrant (matches_machine_hostname does DNS lookups).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace tzrun::rendezvous {

struct Endpoint {
  std::string host;  ///< brackets of an IPv6 literal removed
  int port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// How the etcd backends reach etcd: python-etcd's etcd.Client(protocol=, cert=, ca_cert=) as
/// torchrun builds it. etcd-v2 (etcd_rendezvous_backend.py): --rdzv-conf protocol (http|https,
/// any case, spaces stripped), ssl_cert, ssl_cert_key, ca_cert. Legacy etcd
/// (etcd_rendezvous.py): protocol (exactly http|https), cert, key, cacert. A certificate without
/// a key file is a PEM holding both (python-etcd's "combined certificate"); a key without a
/// certificate is ignored, as there. Without a CA file the server is checked against the
/// system's CA store (urllib3's default, CERT_REQUIRED); the host name (or IP) of the endpoint
/// must match the server certificate either way.
struct EtcdTls {
  bool https = false;
  std::string cert_file;  ///< client certificate (PEM), "" = none
  std::string key_file;   ///< its private key (PEM), "" = in cert_file
  std::string ca_file;    ///< CA bundle (PEM) for the server, "" = the system's
  friend bool operator==(const EtcdTls&, const EtcdTls&) = default;
};

/// parse_rendezvous_endpoint: "" → localhost:default_port; "[v6]" → v6 without port;
/// otherwise split at the last ':'; the port must be 1-5 digits < 65536. default_port < 0
/// means "a port is required". Throws ConfigError.
[[nodiscard]] Endpoint ParseEndpoint(const std::string& endpoint, int default_port);

/// "host:port", bracketing IPv6 literals.
[[nodiscard]] std::string FormatEndpoint(const Endpoint& endpoint);

using ConfMap = std::map<std::string, std::string>;

/// get_as_bool: 1/true/t/yes/y and 0/false/f/no/n (any case). Throws ConfigError.
[[nodiscard]] std::optional<bool> ConfBool(const ConfMap& conf, const std::string& key);
/// A positive duration in seconds (fractions allowed). Throws ConfigError for a
/// non-number or a value <= 0.
[[nodiscard]] std::optional<std::chrono::milliseconds> ConfSeconds(const ConfMap& conf,
                                                                   const std::string& key);
/// A positive integer. Throws ConfigError.
[[nodiscard]] std::optional<int> ConfPositiveInt(const ConfMap& conf, const std::string& key);

/// _matches_machine_hostname: "localhost", a loopback IP, this machine's hostname, its
/// canonical name, or a name/IP that resolves to one of this machine's addresses.
[[nodiscard]] bool MatchesMachineHostname(const std::string& host);

}  // namespace tzrun::rendezvous
