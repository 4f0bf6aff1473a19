// The load patterns of tzrun_store_bench: see scenarios.hpp.
#include "scenarios.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "loader.hpp"

namespace store_bench {
namespace {

// CPU seconds used by the calling thread (the loader).
double ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Requests are built once: the loop should cost the loader as little as possible.
struct MixRequests {
  std::vector<std::string> set_get;  // 8 SET+GET pairs per connection, id * 8 + k
  std::vector<std::string> add;      // one ADD per connection
};

MixRequests BuildMixRequests(int n, int tag) {
  const std::string value(64, 'v');
  const std::string prefix = "/bench/mix" + std::to_string(tag) + "/";
  MixRequests q;
  q.set_get.resize(static_cast<std::size_t>(n) * 8);
  q.add.resize(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) {
    for (int k = 0; k < 8; ++k) {
      const std::string key = prefix + std::to_string(id) + "/" + std::to_string(k);
      std::string& b = q.set_get[static_cast<std::size_t>(id) * 8 + static_cast<std::size_t>(k)];
      Set(b, key, value);
      Get(b, key);
    }
    Add(q.add[static_cast<std::size_t>(id)], prefix + "ctr" + std::to_string(id % 16), 1);
  }
  return q;
}

// What one mix run measured between its warm-up and its drain.
struct MixMeasure {
  std::vector<std::uint32_t> lat;  // GET and ADD round trips (us)
  std::int64_t ops = 0;
  Clock::time_point start{}, stop{};
  double cpu0 = 0, cpu1 = 0;        // server CPU seconds
  double loader0 = 0, loader1 = 0;  // loader thread CPU seconds
};

void Summarize(MixMeasure& m, MixResult& r) {
  r.ops_per_s = static_cast<double>(m.ops) / Seconds(m.stop - m.start);
  if (m.cpu0 >= 0 && m.cpu1 >= 0 && m.ops > 0) {
    r.server_cpu_us_per_op = 1e6 * (m.cpu1 - m.cpu0) / static_cast<double>(m.ops);
    r.server_busy = (m.cpu1 - m.cpu0) / Seconds(m.stop - m.start);
    r.loader_busy = (m.loader1 - m.loader0) / Seconds(m.stop - m.start);
  }
  if (!m.lat.empty()) {
    auto& lat = m.lat;
    std::sort(lat.begin(), lat.end());
    r.p50_us = lat[lat.size() / 2];
    r.p99_us = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  }
}

}  // namespace

IdleResult RunIdle(const ServerProc& s, int n) {
  IdleResult r;
  r.conns = n;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  r.rss_before_kib = RssKiB(s.pid);
  Loader l(s.port, [](Conn&, std::int64_t, std::string_view) {});
  l.Open(n);
  r.ok = l.RunUntil([&] { return l.handshaken + l.Errors() >= n; },
                    Clock::now() + std::chrono::seconds(120)) &&
         l.Errors() == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  r.rss_after_kib = RssKiB(s.pid);
  r.bytes_per_conn = 1024.0 * static_cast<double>(r.rss_after_kib - r.rss_before_kib) / n;
  return r;
}

MixResult RunMix(const ServerProc& s, int n, double seconds, int tag) {
  MixResult r;
  r.conns = n;
  MixMeasure m;
  m.lat.reserve(4'000'000);
  bool measuring = false;
  bool stopping = false;
  int idle = 0;
  Loader* lp = nullptr;
  const MixRequests q = BuildMixRequests(n, tag);
  auto issue = [&](Conn& c) {
    if (stopping) {
      ++idle;
      return;
    }
    c.state = 2;
    c.t_sent = Clock::now();
    lp->Send(c, q.set_get[static_cast<std::size_t>(c.id) * 8 + static_cast<std::size_t>(c.n++ & 7)],
             {Reply::kBlob});
  };
  Loader l(s.port, [&](Conn& c, std::int64_t, std::string_view) {
    const auto now = Clock::now();
    if (c.state == 1) {  // handshake done
      issue(c);
      return;
    }
    if (measuring) {
      m.lat.push_back(static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(now - c.t_sent).count()));
    }
    if (c.state == 2) {  // GET reply: SET + GET done, send ADD
      if (measuring) m.ops += 2;
      c.state = 3;
      c.t_sent = now;
      lp->Send(c, q.add[static_cast<std::size_t>(c.id)], {Reply::kI64});
    } else {  // ADD reply
      if (measuring) m.ops += 1;
      issue(c);
    }
  });
  lp = &l;
  l.Open(n);
  if (!l.RunUntil([&] { return l.handshaken + l.Errors() >= n; },
                  Clock::now() + std::chrono::seconds(120))) {
    return r;
  }
  // Warm up, then measure.
  l.RunUntil([] { return false; }, Clock::now() + std::chrono::milliseconds(500));
  measuring = true;
  m.cpu0 = CpuSeconds(s.pid);
  m.loader0 = ThreadCpuSeconds();
  m.start = Clock::now();
  l.RunUntil([] { return false; }, m.start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(seconds)));
  m.stop = Clock::now();
  m.cpu1 = CpuSeconds(s.pid);
  m.loader1 = ThreadCpuSeconds();
  measuring = false;
  stopping = true;
  l.RunUntil([&] { return idle + l.Errors() >= n; }, Clock::now() + std::chrono::seconds(30));
  r.errors = l.Errors();
  Summarize(m, r);
  r.ok = r.errors == 0;
  return r;
}

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
      [&] { return finished + l.Errors() >= n; },
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s)));
  const auto t1 = Clock::now();
  r.errors = n - finished;
  r.ok = r.ok && finished == n;
  r.error = r.ok ? "" : (l.FirstError().empty() ? "timeout" : l.FirstError());
  r.retries = l.Retries();
  const long overflows1 = ListenOverflows();
  if (overflows0 >= 0 && overflows1 >= 0) r.listen_overflows = overflows1 - overflows0;
  r.connect_s = t_connected == Clock::time_point{} ? -1 : Seconds(t_connected - t0);
  r.add_s = t_added == Clock::time_point{} ? -1 : Seconds(t_added - t0);
  r.total_s = Seconds(t1 - t0);
  r.release_s = t_added == Clock::time_point{} ? -1 : Seconds(t1 - t_added);
  return r;
}

}  // namespace store_bench
