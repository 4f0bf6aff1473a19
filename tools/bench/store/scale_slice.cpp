// One loader process of the --scale rendezvous: see scale_slice.hpp.
#include "scale_slice.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "loader.hpp"

namespace store_bench {
namespace {

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

enum State : std::uint8_t {
  kNotStarted,
  kConnecting,
  kHandshake,  // VALIDATE + PING sent: expecting the u32 nonce
  kAdding,     // ADD sent: expecting the i64 count
  kWaiting,    // WAIT sent: expecting STOP_WAITING (u8)
  kGetting,    // GET sent: expecting the value "1" (u64 length + 1 byte)
  kDone,
  kFailed,
};

// One client: its socket and the reply it is reading (every reply here is at most 9 bytes).
struct Client {
  int fd = -1;
  State state = kNotStarted;
  std::uint8_t have = 0;     // bytes of the current reply read so far
  std::uint8_t retries = 0;  // connect attempts retried
  char in[9] = {};
};

std::uint8_t ReplySize(State s) {
  switch (s) {
    case kHandshake:
      return 4;
    case kAdding:
      return 8;
    case kWaiting:
      return 1;
    case kGetting:
      return 9;
    default:
      return 0;
  }
}

constexpr int kStartBatch = 256;  // connects started per loop turn, between event batches
constexpr int kMaxEvents = 1024;

class Slice {
 public:
  Slice(const SliceSpec& spec, SliceProgress& progress)
      : spec_(spec), prog_(progress), clients_(static_cast<std::size_t>(spec.count)) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    nonce_ = static_cast<std::uint32_t>(getpid());
    Handshake(hello_);
    Add(add_, spec.count_key, 1);
    Wait(wait_, spec.done_key);
    Set(set_wait_, spec.done_key, "1");
    Wait(set_wait_, spec.done_key);
    Get(get_, spec.done_key);
    live_ = spec.count;
    rng_.seed(nonce_);
  }
  ~Slice() {
    const linger rst{1, 0};  // RST: no TIME_WAIT for 100k ports (loader.hpp CloseAll)
    for (Client& c : clients_) {
      if (c.fd < 0) continue;
      setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
      ::close(c.fd);
    }
    ::close(ep_);
  }
  Slice(const Slice&) = delete;
  Slice& operator=(const Slice&) = delete;

  void Run(const std::atomic<int>& stop) {
    if (ep_ < 0) {
      Error("epoll_create1: " + std::string(std::strerror(errno)));
      return;
    }
    std::vector<epoll_event> evs(kMaxEvents);
    while (stop.load(std::memory_order_relaxed) == 0) {
      const std::int64_t now = NowNs();
      if (now >= spec_.deadline_ns) return;
      StartMore();
      FireRetries(now);
      const bool more = next_ < spec_.count && !WindowFull();
      const int timeout_ms = more ? 0 : (retry_.empty() && live_ > 0 ? 20 : 5);
      const int k = epoll_wait(ep_, evs.data(), kMaxEvents, timeout_ms);
      for (int i = 0; i < k; ++i) OnEvent(evs[static_cast<std::size_t>(i)]);
    }
  }

 private:
  bool WindowFull() const {
    return spec_.connect_window > 0 && connecting_ >= spec_.connect_window;
  }

  void StartMore() {
    for (int started = 0; started < kStartBatch && next_ < spec_.count && !WindowFull();
         ++started) {
      StartConnect(next_++);
      if (next_ == spec_.count) prog_.all_started_ns.store(NowNs(), std::memory_order_relaxed);
    }
  }

  void StartConnect(int i) {
    Client& c = clients_[static_cast<std::size_t>(i)];
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      Fail(c, std::string("socket(): ") + std::strerror(errno) + " (raise RLIMIT_NOFILE)");
      return;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr =
        htonl(INADDR_LOOPBACK + static_cast<std::uint32_t>(spec_.first + i) /
                                    static_cast<std::uint32_t>(kScaleClientsPerSource));
    if (::bind(c.fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
      Fail(c, std::string("bind(127.0.0.x): ") + std::strerror(errno));
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(spec_.port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c.state = kConnecting;
    ++connecting_;
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
      Connected(c);
    } else if (errno != EINPROGRESS) {
      Retry(i, errno);
    }
  }

  // The connect finished: say hello. EPOLLOUT stays in the set: with requests this small the
  // send buffer never fills, so it raises no edges of its own (no EPOLL_CTL_MOD needed).
  void Connected(Client& c) {
    --connecting_;
    c.state = kHandshake;
    c.have = 0;
    Send(c, hello_);
  }

  // Like c10d's client (Backoff.cpp): refused / reset / timed-out connects are retried after
  // 500 ms * 1.5^k, jittered by +-50 %.
  void Retry(int i, int err) {
    Client& c = clients_[static_cast<std::size_t>(i)];
    if (c.state == kConnecting) --connecting_;
    c.state = kNotStarted;
    ::close(c.fd);
    c.fd = -1;
    const bool retryable = err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT ||
                           err == EAGAIN || err == EPIPE;
    if (!retryable || c.retries >= 40) {
      Fail(c, std::string("connect: ") + std::strerror(err));
      return;
    }
    const double interval = 500.0 * std::pow(1.5, std::min<int>(c.retries, 12));
    ++c.retries;
    prog_.retries.fetch_add(1, std::memory_order_relaxed);
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    const auto delay_ns =
        static_cast<std::int64_t>(std::min(60000.0, interval) * jitter(rng_) * 1e6);
    retry_.emplace(NowNs() + delay_ns, i);
  }

  void FireRetries(std::int64_t now) {
    while (!retry_.empty() && retry_.top().first <= now) {
      const int i = retry_.top().second;
      retry_.pop();
      StartConnect(i);
    }
  }

  void OnEvent(const epoll_event& ev) {
    const int i = static_cast<int>(ev.data.u32);
    Client& c = clients_[static_cast<std::size_t>(i)];
    if (c.fd < 0) return;
    if (c.state == kConnecting) {
      if ((ev.events & (EPOLLERR | EPOLLHUP)) != 0) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        Retry(i, err != 0 ? err : ECONNRESET);
        return;
      }
      if ((ev.events & EPOLLOUT) == 0) return;
      Connected(c);
      // The hello's reply may already be here, and its edge came with this event.
      if ((ev.events & EPOLLIN) == 0) return;
    }
    Read(i);
  }

  void Read(int i) {
    Client& c = clients_[static_cast<std::size_t>(i)];
    for (;;) {
      const std::uint8_t need = ReplySize(c.state);
      if (need == 0) {  // nothing expected: a byte now is a protocol error, EOF a server close
        char b;
        const ssize_t r = ::recv(c.fd, &b, 1, 0);
        if (r > 0) Fail(c, "unexpected bytes from the server");
        if (r == 0) Fail(c, "the server closed a connection");
        return;
      }
      const ssize_t r = ::recv(c.fd, c.in + c.have, need - c.have, 0);
      if (r > 0) {
        c.have = static_cast<std::uint8_t>(c.have + r);
        if (c.have < need) continue;
        // A whole reply: handle it and stop. One request is in flight at a time, so nothing
        // else is queued, and the next reply raises a new edge (no EAGAIN recv per reply).
        c.have = 0;
        Handle(c);
        return;
      }
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
      const int err = r == 0 ? ECONNRESET : errno;
      if (c.state == kHandshake) {  // c10d retries connect + validate + ping as one sequence
        Retry(i, err);
      } else {
        Fail(c, r == 0 ? "the server closed a connection"
                       : std::string("recv: ") + std::strerror(err));
      }
      return;
    }
  }

  void Handle(Client& c) {
    const std::int64_t now = NowNs();
    switch (c.state) {
      case kHandshake: {
        std::uint32_t echo = 0;
        std::memcpy(&echo, c.in, 4);
        if (echo != nonce_) return Fail(c, "PING echo does not match the nonce");
        prog_.validated.fetch_add(1, std::memory_order_relaxed);
        prog_.last_validated_ns.store(now, std::memory_order_relaxed);
        c.state = kAdding;
        return Send(c, add_);
      }
      case kAdding: {
        std::int64_t count = 0;
        std::memcpy(&count, c.in, 8);
        prog_.added.fetch_add(1, std::memory_order_relaxed);
        prog_.last_added_ns.store(now, std::memory_order_relaxed);
        c.state = kWaiting;
        if (count == spec_.total && !spec_.abort) {  // the last arrival releases everyone
          prog_.nth_add_ns.store(now, std::memory_order_relaxed);
          return Send(c, set_wait_);
        }
        return Send(c, wait_);
      }
      case kWaiting:
        if (c.in[0] != 0) return Fail(c, "WAIT answered other than STOP_WAITING");
        prog_.released.fetch_add(1, std::memory_order_relaxed);
        c.state = kGetting;
        return Send(c, get_);
      case kGetting: {
        std::uint64_t len = 0;
        std::memcpy(&len, c.in, 8);
        if (len != 1 || c.in[8] != '1') return Fail(c, "GET returned another value");
        prog_.finished.fetch_add(1, std::memory_order_relaxed);
        prog_.last_finished_ns.store(now, std::memory_order_relaxed);
        c.state = kDone;
        --live_;
        return;
      }
      default:
        return;
    }
  }

  // Every request fits an empty socket buffer: a short send is a failure, not a queue.
  void Send(Client& c, const std::string& bytes) {
    const ssize_t w = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (w != static_cast<ssize_t>(bytes.size())) {
      Fail(c, w < 0 ? std::string("send: ") + std::strerror(errno) : "short send");
    }
  }

  void Fail(Client& c, const std::string& why) {
    if (prog_.errors.fetch_add(1, std::memory_order_relaxed) == 0) Error(why);
    if (c.state == kConnecting) --connecting_;
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.state = kFailed;
    --live_;
  }

  void Error(const std::string& why) {
    std::snprintf(prog_.first_error, sizeof prog_.first_error, "%s", why.c_str());
  }

  const SliceSpec& spec_;
  SliceProgress& prog_;
  std::vector<Client> clients_;
  int ep_ = -1;
  std::uint32_t nonce_ = 0;
  std::string hello_, add_, wait_, set_wait_, get_;  // requests, encoded once
  int next_ = 0;                                     // next client to start
  int connecting_ = 0;
  int live_ = 0;  // neither done nor failed
  std::priority_queue<std::pair<std::int64_t, int>, std::vector<std::pair<std::int64_t, int>>,
                      std::greater<>>
      retry_;
  std::mt19937 rng_;
};

}  // namespace

void RunSlice(const SliceSpec& spec, SliceProgress& progress, const std::atomic<int>& stop) {
  {
    Slice s(spec, progress);
    s.Run(stop);
  }
  progress.exited.store(1);
}

}  // namespace store_bench
