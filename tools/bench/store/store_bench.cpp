// tzrun_store_bench — load generator for c10d-TCPStore-compatible servers (run by hand).
//
// Starts `tzrun store` and PyTorch's own TCPStore server (libuv backend, via the venv python)
// one after the other, drives each with the same raw-protocol epoll loader, and prints a
// table plus tzrun/torch ratios:
//   idle      server RSS growth per idle, validated connection (fresh server);
//   mix       closed-loop SET+GET / ADD cycles on C connections (throughput, p50/p99 latency);
//   rdzv      N clients connect at once, VALIDATE+PING, ADD a counter, the last one SETs a
//             "done" key, everyone WAITs on it and GETs it (torch's store-based barrier shape).
// The wire format follows torch/csrc/distributed/c10d/TCPStore.cpp; user keys carry
// TCPStore's "/" prefix. Files: loader.hpp (wire encoding, epoll loader), servers.* (starting,
// reading and stopping the servers), scenarios.* (idle / mix / rdzv), report.* (the table).
// Usage: see tools/bench/store/README.md or --help.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "report.hpp"
#include "scale.hpp"
#include "scenarios.hpp"
#include "servers.hpp"

namespace store_bench {
namespace {

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

/// Fills `o` from the command line; an exit code for --help (0) or a bad argument (2).
std::optional<int> ParseArgs(int argc, char** argv, Options& o) {
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
    } else if (a == "--scale") {
      o.scale = ParseInts(val());
    } else if (a == "--procs") {
      o.procs = std::max(1, std::stoi(val()));
    } else if (a == "--scale-timeout") {
      o.scale_timeout = std::stod(val());
    } else if (a == "--connect-window") {
      o.connect_window = std::max(0, std::stoi(val()));
    } else if (a == "--scale-abort") {
      o.scale_abort = true;
    } else if (a == "--attach") {
      o.attach_port = std::stoi(val());
    } else if (a == "--attach-first") {
      o.attach_first = std::max(0, std::stoi(val()));
    } else if (a == "--tag") {
      o.tag = val();
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
          "          [--rdzv-timeout 300] [--idle 4096] [--repeat 3] [--no-pin]\n"
          "       %s --scale 100000[,...] [--procs 4] [--scale-timeout 120] [--connect-window 0]\n"
          "          [--scale-abort]\n"
          "          [--servers ...] [--attach PORT [--attach-first K] [--tag T]]\n",
          argv[0], argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }

  return std::nullopt;
}

// Every client and server connection needs a descriptor: raise the soft limit to the hard
// one (children inherit it) and warn when the largest scenario cannot fit.
void RaiseFdLimit(const Options& o) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int biggest = o.idle;
  for (int n : o.mix_conns) biggest = std::max(biggest, n);
  for (int n : o.rdzv) biggest = std::max(biggest, n);
  for (int n : o.scale) biggest = std::max(biggest, n);
  const auto want = static_cast<rlim_t>(biggest) + 1024;
  if (rl.rlim_cur < want) {  // root (CAP_SYS_RESOURCE) may raise the hard limit up to nr_open
    const rlimit raised{want, want};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur < static_cast<rlim_t>(biggest) + 64) {
    std::fprintf(stderr,
                 "warning: RLIMIT_NOFILE is %llu but %d connections are needed; "
                 "raise it (ulimit -Hn / limits.conf)\n",
                 static_cast<unsigned long long>(rl.rlim_cur), biggest + 64);
  }
}

void MeasureIdle(const ServerProc& s, const std::string& label, const Options& o,
                 ServerResults& sr) {
  if (o.idle > 0) {
    sr.idle = RunIdle(s, o.idle);
    std::fprintf(stderr, "[%s] idle %d conns: %.0f B/conn\n", label.c_str(), o.idle,
                 sr.idle.bytes_per_conn);
  }
}

void MeasureMix(const ServerProc& s, const std::string& label, const Options& o, int& tag,
                ServerResults& sr) {
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
}

void MeasureRendezvous(const ServerProc& s, const std::string& label, const Options& o, int& tag,
                       ServerResults& sr) {
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
}

// Starts server `name`, runs every scenario on it, stops it; false for an unknown name.
bool MeasureServer(const std::string& name, const Options& o, int& tag, Results& res) {
  // Pinning: the server (and every thread it starts) on CPU 0, the loader on CPU 1, so both
  // servers see the same cross-core wake-ups rather than whatever the scheduler picks.
  const bool pin = o.pin && std::thread::hardware_concurrency() >= 2;
  if (pin) PinTo(0);
  const std::string label = name.substr(0, name.find('='));
  ServerProc s = StartServer(name, o.tzrun, o.python);
  if (s.pid <= 0) return false;
  GuardServer(s.pid);
  if (pin) PinTo(1);
  std::fprintf(stderr, "[%s] pid %d port %u%s\n", label.c_str(), s.pid, s.port,
               pin ? " (server on CPU 0, loader on CPU 1)" : "");
  res.emplace_back(label, ServerResults{});
  ServerResults& sr = res.back().second;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  sr.start_rss_kib = RssKiB(s.pid);
  MeasureIdle(s, label, o, sr);
  MeasureMix(s, label, o, tag, sr);
  MeasureRendezvous(s, label, o, tag, sr);
  sr.peak_rss_kib = RssKiB(s.pid, "VmHWM:");
  Stop(s);
  GuardServer(-1);
  return true;
}

// The descriptors one process may open (the soft limit RaiseFdLimit left).
long FdLimit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur == RLIM_INFINITY ? 1L << 30 : static_cast<long>(rl.rlim_cur);
}

ScaleOptions ScaleRun(const Options& o, int n, int tag) {
  ScaleOptions so;
  so.clients = n;
  // Enough loader processes that each slice fits the descriptor limit.
  const long per_proc = std::max(1L, FdLimit() - 64);
  so.procs = std::max(o.procs, static_cast<int>((n + per_proc - 1) / per_proc));
  so.timeout_s = o.scale_timeout;
  so.connect_window = o.connect_window;
  so.abort = o.scale_abort;
  so.pin = o.pin;
  so.key_prefix = "/bench/scale" + (o.tag.empty() ? std::to_string(getpid()) : o.tag) + "-" +
                  std::to_string(tag) + "/";
  return so;
}

// --scale: a fresh server per client count (so its peak RSS belongs to that run).
bool MeasureScale(const std::string& name, const Options& o, int& tag, Results& res) {
  const bool pin = o.pin && std::thread::hardware_concurrency() >= 2;
  const std::string label = name.substr(0, name.find('='));
  res.emplace_back(label, ServerResults{});
  ServerResults& sr = res.back().second;
  for (int n : o.scale) {
    if (n + 64 > FdLimit()) {
      std::fprintf(stderr,
                   "[%s] warning: RLIMIT_NOFILE allows %ld descriptors per process and could not "
                   "be raised (needs root with CAP_SYS_RESOURCE): the server cannot hold %d "
                   "connections; the run shows where it stops\n",
                   label.c_str(), FdLimit(), n);
    }
    if (pin) PinTo(0);
    ServerProc s = StartServer(name, o.tzrun, o.python);
    if (s.pid <= 0) return false;
    GuardServer(s.pid);
    if (pin) PinTo(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fprintf(stderr, "[%s] pid %d port %u: scale %d\n", label.c_str(), s.pid, s.port, n);
    sr.scale.push_back(RunScale(s.port, s.pid, ScaleRun(o, n, ++tag)));
    std::fprintf(stderr, "[%s] %s\n", label.c_str(), ScaleSummary(sr.scale.back()).c_str());
    Stop(s);
    GuardServer(-1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  return true;
}

// --attach: one --scale run against a server started elsewhere (tools/bench/store/
// scale_check.py runs real torch clients as clients 0 .. K-1 of the same rendezvous).
int Attach(const Options& o) {
  if (o.scale.size() != 1) {
    std::fprintf(stderr, "--attach needs exactly one --scale N\n");
    return 2;
  }
  ScaleOptions so = ScaleRun(o, o.scale[0], 0);
  so.first = o.attach_first;
  so.pin = false;
  const ScaleResult r = RunScale(static_cast<std::uint16_t>(o.attach_port), -1, so);
  std::printf("%s\n", ScaleSummary(r).c_str());
  return r.ok ? 0 : 1;
}

int Main(int argc, char** argv) {
  Options o;
  const std::string self_dir = Dir(argv[0]);
  o.tzrun = self_dir + "/tzrun";
  o.python = TZRUN_SOURCE_DIR "/.venv/bin/python";
  if (const auto rc = ParseArgs(argc, argv, o)) return *rc;
  RaiseFdLimit(o);
  signal(SIGPIPE, SIG_IGN);
  InstallStopHandlers();

  if (o.attach_port > 0) return Attach(o);
  if (!o.scale.empty()) {  // the scale mode runs nothing else
    o.idle = 0;
    o.mix_conns.clear();
    o.rdzv.clear();
  }
  Results res;
  int tag = 0;
  for (const std::string& name : o.servers) {
    const bool ok =
        o.scale.empty() ? MeasureServer(name, o, tag, res) : MeasureScale(name, o, tag, res);
    if (!ok) return 2;
  }
  PrintTable(o, res);
  return 0;
}

}  // namespace
}  // namespace store_bench

int main(int argc, char** argv) {
  try {
    return store_bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun_store_bench: %s\n", e.what());
    return 1;
  }
}
