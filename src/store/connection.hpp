// src/store/connection.hpp — one client connection of the store server (private): its socket,
// request parser and write queue.
//
// The write queue holds replies in wire form (detail::Reply: small ones inline, others shared
// pre-serialised buffers, e.g. a stored value that several GETs return). flush() writes as
// much as the socket takes with one sendmsg() (scatter/gather, up to kMaxIov replies) per
// call; the reactor in server.cpp decides what to do on EAGAIN or an error.
//
// Thread-safety: none; owned by the server's I/O thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv_state.hpp"
#include "tzrun/store/codec.hpp"

namespace tzrun::store::detail {

struct Connection : KvClient, std::enable_shared_from_this<Connection> {
  Connection(int socket_fd, std::uint64_t conn_id) : fd(socket_fd), id(conn_id) {}

  /// Outcome of flush(): everything sent, the socket is full (EAGAIN), or a send error.
  enum class FlushStatus : std::uint8_t { kDone, kBlocked, kFailed };

  /// Queues one reply (an empty one is dropped) and counts its bytes in out_bytes.
  void Enqueue(Reply&& reply);
  /// Sends queued replies until the queue is empty (kDone, queue storage released), the
  /// socket buffer is full (kBlocked) or send fails (kFailed: errno value in `error`).
  FlushStatus Flush(int& error);

  int fd;
  std::uint64_t id;
  std::string peer;
  RequestParser parser;
  std::vector<Reply> out;      // queued replies
  std::size_t out_pos = 0;     // first item not completely sent
  std::size_t out_offset = 0;  // bytes of out[out_pos] already sent
  std::size_t out_bytes = 0;   // unsent bytes
  bool read_queued = false;    // a read continuation is posted (budget or backpressure)
  bool write_blocked = false;  // sendmsg() hit EAGAIN: the EPOLLOUT edge resumes the flush
  bool read_paused = false;    // backpressure: too much unsent output
  bool close_after_flush = false;
  bool dirty = false;  // in the server's dirty list (needs a flush)
  bool closed = false;

 private:
  void Consume(std::size_t sent);
};
using ConnPtr = std::shared_ptr<Connection>;

}  // namespace tzrun::store::detail
