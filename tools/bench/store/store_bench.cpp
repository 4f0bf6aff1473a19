// tzrun_store_bench — load generator for c10d-TCPStore-compatible servers (run by hand).
//
// Starts `tzrun store` and PyTorch's own TCPStore server (libuv backend, via the venv python)
// one after the other, drives each with the same raw-protocol epoll loader, and prints a
// table plus tzrun/torch ratios:
//   idle      server RSS growth per idle, validated connection (fresh server);
//   mix       closed-loop SET+GET / ADD cycles on C connections (throughput, p50/p99 latency);
//   rdzv      N clients connect at once, VALIDATE+PING, ADD a counter, the last one SETs a
//             "done" key, everyone WAITs on it and GETs it (torch's store-based barrier shape).
// The wire format follows torch/csrc/distributed/c10d/TCPStore.cpp (see
// /work/shared/reference/tcpstore-protocol.md); user keys carry TCPStore's "/" prefix.
// Usage: see tools/bench/store/README.md or --help.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kMagic = 0x3C85F7CE;

double Seconds(Clock::duration d) {
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

void PutU64(std::string& b, std::uint64_t v) {
  b.append(reinterpret_cast<const char*>(&v), 8);
}
void PutStr(std::string& b, std::string_view s) {
  PutU64(b, s.size());
  b.append(s);
}
void Handshake(std::string& b) {
  b.push_back(static_cast<char>(kValidate));
  b.append(reinterpret_cast<const char*>(&kMagic), 4);
  b.push_back(static_cast<char>(kPing));
  const std::uint32_t nonce = static_cast<std::uint32_t>(getpid());
  b.append(reinterpret_cast<const char*>(&nonce), 4);
}
void Set(std::string& b, std::string_view k, std::string_view v) {
  b.push_back(static_cast<char>(kSet));
  PutStr(b, k);
  PutStr(b, v);
}
void Get(std::string& b, std::string_view k) {
  b.push_back(static_cast<char>(kGet));
  PutStr(b, k);
}
void Add(std::string& b, std::string_view k, std::int64_t d) {
  b.push_back(static_cast<char>(kAdd));
  PutStr(b, k);
  PutU64(b, static_cast<std::uint64_t>(d));
}
void Wait(std::string& b, std::string_view k) {
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

  std::vector<Conn>& conns() { return conns_; }
  int errors() const { return errors_; }
  int retries() const { return retries_total_; }
  std::string first_error() const { return first_error_; }

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

// ---------------------------------------------------------------------------------------
// Servers.

struct ServerProc {
  std::string name;
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::string log_path;
};

long RssKiB(pid_t pid, const char* field = "VmRSS:") {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0)
      return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
  }
  return -1;
}

ServerProc Spawn(const std::string& name, std::vector<std::string> argv,
                 const std::string& ready_marker) {
  ServerProc s;
  s.name = name;
  s.log_path = "/tmp/tzrun_store_bench." + name + "." + std::to_string(getpid()) + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, s.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  if (posix_spawn(&s.pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(errno));
  }
  posix_spawn_file_actions_destroy(&fa);
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < deadline) {
    std::ifstream f(s.log_path);
    std::string line;
    while (std::getline(f, line)) {
      const auto at = line.find(ready_marker);
      if (at == std::string::npos) continue;
      const auto colon = line.rfind(':');
      s.port = static_cast<std::uint16_t>(std::atoi(line.c_str() + colon + 1));
      return s;
    }
    int st = 0;
    if (waitpid(s.pid, &st, WNOHANG) == s.pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(s.pid, SIGKILL);
  waitpid(s.pid, nullptr, 0);
  throw std::runtime_error(name + " printed no ready line; see " + s.log_path);
}

// The server being measured, killed if the bench is interrupted (no orphans).
volatile pid_t g_server_pid = -1;

extern "C" void OnStopSignal(int sig) {
  if (g_server_pid > 0) kill(g_server_pid, SIGKILL);
  _exit(128 + sig);
}

void Stop(ServerProc& s) {
  if (s.pid <= 0) return;
  kill(s.pid, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (waitpid(s.pid, nullptr, WNOHANG) == s.pid) {
      s.pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  kill(s.pid, SIGKILL);
  waitpid(s.pid, nullptr, 0);
  s.pid = -1;
}

const char* kTorchServer = R"(
import sys, datetime, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=sys.argv[1] == "1",
                  timeout=datetime.timedelta(seconds=600))
print(f"torch store: listening on 127.0.0.1:{s.port}", flush=True)
import signal; signal.sigwait({signal.SIGTERM, signal.SIGINT})
)";

// ---------------------------------------------------------------------------------------
// Scenarios.

struct IdleResult {
  int conns = 0;
  double bytes_per_conn = 0;
  long rss_before_kib = 0;
  long rss_after_kib = 0;
  bool ok = false;
};

IdleResult RunIdle(const ServerProc& s, int n) {
  IdleResult r;
  r.conns = n;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  r.rss_before_kib = RssKiB(s.pid);
  Loader l(s.port, [](Conn&, std::int64_t, std::string_view) {});
  l.Open(n);
  r.ok = l.RunUntil([&] { return l.handshaken + l.errors() >= n; },
                    Clock::now() + std::chrono::seconds(120)) &&
         l.errors() == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  r.rss_after_kib = RssKiB(s.pid);
  r.bytes_per_conn = 1024.0 * static_cast<double>(r.rss_after_kib - r.rss_before_kib) / n;
  return r;
}

// CPU seconds (user + system, all threads) used so far by process `pid`; -1 if unknown.
double CpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// CPU seconds used by the calling thread (the loader).
double ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct MixResult {
  int conns = 0;
  double ops_per_s = 0;
  double server_cpu_us_per_op = 0;  // server CPU time / operations: efficiency, loader-independent
  double server_busy = 0;           // server CPU time / wall time (1.0 = one core saturated)
  double loader_busy = 0;           // the same for the loader thread (near 1.0: loader-bound)
  double p50_us = 0;
  double p99_us = 0;
  int errors = 0;
  bool ok = false;
};

// Each cycle: SET k (64 B, no reply; pipelined) + GET k -> blob, then ADD counter -> i64.
// Throughput counts all three operations; latency percentiles are over the GET and ADD round
// trips (SET has no reply to time).
MixResult RunMix(const ServerProc& s, int n, double seconds, int tag) {
  MixResult r;
  r.conns = n;
  const std::string value(64, 'v');
  const std::string prefix = "/bench/mix" + std::to_string(tag) + "/";
  std::vector<std::uint32_t> lat;
  lat.reserve(4'000'000);
  std::int64_t ops = 0;
  Clock::time_point start{}, stop{};
  bool measuring = false;
  bool stopping = false;
  int idle = 0;
  Loader* lp = nullptr;

  // Requests are built once: the loop should cost the loader as little as possible.
  std::vector<std::string> set_get(static_cast<std::size_t>(n) * 8);
  std::vector<std::string> add(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) {
    for (int k = 0; k < 8; ++k) {
      const std::string key = prefix + std::to_string(id) + "/" + std::to_string(k);
      std::string& b = set_get[static_cast<std::size_t>(id) * 8 + static_cast<std::size_t>(k)];
      Set(b, key, value);
      Get(b, key);
    }
    Add(add[static_cast<std::size_t>(id)], prefix + "ctr" + std::to_string(id % 16), 1);
  }
  auto issue = [&](Conn& c) {
    if (stopping) {
      ++idle;
      return;
    }
    c.state = 2;
    c.t_sent = Clock::now();
    lp->Send(c, set_get[static_cast<std::size_t>(c.id) * 8 + static_cast<std::size_t>(c.n++ & 7)],
             {Reply::kBlob});
  };
  Loader l(s.port, [&](Conn& c, std::int64_t, std::string_view) {
    const auto now = Clock::now();
    if (c.state == 1) {  // handshake done
      issue(c);
      return;
    }
    if (measuring) {
      lat.push_back(static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(now - c.t_sent).count()));
    }
    if (c.state == 2) {  // GET reply: SET + GET done, send ADD
      if (measuring) ops += 2;
      c.state = 3;
      c.t_sent = now;
      lp->Send(c, add[static_cast<std::size_t>(c.id)], {Reply::kI64});
    } else {  // ADD reply
      if (measuring) ops += 1;
      issue(c);
    }
  });
  lp = &l;
  l.Open(n);
  if (!l.RunUntil([&] { return l.handshaken + l.errors() >= n; },
                  Clock::now() + std::chrono::seconds(120))) {
    return r;
  }
  // Warm up, then measure.
  l.RunUntil([] { return false; }, Clock::now() + std::chrono::milliseconds(500));
  measuring = true;
  const double cpu0 = CpuSeconds(s.pid);
  const double loader0 = ThreadCpuSeconds();
  start = Clock::now();
  l.RunUntil([] { return false; }, start + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(seconds)));
  stop = Clock::now();
  const double cpu1 = CpuSeconds(s.pid);
  const double loader1 = ThreadCpuSeconds();
  measuring = false;
  stopping = true;
  l.RunUntil([&] { return idle + l.errors() >= n; }, Clock::now() + std::chrono::seconds(30));
  r.errors = l.errors();
  r.ops_per_s = static_cast<double>(ops) / Seconds(stop - start);
  if (cpu0 >= 0 && cpu1 >= 0 && ops > 0) {
    r.server_cpu_us_per_op = 1e6 * (cpu1 - cpu0) / static_cast<double>(ops);
    r.server_busy = (cpu1 - cpu0) / Seconds(stop - start);
    r.loader_busy = (loader1 - loader0) / Seconds(stop - start);
  }
  if (!lat.empty()) {
    std::sort(lat.begin(), lat.end());
    r.p50_us = lat[lat.size() / 2];
    r.p99_us = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  }
  r.ok = r.errors == 0;
  return r;
}

// TcpExt ListenOverflows from /proc/net/netstat (host-wide; -1 if unreadable): connects the
// kernel dropped because an accept queue was full. Each costs the client a SYN retransmission
// (1 s, then 2 s, ...), which is what a slow-accepting server looks like in the storm.
long ListenOverflows() {
  std::ifstream f("/proc/net/netstat");
  std::string names, values;
  while (std::getline(f, names) && std::getline(f, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "ListenOverflows") return std::stol(value);
    }
  }
  return -1;
}

struct RdzvResult {
  int clients = 0;
  double open_s = 0;     // the loader's connect() calls (client side, not the server)
  double connect_s = 0;  // all clients connected + validated
  double add_s = 0;      // last ADD answered (the N-th arrival)
  double total_s = 0;    // every client got the released GET
  double release_s = 0;  // total - add: WAIT fan-out + GETs
  int retries = 0;
  long listen_overflows = -1;  // host-wide delta during the run
  int errors = 0;
  bool ok = false;
  std::string error;
};

RdzvResult RunRendezvous(const ServerProc& s, int n, double timeout_s, int tag) {
  RdzvResult r;
  r.clients = n;
  const std::string count = "/bench/rdzv" + std::to_string(tag) + "/count";
  const std::string done = "/bench/rdzv" + std::to_string(tag) + "/done";
  int finished = 0;
  Clock::time_point t_connected{}, t_added{};
  Loader* lp = nullptr;
  Loader l(s.port, [&](Conn& c, std::int64_t iv, std::string_view blob) {
    switch (c.state) {
      case 1: {  // validated: ADD the counter
        if (lp->handshaken == n) t_connected = Clock::now();
        std::string b;
        Add(b, count, 1);
        c.state = 2;
        lp->Send(c, b, {Reply::kI64});
        break;
      }
      case 2: {  // ADD reply: the last arrival sets "done"; everyone waits on it
        std::string b;
        if (iv == n) {
          t_added = Clock::now();
          Set(b, done, "1");
        }
        Wait(b, done);
        c.state = 3;
        lp->Send(c, b, {Reply::kU8});
        break;
      }
      case 3: {  // STOP_WAITING: GET the value, as TCPStore::get does after WAIT
        std::string b;
        Get(b, done);
        c.state = 4;
        lp->Send(c, b, {Reply::kBlob});
        break;
      }
      case 4:
        if (blob == "1") ++finished;
        c.state = 5;
        break;
      default:
        break;
    }
  });
  lp = &l;
  const long overflows0 = ListenOverflows();
  const auto t0 = Clock::now();
  l.Open(n);
  r.open_s = Seconds(Clock::now() - t0);
  r.ok = l.RunUntil(
      [&] { return finished + l.errors() >= n; },
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s)));
  const auto t1 = Clock::now();
  r.errors = n - finished;
  r.ok = r.ok && finished == n;
  r.error = r.ok ? "" : (l.first_error().empty() ? "timeout" : l.first_error());
  r.retries = l.retries();
  const long overflows1 = ListenOverflows();
  if (overflows0 >= 0 && overflows1 >= 0) r.listen_overflows = overflows1 - overflows0;
  r.connect_s = t_connected == Clock::time_point{} ? -1 : Seconds(t_connected - t0);
  r.add_s = t_added == Clock::time_point{} ? -1 : Seconds(t_added - t0);
  r.total_s = Seconds(t1 - t0);
  r.release_s = t_added == Clock::time_point{} ? -1 : Seconds(t1 - t_added);
  return r;
}

// ---------------------------------------------------------------------------------------

struct Options {
  std::string tzrun;
  std::string python;
  std::vector<int> mix_conns{1, 64, 1024};
  std::vector<int> rdzv{1000, 4000, 16000};
  int idle = 4096;
  double seconds = 3.0;
  double rdzv_timeout = 300.0;
  int repeat = 3;
  bool pin = true;
  std::vector<std::string> servers{"tzrun", "torch"};
};

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

std::vector<int> ParseInts(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoi(item));
  }
  return out;
}

std::string Dir(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

struct ServerResults {
  IdleResult idle;
  std::vector<MixResult> mix;
  std::vector<RdzvResult> rdzv;
  long start_rss_kib = 0;
  long peak_rss_kib = 0;
};

std::string Fmt(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

using Results = std::vector<std::pair<std::string, ServerResults>>;

/// Markdown table: one column per server, then "tzrun vs X" for every other server (>1x means
/// tzrun is better: throughput tzrun/X; times, latency and memory X/tzrun).
void PrintTable(const Options& o, const Results& res) {
  const ServerResults* ours = nullptr;
  for (const auto& [name, r] : res) {
    if (name == "tzrun") ours = &r;
  }
  std::vector<const std::pair<std::string, ServerResults>*> others;
  for (const auto& e : res) {
    if (ours != nullptr && e.first != "tzrun") others.push_back(&e);
  }
  std::printf("\n| scenario | metric |");
  for (const auto& e : res) std::printf(" %s |", e.first.c_str());
  for (const auto* e : others) std::printf(" tzrun vs %s |", e->first.c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < res.size() + others.size(); ++i) std::printf("---|");
  std::printf("\n");
  using Get = std::function<double(const ServerResults&)>;
  auto row = [&](const std::string& scen, const std::string& metric, const Get& get, const char* f,
                 bool higher_better, bool with_ratio = true) {
    std::printf("| %s | %s |", scen.c_str(), metric.c_str());
    for (const auto& e : res) {
      const double v = get(e.second);
      std::printf(" %s |", v < 0 ? "fail" : Fmt(v, f).c_str());
    }
    for (const auto* e : others) {
      const double a = get(*ours);
      const double b = get(e->second);
      const double q = higher_better ? a / b : b / a;
      std::printf(" %s |", with_ratio && a > 0 && b > 0 ? Fmt(q, "%.2fx").c_str() : "-");
    }
    std::printf("\n");
  };
  if (o.idle > 0) {
    row(
        "idle " + std::to_string(o.idle) + " conns", "RSS per connection (KiB)",
        [](const ServerResults& r) { return r.idle.ok ? r.idle.bytes_per_conn / 1024 : -1; },
        "%.2f", false);
  }
  for (std::size_t i = 0; i < o.mix_conns.size(); ++i) {
    const std::string sc = "mix " + std::to_string(o.mix_conns[i]) + " conns";
    row(
        sc, "ops/s", [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].ops_per_s : -1; },
        "%.0f", true);
    row(
        sc, "server CPU per op (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].server_cpu_us_per_op : -1; },
        "%.2f", false);
    row(
        sc, "server CPU busy (cores)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].server_busy : -1; }, "%.2f",
        false, false);
    row(
        sc, "loader CPU busy (cores)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].loader_busy : -1; }, "%.2f",
        false, false);
    row(
        sc, "p50 latency (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].p50_us : -1; }, "%.0f", false);
    row(
        sc, "p99 latency (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].p99_us : -1; }, "%.0f", false);
  }
  for (std::size_t i = 0; i < o.rdzv.size(); ++i) {
    const std::string sc = "rendezvous " + std::to_string(o.rdzv[i]);
    row(
        sc, "total (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].total_s : -1; }, "%.3f",
        false);
    row(
        sc, "all connected (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].connect_s : -1; }, "%.3f",
        false);
    row(
        sc, "release after last ADD (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].release_s : -1; }, "%.3f",
        false);
    row(
        sc, "connect retries",
        [i](const ServerResults& r) { return static_cast<double>(r.rdzv[i].retries); }, "%.0f",
        false, false);
    row(
        sc, "accept-queue overflows",
        [i](const ServerResults& r) { return static_cast<double>(r.rdzv[i].listen_overflows); },
        "%.0f", false, false);
  }
  row(
      "server process", "RSS after start (MiB)",
      [](const ServerResults& r) { return static_cast<double>(r.start_rss_kib) / 1024; }, "%.1f",
      false, false);
  row(
      "server process", "peak RSS (MiB)",
      [](const ServerResults& r) { return static_cast<double>(r.peak_rss_kib) / 1024; }, "%.1f",
      false, false);
  for (const auto& [name, r] : res) {
    for (const auto& z : r.rdzv) {
      if (!z.ok) {
        std::printf("note: %s rendezvous %d failed: %s\n", name.c_str(), z.clients,
                    z.error.c_str());
      }
    }
  }
}

int Main(int argc, char** argv) {
  Options o;
  const std::string self_dir = Dir(argv[0]);
  o.tzrun = self_dir + "/tzrun";
  o.python = TZRUN_SOURCE_DIR "/.venv/bin/python";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tzrun") {
      o.tzrun = val();
    } else if (a == "--python") {
      o.python = val();
    } else if (a == "--conns") {
      o.mix_conns = ParseInts(val());
    } else if (a == "--rendezvous") {
      o.rdzv = ParseInts(val());
    } else if (a == "--idle") {
      o.idle = std::stoi(val());
    } else if (a == "--seconds") {
      o.seconds = std::stod(val());
    } else if (a == "--rdzv-timeout") {
      o.rdzv_timeout = std::stod(val());
    } else if (a == "--repeat") {
      o.repeat = std::max(1, std::stoi(val()));
    } else if (a == "--no-pin") {
      o.pin = false;
    } else if (a == "--servers") {
      o.servers.clear();
      std::stringstream ss(val());
      std::string item;
      while (std::getline(ss, item, ',')) o.servers.push_back(item);
    } else {
      std::printf(
          "usage: %s [--tzrun PATH] [--python PATH] [--servers "
          "tzrun,torch,torch-nodns,torch-legacy,LABEL=PATH]\n"
          "          [--conns 1,64,1024] [--seconds 3] [--rendezvous 1000,4000,16000]\n"
          "          [--rdzv-timeout 300] [--idle 4096] [--repeat 3] [--no-pin]\n",
          argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }

  // Every client and server connection needs a descriptor: raise the soft limit to the hard
  // one (children inherit it) and warn when the largest scenario cannot fit.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int biggest = o.idle;
  for (int n : o.mix_conns) biggest = std::max(biggest, n);
  for (int n : o.rdzv) biggest = std::max(biggest, n);
  if (rl.rlim_cur < static_cast<rlim_t>(biggest) + 64) {
    std::fprintf(stderr,
                 "warning: RLIMIT_NOFILE is %llu but %d connections are needed; "
                 "raise it (ulimit -Hn / limits.conf)\n",
                 static_cast<unsigned long long>(rl.rlim_cur), biggest + 64);
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, OnStopSignal);
  signal(SIGTERM, OnStopSignal);

  std::vector<std::pair<std::string, ServerResults>> res;
  int tag = 0;
  for (const std::string& name : o.servers) {
    // Pinning: the server (and every thread it starts) on CPU 0, the loader on CPU 1, so both
    // servers see the same cross-core wake-ups rather than whatever the scheduler picks.
    const bool pin = o.pin && std::thread::hardware_concurrency() >= 2;
    if (pin) PinTo(0);
    ServerProc s;
    const auto eq = name.find('=');
    const std::string label = name.substr(0, eq);
    if (name == "tzrun" || eq != std::string::npos) {
      // "LABEL=PATH" runs another tzrun binary (e.g. a baseline build) in the same run.
      const std::string bin = eq == std::string::npos ? o.tzrun : name.substr(eq + 1);
      s = Spawn(label, {bin, "store", "--host", "127.0.0.1", "--port", "0", "--log-level", "error"},
                "listening on ");
    } else if (name == "torch" || name == "torch-legacy" || name == "torch-nodns") {
      const bool nodns = name == "torch-nodns";
      if (nodns) setenv("LD_PRELOAD", TZRUN_BENCH_NODNS_LIB, 1);
      s = Spawn(name, {o.python, "-c", kTorchServer, name == "torch-legacy" ? "0" : "1"},
                "listening on ");
      if (nodns) unsetenv("LD_PRELOAD");
    } else {
      std::fprintf(stderr, "unknown server '%s' (use tzrun, torch, torch-nodns, torch-legacy)\n",
                   name.c_str());
      return 2;
    }
    g_server_pid = s.pid;
    if (pin) PinTo(1);
    std::fprintf(stderr, "[%s] pid %d port %u%s\n", label.c_str(), s.pid, s.port,
                 pin ? " (server on CPU 0, loader on CPU 1)" : "");
    res.emplace_back(label, ServerResults{});
    ServerResults& sr = res.back().second;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sr.start_rss_kib = RssKiB(s.pid);
    if (o.idle > 0) {
      sr.idle = RunIdle(s, o.idle);
      std::fprintf(stderr, "[%s] idle %d conns: %.0f B/conn\n", label.c_str(), o.idle,
                   sr.idle.bytes_per_conn);
    }
    for (int n : o.mix_conns) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::vector<MixResult> runs;
      for (int k = 0; k < o.repeat; ++k) runs.push_back(RunMix(s, n, o.seconds, ++tag));
      std::sort(runs.begin(), runs.end(),
                [](const MixResult& x, const MixResult& y) { return x.ops_per_s < y.ops_per_s; });
      sr.mix.push_back(runs[runs.size() / 2]);  // the run with the median throughput
      const auto& m = sr.mix.back();
      std::fprintf(
          stderr,
          "[%s] mix %d conns: %.0f ops/s (server %.2f us CPU/op, %.2f cores; loader %.2f cores) "
          "p50 %.0f us "
          "p99 %.0f us%s\n",
          label.c_str(), n, m.ops_per_s, m.server_cpu_us_per_op, m.server_busy, m.loader_busy,
          m.p50_us, m.p99_us, m.ok ? "" : " (errors)");
    }
    for (int n : o.rdzv) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      sr.rdzv.push_back(RunRendezvous(s, n, o.rdzv_timeout, ++tag));
      const auto& z = sr.rdzv.back();
      std::fprintf(stderr,
                   "[%s] rendezvous %d: %.3f s (loader connect() calls %.3f, connect %.3f, add "
                   "%.3f, release %.3f) "
                   "retries %d, accept-queue overflows %ld %s\n",
                   label.c_str(), n, z.total_s, z.open_s, z.connect_s, z.add_s, z.release_s,
                   z.retries, z.listen_overflows, z.ok ? "ok" : z.error.c_str());
    }
    sr.peak_rss_kib = RssKiB(s.pid, "VmHWM:");
    Stop(s);
    g_server_pid = -1;
  }
  PrintTable(o, res);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun_store_bench: %s\n", e.what());
    return 1;
  }
}
