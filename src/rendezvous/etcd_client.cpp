// The etcd v2 keys API client (see etcd_client.hpp).
#include "etcd_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <nlohmann/json.hpp>

#include "tzrun/base/strings.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;

EtcdNode ParseNode(const nlohmann::json& j) {
  EtcdNode n;
  n.key = j.value("key", "");
  if (auto it = j.find("value"); it != j.end() && it->is_string()) n.value = it->get<std::string>();
  n.dir = j.value("dir", false);
  n.modified_index = j.value("modifiedIndex", std::int64_t{0});
  n.created_index = j.value("createdIndex", std::int64_t{0});
  if (auto it = j.find("ttl"); it != j.end() && it->is_number_integer()) {
    n.ttl = it->get<std::int64_t>();
  }
  if (auto it = j.find("nodes"); it != j.end() && it->is_array()) {
    for (const auto& c : *it) n.nodes.push_back(ParseNode(c));
  }
  return n;
}

void CurlGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { ::curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Easy {
  CURL* h = ::curl_easy_init();
  curl_slist* headers = nullptr;
  ~Easy() {
    ::curl_slist_free_all(headers);
    if (h != nullptr) ::curl_easy_cleanup(h);
  }
};

std::size_t OnBody(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<HttpResponse*>(out)->body.append(data, size * n);
  return size * n;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t n, void* out) {
  auto* r = static_cast<HttpResponse*>(out);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) r->headers.clear();  // a new response (after 100 Continue)
  if (const auto colon = line.find(':'); colon != std::string::npos) {
    r->headers[base::Lower(base::Strip(line.substr(0, colon)))] =
        base::Strip(line.substr(colon + 1));
  }
  return size * n;
}

std::string Url(const std::string& host, int port, bool https, const std::string& target) {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(https ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port) + target;
}

void SetTls(CURL* h, const EtcdTls& tls) {
  if (!tls.cert_file.empty()) ::curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
  if (!tls.key_file.empty()) ::curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
  if (!tls.ca_file.empty()) ::curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
}

bool IsTlsError(CURLcode rc) {
  return rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
         rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CIPHER || rc == CURLE_SSL_CACERT_BADFILE ||
         rc == CURLE_SSL_ENGINE_NOTFOUND || rc == CURLE_SSL_ENGINE_SETFAILED ||
         rc == CURLE_SSL_ISSUER_ERROR || rc == CURLE_SSL_CRL_BADFILE ||
         rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH || rc == CURLE_SSL_INVALIDCERTSTATUS;
}

// Runs the transfer with two deadlines: `connect` for the connection (and the TLS handshake),
// then `answer` from the moment it is up (the old blocking connect + poll(answer) semantics,
// which a watch slice of a few ms needs). Sets `timed_out` when a deadline passed first.
CURLcode Perform(CURL* h, bool https, milliseconds connect, milliseconds answer, bool& timed_out,
                 bool& connected) {
  struct Multi {
    CURLM* m = ::curl_multi_init();
    CURL* h;
    explicit Multi(CURL* easy) : h(easy) { ::curl_multi_add_handle(m, h); }
    ~Multi() {
      ::curl_multi_remove_handle(m, h);
      ::curl_multi_cleanup(m);
    }
  } multi(h);
  auto deadline = std::chrono::steady_clock::now() + connect;
  while (true) {
    int running = 0;
    ::curl_multi_perform(multi.m, &running);
    if (running == 0) {
      int queued = 0;
      const CURLMsg* msg = ::curl_multi_info_read(multi.m, &queued);
      return msg != nullptr ? msg->data.result : CURLE_GOT_NOTHING;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!connected) {
      curl_off_t up_us = 0;
      ::curl_easy_getinfo(h, https ? CURLINFO_APPCONNECT_TIME_T : CURLINFO_CONNECT_TIME_T, &up_us);
      if (up_us > 0) {
        connected = true;
        deadline = now + answer;
      }
    }
    if (now >= deadline) {
      timed_out = true;
      return CURLE_OPERATION_TIMEDOUT;
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count() + 1;
    ::curl_multi_poll(multi.m, nullptr, 0, static_cast<int>(std::min<long long>(left, 1000)),
                      nullptr);
  }
}

// Whether `host`:`port` completes a TLS handshake: asked only after a plain-http request got an
// empty reply, to tell "etcd serves https" (fatal, with the fix) from a transient failure. The
// certificate is not checked: nothing is sent over this connection.
bool SpeaksTls(const std::string& host, int port) {
  Easy e;
  if (e.h == nullptr) return false;
  const std::string url = Url(host, port, true, "/");
  ::curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  ::curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  ::curl_easy_setopt(e.h, CURLOPT_CONNECT_ONLY, 1L);
  ::curl_easy_setopt(e.h, CURLOPT_SSL_VERIFYPEER, 0L);
  ::curl_easy_setopt(e.h, CURLOPT_SSL_VERIFYHOST, 0L);
  ::curl_easy_setopt(e.h, CURLOPT_TIMEOUT_MS, 2000L);
  return ::curl_easy_perform(e.h) == CURLE_OK;
}

/// The EtcdError of a request that got no HTTP answer.
EtcdError TransferError(CURLcode rc, const char* detail, const std::string& endpoint, bool https) {
  const std::string why = *detail != '\0' ? detail : ::curl_easy_strerror(rc);
  if (rc == CURLE_COULDNT_RESOLVE_HOST) {
    return {"etcd " + endpoint + ": cannot resolve the host: " + why, etcd_code::kTransport};
  }
  if (rc == CURLE_COULDNT_CONNECT) {
    return {"etcd " + endpoint + ": cannot connect: " + why +
                "; check that etcd runs there (--rdzv-endpoint)",
            etcd_code::kTransport};
  }
  // TLS 1.3: a server that wants a client certificate says so in an alert after the handshake.
  const bool alert = https && (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) &&
                     why.find("alert") != std::string::npos;
  if (IsTlsError(rc) || alert) {
    return {"etcd " + endpoint + ": TLS with etcd failed: " + why +
                (https ? "; check that etcd serves https there and that the --rdzv-conf "
                         "certificate, key and CA files are the right PEM files"
                       : ""),
            etcd_code::kTls};
  }
  return {"etcd " + endpoint + ": bad HTTP answer (" + why + ")", etcd_code::kTransport};
}

// `s` cut to `max` bytes with line breaks turned into spaces and the ends trimmed (a server's
// body quoted inside one log line).
std::string OneLine(const std::string& s, std::size_t max) {
  std::string out = s.substr(0, max);
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  const auto b = out.find_first_not_of(' ');
  if (b == std::string::npos) return "(empty)";
  return out.substr(b, out.find_last_not_of(' ') - b + 1);
}

}  // namespace

EtcdResult ParseEtcdResult(const HttpResponse& r, std::string_view endpoint) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    const std::string where(endpoint);
    if (r.status == 400 && r.body.find("HTTPS server") != std::string::npos) {
      throw EtcdError("etcd at " + where +
                          " serves https: add --rdzv-conf protocol=https (with the CA and client "
                          "certificate keys etcd needs)",
                      etcd_code::kTls);
    }
    if (r.status == 404) {
      throw EtcdError("etcd at " + where +
                          " has no v2 keys API (HTTP 404 on /v2/keys); the etcd and etcd-v2 "
                          "rendezvous backends need it: start etcd 3.4/3.5 with --enable-v2=true "
                          "(etcd 3.6 removed it), or use --rdzv-backend c10d",
                      etcd_code::kNoV2Api);
    }
    throw EtcdError("etcd at " + where + " answered HTTP " + std::to_string(r.status) +
                        " with a body that is not etcd's JSON: " + OneLine(r.body, 200),
                    etcd_code::kTransport);
  }
  if (auto code = j.find("errorCode"); code != j.end()) {
    const int c = code->is_number_integer() ? code->get<int>() : etcd_code::kTransport;
    throw EtcdError("etcd error " + std::to_string(c) + ": " + j.value("message", "") + " (" +
                        j.value("cause", "") + ")",
                    c, j.value("index", std::int64_t{0}));
  }
  EtcdResult out;
  out.action = j.value("action", "");
  if (auto n = j.find("node"); n != j.end()) out.node = ParseNode(*n);
  if (auto n = j.find("prevNode"); n != j.end()) out.prev_node = ParseNode(*n);
  if (auto h = r.headers.find("x-etcd-index"); h != r.headers.end()) {
    out.etcd_index = std::strtoll(h->second.c_str(), nullptr, 10);
  }
  return out;
}

EtcdClient::EtcdClient(std::string host, int port, milliseconds timeout, EtcdTls tls)
    : host_(std::move(host)), port_(port), timeout_(timeout), tls_(std::move(tls)) {}

std::optional<HttpResponse> EtcdClient::Request(std::string_view method, const std::string& target,
                                                const std::string& body, milliseconds timeout,
                                                bool timeout_is_normal) const {
  CurlGlobalInit();
  const std::string endpoint = Endpoint();
  Easy e;
  if (e.h == nullptr)
    throw EtcdError("etcd " + endpoint + ": libcurl failed", etcd_code::kTransport);
  HttpResponse r;
  std::array<char, CURL_ERROR_SIZE> err{};
  const std::string url = Url(host_, port_, tls_.https, target);
  const std::string verb(method);
  ::curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  ::curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);  // several threads; no SIGALRM for DNS
  ::curl_easy_setopt(e.h, CURLOPT_ERRORBUFFER, err.data());
  ::curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, OnBody);
  ::curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &r);
  ::curl_easy_setopt(e.h, CURLOPT_HEADERFUNCTION, OnHeader);
  ::curl_easy_setopt(e.h, CURLOPT_HEADERDATA, &r);
  if (method == "PUT") {  // form fields in the body (python-etcd / urllib3 do the same)
    ::curl_easy_setopt(e.h, CURLOPT_POSTFIELDS, body.c_str());
    ::curl_easy_setopt(e.h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    e.headers = ::curl_slist_append(e.headers, "Expect:");  // no 100-continue round trip
    ::curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, e.headers);
  }
  if (method != "GET") ::curl_easy_setopt(e.h, CURLOPT_CUSTOMREQUEST, verb.c_str());
  if (tls_.https) SetTls(e.h, tls_);
  bool timed_out = false;
  bool connected = false;
  const CURLcode rc = Perform(e.h, tls_.https, timeout_, timeout, timed_out, connected);
  if (timed_out) {  // a watch that saw no change, or a server that never answered
    if (timeout_is_normal && connected) return std::nullopt;
    throw EtcdError("etcd " + endpoint + ": no answer to " + verb + " " + target + " within " +
                        std::to_string((connected ? timeout : timeout_).count()) + " ms" +
                        (connected ? "" : " (connecting)"),
                    etcd_code::kTransport);
  }
  if (rc == CURLE_GOT_NOTHING && !tls_.https && SpeaksTls(host_, port_)) {
    throw EtcdError("etcd at " + endpoint +
                        " serves https: add --rdzv-conf protocol=https (with the CA and client "
                        "certificate keys etcd needs)",
                    etcd_code::kTls);
  }
  if (rc != CURLE_OK) throw TransferError(rc, err.data(), endpoint, tls_.https);
  long status = 0;
  ::curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  return r;
}

EtcdResult EtcdClient::Get(std::string_view key, bool recursive) const {
  std::string target = "/v2/keys" + PercentEncode(key, true);
  if (recursive) target += "?recursive=true";
  return ParseEtcdResult(*Request("GET", target, "", timeout_, false), Endpoint());
}

EtcdResult EtcdClient::Put(std::string_view key, std::string_view value, const EtcdWrite& w) const {
  std::vector<std::pair<std::string, std::string>> f;
  if (w.dir) {
    f.emplace_back("dir", "true");
  } else if (w.refresh) {
    f.emplace_back("refresh", "true");
  } else {
    f.emplace_back("value", std::string(value));
  }
  if (w.prev_exist) f.emplace_back("prevExist", *w.prev_exist ? "true" : "false");
  if (w.prev_value) f.emplace_back("prevValue", *w.prev_value);
  if (w.prev_index) f.emplace_back("prevIndex", std::to_string(*w.prev_index));
  if (w.ttl) f.emplace_back("ttl", std::to_string(*w.ttl));
  return ParseEtcdResult(
      *Request("PUT", "/v2/keys" + PercentEncode(key, true), FormEncode(f), timeout_, false),
      Endpoint());
}

EtcdResult EtcdClient::Delete(std::string_view key, bool recursive,
                              std::optional<std::string> prev_value) const {
  std::vector<std::pair<std::string, std::string>> q;
  if (recursive) q.emplace_back("recursive", "true");
  if (prev_value) q.emplace_back("prevValue", *prev_value);
  std::string target = "/v2/keys";
  target += PercentEncode(key, true);
  if (!q.empty()) target.append("?").append(FormEncode(q));
  return ParseEtcdResult(*Request("DELETE", target, "", timeout_, false), Endpoint());
}

std::optional<EtcdResult> EtcdClient::Watch(std::string_view key, bool recursive,
                                            std::int64_t wait_index, milliseconds timeout) const {
  std::vector<std::pair<std::string, std::string>> q{{"wait", "true"}};
  if (recursive) q.emplace_back("recursive", "true");
  if (wait_index > 0) q.emplace_back("waitIndex", std::to_string(wait_index));
  auto r = Request("GET", "/v2/keys" + PercentEncode(key, true) + "?" + FormEncode(q), "", timeout,
                   true);
  if (!r) return std::nullopt;
  return ParseEtcdResult(*r, Endpoint());
}

}  // namespace tzrun::rendezvous::detail
