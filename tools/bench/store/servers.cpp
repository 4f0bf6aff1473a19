// Child-process side of tzrun_store_bench: see servers.hpp.
#include "servers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace store_bench {
namespace {

using Clock = std::chrono::steady_clock;

// The server being measured, killed if the bench is interrupted (no orphans).
volatile pid_t g_server_pid = -1;

extern "C" void OnStopSignal(int sig) {
  if (g_server_pid > 0) kill(g_server_pid, SIGKILL);
  _exit(128 + sig);
}

constexpr const char* kTorchServer = R"(
import sys, datetime, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=sys.argv[1] == "1",
                  timeout=datetime.timedelta(seconds=600))
print(f"torch store: listening on 127.0.0.1:{s.port}", flush=True)
import signal; signal.sigwait({signal.SIGTERM, signal.SIGINT})
)";

}  // namespace

long RssKiB(pid_t pid, const char* field) {
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

CpuTimes ProcessCpu(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  if (utime < 0 || stime < 0) return {};
  const auto hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  return {utime / hz, stime / hz};
}

double CpuSeconds(pid_t pid) {
  const CpuTimes t = ProcessCpu(pid);
  return t.user < 0 ? -1 : t.user + t.sys;
}

// Connects the kernel dropped because an accept queue was full. Each costs the client a SYN
// retransmission (1 s, then 2 s, ...), which is what a slow-accepting server looks like in the
// storm.
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

ServerProc StartServer(const std::string& name, const std::string& tzrun,
                       const std::string& python) {
  ServerProc s;
  const auto eq = name.find('=');
  const std::string label = name.substr(0, eq);
  if (name == "tzrun" || eq != std::string::npos) {
    // "LABEL=PATH" runs another tzrun binary (e.g. a baseline build) in the same run.
    const std::string bin = eq == std::string::npos ? tzrun : name.substr(eq + 1);
    s = Spawn(label, {bin, "store", "--host", "127.0.0.1", "--port", "0", "--log-level", "error"},
              "listening on ");
  } else if (name == "torch" || name == "torch-legacy" || name == "torch-nodns") {
    const bool nodns = name == "torch-nodns";
    if (nodns) setenv("LD_PRELOAD", TZRUN_BENCH_NODNS_LIB, 1);
    s = Spawn(name, {python, "-c", kTorchServer, name == "torch-legacy" ? "0" : "1"},
              "listening on ");
    if (nodns) unsetenv("LD_PRELOAD");
  } else {
    std::fprintf(stderr, "unknown server '%s' (use tzrun, torch, torch-nodns, torch-legacy)\n",
                 name.c_str());
    return ServerProc{};
  }
  return s;
}

void GuardServer(pid_t pid) {
  g_server_pid = pid;
}

void InstallStopHandlers() {
  signal(SIGINT, OnStopSignal);
  signal(SIGTERM, OnStopSignal);
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

}  // namespace store_bench
