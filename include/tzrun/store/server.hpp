// tzrun/store/server.hpp — a c10d-TCPStore-compatible key/value server on asio.
//
// Speaks PyTorch's TCPStore protocol byte for byte (opcodes 0..18, see protocol.hpp), so
// torch.distributed.TCPStore(is_master=False) clients and libtorch peers can use it. Semantics
// follow the libuv backend (torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp), the
// de-facto reference since PyTorch 2.4, except two upstream bugs that are not copied:
//   * COMPARE_SET wakes waiters only when it stored a value;
//   * QUEUE_PUSH wakes exactly one waiter and removes it from the registry.
// GET/MULTI_GET of a missing key reply an empty value; the server never times waits out.
//
// Errors: closing the connection is the protocol's only error channel. A protocol violation
// (no VALIDATE first, wrong magic, unknown opcode, size caps, non-numeric ADD counter) closes
// only that connection and is logged with the peer address and the reason.
//
// Threading: start() binds/listens on the caller's thread, then one background I/O thread
// owns all state (single-threaded like upstream, so every operation is atomic w.r.t. others).
// Public methods are thread-safe; stop() must not be called from the log sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tzrun/store/errors.hpp"
#include "tzrun/store/log.hpp"
#include "tzrun/store/protocol.hpp"

namespace tzrun::store {

struct ServerOptions {
  static constexpr std::uint16_t kDefaultPort = 29500;  ///< c10d TCPStoreOptions::kDefaultPort

  /// Address to bind. "" = "[::]" dual-stack, falling back to "0.0.0.0" when IPv6 is
  /// unavailable (as libuv's UvTcpServer::makeWithPort). A name is resolved; the first
  /// address that binds wins.
  std::string host;
  std::uint16_t port = 0;  ///< 0 = ephemeral (read it back with port())
  /// Open client connections allowed at once; 0 = unlimited. Extra connections are accepted
  /// and closed immediately, with a logged reason.
  std::size_t max_connections = 0;
  std::size_t max_key_bytes = Limits::kDefaultMaxKeyBytes;      ///< 0 = no cap
  std::size_t max_value_bytes = Limits::kDefaultMaxValueBytes;  ///< 0 = no cap
  std::size_t max_count = Limits::kDefaultMaxCount;             ///< 0 = no cap
  LogSink log;  ///< may be empty; called from the I/O thread and from start()
};

/// Counters for tests and monitoring (a consistent-enough snapshot; each field is atomic).
struct ServerStats {
  std::size_t connections = 0;            ///< open client connections
  std::size_t accepted_total = 0;         ///< connections accepted since start()
  std::size_t rejected_total = 0;         ///< closed at once because of max_connections
  std::size_t protocol_errors_total = 0;  ///< connections closed for a protocol violation
  std::size_t accept_errors_total = 0;    ///< failed accept() calls (EMFILE, ENFILE, ...)
  std::size_t keys = 0;                   ///< entries in the key/value map (as GETNUMKEYS)
  std::size_t queues = 0;                 ///< non-empty queues
  std::size_t waiters = 0;                ///< pending WAIT/BARRIER registrations (requests)
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  ///< stops (closes every connection) and joins the I/O thread
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and listens synchronously, then serves on a background thread. Throws BindError
  /// naming host:port, the OS error and a fix (e.g. a port already in use). Call once.
  void Start();
  /// The bound port (the ephemeral one when options.port was 0); 0 before start().
  [[nodiscard]] std::uint16_t Port() const noexcept;
  /// The bound address as "ADDR:PORT" ("[::]:29500" for IPv6); "" before start().
  [[nodiscard]] std::string Endpoint() const;
  /// Stops accepting, closes every connection and joins the I/O thread. Idempotent.
  void Stop();
  [[nodiscard]] bool Running() const noexcept;
  [[nodiscard]] ServerStats Stats() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzrun::store
