// c10d-TCPStore-compatible server on asio (see tzrun/store/server.hpp).
//
// Design: one io_context run by one thread owns every piece of state, so handlers need no
// locks and each request is atomic w.r.t. the others (as in both upstream backends).
//  * Accept: acceptor.async_wait + a loop of accept4(SOCK_NONBLOCK|SOCK_CLOEXEC) until EAGAIN;
//    EMFILE/ENFILE/... are logged and retried on a timer while existing connections are served.
//  * Connections live in a private epoll set (edge-triggered, EPOLLIN|EPOLLOUT|EPOLLRDHUP),
//    whose descriptor is the one thing asio waits on. asio's per-socket async_wait costs an
//    epoll_ctl(MOD) per wait; the private set is registered once per connection, and one
//    epoll_wait hands over a whole batch of ready connections (the profile of the 1024-client
//    mix showed epoll_ctl at 25% of the syscalls before).
//  * Read: non-blocking recv() into ONE shared buffer owned by the server, so an idle
//    connection holds no read buffer. A short read means the socket was drained (TCP copies
//    all queued bytes up to the buffer size), and any later arrival raises a new edge; only
//    when the event also reported a hang-up does the loop read on to EOF. Every complete frame
//    of a read is handled before anything is written.
//  * Write: per-connection queue of replies (small ones inline, others shared pre-serialised
//    buffers), flushed once per event batch with one sendmsg() (scatter/gather) per
//    connection; on EAGAIN the EPOLLOUT edge resumes it. Stored values are kept in their wire
//    form (u64 length + bytes) so a GET fan-out shares one buffer. A connection whose unsent
//    output exceeds kHighWaterBytes is not read until its output drains (never block on slow
//    readers).
#include "tzrun/store/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ip/v6_only.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tzrun/store/codec.hpp"

namespace tzrun::store {
namespace {

using asio::ip::tcp;
using Buffer = std::shared_ptr<const std::string>;

constexpr std::size_t kReadChunk = std::size_t{256} * 1024;             // shared read buffer
constexpr std::size_t kReadBudget = std::size_t{1024} * 1024;           // per wake-up, then yield
constexpr std::size_t kHighWaterBytes = std::size_t{64} * 1024 * 1024;  // pause reading above this
constexpr int kAcceptBatch = 512;  // accepts per wake-up, then yield
constexpr std::size_t kMaxIov = 64;
constexpr int kMaxEvents = 1024;  // connections handled per epoll_wait
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr auto kAcceptLogInterval = std::chrono::seconds(10);

Buffer make_static(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}
const Buffer& stop_waiting_reply() {
  static const Buffer b = make_static(encode_wait_reply(WaitResponseType::kStopWaiting));
  return b;
}
const Buffer& wait_canceled_reply() {
  static const Buffer b = make_static(encode_wait_reply(WaitResponseType::kWaitCanceled));
  return b;
}
const Buffer& empty_value_reply() {
  static const Buffer b = make_static(encode_bytes_reply({}));
  return b;
}
const Buffer& check_reply(bool ready) {
  static const Buffer r = make_static(encode_check_reply(CheckResponseType::kReady));
  static const Buffer n = make_static(encode_check_reply(CheckResponseType::kNotReady));
  return ready ? r : n;
}

// A key for log messages: printable ASCII kept, other bytes as \xNN, long keys shortened.
std::string printable(std::string_view key) {
  std::string out;
  const std::size_t limit = 80;
  for (std::size_t i = 0; i < key.size() && out.size() < limit; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (out.size() >= limit) out += "...";
  return "'" + out + "'";
}

std::string errno_text(int err) {
  // strerrordesc_np is not portable; strerror is fine here (only called on the I/O thread or
  // before it starts).
  std::string name;
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
      name = "errno " + std::to_string(err);
      break;
  }
  return std::string(std::strerror(err)) + " (" + name + ")";
}

std::string format_endpoint(const tcp::endpoint& ep) {
  const auto addr = ep.address();
  if (addr.is_v6()) return "[" + addr.to_string() + "]:" + std::to_string(ep.port());
  return addr.to_string() + ":" + std::to_string(ep.port());
}

std::string format_sockaddr(const sockaddr_storage& ss) {
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

struct Connection;

// One pending WAIT or BARRIER request.
struct Waiter {
  Connection* conn = nullptr;     // valid while registered (purged before a close)
  std::size_t pending = 0;        // registrations not yet woken
  std::vector<std::string> keys;  // keys it was registered on (for purging)
};
using WaiterPtr = std::shared_ptr<Waiter>;

// One queued reply: a shared pre-serialised buffer, or up to kInline bytes stored in place
// (ADD/PING/GETNUMKEYS replies need no allocation).
struct OutItem {
  static constexpr std::size_t kInline = 16;
  Buffer shared;
  std::uint32_t size = 0;
  char bytes[kInline];
  [[nodiscard]] const char* data() const noexcept { return shared ? shared->data() : bytes; }
};

struct Connection : std::enable_shared_from_this<Connection> {
  Connection(int socket_fd, std::uint64_t conn_id) : fd(socket_fd), id(conn_id) {}
  int fd;
  std::uint64_t id;
  std::string peer;
  RequestParser parser;
  std::vector<OutItem> out;      // queued replies
  std::size_t out_pos = 0;       // first item not completely sent
  std::size_t out_offset = 0;    // bytes of out[out_pos] already sent
  std::size_t out_bytes = 0;     // unsent bytes
  std::vector<WaiterPtr> waits;  // this connection's pending WAIT/BARRIER requests
  bool read_queued = false;      // a read continuation is posted (budget or backpressure)
  bool write_blocked = false;    // sendmsg() hit EAGAIN: the EPOLLOUT edge resumes the flush
  bool read_paused = false;      // backpressure: too much unsent output
  bool close_after_flush = false;
  bool dirty = false;  // in Impl::dirty_ (needs a flush)
  bool closed = false;
};
using ConnPtr = std::shared_ptr<Connection>;

}  // namespace

class Server::Impl {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        acceptor_(io_),
        accept_retry_(io_),
        events_desc_(io_),
        events_retry_(io_) {
    limits_.max_key_bytes = options_.max_key_bytes;
    limits_.max_value_bytes = options_.max_value_bytes;
    limits_.max_count = options_.max_count;
  }

  ~Impl() { stop(); }

  void start() {
    std::lock_guard lock(lifecycle_mu_);
    if (started_)
      throw StoreError("tzrun::store::Server::start() called twice; create a new Server");
    bind_and_listen();
    open_event_set();
    started_ = true;
    running_ = true;
    log(LogLevel::kInfo, "store listening on " + endpoint_);
    arm_accept();
    arm_events();
    thread_ = std::thread([this] { run(); });
  }

  void stop() {
    std::lock_guard lock(lifecycle_mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    asio::post(io_, [this] { shutdown_all(); });
    if (thread_.joinable()) {
      if (thread_.get_id() == std::this_thread::get_id()) {
        io_.stop();
        thread_.detach();
      } else {
        thread_.join();
      }
    }
    running_ = false;
  }

  std::uint16_t port() const noexcept { return port_.load(); }
  std::string endpoint() const {
    std::lock_guard lock(lifecycle_mu_);
    return endpoint_;
  }
  bool running() const noexcept { return running_.load(); }

  ServerStats stats() const noexcept {
    ServerStats s;
    s.connections = stat_connections_.load(std::memory_order_relaxed);
    s.accepted_total = stat_accepted_.load(std::memory_order_relaxed);
    s.rejected_total = stat_rejected_.load(std::memory_order_relaxed);
    s.protocol_errors_total = stat_protocol_errors_.load(std::memory_order_relaxed);
    s.accept_errors_total = stat_accept_errors_.load(std::memory_order_relaxed);
    s.keys = stat_keys_.load(std::memory_order_relaxed);
    s.queues = stat_queues_.load(std::memory_order_relaxed);
    s.waiters = stat_waiters_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // ---------------------------------------------------------------------------------------
  // Lifecycle

  void log(LogLevel level, const std::string& message) const {
    if (options_.log) options_.log(level, message);
  }

  void bind_and_listen() {
    std::vector<tcp::endpoint> candidates;
    const std::string shown_host = options_.host.empty() ? "[::]" : options_.host;
    if (options_.host.empty()) {
      candidates.emplace_back(asio::ip::address_v6::any(), options_.port);
      candidates.emplace_back(asio::ip::address_v4::any(), options_.port);
    } else {
      asio::error_code ec;
      auto addr = asio::ip::make_address(options_.host, ec);
      if (!ec) {
        candidates.emplace_back(addr, options_.port);
      } else {
        tcp::resolver resolver(io_);
        auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                        tcp::resolver::passive, ec);
        if (ec) {
          throw BindError("cannot start the store on " + options_.host + ":" +
                          std::to_string(options_.port) + ": cannot resolve host '" +
                          options_.host + "': " + ec.message() +
                          "; pass an IP address or a resolvable name (or \"\" for all interfaces)");
        }
        for (const auto& entry : results) candidates.push_back(entry.endpoint());
      }
    }
    int last_errno = 0;
    std::string last_what;
    tcp::endpoint last_ep;
    for (const auto& ep : candidates) {
      asio::error_code ec;
      acceptor_.open(ep.protocol(), ec);
      if (!ec) {
        ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
        if (ep.address().is_v6() && ep.address().is_unspecified()) {
          acceptor_.set_option(asio::ip::v6_only(false), ec);
          ec.clear();  // dual-stack is best effort (bindv6only hosts keep v6 only)
        }
        acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
      }
      if (!ec) acceptor_.bind(ep, ec);
      // Largest backlog the host allows: Linux clamps it to net.core.somaxconn (as
      // listen(fd, -1) in upstream's libuv and legacy backends).
      if (!ec) acceptor_.listen(INT_MAX, ec);
      if (!ec) acceptor_.non_blocking(true, ec);
      if (!ec) {
        const auto local = acceptor_.local_endpoint(ec);
        if (!ec) {
          port_ = local.port();
          endpoint_ = format_endpoint(local);
          return;
        }
      }
      last_errno = ec.value();
      last_what = ec.message();
      last_ep = ep;
      asio::error_code ignored;
      acceptor_.close(ignored);
    }
    const std::string where = options_.host.empty()
                                  ? format_endpoint(last_ep)
                                  : options_.host + ":" + std::to_string(options_.port);
    std::string fix;
    switch (last_errno) {
      case EADDRINUSE:
        fix = "port " + std::to_string(options_.port) +
              " is already in use; choose another port or stop the process using it (find it with "
              "`ss -ltnp 'sport = :" +
              std::to_string(options_.port) + "'`)";
        break;
      case EACCES:
        fix = "permission denied; ports below 1024 need privileges: choose a port >= 1024";
        break;
      case EADDRNOTAVAIL:
        fix = "address " + shown_host +
              " is not assigned to this machine; use one of this host's addresses or \"\" for all "
              "interfaces";
        break;
      default:
        fix = "check the host/port values and the network configuration";
        break;
    }
    throw BindError("cannot start the store on " + where + ": " +
                    (last_errno ? errno_text(last_errno) : last_what) + ": " + fix);
  }

  void run() {
    while (true) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        log(LogLevel::kError, std::string("store I/O loop error (continuing): ") + e.what());
      }
    }
  }

  void shutdown_all() {
    shutting_down_ = true;
    asio::error_code ec;
    acceptor_.close(ec);
    accept_retry_.cancel();
    events_desc_.cancel(ec);
    events_retry_.cancel();
    std::vector<Connection*> open;
    open.reserve(conns_.size());
    for (auto& [id, c] : conns_) open.push_back(c.get());
    for (Connection* c : open) close(*c, LogLevel::kDebug, "store shutting down");
    end_turn();
    waiters_.clear();
    log(LogLevel::kInfo, "store on " + endpoint_ + " stopped");
    io_.stop();
  }

  // ---------------------------------------------------------------------------------------
  // Accept

  void arm_accept() {
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](const asio::error_code& ec) {
      if (shutting_down_) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        log(LogLevel::kError, "waiting for connections failed: " + ec.message() + "; retrying");
        retry_accept_later();
        return;
      }
      accept_ready();
    });
  }

  void retry_accept_later() {
    accept_retry_.expires_after(kAcceptRetryDelay);
    accept_retry_.async_wait([this](const asio::error_code& ec) {
      if (ec || shutting_down_) return;
      accept_ready();
    });
  }

  void accept_ready() {
    if (shutting_down_ || !acceptor_.is_open()) return;
    for (int i = 0; i < kAcceptBatch; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(acceptor_.native_handle(), reinterpret_cast<sockaddr*>(&ss), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        on_accepted(fd, ss);
        continue;
      }
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        if (accept_failing_) {
          accept_failing_ = false;
          log(LogLevel::kInfo, "accepting connections again after " +
                                   std::to_string(accept_fail_streak_) + " failed accept() calls");
          accept_fail_streak_ = 0;
        }
        arm_accept();
        return;
      }
      stat_accept_errors_.fetch_add(1, std::memory_order_relaxed);
      ++accept_fail_streak_;
      const auto now = std::chrono::steady_clock::now();
      if (!accept_failing_ || now - last_accept_log_ >= kAcceptLogInterval) {
        std::string hint = (err == EMFILE || err == ENFILE)
                               ? "raise the open-file limit (ulimit -n / RLIMIT_NOFILE, or "
                                 "fs.file-max) above the number of clients"
                               : "check system memory and socket buffers";
        log(LogLevel::kWarning, "accept() on " + endpoint_ + " failed: " + errno_text(err) +
                                    " with " + std::to_string(conns_.size()) +
                                    " open connections; " + hint +
                                    ". Retrying every 100 ms while serving existing connections");
        last_accept_log_ = now;
      }
      accept_failing_ = true;
      retry_accept_later();
      return;
    }
    asio::post(io_, [this] { accept_ready(); });  // batch done: let other handlers run
  }

  void on_accepted(int fd, const sockaddr_storage& ss) {
    if (options_.max_connections != 0 && conns_.size() >= options_.max_connections) {
      ::close(fd);
      stat_rejected_.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::kWarning, "rejected connection from " + format_sockaddr(ss) +
                                  ": max_connections=" + std::to_string(options_.max_connections) +
                                  " reached (raise --max-connections)");
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_shared<Connection>(fd, next_id_++);
    c->peer = format_sockaddr(ss);
    c->parser = RequestParser(RequestParser::Options{limits_, true});
    // Edge-triggered; EPOLLOUT is always in the set but only fires after a full socket buffer
    // drains (or together with EPOLLIN). Registering reports the current state at once, so a
    // VALIDATE that is already queued is read in the next batch.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c.get();
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      const int err = errno;
      ::close(fd);
      log(LogLevel::kWarning,
          "cannot register connection from " + c->peer + ": epoll_ctl: " + errno_text(err));
      return;
    }
    conns_.emplace(c->id, c);
    stat_accepted_.fetch_add(1, std::memory_order_relaxed);
    stat_connections_.store(conns_.size(), std::memory_order_relaxed);
    if (options_.log) log(LogLevel::kDebug, "connection from " + c->peer);
  }

  // ---------------------------------------------------------------------------------------
  // Event batches

  void open_event_set() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      throw StoreError(
          "cannot start the store: epoll_create1 failed: " + errno_text(errno) +
          "; raise the open-file limit (ulimit -n) or check fs.epoll.max_user_watches");
    }
    events_.resize(kMaxEvents);
    events_desc_.assign(epoll_fd_);
  }

  void arm_events() {
    events_desc_.async_wait(
        asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
          if (shutting_down_ || ec == asio::error::operation_aborted) return;
          if (!ec) {
            poll_events();
            return;
          }
          log(LogLevel::kError,
              "waiting for connection events failed: " + ec.message() + "; retrying in 100 ms");
          events_retry_.expires_after(kAcceptRetryDelay);
          events_retry_.async_wait([this](const asio::error_code& tec) {
            if (!tec && !shutting_down_) poll_events();
          });
        });
  }

  // Handles every ready connection, then writes each one's replies with one sendmsg().
  void poll_events() {
    int n = ::epoll_wait(epoll_fd_, events_.data(), kMaxEvents, 0);
    if (n < 0) n = 0;  // EINTR: nothing ready
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = events_[static_cast<std::size_t>(i)];
      auto* c = static_cast<Connection*>(ev.data.ptr);  // closed ones wait in graveyard_
      if (c->closed) continue;
      if ((ev.events & EPOLLOUT) != 0 && c->write_blocked) {
        c->write_blocked = false;
        flush(*c);
        if (c->closed) continue;
      }
      if ((ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        on_readable(*c, (ev.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
      }
    }
    end_turn();
    if (shutting_down_) return;
    if (n == kMaxEvents) {
      asio::post(io_, [this] {  // more may be ready: let accepts and timers run first
        if (!shutting_down_) poll_events();
      });
    } else {
      arm_events();
    }
  }

  // Every top-level handler ends here: write what the turn produced, then free the
  // connections it closed (raw pointers to them may sit in dirty_ or in the event batch).
  void end_turn() {
    flush_dirty();
    graveyard_.clear();
  }

  // ---------------------------------------------------------------------------------------
  // Read path

  // Reads and handles what is queued. `to_eof`: keep reading until EAGAIN or EOF (after a
  // hang-up event, or when resuming without an edge); otherwise a short read ends the turn.
  void on_readable(Connection& c, bool to_eof) {
    std::size_t budget = kReadBudget;
    if (read_buf_.empty()) read_buf_.resize(kReadChunk);
    while (!c.closed && !c.read_paused) {
      const ssize_t n = ::recv(c.fd, read_buf_.data(), read_buf_.size(), 0);
      if (n > 0) {
        const auto got = static_cast<std::size_t>(n);
        process(c, std::span<const std::uint8_t>(read_buf_.data(), got));
        if (c.closed) return;
        if (c.out_bytes > kHighWaterBytes) {
          c.read_paused = true;  // resumed by flush() once the output drained
          return;
        }
        if (got < read_buf_.size() && !to_eof) return;  // drained; new data raises an edge
        if (got >= budget) {
          queue_read(c);  // yield to other connections, come back without waiting for an edge
          return;
        }
        budget -= got;
        continue;
      }
      if (n == 0) {
        on_eof(c);
        return;
      }
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;  // the next arrival raises an edge
      close(c, err == ECONNRESET ? LogLevel::kDebug : LogLevel::kWarning,
            "read failed: " + errno_text(err));
      return;
    }
  }

  void queue_read(Connection& c) {
    if (c.read_queued || c.closed) return;
    c.read_queued = true;
    asio::post(io_, [this, self = c.shared_from_this()] {
      self->read_queued = false;
      if (self->closed || shutting_down_) return;
      on_readable(*self, true);
      end_turn();
    });
  }

  void on_eof(Connection& c) {
    if (c.parser.mid_request()) {
      close(c, LogLevel::kWarning, "peer closed the connection in the middle of a request");
      return;
    }
    purge_waiters(c);
    if (c.out_bytes == 0) {
      close(c, LogLevel::kDebug, "peer closed the connection");
    } else {
      c.close_after_flush = true;
    }
  }

  void process(Connection& c, std::span<const std::uint8_t> data) {
    while (!data.empty() && !c.closed) {
      const auto result = c.parser.feed(data);
      data = data.subspan(result.consumed);
      if (result.status == RequestParser::Status::kError) {
        protocol_error(c, c.parser.error());
        return;
      }
      if (result.status == RequestParser::Status::kNeedMore) return;
      try {
        handle(c, c.parser.take_request());
      } catch (const std::exception& e) {
        close(c, LogLevel::kError,
              std::string("internal error while handling a request: ") + e.what());
        return;
      }
    }
  }

  void protocol_error(Connection& c, const std::string& reason) {
    stat_protocol_errors_.fetch_add(1, std::memory_order_relaxed);
    close(c, LogLevel::kWarning, "protocol error: " + reason);
  }

  // ---------------------------------------------------------------------------------------
  // Write path

  void mark_dirty(Connection& c) {
    if (!c.dirty) {
      c.dirty = true;
      dirty_.push_back(&c);
    }
  }

  void send(Connection& c, Buffer buffer) {
    if (c.closed || buffer->empty()) return;
    c.out_bytes += buffer->size();
    OutItem& item = c.out.emplace_back();
    item.size = static_cast<std::uint32_t>(buffer->size());
    item.shared = std::move(buffer);
    mark_dirty(c);
  }
  void send(Connection& c, std::string_view bytes) {
    if (c.closed || bytes.empty()) return;
    if (bytes.size() > OutItem::kInline) {
      send(c, std::make_shared<const std::string>(bytes));
      return;
    }
    c.out_bytes += bytes.size();
    OutItem& item = c.out.emplace_back();
    item.size = static_cast<std::uint32_t>(bytes.size());
    std::memcpy(item.bytes, bytes.data(), bytes.size());
    mark_dirty(c);
  }
  void send(Connection& c, const std::string& bytes) { send(c, std::string_view(bytes)); }
  void send(Connection& c, std::string&& bytes) {
    if (bytes.size() > OutItem::kInline) {
      send(c, std::make_shared<const std::string>(std::move(bytes)));
    } else {
      send(c, std::string_view(bytes));
    }
  }

  void flush_dirty() {
    // flush() may close connections (they stay allocated until end_turn); it never adds to
    // dirty_.
    for (std::size_t i = 0; i < dirty_.size(); ++i) {
      Connection* c = dirty_[i];
      c->dirty = false;
      if (!c->closed && !c->write_blocked) flush(*c);
    }
    dirty_.clear();
  }

  void flush(Connection& c) {
    while (c.out_pos < c.out.size()) {
      iovec iov[kMaxIov];
      std::size_t count = 0;
      for (std::size_t i = c.out_pos; i < c.out.size() && count < kMaxIov; ++i, ++count) {
        const std::size_t skip = (i == c.out_pos) ? c.out_offset : 0;
        iov[count].iov_base = const_cast<char*>(c.out[i].data() + skip);
        iov[count].iov_len = c.out[i].size - skip;
      }
      ssize_t n = 0;
      if (count == 1) {  // the common case: one reply
        n = ::send(c.fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
      } else {
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = count;
        n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
      }
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) {
          c.write_blocked = true;  // the EPOLLOUT edge calls flush() again
          return;
        }
        close(c, err == EPIPE || err == ECONNRESET ? LogLevel::kDebug : LogLevel::kWarning,
              "write failed: " + errno_text(err));
        return;
      }
      auto sent = static_cast<std::size_t>(n);
      c.out_bytes -= sent;
      while (sent > 0) {
        const std::size_t left = c.out[c.out_pos].size - c.out_offset;
        if (sent >= left) {
          sent -= left;
          c.out[c.out_pos].shared.reset();
          ++c.out_pos;
          c.out_offset = 0;
        } else {
          c.out_offset += sent;
          sent = 0;
        }
      }
      if (c.out_pos >= 256 && c.out_pos * 2 >= c.out.size()) {
        c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.out_pos));
        c.out_pos = 0;
      }
    }
    c.out.clear();
    c.out_pos = 0;
    c.out_offset = 0;
    if (c.out.capacity() > 64) c.out.shrink_to_fit();
    if (c.close_after_flush) {
      close(c, LogLevel::kDebug, "peer closed the connection");
      return;
    }
    if (c.read_paused) {
      c.read_paused = false;
      queue_read(c);  // data may already be buffered: read without waiting for an edge
    }
  }

  void close(Connection& c, LogLevel level, const std::string& reason) {
    if (c.closed) return;
    c.closed = true;
    purge_waiters(c);
    ::close(c.fd);  // also leaves the epoll set
    c.fd = -1;
    c.out.clear();
    c.out_bytes = 0;
    auto it = conns_.find(c.id);
    if (it != conns_.end()) {
      graveyard_.push_back(std::move(it->second));  // freed by end_turn()
      conns_.erase(it);
    }
    stat_connections_.store(conns_.size(), std::memory_order_relaxed);
    if (options_.log) log(level, "closed connection from " + c.peer + ": " + reason);
  }

  // ---------------------------------------------------------------------------------------
  // Store state

  static Buffer view_buffer(const std::shared_ptr<std::string>& s) { return s; }
  static std::string_view value_of(const std::string& wire) {
    return std::string_view(wire).substr(8);
  }
  static std::shared_ptr<std::string> make_value(std::string_view v) {
    auto s = std::make_shared<std::string>();
    s->reserve(8 + v.size());
    put_bytes(*s, v);
    return s;
  }

  bool present(const std::string& key) const {
    if (kv_.count(key) != 0) return true;
    auto q = queues_.find(key);
    return q != queues_.end() && !q->second.empty();
  }

  // Stores `value` in wire form into `slot`, rewriting the old buffer in place when no queued
  // reply still shares it and it is not much larger than needed (no allocation per SET/ADD).
  static void assign_value(std::shared_ptr<std::string>& slot, std::string_view value) {
    const std::size_t need = 8 + value.size();
    if (slot && slot.use_count() == 1 && slot->capacity() >= need &&
        slot->capacity() <= 2 * need + 64) {
      slot->clear();
      put_bytes(*slot, value);
      return;
    }
    slot = make_value(value);
  }

  std::shared_ptr<std::string>& store_value(const std::string& key, std::string_view value) {
    auto& slot = kv_[key];
    assign_value(slot, value);
    stat_keys_.store(kv_.size(), std::memory_order_relaxed);
    return slot;
  }

  void update_counters() {
    stat_keys_.store(kv_.size(), std::memory_order_relaxed);
    stat_queues_.store(queues_.size(), std::memory_order_relaxed);
  }

  void complete_waiter(const WaiterPtr& w) {
    Connection& c = *w->conn;
    auto it = std::find(c.waits.begin(), c.waits.end(), w);
    if (it != c.waits.end()) c.waits.erase(it);
    w->conn = nullptr;
    stat_waiters_.fetch_sub(1, std::memory_order_relaxed);
    send(c, stop_waiting_reply());
  }

  // Wake(key): every waiter registered on key loses one pending registration; those reaching
  // zero get STOP_WAITING. The key's list is cleared.
  void wake(const std::string& key) {
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;
    auto list = std::move(it->second);
    waiters_.erase(it);
    for (auto& w : list) {
      if (w->conn != nullptr && w->pending > 0 && --w->pending == 0) complete_waiter(w);
    }
  }

  // QUEUE_PUSH: release exactly one waiter. Walk the list in arrival order, consuming one
  // registration per entry, until a waiter completes (upstream's wakeupOneWaitingClient minus
  // its counter-underflow bug: consumed entries are removed).
  void wake_one(const std::string& key) {
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;
    auto& list = it->second;
    std::size_t i = 0;
    while (i < list.size()) {
      const WaiterPtr w = list[i++];
      if (w->conn == nullptr || w->pending == 0) continue;
      if (--w->pending == 0) {
        complete_waiter(w);
        break;
      }
    }
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i));
    if (list.empty()) waiters_.erase(it);
  }

  void register_waiter(Connection& c, std::vector<std::string> missing) {
    auto w = std::make_shared<Waiter>();
    w->conn = &c;
    w->pending = missing.size();
    for (const auto& k : missing) waiters_[k].push_back(w);
    w->keys = std::move(missing);
    c.waits.push_back(std::move(w));
    stat_waiters_.fetch_add(1, std::memory_order_relaxed);
  }

  void purge_waiters(Connection& c) {
    for (auto& w : c.waits) {
      for (const auto& k : w->keys) {
        auto it = waiters_.find(k);
        if (it == waiters_.end()) continue;
        auto& list = it->second;
        list.erase(std::remove(list.begin(), list.end(), w), list.end());
        if (list.empty()) waiters_.erase(it);
      }
      w->conn = nullptr;
      stat_waiters_.fetch_sub(1, std::memory_order_relaxed);
    }
    c.waits.clear();
  }

  // Parses kv[key] as an ADD counter. nullopt (and a protocol error) if not numeric.
  std::optional<std::int64_t> counter_add(Connection& c, const char* op, const std::string& key,
                                          std::int64_t delta) {
    std::int64_t current = 0;
    auto [it, inserted] = kv_.try_emplace(key);
    if (!inserted) {
      const auto parsed = parse_counter(value_of(*it->second));
      if (!parsed) {
        protocol_error(c, std::string(op) + " on key " + printable(key) + " whose value " +
                              printable(value_of(*it->second)) +
                              " is not a decimal integer (do not mix set() and add() on one key)");
        return std::nullopt;
      }
      current = *parsed;
    }
    std::int64_t result = 0;
    if (__builtin_add_overflow(current, delta, &result)) {  // never for a new key (current 0)
      protocol_error(c, std::string(op) + " on key " + printable(key) + " overflows int64 (" +
                            std::to_string(current) + " + " + std::to_string(delta) + ")");
      return std::nullopt;
    }
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, result).ptr;
    assign_value(it->second, std::string_view(digits, static_cast<std::size_t>(end - digits)));
    stat_keys_.store(kv_.size(), std::memory_order_relaxed);
    return result;
  }

  void handle(Connection& c, Request r) {
    switch (r.type) {
      case QueryType::kValidate:
        return;  // the parser checked the magic
      case QueryType::kSet:
        store_value(r.keys[0], r.values[0]);
        wake(r.keys[0]);
        return;
      case QueryType::kCompareSet: {
        const std::string& key = r.keys[0];
        const std::string& expected = r.values[0];
        const std::string& desired = r.values[1];
        auto it = kv_.find(key);
        if (it == kv_.end()) {
          if (expected.empty()) {
            send(c, view_buffer(store_value(key, desired)));
            wake(key);
          } else {
            send(c, encode_bytes_reply(expected));  // nothing stored (upstream "lying" row)
          }
        } else if (value_of(*it->second) == expected) {
          assign_value(it->second, desired);
          send(c, view_buffer(it->second));
          wake(key);
        } else {
          send(c, view_buffer(it->second));
        }
        return;
      }
      case QueryType::kGet: {
        auto it = kv_.find(r.keys[0]);
        send(c, it == kv_.end() ? empty_value_reply() : view_buffer(it->second));
        return;
      }
      case QueryType::kAdd: {
        const auto result = counter_add(c, "ADD", r.keys[0], r.number);
        if (!result) return;
        send(c, encode_i64_reply(*result));
        wake(r.keys[0]);
        return;
      }
      case QueryType::kCheck: {
        const bool ready =
            std::all_of(r.keys.begin(), r.keys.end(), [&](const auto& k) { return present(k); });
        send(c, check_reply(ready));
        return;
      }
      case QueryType::kWait: {
        std::vector<std::string> missing;
        for (auto& k : r.keys) {
          if (!present(k)) missing.push_back(std::move(k));
        }
        if (missing.empty()) {
          send(c, stop_waiting_reply());
        } else {
          register_waiter(c, std::move(missing));
        }
        return;
      }
      case QueryType::kGetNumKeys:
        send(c, encode_i64_reply(static_cast<std::int64_t>(kv_.size())));
        return;
      case QueryType::kDeleteKey: {
        const auto erased = kv_.erase(r.keys[0]);
        update_counters();
        send(c, encode_i64_reply(static_cast<std::int64_t>(erased)));
        return;
      }
      case QueryType::kAppend: {
        auto& slot = kv_[r.keys[0]];
        const std::string_view add = r.values[0];
        if (!slot) {
          slot = make_value(add);
        } else if (slot.use_count() == 1) {
          slot->append(add);  // nobody else holds this buffer: grow it in place
          std::string header;
          put_u64(header, slot->size() - 8);
          slot->replace(0, 8, header);
        } else {
          auto grown = std::make_shared<std::string>();
          const auto old = value_of(*slot);
          grown->reserve(8 + old.size() + add.size());
          put_u64(*grown, old.size() + add.size());
          grown->append(old);
          grown->append(add);
          slot = std::move(grown);
        }
        stat_keys_.store(kv_.size(), std::memory_order_relaxed);
        wake(r.keys[0]);
        return;
      }
      case QueryType::kMultiGet:
        for (const auto& k : r.keys) {
          auto it = kv_.find(k);
          send(c, it == kv_.end() ? empty_value_reply() : view_buffer(it->second));
        }
        return;
      case QueryType::kMultiSet:
        for (std::size_t i = 0; i < r.keys.size(); ++i) {
          store_value(r.keys[i], r.values[i]);
          wake(r.keys[i]);
        }
        return;
      case QueryType::kCancelWait:
        purge_waiters(c);
        send(c, wait_canceled_reply());
        return;
      case QueryType::kPing:
        send(c, encode_u32_reply(static_cast<std::uint32_t>(r.number)));
        return;
      case QueryType::kQueuePush:
        queues_[r.keys[0]].push_back(std::move(r.values[0]));
        update_counters();
        wake_one(r.keys[0]);
        return;
      case QueryType::kQueuePop: {
        auto it = queues_.find(r.keys[0]);
        if (it == queues_.end() || it->second.empty()) {
          send(c, encode_i64_reply(0));
          return;
        }
        const auto len = static_cast<std::int64_t>(it->second.size());
        send(c, encode_queue_pop_reply(len, it->second.front()));
        it->second.pop_front();
        if (it->second.empty()) queues_.erase(it);
        update_counters();
        return;
      }
      case QueryType::kQueueLen: {
        auto it = queues_.find(r.keys[0]);
        send(c, encode_i64_reply(
                    it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size())));
        return;
      }
      case QueryType::kListKeys: {
        std::vector<std::string_view> keys;
        keys.reserve(kv_.size());
        for (const auto& [k, v] : kv_) keys.emplace_back(k);
        send(c, encode_list_keys_reply(keys));
        return;
      }
      case QueryType::kBarrier: {
        const std::string& key = r.keys[0];
        const auto count = counter_add(c, "BARRIER", key, 1);
        if (!count) return;
        if (*count >= r.number) {
          wake(key);
          send(c, stop_waiting_reply());
        } else {
          register_waiter(c, {key});
        }
        return;
      }
    }
  }

  ServerOptions options_;
  Limits limits_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  int epoll_fd_ = -1;  // the connections' epoll set (owned by events_desc_)
  asio::posix::stream_descriptor events_desc_;  // asio waits on epoll_fd_
  asio::steady_timer events_retry_;
  std::vector<epoll_event> events_;
  std::thread thread_;
  mutable std::mutex lifecycle_mu_;
  bool started_ = false;
  bool stopped_ = false;
  std::atomic<bool> running_{false};
  std::atomic<std::uint16_t> port_{0};
  std::string endpoint_;

  // I/O-thread state.
  bool shutting_down_ = false;
  bool accept_failing_ = false;
  std::size_t accept_fail_streak_ = 0;
  std::chrono::steady_clock::time_point last_accept_log_{};
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, ConnPtr> conns_;
  std::vector<Connection*> dirty_;  // connections with queued replies (flushed by end_turn)
  std::vector<ConnPtr> graveyard_;  // closed during this turn, freed by end_turn
  std::vector<std::uint8_t> read_buf_;
  std::unordered_map<std::string, std::shared_ptr<std::string>> kv_;  // values in wire form
  std::unordered_map<std::string, std::deque<std::string>> queues_;   // non-empty queues only
  std::unordered_map<std::string, std::vector<WaiterPtr>> waiters_;

  std::atomic<std::size_t> stat_connections_{0};
  std::atomic<std::size_t> stat_accepted_{0};
  std::atomic<std::size_t> stat_rejected_{0};
  std::atomic<std::size_t> stat_protocol_errors_{0};
  std::atomic<std::size_t> stat_accept_errors_{0};
  std::atomic<std::size_t> stat_keys_{0};
  std::atomic<std::size_t> stat_queues_{0};
  std::atomic<std::size_t> stat_waiters_{0};
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;
void Server::start() {
  impl_->start();
}
std::uint16_t Server::port() const noexcept {
  return impl_->port();
}
std::string Server::endpoint() const {
  return impl_->endpoint();
}
void Server::stop() {
  impl_->stop();
}
bool Server::running() const noexcept {
  return impl_->running();
}
ServerStats Server::stats() const noexcept {
  return impl_->stats();
}

}  // namespace tzrun::store
