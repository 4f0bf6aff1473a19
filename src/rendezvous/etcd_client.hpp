// tzrun rendezvous internals: a client of etcd's v2 keys API (HTTP + JSON), the API that
// python-etcd speaks for torchrun's `etcd` and `etcd-v2` backends
// (torch/distributed/elastic/rendezvous/etcd_rendezvous.py, etcd_rendezvous_backend.py and
// etcd_store.py all use etcd.Client: read / write with prevExist, prevValue, prevIndex and
// ttl / delete / watch with waitIndex). etcd 3.4 serves it with --enable-v2=true.
//
// Requests: GET|PUT|DELETE /v2/keys/<key>, PUT fields form-encoded, one connection per
// request, over http or https (EtcdTls: client certificate, CA bundle) through libcurl. Responses:
// {"action", "node": {"key", "value", "dir", "nodes", "modifiedIndex", "createdIndex", "ttl"},
// "prevNode"} with the X-Etcd-Index header; errors {"errorCode", "message", "cause", "index"} (100
// key not found, 101 compare failed, 105 key already exists, 401 event index cleared).
//
// Thread-safety: an EtcdClient holds only its endpoint; calls from several threads are safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd_http.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/params.hpp"

namespace tzrun::rendezvous::detail {

/// etcd v2 error codes (etcd's error/error.go).
namespace etcd_code {
inline constexpr int kTransport = 0;  ///< no etcd answer at all (connect, timeout, bad HTTP)
inline constexpr int kKeyNotFound = 100;
inline constexpr int kTestFailed = 101;
inline constexpr int kNodeExist = 105;
inline constexpr int kEventIndexCleared = 401;
/// etcd answers, but not its v2 keys API (HTTP 404 without etcd's JSON: etcd 3.4/3.5 started
/// without --enable-v2, or etcd 3.6+, which removed it). Retrying cannot help: fatal at once.
inline constexpr int kNoV2Api = -1;
/// The TLS handshake failed or a certificate/key/CA file is unusable: fatal at once too.
inline constexpr int kTls = -2;
/// Whether retrying a request that failed with `code` cannot help (a misconfiguration).
[[nodiscard]] inline bool IsFatal(int code) {
  return code < 0;
}
}  // namespace etcd_code

/// An etcd error answer, or no answer (code kTransport). Exit 125 like every rendezvous error.
class EtcdError : public RendezvousError {
 public:
  EtcdError(const std::string& what, int code, std::int64_t index = 0)
      : RendezvousError(what), code_(code), index_(index) {}
  [[nodiscard]] int Code() const noexcept { return code_; }
  /// The etcd index the error answer carries (0 without one).
  [[nodiscard]] std::int64_t Index() const noexcept { return index_; }

 private:
  int code_;
  std::int64_t index_;
};

struct EtcdNode {
  std::string key;
  std::optional<std::string> value;
  bool dir = false;
  std::int64_t modified_index = 0;
  std::int64_t created_index = 0;
  std::optional<std::int64_t> ttl;
  std::vector<EtcdNode> nodes;  ///< children of a directory (recursive reads: all levels)
};

struct EtcdResult {
  std::string action;  ///< get, set, create, compareAndSwap, delete, expire, ...
  EtcdNode node;
  std::optional<EtcdNode> prev_node;
  std::int64_t etcd_index = 0;  ///< X-Etcd-Index (0 when absent)
};

/// Decodes an answer; throws EtcdError (with etcd's code and message) for an error answer or
/// a body that is not etcd's JSON (code kNoV2Api for a 404 without etcd's JSON, kTransport
/// otherwise). `endpoint` (host:port) only names the server in messages.
EtcdResult ParseEtcdResult(const HttpResponse& r, std::string_view endpoint = "etcd");

/// Conditions and options of a write (python-etcd's write(..., prevExist=, prevValue=, ...)).
struct EtcdWrite {
  std::optional<bool> prev_exist;
  std::optional<std::string> prev_value;
  std::optional<std::int64_t> prev_index;
  std::optional<std::int64_t> ttl;  ///< seconds
  bool dir = false;
  /// Only renews the ttl (refresh=true, no value; python-etcd's refresh()).
  bool refresh = false;
};

class EtcdClient {
 public:
  /// `host`:`port` of one etcd member; `timeout` bounds each request but watches.
  EtcdClient(std::string host, int port, std::chrono::milliseconds timeout, EtcdTls tls = {});
  /// The same server and TLS settings with another request timeout.
  [[nodiscard]] EtcdClient WithTimeout(std::chrono::milliseconds timeout) const {
    return {host_, port_, timeout, tls_};
  }

  EtcdResult Get(std::string_view key, bool recursive = false) const;
  EtcdResult Put(std::string_view key, std::string_view value, const EtcdWrite& w = {}) const;
  EtcdResult Delete(std::string_view key, bool recursive = false,
                    std::optional<std::string> prev_value = std::nullopt) const;
  /// Waits for the next change at or after `wait_index` (0: the next one) under `key`;
  /// nullopt when `timeout` passed first.
  std::optional<EtcdResult> Watch(std::string_view key, bool recursive, std::int64_t wait_index,
                                  std::chrono::milliseconds timeout) const;
  [[nodiscard]] std::string Endpoint() const { return host_ + ":" + std::to_string(port_); }
  [[nodiscard]] const std::string& Host() const { return host_; }
  [[nodiscard]] int Port() const { return port_; }

 private:
  /// One request; nullopt on timeout when `timeout_is_normal`, else EtcdError.
  std::optional<HttpResponse> Request(std::string_view method, const std::string& target,
                                      const std::string& body, std::chrono::milliseconds timeout,
                                      bool timeout_is_normal) const;

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  EtcdTls tls_;
};

}  // namespace tzrun::rendezvous::detail
