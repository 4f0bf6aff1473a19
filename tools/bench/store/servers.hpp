// tools/bench/store/servers.hpp — the store servers tzrun_store_bench measures: started as
// child processes (stdout/stderr to a log under /tmp), found ready by their "listening on
// HOST:PORT" line, read through /proc, and stopped with SIGTERM (SIGKILL after 5 s).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace store_bench {

struct ServerProc {
  std::string name;
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::string log_path;
};

/// A /proc/PID/status field in KiB ("VmRSS:" resident, "VmHWM:" peak); -1 if unreadable.
long RssKiB(pid_t pid, const char* field = "VmRSS:");

/// CPU seconds (user + system, all threads) used so far by process `pid`; -1 if unknown.
double CpuSeconds(pid_t pid);

/// The same split into user and system time; both -1 if unknown.
struct CpuTimes {
  double user = -1;
  double sys = -1;
};
CpuTimes ProcessCpu(pid_t pid);

/// TcpExt ListenOverflows from /proc/net/netstat (host-wide; -1 if unreadable).
long ListenOverflows();

/// Starts `argv` and waits (up to 120 s) for `ready_marker` in its log; the port is the number
/// after the last ':' of that line. Throws std::runtime_error if it cannot start or never gets
/// ready.
ServerProc Spawn(const std::string& name, std::vector<std::string> argv,
                 const std::string& ready_marker);

/// Starts server `name` of --servers: "tzrun", "LABEL=PATH" (another tzrun binary), "torch",
/// "torch-legacy" or "torch-nodns". Returns a ServerProc with pid -1 (after printing the error)
/// for an unknown name.
ServerProc StartServer(const std::string& name, const std::string& tzrun,
                       const std::string& python);

/// SIGTERM, then SIGKILL after 5 s; sets s.pid to -1.
void Stop(ServerProc& s);

/// Kills `pid` with SIGKILL when the bench gets SIGINT/SIGTERM (no orphans); -1 for none.
void GuardServer(pid_t pid);

/// Installs the SIGINT/SIGTERM handler that does GuardServer's killing, then exits 128 + signal.
void InstallStopHandlers();

}  // namespace store_bench
