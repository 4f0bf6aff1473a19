// Unit tests for src/agent/process.{hpp,cpp}: spawn (sessions, exec error codes, env, fds),
// the guardian, child enumeration, signal names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "process.hpp"

namespace fs = std::filesystem;
using tzrun::agent::detail::GroupAlive;
using tzrun::agent::detail::Guardian;
using tzrun::agent::detail::ListChildren;
using tzrun::agent::detail::SignalFromName;
using tzrun::agent::detail::Spawn;
using tzrun::agent::detail::SpawnError;
using tzrun::agent::detail::SpawnRequest;

namespace {

SpawnRequest Sh(const std::string& script) {
  SpawnRequest r;
  r.program = "/bin/sh";
  r.argv = {"sh", "-c", script};
  r.env = {{"PATH", "/usr/bin:/bin"}};
  sigemptyset(&r.child_mask);
  return r;
}

int WaitStatus(pid_t pid) {
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, 0), pid);
  return st;
}

// Polls `pred` for up to `timeout` (generous: the box is shared and slow).
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace

TEST(Spawn, RunsInOwnSessionWithGivenEnv) {
  auto req = Sh("test \"$FOO\" = bar && exec sleep 30");
  req.env["FOO"] = "bar";
  pid_t pid = Spawn(req);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(Eventually([&] { return ::getsid(pid) == pid; }));
  EXPECT_EQ(::getpgid(pid), pid);
  EXPECT_TRUE(GroupAlive(pid));
  auto kids = ListChildren(::getpid());
  EXPECT_NE(std::find(kids.begin(), kids.end(), pid), kids.end());
  ::kill(pid, SIGKILL);
  int st = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(st));  // env check passed (else exit 1 before sleep)
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_FALSE(GroupAlive(pid));
}

TEST(Spawn, PassesExitCodeAndRedirectsStdout) {
  fs::path out = fs::temp_directory_path() / ("tzrun_spawn_" + std::to_string(::getpid()));
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  auto req = Sh("echo hello; exit 7");
  req.stdout_fd = fd;
  pid_t pid = Spawn(req);
  ::close(fd);
  int st = WaitStatus(pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 7);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "hello\n");
  fs::remove(out);
}

TEST(Spawn, CpusSetTheWorkersAffinityBeforeExec) {
  // --numa-binding: the worker starts on the listed CPUs (what numactl --physcpubind does).
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) last = c;
  }
  ASSERT_GE(last, 0);
  fs::path out = fs::temp_directory_path() / ("tzrun_cpus_" + std::to_string(::getpid()));
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  auto req = Sh("grep Cpus_allowed_list: /proc/self/status");
  req.stdout_fd = fd;
  req.cpus = {last};
  pid_t pid = Spawn(req);
  ::close(fd);
  EXPECT_EQ(WaitStatus(pid), 0);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "Cpus_allowed_list:\t" + std::to_string(last) + "\n");
  fs::remove(out);

  // A CPU the agent may not use: the step and errno are reported, not an exec failure.
  req = Sh("true");
  req.cpus = {CPU_SETSIZE + 5};  // no such CPU
  try {
    (void)Spawn(req);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.ExitCode(), 125);
    EXPECT_EQ(e.ErrorNumber(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("cannot bind worker '/bin/sh' to CPUs 1029"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

TEST(Spawn, ChildMaskAndDispositionsAreRestored) {
  // The parent blocks SIGTERM; the worker must still die of it.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  auto req = Sh("exec sleep 30");
  req.child_mask = old;
  pid_t pid = Spawn(req);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::kill(pid, SIGTERM);
  int st = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
}

TEST(Spawn, ResetsListedIgnoredSignalsAndKeepsOthersIgnored) {
  struct sigaction ign {
  }, old_pipe{}, old_hup{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGPIPE, &ign, &old_pipe);
  ::sigaction(SIGHUP, &ign, &old_hup);
  auto req = Sh("kill -HUP $$; kill -PIPE $$; exit 0");
  req.reset_to_default = {SIGPIPE};
  pid_t reset = Spawn(req);
  req.reset_to_default = {};
  pid_t kept = Spawn(req);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  int st = WaitStatus(reset);
  ASSERT_TRUE(WIFSIGNALED(st));  // SIGHUP stayed ignored (nohup), SIGPIPE was reset
  EXPECT_EQ(WTERMSIG(st), SIGPIPE);
  st = WaitStatus(kept);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Spawn, ExecFailuresMapTo127And126) {
  SpawnRequest missing = Sh("");
  missing.program = "/nonexistent/tzrun-worker";
  missing.argv = {"/nonexistent/tzrun-worker"};
  try {
    (void)Spawn(missing);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.ExitCode(), 127);
    EXPECT_EQ(e.ErrorNumber(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tzrun-worker"), std::string::npos);
  }

  fs::path noexec = fs::temp_directory_path() / ("tzrun_noexec_" + std::to_string(::getpid()));
  std::ofstream(noexec) << "#!/bin/sh\n";
  ::chmod(noexec.c_str(), 0644);
  SpawnRequest req = Sh("");
  req.program = noexec.string();
  req.argv = {noexec.string()};
  try {
    (void)Spawn(req);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.ExitCode(), 126);
    EXPECT_EQ(e.ErrorNumber(), EACCES);
  }
  fs::remove(noexec);
  // Nothing was left behind: both failed children were reaped by spawn().
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

TEST(Guardian, KillsRegisteredGroupsWhenTheAgentGoesAway) {
  Guardian g;
  g.Start();
  ASSERT_GT(g.Pid(), 0);
  // A worker group with a grandchild: sh (leader) + sleep (same group).
  pid_t worker = Spawn(Sh("sleep 60 & wait"));
  pid_t unregistered = Spawn(Sh("exec sleep 60"));
  pid_t removed = Spawn(Sh("exec sleep 60"));
  g.Add(worker);
  g.Add(removed);
  g.Add(unregistered);
  g.Remove(unregistered);
  g.Remove(removed);
  g.Add(removed);          // re-added: must be killed
  pid_t gpid = g.Close();  // EOF, as when tzrun is SIGKILLed
  int st = WaitStatus(gpid);
  EXPECT_TRUE(WIFEXITED(st));
  st = WaitStatus(worker);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_TRUE(Eventually([&] { return !GroupAlive(worker); }));  // grandchild gone too
  st = WaitStatus(removed);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_TRUE(GroupAlive(unregistered));
  ::kill(unregistered, SIGKILL);
  (void)WaitStatus(unregistered);
}

TEST(Signals, NamesAndNumbers) {
  EXPECT_EQ(SignalFromName("SIGTERM"), SIGTERM);
  EXPECT_EQ(SignalFromName(" SIGUSR1"), SIGUSR1);
  EXPECT_EQ(SignalFromName("SIGIOT"), SIGABRT);
  EXPECT_EQ(SignalFromName("SIGPOLL"), SIGIO);
  EXPECT_EQ(SignalFromName("HUP"), SIGHUP);
  EXPECT_EQ(SignalFromName("15"), 15);
  EXPECT_EQ(SignalFromName("SIGNOPE"), -1);
  EXPECT_EQ(SignalFromName(""), -1);
  EXPECT_EQ(SignalFromName("0"), -1);
}
