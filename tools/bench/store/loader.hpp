// tools/bench/store/loader.hpp — the raw c10d TCPStore wire encoding and the epoll loader of
// tzrun_store_bench: N non-blocking client connections, each with a queue of expected replies.
// The wire format follows torch/csrc/distributed/c10d/TCPStore.cpp; user keys carry
// TCPStore's "/" prefix. Single-threaded: one Loader per scenario, driven by RunUntil.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace store_bench {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kMagic = 0x3C85F7CE;

inline double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ---------------------------------------------------------------------------------------
// Wire encoding (little-endian, as every supported platform is).

enum Op : std::uint8_t {
  kValidate = 0,
  kSet = 1,
  kGet = 3,
  kAdd = 4,
  kWait = 6,
  kPing = 13,
};
enum class Reply : std::uint8_t { kU8, kU32, kI64, kBlob };

inline void PutU64(std::string& b, std::uint64_t v) {
  b.append(reinterpret_cast<const char*>(&v), 8);
}
inline void PutStr(std::string& b, std::string_view s) {
  PutU64(b, s.size());
  b.append(s);
}
inline void Handshake(std::string& b) {
  b.push_back(static_cast<char>(kValidate));
  b.append(reinterpret_cast<const char*>(&kMagic), 4);
  b.push_back(static_cast<char>(kPing));
  const std::uint32_t nonce = static_cast<std::uint32_t>(getpid());
  b.append(reinterpret_cast<const char*>(&nonce), 4);
}
inline void Set(std::string& b, std::string_view k, std::string_view v) {
  b.push_back(static_cast<char>(kSet));
  PutStr(b, k);
  PutStr(b, v);
}
inline void Get(std::string& b, std::string_view k) {
  b.push_back(static_cast<char>(kGet));
  PutStr(b, k);
}
inline void Add(std::string& b, std::string_view k, std::int64_t d) {
  b.push_back(static_cast<char>(kAdd));
  PutStr(b, k);
  PutU64(b, static_cast<std::uint64_t>(d));
}
inline void Wait(std::string& b, std::string_view k) {
  b.push_back(static_cast<char>(kWait));
  PutU64(b, 1);
  PutStr(b, k);
}

// ---------------------------------------------------------------------------------------
// Event loop: N non-blocking connections, edge-triggered epoll, per-connection reply queue.

struct Conn {
  int fd = -1;
  int id = 0;
  bool connecting = false;
  bool closed = false;
  int retries = 0;
  Clock::time_point retry_at{};
  std::string out;
  std::size_t out_off = 0;
  std::string in;
  std::size_t in_off = 0;
  std::deque<Reply> expect;
  int state = 0;
  Clock::time_point t_sent{};
  std::int64_t n = 0;
};

constexpr int kClientsPerSource = 8192;  // client connections per loopback source address

class Loader {
 public:
  using OnReply = std::function<void(Conn&, std::int64_t, std::string_view)>;

  Loader(std::uint16_t port, OnReply on_reply) : port_(port), on_reply_(std::move(on_reply)) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  }
  ~Loader() {
    CloseAll();
    ::close(ep_);
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  std::vector<Conn>& Conns() { return conns_; }
  int Errors() const { return errors_; }
  int Retries() const { return retries_total_; }
  std::string FirstError() const { return first_error_; }

  void Open(int n) {
    conns_.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      conns_[static_cast<std::size_t>(i)].id = i;
      StartConnect(conns_[static_cast<std::size_t>(i)]);
    }
  }

  /// Queues bytes and the replies they will produce; flushes as far as the socket allows.
  void Send(Conn& c, const std::string& bytes, std::initializer_list<Reply> replies) {
    for (Reply r : replies) c.expect.push_back(r);
    std::size_t sent = 0;
    if (!c.connecting && !c.closed && c.out.size() == c.out_off) {  // nothing queued: no copy
      const ssize_t w = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        Fail(c, std::string("send: ") + std::strerror(errno));
        return;
      }
      if (w > 0) sent = static_cast<std::size_t>(w);
      if (sent == bytes.size()) return;
    }
    c.out.append(bytes, sent);
    if (!c.connecting) Flush(c);
  }

  /// Runs until pred() or the deadline; returns pred().
  bool RunUntil(const std::function<bool()>& pred, Clock::time_point deadline) {
    std::vector<epoll_event> evs(4096);
    while (!pred()) {
      const auto now = Clock::now();
      if (now >= deadline) return false;
      for (int id : std::exchange(retry_queue_, {})) {
        Conn& c = conns_[static_cast<std::size_t>(id)];
        if (c.retry_at <= now) {
          StartConnect(c);
        } else {
          retry_queue_.push_back(id);
        }
      }
      const int timeout_ms = retry_queue_.empty() ? 20 : 5;
      const int k = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), timeout_ms);
      if (k < 0 && errno != EINTR) throw std::runtime_error("epoll_wait failed");
      for (int i = 0; i < k; ++i) {
        Conn& c = conns_[evs[static_cast<std::size_t>(i)].data.u32];
        if (c.closed || c.fd < 0) continue;
        if (c.connecting) {
          FinishConnect(c);
          continue;
        }
        const std::uint32_t e = evs[static_cast<std::size_t>(i)].events;
        if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
          Read(c, (e & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) != 0);
        }
        if (!c.closed && (evs[static_cast<std::size_t>(i)].events & EPOLLOUT)) Flush(c);
      }
    }
    return true;
  }

  // Closes with an RST (SO_LINGER 0): a FIN would leave every client port in TIME_WAIT for
  // 60 s, and after a few 16k-client runs connect() spends most of its time searching the
  // crowded ephemeral port range (__inet_hash_connect), which measures the loader, not the server.
  void CloseAll() {
    const linger rst{1, 0};
    for (Conn& c : conns_) {
      if (c.fd >= 0) setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
      c.closed = true;
    }
  }

  /// Connections that finished the handshake (the PING echo) so far.
  int handshaken = 0;

 private:
  void StartConnect(Conn& c) {
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      Fail(c, std::string("socket(): ") + std::strerror(errno) + " (raise RLIMIT_NOFILE)");
      return;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c.id >= kClientsPerSource) {
      // 16k clients from one address make connect() quadratic in the kernel: once one parity
      // of the ephemeral range is used up, every connect() re-scans it (__inet_hash_connect).
      // Real clients come from many hosts; here 127.0.0.2, .3, ... take the clients past 8192.
      setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sockaddr_in src{};
      src.sin_family = AF_INET;
      src.sin_addr.s_addr =
          htonl(INADDR_LOOPBACK + static_cast<std::uint32_t>(c.id) / kClientsPerSource);
      if (::bind(c.fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
        Fail(c, std::string("bind(127.0.0.x): ") + std::strerror(errno));
        return;
      }
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port_);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u32 = static_cast<std::uint32_t>(c.id);
    epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
    c.connecting = true;
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      FinishConnect(c);
    } else if (errno != EINPROGRESS) {
      Retry(c, errno);
    }
  }

  void FinishConnect(Conn& c) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Retry(c, err);
      return;
    }
    c.connecting = false;
    std::string hs;
    Handshake(hs);
    c.out.insert(0, hs);
    c.expect.push_front(Reply::kU32);
    Flush(c);
  }

  // Like c10d's client: refused/reset/timeout are retried after a jittered backoff.
  void Retry(Conn& c, int err) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.fd = -1;
    if ((err != ECONNREFUSED && err != ECONNRESET && err != ETIMEDOUT && err != EAGAIN) ||
        c.retries > 50) {
      Fail(c, std::string("connect: ") + std::strerror(err));
      return;
    }
    ++c.retries;
    ++retries_total_;
    const int base = std::min(2000, 50 << std::min(c.retries, 5));
    c.retry_at = Clock::now() + std::chrono::milliseconds(base / 2 + std::rand() % base);
    retry_queue_.push_back(c.id);
  }

  void Fail(Conn& c, const std::string& why) {
    if (first_error_.empty()) first_error_ = why;
    ++errors_;
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.closed = true;
  }

  void Flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t w =
          ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        Fail(c, std::string("send: ") + std::strerror(errno));
        return;
      }
      c.out_off += static_cast<std::size_t>(w);
    }
    c.out.clear();
    c.out_off = 0;
  }

  // Edge-triggered: a short read drained the socket (a later arrival raises a new edge), so
  // only a hang-up makes it read on to EOF. Saves the EAGAIN recv() per reply.
  void Read(Conn& c, bool to_eof) {
    char buf[16384];
    for (;;) {
      const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
      if (r > 0) {
        c.in.append(buf, static_cast<std::size_t>(r));
        if (static_cast<std::size_t>(r) < sizeof buf && !to_eof) break;
        continue;
      }
      if (r == 0) {
        Fail(c, "server closed a connection");
        return;
      }
      if (errno == EAGAIN || errno == EINTR) break;
      Fail(c, std::string("recv: ") + std::strerror(errno));
      return;
    }
    Parse(c);
  }

  void Parse(Conn& c) {
    for (;;) {
      if (c.expect.empty() || c.closed) break;
      const std::size_t avail = c.in.size() - c.in_off;
      const char* p = c.in.data() + c.in_off;
      std::int64_t iv = 0;
      std::string_view blob;
      std::size_t used = 0;
      switch (c.expect.front()) {
        case Reply::kU8:
          if (avail < 1) goto out;
          iv = static_cast<unsigned char>(p[0]);
          used = 1;
          break;
        case Reply::kU32: {
          if (avail < 4) goto out;
          std::uint32_t v;
          std::memcpy(&v, p, 4);
          iv = v;
          used = 4;
          break;
        }
        case Reply::kI64:
          if (avail < 8) goto out;
          std::memcpy(&iv, p, 8);
          used = 8;
          break;
        case Reply::kBlob: {
          if (avail < 8) goto out;
          std::uint64_t n;
          std::memcpy(&n, p, 8);
          if (avail < 8 + n) goto out;
          blob = std::string_view(p + 8, n);
          used = 8 + n;
          break;
        }
      }
      {
        const Reply kind = c.expect.front();
        c.expect.pop_front();
        c.in_off += used;
        if (kind == Reply::kU32 && c.state == 0) {  // PING echo: handshake done
          ++handshaken;
          c.state = 1;
        }
        on_reply_(c, iv, blob);
      }
    }
  out:
    if (c.in_off == c.in.size()) {
      c.in.clear();
      c.in_off = 0;
    } else if (c.in_off > 65536) {
      c.in.erase(0, c.in_off);
      c.in_off = 0;
    }
  }

  int ep_ = -1;
  std::uint16_t port_;
  OnReply on_reply_;
  std::vector<Conn> conns_;
  std::vector<int> retry_queue_;
  int errors_ = 0;
  int retries_total_ = 0;
  std::string first_error_;
};

}  // namespace store_bench
