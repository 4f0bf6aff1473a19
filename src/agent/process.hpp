// tzrun agent internals: process primitives (spawn, process-group bookkeeping, the
// guardian that kills worker process groups if tzrun dies, /proc child enumeration).
//
// Linux only. Not thread-safe: used from the agent's single supervision thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "tzrun/error.hpp"

namespace tzrun::agent::detail {

/// exec/fork of a worker failed. ExitCode(): 127 (not found), 126 (not executable or
/// other exec error), 125 (fork/pipe failure, the guardian cannot be started).
class SpawnError : public tzrun::Error {
 public:
  SpawnError(const std::string& what, int exit_code, int err)
      : Error(what, exit_code), errno_(err) {}
  [[nodiscard]] int ErrorNumber() const noexcept { return errno_; }

 private:
  int errno_;
};

struct SpawnRequest {
  std::string program;            ///< resolved path passed to execve
  std::vector<std::string> argv;  ///< argv[0] as the worker should see it
  std::map<std::string, std::string> env;
  int stdout_fd = -1;                 ///< -1: inherit the agent's fd 1
  int stderr_fd = -1;                 ///< -1: inherit the agent's fd 2
  sigset_t child_mask{};              ///< signal mask the worker starts with
  std::vector<int> reset_to_default;  ///< signals whose disposition is reset to SIG_DFL
  std::vector<int>
      cpus;  ///< --numa-binding: the worker's CPU affinity, set before exec (none: inherit)
};

/// fork + exec in a new session (setsid: pid == pgid == sid), with
/// PR_SET_PDEATHSIG(SIGKILL). Exec failures are reported through a CLOEXEC pipe, so the
/// call returns only once the worker runs the target program (or throws SpawnError).
/// async-signal-safe in the child (safe to call while other threads run).
pid_t Spawn(const SpawnRequest& req);

/// A forked helper process in its own session that SIGKILLs every registered process
/// group when the agent disappears (EOF on its socket, e.g. tzrun was SIGKILLed).
/// Must be started before the agent creates threads.
class Guardian {
 public:
  Guardian() = default;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  ~Guardian();

  /// A directory the guardian removes (recursively) once the groups it killed are gone, when
  /// the agent disappears (the flash-checkpoint and progress directories). Call before Start().
  void AddCleanupDir(std::string dir) { cleanup_dirs_.push_back(std::move(dir)); }
  /// Forks the guardian. Throws SpawnError (125) on failure.
  void Start();
  void Add(pid_t pgid);
  void Remove(pid_t pgid);
  /// Closes the socket (guardian exits after killing what is still registered) and
  /// returns its pid for reaping (-1 if not running).
  pid_t Close();
  [[nodiscard]] pid_t Pid() const noexcept { return pid_; }

 private:
  void Send(char op, pid_t pgid);
  std::vector<std::string> cleanup_dirs_;
  int fd_ = -1;
  pid_t pid_ = -1;
};

/// Pids whose parent is `parent` (scans /proc/<pid>/stat). Empty when /proc is absent.
std::vector<pid_t> ListChildren(pid_t parent);

/// True while a process group has at least one member (zombies included).
bool GroupAlive(pid_t pgid);

/// Signal number for "SIGTERM"/"TERM"/"15"-style names; -1 when unknown.
int SignalFromName(const std::string& name);

}  // namespace tzrun::agent::detail
