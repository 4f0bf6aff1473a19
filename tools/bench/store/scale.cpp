// The --scale scenario of tzrun_store_bench: see scale.hpp.
#include "scale.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loader.hpp"
#include "scale_slice.hpp"

namespace store_bench {
namespace {

// The memory the coordinator shares with its loader processes.
struct Shared {
  std::atomic<int> stop{0};
  std::atomic<std::int64_t> t0_ns{0};
  SliceProgress slices[1];  // really `procs` of them (allocated past the end)
};

std::size_t SharedBytes(int procs) {
  return sizeof(Shared) + sizeof(SliceProgress) * static_cast<std::size_t>(procs - 1);
}

std::int64_t ToNs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double SinceS(std::int64_t ns, std::int64_t t0_ns) {
  return ns == 0 ? -1 : static_cast<double>(ns - t0_ns) / 1e9;
}

// The totals over every slice.
struct Sum {
  int validated = 0, added = 0, released = 0, finished = 0, errors = 0, retries = 0;
  std::int64_t last_validated = 0, nth_add = 0, last_added = 0, last_finished = 0, all_started = 0;
  std::string first_error;
};

Sum Total(const Shared& sh, int procs) {
  Sum s;
  for (int p = 0; p < procs; ++p) {
    const SliceProgress& g = sh.slices[p];
    s.validated += g.validated.load();
    s.added += g.added.load();
    s.released += g.released.load();
    s.finished += g.finished.load();
    s.errors += g.errors.load();
    s.retries += g.retries.load();
    s.last_validated = std::max(s.last_validated, g.last_validated_ns.load());
    s.nth_add = std::max(s.nth_add, g.nth_add_ns.load());
    s.last_added = std::max(s.last_added, g.last_added_ns.load());
    s.last_finished = std::max(s.last_finished, g.last_finished_ns.load());
    const std::int64_t started = g.all_started_ns.load();
    s.all_started = (started == 0 || s.all_started < 0) ? -1 : std::max(s.all_started, started);
    if (s.first_error.empty() && g.first_error[0] != '\0') s.first_error = g.first_error;
  }
  return s;
}

// Forks loader `p`: it waits for the go (EOF on `go_fd`), then runs its slice.
pid_t ForkSlice(Shared& sh, int p, int go_fd, int go_write_fd, std::uint16_t port,
                const ScaleOptions& o) {
  const int mine = o.clients - o.first;
  SliceSpec spec;
  spec.port = port;
  spec.total = o.clients;
  spec.first = o.first + static_cast<int>(static_cast<long>(mine) * p / o.procs);
  spec.count = o.first + static_cast<int>(static_cast<long>(mine) * (p + 1) / o.procs) - spec.first;
  spec.count_key = o.key_prefix + "count";
  spec.done_key = o.key_prefix + "done";
  spec.connect_window = o.connect_window;
  spec.abort = o.abort;
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: die with the coordinator; never run the coordinator's stop handlers.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  ::close(go_write_fd);
  if (o.pin && std::thread::hardware_concurrency() >= 2) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(1, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  char b;
  while (::read(go_fd, &b, 1) < 0 && errno == EINTR) {
  }
  spec.deadline_ns = sh.t0_ns.load() + static_cast<std::int64_t>(o.timeout_s * 1e9);
  RunSlice(spec, sh.slices[p], sh.stop);
  _exit(0);
}

// Follows the slices until every client finished or failed, or the timeout; prints progress
// to stderr once a second.
Sum Follow(const Shared& sh, const ScaleOptions& o, Clock::time_point t0) {
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  auto next_print = t0 + std::chrono::seconds(1);
  const int mine = o.clients - o.first;
  for (;;) {
    const Sum s = Total(sh, o.procs);
    const auto now = Clock::now();
    if ((o.abort ? s.added : s.finished) + s.errors >= mine || now >= deadline) return s;
    if (now >= next_print) {
      std::fprintf(stderr, "  %5.1f s: validated %d, added %d, released %d, finished %d / %d\n",
                   Seconds(now - t0), s.validated, s.added, s.released, s.finished, mine);
      next_print += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Waits for the loader processes; their CPU seconds (user + system).
double Reap(std::vector<pid_t>& kids) {
  double cpu = 0;
  for (pid_t& k : kids) {
    if (k <= 0) continue;
    rusage ru{};
    wait4(k, nullptr, 0, &ru);
    k = -1;
    cpu += static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  }
  return cpu;
}

// The abort shape: every client disconnects while in WAIT; the server's CPU until it idles
// (no CPU tick for 0.5 s) and the time to its last busy tick.
void MeasureAbort(Shared& sh, std::vector<pid_t>& kids, pid_t pid, ScaleResult& r) {
  const double cpu0 = CpuSeconds(pid);
  const auto t0 = Clock::now();
  sh.stop.store(1);
  r.loader_cpu_s = Reap(kids);  // they close their sockets as they exit
  double cpu = CpuSeconds(pid);
  auto last_busy = Clock::now();
  while (Clock::now() - last_busy < std::chrono::milliseconds(500)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const double now_cpu = CpuSeconds(pid);
    if (now_cpu != cpu) last_busy = Clock::now();
    cpu = now_cpu;
  }
  r.abort_cpu_s = cpu - cpu0;
  r.abort_settle_s = Seconds(last_busy - t0);
}

void Fill(ScaleResult& r, const Sum& s, std::int64_t t0_ns, int mine, const ScaleOptions& o) {
  r.validated = s.validated;
  r.added = s.added;
  r.released = s.released;
  r.finished = s.finished;
  r.errors = s.errors;
  r.retries = s.retries;
  r.ok = (o.abort ? s.added : s.finished) == mine;
  if (s.validated == mine) r.connect_s = SinceS(s.last_validated, t0_ns);
  r.add_s = SinceS(o.abort ? s.last_added : s.nth_add, t0_ns);
  r.connects_issued_s = s.all_started > 0 ? SinceS(s.all_started, t0_ns) : -1;
  if (r.ok) {
    r.total_s = o.abort ? r.add_s : SinceS(s.last_finished, t0_ns);
    if (!o.abort && r.add_s >= 0) r.release_s = r.total_s - r.add_s;
  }
  if (!r.ok) {
    char b[96];
    std::snprintf(b, sizeof b, "stopped at the %.0f s timeout", o.timeout_s);
    r.error = s.errors > 0 ? s.first_error : b;
  }
}

}  // namespace

ScaleResult RunScale(std::uint16_t port, pid_t pid, const ScaleOptions& o) {
  ScaleResult r;
  r.clients = o.clients;
  r.procs = o.procs;
  void* mem = mmap(nullptr, SharedBytes(o.procs), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap of the progress area failed");
  auto* sh = new (mem) Shared;
  for (int p = 1; p < o.procs; ++p) new (&sh->slices[p]) SliceProgress;
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::vector<pid_t> kids;
  for (int p = 0; p < o.procs; ++p) kids.push_back(ForkSlice(*sh, p, go[0], go[1], port, o));
  ::close(go[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the loaders settle
  if (pid > 0) r.server_start_rss_kib = RssKiB(pid);
  const CpuTimes cpu0 = ProcessCpu(pid);
  const long overflows0 = ListenOverflows();
  const auto t0 = Clock::now();
  sh->t0_ns.store(ToNs(t0));
  ::close(go[1]);  // go: every loader's read() returns 0
  const Sum s = Follow(*sh, o, t0);
  const CpuTimes cpu1 = ProcessCpu(pid);
  const long overflows1 = ListenOverflows();
  Fill(r, s, ToNs(t0), o.clients - o.first, o);
  if (pid > 0 && cpu0.user >= 0 && cpu1.user >= 0) {
    r.server_user_s = cpu1.user - cpu0.user;
    r.server_sys_s = cpu1.sys - cpu0.sys;
    r.server_peak_rss_kib = RssKiB(pid, "VmHWM:");
  }
  if (overflows0 >= 0 && overflows1 >= 0) r.listen_overflows = overflows1 - overflows0;
  if (o.abort && r.ok && pid > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the WAITs land
    MeasureAbort(*sh, kids, pid, r);
  }
  sh->stop.store(1);
  if (r.loader_cpu_s < 0) r.loader_cpu_s = Reap(kids);
  munmap(mem, SharedBytes(o.procs));
  return r;
}

std::string ScaleSummary(const ScaleResult& r) {
  char b[768];
  int len = std::snprintf(
      b, sizeof b,
      "%d clients / %d loaders: %s total %.3f s (connects issued %.3f, validated %.3f, last ADD "
      "%.3f, release %.3f); validated %d, added %d, released %d, finished %d, errors %d; retries "
      "%d, accept-queue overflows %ld; loaders %.2f s CPU",
      r.clients, r.procs, r.ok ? "ok," : "FAILED,", r.total_s, r.connects_issued_s, r.connect_s,
      r.add_s, r.release_s, r.validated, r.added, r.released, r.finished, r.errors, r.retries,
      r.listen_overflows, r.loader_cpu_s);
  if (r.server_user_s >= 0 && len > 0 && static_cast<std::size_t>(len) < sizeof b) {
    len += std::snprintf(
        b + len, sizeof b - static_cast<std::size_t>(len),
        "; server CPU %.2f s user + %.2f s sys, RSS %.1f MiB before, peak %.1f MiB",
        r.server_user_s, r.server_sys_s, static_cast<double>(r.server_start_rss_kib) / 1024,
        static_cast<double>(r.server_peak_rss_kib) / 1024);
  }
  if (r.abort_cpu_s >= 0 && len > 0 && static_cast<std::size_t>(len) < sizeof b) {
    len += std::snprintf(b + len, sizeof b - static_cast<std::size_t>(len),
                         "; abort: server CPU %.2f s for the disconnects, idle after %.3f s",
                         r.abort_cpu_s, r.abort_settle_s);
  }
  if (!r.ok && len > 0 && static_cast<std::size_t>(len) < sizeof b) {
    std::snprintf(b + len, sizeof b - static_cast<std::size_t>(len), ": %s", r.error.c_str());
  }
  return b;
}

}  // namespace store_bench
