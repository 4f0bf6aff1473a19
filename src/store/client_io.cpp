// Blocking socket layer of the store client (see client_io.hpp).
#include "client_io.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tzrun::store::detail {

// A deadline; TimePoint::max() = none.
TimePoint DeadlineAfter(Duration d) {
  if (d <= Duration::zero()) return TimePoint::max();
  return Clock::now() + d;
}

// poll() timeout in ms until `deadline` (-1 = infinite), clamped to int.
int PollTimeout(TimePoint deadline) {
  if (deadline == TimePoint::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30));
}

std::string MsText(Duration d) {
  return std::to_string(d.count()) + "ms";
}

std::string QuoteKeys(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    if (i == 8) {
      out += "... (" + std::to_string(keys.size()) + " keys)";
      break;
    }
    out += "'" + keys[i] + "'";
  }
  return out + "]";
}

void SendAll(int fd, std::string_view data, TimePoint deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    const int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, PollTimeout(deadline));
      if (r == 0) throw IoTimeout("sending timed out");
      if (r < 0 && errno != EINTR) throw IoError(std::string("poll: ") + std::strerror(errno));
      continue;
    }
    throw IoError(std::string("send failed: ") + std::strerror(err));
  }
}

// Waits until fd is readable. False on timeout.
bool WaitReadable(int fd, TimePoint deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, PollTimeout(deadline));
    if (r > 0) return true;
    if (r == 0) {
      if (deadline != TimePoint::max() && Clock::now() >= deadline) return false;
      continue;
    }
    if (errno != EINTR) throw IoError(std::string("poll: ") + std::strerror(errno));
  }
}

void RecvExact(int fd, char* out, std::size_t n, TimePoint deadline) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, out, n, 0);
    if (r > 0) {
      out += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) throw IoError("the server closed the connection");
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!WaitReadable(fd, deadline)) throw IoTimeout("no reply before the deadline");
      continue;
    }
    throw IoError(std::string("receive failed: ") + std::strerror(err));
  }
}

// Opens a TCP connection to host:port before `deadline`. Throws RetryableError.
int ConnectOnce(const std::string& host, std::uint16_t port, TimePoint deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (gai != 0) {
    throw RetryableError("cannot resolve '" + host + "': " + ::gai_strerror(gai));
  }
  std::string last = "no addresses";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = std::string("socket(): ") + std::strerror(errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        pollfd p{fd, POLLOUT, 0};
        int r;
        do {
          r = ::poll(&p, 1, PollTimeout(deadline));
        } while (r < 0 && errno == EINTR);
        if (r == 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(list);
      return fd;
    }
    ::close(fd);
    last = std::strerror(err);
  }
  ::freeaddrinfo(list);
  throw RetryableError(last);
}

std::string RequestBytes(QueryType type, std::vector<std::string> keys,
                         std::vector<std::string> values, std::int64_t number) {
  Request r;
  r.type = type;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.number = number;
  return EncodeRequest(r);
}

}  // namespace tzrun::store::detail
