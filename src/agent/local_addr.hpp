// tzrun agent internals: the address a c10d / --standalone node advertises when --local-addr is
// not given. torchrun uses socket.getfqdn() as is (torch/distributed/elastic/rendezvous/
// dynamic_rendezvous.py _NodeDescGenerator, utils.py); when that name does not resolve (a
// container or network namespace whose host name is in no /etc/hosts or DNS), the workers'
// MASTER_ADDR cannot be reached and the job fails. tzrun keeps the name when it resolves and
// otherwise picks an address that works, with a warning.
//
// Thread-safety: the functions are reentrant (getaddrinfo/getifaddrs).
#pragma once

#include <optional>
#include <string>

namespace tzrun::agent {

/// Whether getaddrinfo finds an address for `name`.
[[nodiscard]] bool NameResolves(const std::string& name);

/// The first up, non-loopback IPv4 interface address ("10.0.0.5"), if any.
[[nodiscard]] std::optional<std::string> FirstInterfaceAddress();

/// `name` when it resolves (or `resolves` says so); else "127.0.0.1" for a single-node job,
/// else the first interface address (else "127.0.0.1"). `why` gets the warning text when the
/// name was replaced, else stays empty. Pure given `resolves` and `interface_addr`.
[[nodiscard]] std::string AdvertisedAddress(const std::string& name, bool resolves,
                                            bool single_node,
                                            const std::optional<std::string>& interface_addr,
                                            std::string* why);

}  // namespace tzrun::agent
