// src/store/listener.hpp — the store server's listening socket and its error texts (private).
//
// Thread-safety: stateless functions; bind_listener runs on the thread calling Server::start().
#pragma once

#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <cstdint>
#include <string>

#include "tzrun/store/server.hpp"

namespace tzrun::store::detail {

/// Where the listener was bound: the port (the ephemeral one for port 0) and "ADDR:PORT"
/// ("[::]:29500" for IPv6).
struct BoundEndpoint {
  std::uint16_t port = 0;
  std::string endpoint;
  /// TCP_NODELAY is set on the listener, so accepted sockets have it already (Linux copies
  /// the listener's options into each accepted socket): no setsockopt() per connection.
  bool nodelay_inherited = false;
};

/// Opens, binds and listens `acceptor` (non-blocking, close-on-exec, SO_REUSEADDR,
/// TCP_NODELAY, the largest backlog the host allows) on options.host:options.port. "" tries "[::]"
/// dual-stack, then "0.0.0.0" (as libuv's UvTcpServer::makeWithPort); a name is resolved and
/// the first address that binds wins. Throws BindError naming host:port, the OS error and a
/// fix (e.g. a port already in use).
BoundEndpoint BindListener(asio::io_context& io, asio::ip::tcp::acceptor& acceptor,
                           const ServerOptions& options);

/// strerror(err) followed by the symbolic name for the errors the store reports to users:
/// "Address already in use (EADDRINUSE)"; other values as "(errno N)". Unlike
/// tzrun::base::errno_text it names the constant, which the store's tests and logs rely on.
std::string ErrnoNameText(int err);

/// The warning for a failed accept() on `endpoint` with `open` connections, with a fix
/// (EMFILE/ENFILE: raise the open-file limit).
std::string AcceptFailureText(const std::string& endpoint, int err, std::size_t open);

/// A peer address as "ADDR:PORT" ("[ADDR]:PORT" for IPv6), "unknown-peer" for other families.
std::string FormatSockaddr(const sockaddr_storage& ss);

}  // namespace tzrun::store::detail
