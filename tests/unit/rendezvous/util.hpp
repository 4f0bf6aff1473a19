// Helpers shared by the rendezvous tests.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "tzrun/store/server.hpp"

namespace tzrun::rendezvous::testing {

using namespace std::chrono_literals;

/// An in-process store server on a free loopback port.
inline std::unique_ptr<store::Server> StartServer() {
  store::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  auto s = std::make_unique<store::Server>(std::move(o));
  s->Start();
  return s;
}

/// Polls `pred` until it holds or `limit` passes (generous limits: loaded 2-core box).
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace tzrun::rendezvous::testing
