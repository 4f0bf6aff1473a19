// Process primitives for the agent (see process.hpp).
#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

#include "numa_binding.hpp"
#include "report.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent::detail {
namespace {

// The guardian's last act for an agent that vanished: once the killed groups are gone (at most
// 5 s; a dying worker may still create files), removes `dir` (single-threaded forked child).
void RemoveAfterGroups(const std::string& dir, const pid_t* groups, std::size_t n) {
  for (int i = 0; i < 50; ++i) {
    bool any = false;
    for (std::size_t k = 0; k < n; ++k) any = any || ::kill(-groups[k], 0) == 0;
    if (!any) break;
    ::usleep(100000);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Marks every fd >= 3 close-on-exec (async-signal-safe).
void CloexecFrom3() {
#ifdef CLOSE_RANGE_CLOEXEC
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  rlimit rl{};
  int max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < 1048576) {
    max_fd = static_cast<int>(rl.rlim_cur);
  }
  for (int fd = 3; fd < max_fd; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// What the child reports through the exec-status pipe: the step that failed and its errno.
enum ChildStep : int { kExecStep = 0, kAffinityStep = 1 };

[[noreturn]] void ChildFail(int pipe_fd, int err, int step = kExecStep) {
  // Best effort: the parent reads the step and errno; a short write just reads as EOF (success).
  const std::array<int, 2> report{step, err};
  ssize_t rc = ::write(pipe_fd, report.data(), sizeof report);
  (void)rc;
  ::_exit(err == ENOENT ? 127 : 126);
}

// --numa-binding's CPUs as a dynamically sized mask (more than CPU_SETSIZE CPUs may exist),
// built before fork: the child only calls sched_setaffinity.
struct CpuMask {
  std::vector<unsigned long> words;  // a cpu_set_t of `size` bytes (glibc's __cpu_mask words)
  std::size_t size = 0;
  explicit CpuMask(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    const int n = *std::max_element(cpus.begin(), cpus.end()) + 1;
    size = CPU_ALLOC_SIZE(n);
    words.assign(size / sizeof(unsigned long) + 1, 0);
    for (const int c : cpus) CPU_SET_S(c, size, Set());
  }
  cpu_set_t* Set() { return reinterpret_cast<cpu_set_t*>(words.data()); }
};

using base::ErrnoText;

// The SpawnError for what the child reported through the exec-status pipe (it is reaped).
[[noreturn]] void ThrowChildFailure(const SpawnRequest& req, int step, int child_errno) {
  if (step == kAffinityStep) {
    throw SpawnError("cannot bind worker '" + req.program + "' to CPUs " +
                         CpuListText(CpuSet(req.cpus.begin(), req.cpus.end())) +
                         " (--numa-binding): sched_setaffinity: " + ErrnoText(child_errno) +
                         "; the CPUs this agent may use changed since it planned the binding "
                         "(cgroup cpuset?): drop --numa-binding or restart the job",
                     125, child_errno);
  }
  const int code = child_errno == ENOENT ? 127 : 126;
  std::string hint = child_errno == ENOENT    ? "check the path (or its #! interpreter)"
                     : child_errno == EACCES  ? "make it executable (chmod +x)"
                     : child_errno == ENOEXEC ? "add a #! line or run it with Python"
                                              : "check the program";
  throw SpawnError("cannot execute '" + req.program + "': " + ErrnoText(child_errno) + " (errno " +
                       std::to_string(child_errno) + "); " + hint,
                   code, child_errno);
}

}  // namespace

pid_t Spawn(const SpawnRequest& req) {
  // Everything the child needs is prepared here: after fork() only async-signal-safe
  // calls are allowed (the store server runs threads).
  std::vector<char*> argv;
  argv.reserve(req.argv.size() + 1);
  for (const auto& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  env_strings.reserve(req.env.size());
  for (const auto& [k, v] : req.env) {
    std::string entry;
    entry.reserve(k.size() + 1 + v.size());
    entry.append(k).append("=").append(v);
    env_strings.push_back(std::move(entry));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  CpuMask cpus(req.cpus);
  std::array<int, 2> pfd{-1, -1};
  if (::pipe2(pfd.data(), O_CLOEXEC) != 0) {
    int err = errno;
    throw SpawnError("cannot create the exec-status pipe for '" + req.program +
                         "': " + ErrnoText(err) + "; raise the open-file limit (ulimit -n)",
                     125, err);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(pfd[0]);
    ::close(pfd[1]);
    throw SpawnError("fork() failed for worker '" + req.program + "': " + ErrnoText(err) +
                         "; check memory and the process limit (ulimit -u)",
                     125, err);
  }
  if (pid == 0) {
    ::close(pfd[0]);
    if (::setsid() < 0) ChildFail(pfd[1], errno);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(pfd[1], errno);
    if (::getppid() != parent) ::_exit(125);  // the agent already died
    if (req.stdout_fd >= 0 && ::dup2(req.stdout_fd, STDOUT_FILENO) < 0) {
      ChildFail(pfd[1], errno);
    }
    if (req.stderr_fd >= 0 && ::dup2(req.stderr_fd, STDERR_FILENO) < 0) {
      ChildFail(pfd[1], errno);
    }
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : req.reset_to_default) ::sigaction(sig, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &req.child_mask, nullptr);
    if (cpus.size > 0 && ::sched_setaffinity(0, cpus.size, cpus.Set()) != 0) {
      ChildFail(pfd[1], errno, kAffinityStep);
    }
    CloexecFrom3();
    ::execve(req.program.c_str(), argv.data(), envp.data());
    ChildFail(pfd[1], errno);
  }
  ::close(pfd[1]);
  std::array<int, 2> report{0, 0};  // step, errno
  ssize_t n = 0;
  do {
    n = ::read(pfd[0], report.data(), sizeof report);
  } while (n < 0 && errno == EINTR);
  ::close(pfd[0]);
  if (n == static_cast<ssize_t>(sizeof report)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ThrowChildFailure(req, report[0], report[1]);
  }
  return pid;
}

// ---------------------------------------------------------------------------------------
// Guardian

Guardian::~Guardian() {
  pid_t p = Close();
  if (p > 0) {
    int status = 0;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void Guardian::Start() {
  std::array<int, 2> sv{-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
    const int err = errno;
    throw SpawnError(
        "cannot create the guardian socket pair: " + std::generic_category().message(err),
        exit_code::kInfrastructure, err);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    throw SpawnError("cannot fork the guardian process: " + std::generic_category().message(err),
                     exit_code::kInfrastructure, err);
  }
  if (pid == 0) {
    // Guardian: own session (signals to tzrun's group or terminal do not reach it),
    // ignores the usual termination signals, holds no console fds, and exits on EOF.
    ::close(sv[0]);
    ::setsid();
    for (int sig :
         {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU}) {
      ::signal(sig, SIG_IGN);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      if (devnull > 2) ::close(devnull);
    }
    const int fd = sv[1];
    static std::array<pid_t, 65536> groups{};
    std::size_t ngroups = 0;
    std::array<char, 4096> buf{};
    char op = 0;
    long value = 0;
    bool in_number = false;
    while (true) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        char c = buf[static_cast<std::size_t>(i)];
        if (c == '+' || c == '-') {
          op = c;
          value = 0;
          in_number = true;
        } else if (c >= '0' && c <= '9' && in_number) {
          value = value * 10 + (c - '0');
        } else if (c == '\n' && in_number) {
          in_number = false;
          auto pg = static_cast<pid_t>(value);
          if (op == '+' && ngroups < groups.size() && pg > 1) {
            groups[ngroups++] = pg;
          } else if (op == '-') {
            for (std::size_t k = 0; k < ngroups; ++k) {
              if (groups[k] == pg) {
                groups[k] = groups[--ngroups];
                break;
              }
            }
          }
        }
      }
    }
    for (std::size_t k = 0; k < ngroups; ++k) ::kill(-groups[k], SIGKILL);
    for (const auto& dir : cleanup_dirs_) RemoveAfterGroups(dir, groups.data(), ngroups);
    ::_exit(0);
  }
  ::close(sv[1]);
  fd_ = sv[0];
  pid_ = pid;
}

void Guardian::Send(char op, pid_t pgid) {
  if (fd_ < 0) return;
  char msg[32];
  int len = std::snprintf(msg, sizeof msg, "%c%d\n", op, static_cast<int>(pgid));
  const char* p = msg;
  while (len > 0) {
    ssize_t n = ::send(fd_, p, static_cast<std::size_t>(len), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // guardian gone: nothing more to do
    p += n;
    len -= static_cast<int>(n);
  }
}

void Guardian::Add(pid_t pgid) {
  Send('+', pgid);
}
void Guardian::Remove(pid_t pgid) {
  Send('-', pgid);
}

pid_t Guardian::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  return std::exchange(pid_, -1);
}

// ---------------------------------------------------------------------------------------

std::vector<pid_t> ListChildren(pid_t parent) {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    const char* name = e->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/%s/stat", name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "<pid> (<comm>) <state> <ppid> ..."; comm may contain spaces and ')'.
    const char* rparen = std::strrchr(buf, ')');
    if (rparen == nullptr) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(rparen + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::atoi(name)));
  }
  ::closedir(dir);
  return out;
}

bool GroupAlive(pid_t pgid) {
  if (pgid <= 1) return false;
  return ::kill(-pgid, 0) == 0 || errno == EPERM;
}

int SignalFromName(const std::string& raw) {
  std::string name;
  for (char c : raw) {
    if (c != ' ' && c != '\t') name += c;
  }
  if (name.empty()) return -1;
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    int v = std::atoi(name.c_str());
    return v > 0 && v < NSIG ? v : -1;
  }
  for (int sig = 1; sig < NSIG; ++sig) {  // one name table: report.cpp's SignalName()
    const std::string full = SignalName(sig);
    if (full.rfind("SIG", 0) == 0 && (name == full || name == full.substr(3))) return sig;
  }
  // Python `signal` aliases accepted by the CLI.
  static const std::pair<int, std::string> kAliases[] = {
      {SIGABRT, "SIGIOT"}, {SIGIO, "SIGPOLL"}, {SIGCHLD, "SIGCLD"}};
  for (const auto& [sig, alias] : kAliases) {
    if (name == alias || name == alias.substr(3)) return sig;
  }
  return -1;
}

}  // namespace tzrun::agent::detail
