// tzrun rendezvous internals: the small pure encoding pieces the etcd v2 client needs
// (etcd_client.hpp; libcurl carries the requests): form and path encoding, base64, and the
// answer it decodes.
//
// Follows RFC 3986 percent-encoding, application/x-www-form-urlencoded as
// python-etcd (urllib3) sends it, and RFC 4648 base64 as Python's base64.b64encode (torch's
// etcd_store.py encodes keys and values with it).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tzrun::rendezvous::detail {

/// Percent-encodes everything but RFC 3986's unreserved characters (and '/' when `keep_slash`).
std::string PercentEncode(std::string_view s, bool keep_slash);

/// "k1=v1&k2=v2", each part percent-encoded.
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields);

std::string Base64Encode(std::string_view bytes);
/// Decodes standard base64 (with padding); nullopt when `text` is not valid base64.
std::optional<std::string> Base64Decode(std::string_view text);

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
};

}  // namespace tzrun::rendezvous::detail
