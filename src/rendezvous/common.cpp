#include "common.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/ranks.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous::detail {

void Log(const store::LogSink& sink, store::LogLevel level, const std::string& message) {
  if (sink) sink(level, message);
}

EventQueue::EventQueue() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

EventQueue::~EventQueue() {
  if (fd_ >= 0) ::close(fd_);
}

void EventQueue::Push(WatchEvent event, std::uint64_t generation) {
  std::lock_guard lock(mu_);
  if (generation != generation_) return;
  events_.push_back(std::move(event));
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
}

std::optional<WatchEvent> EventQueue::Take() {
  std::lock_guard lock(mu_);
  if (events_.empty()) return std::nullopt;
  WatchEvent e = std::move(events_.front());
  events_.pop_front();
  if (events_.empty()) {
    std::uint64_t v = 0;
    [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
  }
  return e;
}

std::uint64_t EventQueue::Reset() {
  std::lock_guard lock(mu_);
  events_.clear();
  std::uint64_t v = 0;
  [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
  return ++generation_;
}

void Worker::Start(std::function<void(const std::atomic<bool>&)> body) {
  if (Active()) return;
  if (thread_.joinable()) thread_.join();
  stop_ = false;
  thread_ = std::thread([this, b = std::move(body)] { b(stop_); });
}

void Worker::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<store::Client> Connect(const std::string& host, int port,
                                       milliseconds connect_timeout, milliseconds read_timeout,
                                       const Interrupt& interrupt, const store::LogSink& sink,
                                       const std::string& what) {
  const auto deadline = SteadyClock::now() + connect_timeout;
  std::string last;
  auto last_log = SteadyClock::now() - std::chrono::hours(1);
  while (true) {
    if (interrupt) interrupt();
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left <= milliseconds(0)) {
      throw RendezvousConnectionError(
          what + ": cannot connect to the store at " + host + ":" + std::to_string(port) +
          " within " + base::DurationText(connect_timeout) + " (last error: " + last +
          "); check that the node hosting it is up and that the address is right and reachable "
          "(firewall, DNS), or raise the timeout");
    }
    store::ClientOptions o;
    o.host = host;
    o.port = static_cast<std::uint16_t>(port);
    o.timeout = read_timeout;
    o.connect_timeout = std::min(left, milliseconds(1000));
    o.initial_backoff = milliseconds(50);
    o.max_backoff = milliseconds(500);
    try {
      return std::make_shared<store::Client>(std::move(o));
    } catch (const store::TimeoutError& e) {
      last = e.what();
      const auto p = last.find("last error: ");
      if (p != std::string::npos) {
        last = last.substr(p + 12);
        last = last.substr(0, last.find(')'));
      }
    } catch (const store::StoreError& e) {
      throw RendezvousConnectionError(what + ": " + e.what());
    }
    if (SteadyClock::now() - last_log >= std::chrono::seconds(30)) {
      Log(sink, store::LogLevel::kInfo,
          what + ": the store at " + host + ":" + std::to_string(port) + " is not reachable yet (" +
              last + "); retrying");
      last_log = SteadyClock::now();
    }
  }
}

std::unique_ptr<store::Server> HostStore(const std::string& bind_host, int port,
                                         const store::LogSink& log_sink) {
  store::ServerOptions o;
  o.host = bind_host;
  o.port = static_cast<std::uint16_t>(port);
  o.log = log_sink;
  auto server = std::make_unique<store::Server>(std::move(o));
  server->Start();
  return server;
}

void SleepFor(milliseconds d, const Interrupt& interrupt) {
  const auto end = SteadyClock::now() + d;
  while (true) {
    if (interrupt) interrupt();
    const auto now = SteadyClock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(
        std::min(std::chrono::duration_cast<milliseconds>(end - now), milliseconds(100)));
  }
}

void Depart(store::Store& round_store, int world_size, bool wait_for_all, milliseconds timeout,
            const store::LogSink& sink) {
  try {
    auto n = round_store.Add("tzrun/departed", 1);
    if (!wait_for_all) return;
    const auto deadline = SteadyClock::now() + timeout;
    while (n < world_size && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
      n = round_store.Add("tzrun/departed", 0);
    }
    if (n < world_size) {
      Log(sink, store::LogLevel::kWarning,
          "stopping the rendezvous store although only " + std::to_string(n) + " of " +
              std::to_string(world_size) + " nodes have finished with it after " +
              base::DurationText(timeout));
    }
  } catch (const std::exception& e) {
    Log(sink, store::LogLevel::kDebug, std::string("departure bookkeeping failed: ") + e.what());
  }
}

}  // namespace tzrun::rendezvous::detail
