// --rdzv-endpoint / --rdzv-conf parsing and the "endpoint is this machine" test.
// Upstream: torch/distributed/elastic/rendezvous/utils.py, api.py (RendezvousParameters).
#include "tzrun/rendezvous/params.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <regex>
#include <set>

#include "tzrun/base/strings.hpp"
#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using base::Lower;

using base::Strip;

// Numeric text of one address (no scope id), "" when not an IP address.
std::string AddrText(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  } else {
    return "";
  }
  return buf;
}

bool IsLoopbackLiteral(const std::string& host) {
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24U) == 127U;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

// getaddrinfo(name) → numeric addresses (+ canonical name).
std::set<std::string> Resolve(const std::string& name, std::string* canonical) {
  std::set<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_CANONNAME;
  addrinfo* list = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &list) != 0 || list == nullptr) return out;
  if (canonical != nullptr && list->ai_canonname != nullptr) *canonical = list->ai_canonname;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    auto t = AddrText(ai->ai_addr);
    if (!t.empty()) out.insert(t);
  }
  ::freeaddrinfo(list);
  return out;
}

}  // namespace

Endpoint ParseEndpoint(const std::string& endpoint_in, int default_port) {
  const std::string endpoint = Strip(endpoint_in);
  const std::string fix = "use HOST[:PORT], e.g. node0.example.com:29400 or [::1]:29400 for IPv6";
  if (endpoint.empty()) {
    if (default_port < 0) {
      throw ConfigError("the rendezvous endpoint is empty and this backend needs a port; " + fix);
    }
    return {"localhost", default_port};
  }
  std::string host;
  std::optional<std::string> port_text;
  if (endpoint.front() == '[' && endpoint.back() == ']') {
    host = endpoint.substr(1, endpoint.size() - 2);
  } else {
    const auto colon = endpoint.rfind(':');
    if (colon == std::string::npos) {
      host = endpoint;
    } else {
      host = endpoint.substr(0, colon);
      port_text = endpoint.substr(colon + 1);
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
  }
  static const std::regex kHost(R"([\w.:-]+)");
  if (host.empty() || !std::regex_match(host, kHost)) {
    throw ConfigError("rendezvous endpoint '" + endpoint_in + "': the hostname '" + host +
                      "' is not valid (letters, digits, '.', ':', '-', '_'); " + fix);
  }
  int port = default_port;
  if (port_text) {
    static const std::regex kPort(R"(\d{1,5})");
    if (!std::regex_match(*port_text, kPort) || std::stoi(*port_text) > 65535) {
      throw ConfigError("rendezvous endpoint '" + endpoint_in + "': the port '" + *port_text +
                        "' is not an integer in 0..65535; " + fix);
    }
    port = std::stoi(*port_text);
  }
  if (port < 0) {
    throw ConfigError("rendezvous endpoint '" + endpoint_in +
                      "' has no port and this backend needs one; add :PORT (or pass "
                      "--master-port for the static backend)");
  }
  return {host, port};
}

std::string FormatEndpoint(const Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

std::optional<bool> ConfBool(const ConfMap& conf, const std::string& key) {
  auto it = conf.find(key);
  if (it == conf.end()) return std::nullopt;
  const std::string v = Lower(Strip(it->second));
  if (v == "1" || v == "true" || v == "t" || v == "yes" || v == "y") return true;
  if (v == "0" || v == "false" || v == "f" || v == "no" || v == "n") return false;
  throw ConfigError("--rdzv-conf " + key + "=" + it->second +
                    ": not a boolean; use true/false (or 1/0, yes/no)");
}

std::optional<std::chrono::milliseconds> ConfSeconds(const ConfMap& conf, const std::string& key) {
  auto it = conf.find(key);
  if (it == conf.end()) return std::nullopt;
  const std::string v = Strip(it->second);
  double seconds = 0;
  std::size_t used = 0;
  try {
    seconds = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !std::isfinite(seconds) || seconds <= 0) {
    throw ConfigError("--rdzv-conf " + key + "=" + it->second +
                      ": not a positive number of seconds; pass e.g. " + key + "=30");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

std::optional<int> ConfPositiveInt(const ConfMap& conf, const std::string& key) {
  auto it = conf.find(key);
  if (it == conf.end()) return std::nullopt;
  const std::string v = Strip(it->second);
  static const std::regex kInt(R"(\+?\d{1,9})");
  if (!std::regex_match(v, kInt) || std::stoi(v) <= 0) {
    throw ConfigError("--rdzv-conf " + key + "=" + it->second +
                      ": not a positive integer; pass e.g. " + key + "=3");
  }
  return std::stoi(v);
}

bool MatchesMachineHostname(const std::string& host) {
  if (host == "localhost" || IsLoopbackLiteral(host)) return true;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && host == name) return true;
  std::string canonical;
  const auto mine_by_name = Resolve(name, &canonical);
  if (!canonical.empty() && canonical == host) return true;
  // Addresses of `host` against this machine's: its hostname's and its interfaces'.
  const auto theirs = Resolve(host, nullptr);
  if (theirs.empty()) return false;
  std::set<std::string> mine = mine_by_name;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      auto t = AddrText(i->ifa_addr);
      if (!t.empty()) mine.insert(t);
    }
    ::freeifaddrs(ifs);
  }
  return std::any_of(theirs.begin(), theirs.end(), [&](const std::string& a) {
    return mine.contains(a) || IsLoopbackLiteral(a);
  });
}

}  // namespace tzrun::rendezvous
