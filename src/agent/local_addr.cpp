// The advertised local address (see local_addr.hpp).
#include "local_addr.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>

namespace tzrun::agent {

bool NameResolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (res != nullptr) ::freeaddrinfo(res);
  return rc == 0;
}

std::optional<std::string> FirstInterfaceAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0U || (i->ifa_flags & IFF_LOOPBACK) != 0U) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) found = text;
  }
  ::freeifaddrs(list);
  return found;
}

std::string AdvertisedAddress(const std::string& name, bool resolves, bool single_node,
                              const std::optional<std::string>& interface_addr, std::string* why) {
  if (resolves) return name;
  const std::string addr =
      single_node || !interface_addr ? std::string("127.0.0.1") : *interface_addr;
  if (why != nullptr) {
    *why = "the host name '" + name + "' does not resolve (no /etc/hosts or DNS entry), so " +
           "workers could not reach MASTER_ADDR=" + name + "; advertising " + addr +
           (single_node ? " (a single-node job)" : " (the first non-loopback interface)") +
           " instead: pass --local-addr=ADDR to choose";
  }
  return addr;
}

}  // namespace tzrun::agent
