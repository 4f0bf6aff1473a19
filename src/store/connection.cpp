// Write queue of one store connection (see connection.hpp).
#include "connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace tzrun::store::detail {
namespace {
constexpr std::size_t kMaxIov = 64;
}  // namespace

void Connection::Enqueue(Reply&& reply) {
  if (closed || reply.size == 0) return;
  out_bytes += reply.size;
  out.push_back(std::move(reply));
}

Connection::FlushStatus Connection::Flush(int& error) {
  while (out_pos < out.size()) {
    iovec iov[kMaxIov];
    std::size_t count = 0;
    for (std::size_t i = out_pos; i < out.size() && count < kMaxIov; ++i, ++count) {
      const std::size_t skip = (i == out_pos) ? out_offset : 0;
      iov[count].iov_base = const_cast<char*>(out[i].Data() + skip);
      iov[count].iov_len = out[i].size - skip;
    }
    ssize_t n = 0;
    if (count == 1) {  // the common case: one reply
      n = ::send(fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
    } else {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = count;
      n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    }
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return FlushStatus::kBlocked;
      error = err;
      return FlushStatus::kFailed;
    }
    Consume(static_cast<std::size_t>(n));
  }
  out.clear();
  out_pos = 0;
  out_offset = 0;
  if (out.capacity() > 64) out.shrink_to_fit();
  return FlushStatus::kDone;
}

// Drops `sent` bytes from the front of the queue; compacts it once half of it is sent.
void Connection::Consume(std::size_t sent) {
  out_bytes -= sent;
  while (sent > 0) {
    const std::size_t left = out[out_pos].size - out_offset;
    if (sent >= left) {
      sent -= left;
      out[out_pos].shared.reset();
      ++out_pos;
      out_offset = 0;
    } else {
      out_offset += sent;
      sent = 0;
    }
  }
  if (out_pos >= 256 && out_pos * 2 >= out.size()) {
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(out_pos));
    out_pos = 0;
  }
}

}  // namespace tzrun::store::detail
