// The etcd v2 keys API client (see etcd_client.hpp).
#include "etcd_client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "tzrun/base/system.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using SteadyClock = std::chrono::steady_clock;
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

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int Connect(const std::string& host, int port, const std::string& endpoint) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    throw EtcdError("etcd " + endpoint + ": cannot resolve the host: " + ::gai_strerror(rc),
                    etcd_code::kTransport);
  }
  int err = 0;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(res);
      return fd;
    }
    err = errno;
    if (fd >= 0) ::close(fd);
  }
  ::freeaddrinfo(res);
  throw EtcdError("etcd " + endpoint + ": cannot connect: " + base::ErrnoText(err) +
                      "; check that etcd runs there (--rdzv-endpoint)",
                  etcd_code::kTransport);
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

EtcdClient::EtcdClient(std::string host, int port, milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {}

std::optional<HttpResponse> EtcdClient::Request(std::string_view method, const std::string& target,
                                                const std::string& body, milliseconds timeout,
                                                bool timeout_is_normal) const {
  const std::string endpoint = Endpoint();
  Fd conn{Connect(host_, port_, endpoint)};
  std::string req = std::string(method) + " " + target + " HTTP/1.1\r\nHost: " + endpoint +
                    "\r\nConnection: close\r\n";
  if (!body.empty() || method == "PUT") {
    req += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  for (std::size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(conn.fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      throw EtcdError(
          "etcd " + endpoint + ": sending the request failed: " + base::ErrnoText(errno),
          etcd_code::kTransport);
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  const auto deadline = SteadyClock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    pollfd p{conn.fd, POLLIN, 0};
    const int rc = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      if (timeout_is_normal) return std::nullopt;
      throw EtcdError("etcd " + endpoint + ": no answer to " + std::string(method) + " " + target +
                          " within " + std::to_string(timeout.count()) + " ms",
                      etcd_code::kTransport);
    }
    char buf[16384];
    const ssize_t n = ::recv(conn.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
  }
  std::string why;
  auto r = ParseHttpResponse(raw, &why);
  if (!r) {
    throw EtcdError("etcd " + endpoint + ": bad HTTP answer (" + why + ")", etcd_code::kTransport);
  }
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
  std::string target = "/v2/keys" + PercentEncode(key, true);
  if (!q.empty()) target += "?" + FormEncode(q);
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
