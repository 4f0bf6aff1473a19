// Internal helpers shared by the static and dynamic handlers.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/store/client.hpp"
#include "tzrun/store/server.hpp"

namespace tzrun::rendezvous::detail {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

/// Thread-safe event queue with an eventfd that is readable while events are queued.
/// Events carry the generation of the watcher that produced them; reset() starts a new
/// generation and drops everything older, so a watcher that is still winding down after
/// unwatch() cannot leak a stale event into the next round.
class EventQueue {
 public:
  EventQueue();
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  [[nodiscard]] int Fd() const noexcept { return fd_; }
  void Push(WatchEvent event, std::uint64_t generation);
  std::optional<WatchEvent> Take();
  /// Drops all events and returns the new generation.
  std::uint64_t Reset();
  [[nodiscard]] std::uint64_t Generation() const noexcept { return generation_; }

 private:
  int fd_ = -1;
  std::mutex mu_;
  std::deque<WatchEvent> events_;
  std::atomic<std::uint64_t> generation_{0};
};

/// A background thread running `body(stop)`. RequestStop() only raises the flag (the
/// thread finishes its current store call in the background); start() and the destructor
/// join a previous thread first.
class Worker {
 public:
  ~Worker() { Stop(); }
  void Start(std::function<void(const std::atomic<bool>&)> body);
  void RequestStop() { stop_ = true; }
  void Stop();
  [[nodiscard]] bool Active() const noexcept { return thread_.joinable() && !stop_; }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// What both backends share: the watcher thread and the event queue it feeds, and the three
/// Handler methods that only touch those. Derived destructors must stop watcher_ first.
class WatchingHandler : public Handler {
 public:
  void Unwatch() override {
    watcher_.RequestStop();
    events_.Reset();
  }
  [[nodiscard]] int EventFd() const override { return events_.Fd(); }
  std::optional<WatchEvent> TakeEvent() override { return events_.Take(); }

 protected:
  EventQueue events_;
  Worker watcher_;
};

/// Connects a client, retrying (also name-resolution failures) until `connect_timeout`, in
/// slices of <= 1 s so `interrupt` is honoured. Replies are bounded by `read_timeout`.
/// Throws RendezvousConnectionError naming host:port, the timeout and a fix.
std::shared_ptr<store::Client> Connect(const std::string& host, int port,
                                       milliseconds connect_timeout, milliseconds read_timeout,
                                       const Interrupt& interrupt, const store::LogSink& log,
                                       const std::string& what);

/// Starts a store server on bind_host:port (all interfaces when empty). Throws BindError.
std::unique_ptr<store::Server> HostStore(const std::string& bind_host, int port,
                                         const store::LogSink& log);

/// Sleeps in slices, calling `interrupt` between them.
void SleepFor(milliseconds d, const Interrupt& interrupt);

/// End of job: counts this node out ("tzrun/departed" on the round store) and, when
/// `wait_for_all`, waits (bounded, never throws) until `world_size` nodes did.
void Depart(store::Store& round_store, int world_size, bool wait_for_all, milliseconds timeout,
            const store::LogSink& log);

void Log(const store::LogSink& sink, store::LogLevel level, const std::string& message);

}  // namespace tzrun::rendezvous::detail
