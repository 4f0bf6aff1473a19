// Listening socket of the store server (see listener.hpp).
#include "listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include <asio/ip/v6_only.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

namespace tzrun::store::detail {
namespace {

using asio::ip::tcp;

std::string FormatEndpoint(const tcp::endpoint& ep) {
  const auto addr = ep.address();
  if (addr.is_v6()) return "[" + addr.to_string() + "]:" + std::to_string(ep.port());
  return addr.to_string() + ":" + std::to_string(ep.port());
}

std::vector<tcp::endpoint> Candidates(asio::io_context& io, const ServerOptions& options) {
  std::vector<tcp::endpoint> out;
  if (options.host.empty()) {
    out.emplace_back(asio::ip::address_v6::any(), options.port);
    out.emplace_back(asio::ip::address_v4::any(), options.port);
    return out;
  }
  asio::error_code ec;
  auto addr = asio::ip::make_address(options.host, ec);
  if (!ec) {
    out.emplace_back(addr, options.port);
    return out;
  }
  tcp::resolver resolver(io);
  auto results =
      resolver.resolve(options.host, std::to_string(options.port), tcp::resolver::passive, ec);
  if (ec) {
    throw BindError("cannot start the store on " + options.host + ":" +
                    std::to_string(options.port) + ": cannot resolve host '" + options.host +
                    "': " + ec.message() +
                    "; pass an IP address or a resolvable name (or \"\" for all interfaces)");
  }
  for (const auto& entry : results) out.push_back(entry.endpoint());
  return out;
}

// Opens and binds `acceptor` on `ep`; on failure `ec` says why and the acceptor is closed.
void TryListen(tcp::acceptor& acceptor, const tcp::endpoint& ep, asio::error_code& ec) {
  acceptor.open(ep.protocol(), ec);
  if (!ec) {
    ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
    if (ep.address().is_v6() && ep.address().is_unspecified()) {
      acceptor.set_option(asio::ip::v6_only(false), ec);
      ec.clear();  // dual-stack is best effort (bindv6only hosts keep v6 only)
    }
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) acceptor.bind(ep, ec);
  // Largest backlog the host allows: Linux clamps it to net.core.somaxconn (as
  // listen(fd, -1) in upstream's libuv and legacy backends).
  if (!ec) acceptor.listen(INT_MAX, ec);
  if (!ec) acceptor.non_blocking(true, ec);
  if (ec) {
    asio::error_code ignored;
    acceptor.close(ignored);
  }
}

std::string BindFix(int err, const ServerOptions& options) {
  const std::string shown_host = options.host.empty() ? "[::]" : options.host;
  switch (err) {
    case EADDRINUSE:
      return "port " + std::to_string(options.port) +
             " is already in use; choose another port or stop the process using it (find it with "
             "`ss -ltnp 'sport = :" +
             std::to_string(options.port) + "'`)";
    case EACCES:
      return "permission denied; ports below 1024 need privileges: choose a port >= 1024";
    case EADDRNOTAVAIL:
      return "address " + shown_host +
             " is not assigned to this machine; use one of this host's addresses or \"\" for all "
             "interfaces";
    default:
      return "check the host/port values and the network configuration";
  }
}

}  // namespace

BoundEndpoint BindListener(asio::io_context& io, tcp::acceptor& acceptor,
                           const ServerOptions& options) {
  int last_errno = 0;
  std::string last_what;
  tcp::endpoint last_ep;
  for (const auto& ep : Candidates(io, options)) {
    asio::error_code ec;
    TryListen(acceptor, ep, ec);
    if (!ec) {
      const auto local = acceptor.local_endpoint(ec);
      if (!ec) {
        asio::error_code nodelay_ec;
        acceptor.set_option(tcp::no_delay(true), nodelay_ec);
        return BoundEndpoint{local.port(), FormatEndpoint(local), !nodelay_ec};
      }
      asio::error_code ignored;
      acceptor.close(ignored);
    }
    last_errno = ec.value();
    last_what = ec.message();
    last_ep = ep;
  }
  const std::string where = options.host.empty()
                                ? FormatEndpoint(last_ep)
                                : options.host + ":" + std::to_string(options.port);
  throw BindError("cannot start the store on " + where + ": " +
                  (last_errno ? ErrnoNameText(last_errno) : last_what) + ": " +
                  BindFix(last_errno, options));
}

std::string ErrnoNameText(int err) {
  // strerror is fine here: only called on the I/O thread or before it starts.
  const char* name = nullptr;
  switch (err) {
    case EADDRINUSE:
      name = "EADDRINUSE";
      break;
    case EACCES:
      name = "EACCES";
      break;
    case EADDRNOTAVAIL:
      name = "EADDRNOTAVAIL";
      break;
    case EMFILE:
      name = "EMFILE";
      break;
    case ENFILE:
      name = "ENFILE";
      break;
    case ENOBUFS:
      name = "ENOBUFS";
      break;
    case ENOMEM:
      name = "ENOMEM";
      break;
    case EAFNOSUPPORT:
      name = "EAFNOSUPPORT";
      break;
    default:
      break;
  }
  const std::string shown = name != nullptr ? name : "errno " + std::to_string(err);
  return std::string(std::strerror(err)) + " (" + shown + ")";
}

std::string AcceptFailureText(const std::string& endpoint, int err, std::size_t open) {
  const char* hint = (err == EMFILE || err == ENFILE)
                         ? "raise the open-file limit (ulimit -n / RLIMIT_NOFILE, or fs.file-max) "
                           "above the number of clients"
                         : "check system memory and socket buffers";
  return "accept() on " + endpoint + " failed: " + ErrnoNameText(err) + " with " +
         std::to_string(open) + " open connections; " + hint +
         ". Retrying every 100 ms while serving existing connections";
}

std::string FormatSockaddr(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "unknown-peer";
}

}  // namespace tzrun::store::detail
