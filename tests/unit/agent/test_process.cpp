// Unit tests for src/agent/process.{hpp,cpp}: spawn (sessions, exec error codes, env, fds),
// the guardian, child enumeration, signal names.
#include <fcntl.h>
#include <gtest/gtest.h>
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
using tzrun::agent::detail::group_alive;
using tzrun::agent::detail::Guardian;
using tzrun::agent::detail::list_children;
using tzrun::agent::detail::signal_from_name;
using tzrun::agent::detail::spawn;
using tzrun::agent::detail::SpawnError;
using tzrun::agent::detail::SpawnRequest;

namespace {

SpawnRequest sh(const std::string& script) {
  SpawnRequest r;
  r.program = "/bin/sh";
  r.argv = {"sh", "-c", script};
  r.env = {{"PATH", "/usr/bin:/bin"}};
  sigemptyset(&r.child_mask);
  return r;
}

int wait_status(pid_t pid) {
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, 0), pid);
  return st;
}

// Polls `pred` for up to `timeout` (generous: the box is shared and slow).
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace

TEST(Spawn, RunsInOwnSessionWithGivenEnv) {
  auto req = sh("test \"$FOO\" = bar && exec sleep 30");
  req.env["FOO"] = "bar";
  pid_t pid = spawn(req);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(eventually([&] { return ::getsid(pid) == pid; }));
  EXPECT_EQ(::getpgid(pid), pid);
  EXPECT_TRUE(group_alive(pid));
  auto kids = list_children(::getpid());
  EXPECT_NE(std::find(kids.begin(), kids.end(), pid), kids.end());
  ::kill(pid, SIGKILL);
  int st = wait_status(pid);
  ASSERT_TRUE(WIFSIGNALED(st));  // env check passed (else exit 1 before sleep)
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_FALSE(group_alive(pid));
}

TEST(Spawn, PassesExitCodeAndRedirectsStdout) {
  fs::path out = fs::temp_directory_path() / ("tzrun_spawn_" + std::to_string(::getpid()));
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  auto req = sh("echo hello; exit 7");
  req.stdout_fd = fd;
  pid_t pid = spawn(req);
  ::close(fd);
  int st = wait_status(pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 7);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "hello\n");
  fs::remove(out);
}

TEST(Spawn, ChildMaskAndDispositionsAreRestored) {
  // The parent blocks SIGTERM; the worker must still die of it.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  auto req = sh("exec sleep 30");
  req.child_mask = old;
  pid_t pid = spawn(req);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::kill(pid, SIGTERM);
  int st = wait_status(pid);
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
  auto req = sh("kill -HUP $$; kill -PIPE $$; exit 0");
  req.reset_to_default = {SIGPIPE};
  pid_t reset = spawn(req);
  req.reset_to_default = {};
  pid_t kept = spawn(req);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  int st = wait_status(reset);
  ASSERT_TRUE(WIFSIGNALED(st));  // SIGHUP stayed ignored (nohup), SIGPIPE was reset
  EXPECT_EQ(WTERMSIG(st), SIGPIPE);
  st = wait_status(kept);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Spawn, ExecFailuresMapTo127And126) {
  SpawnRequest missing = sh("");
  missing.program = "/nonexistent/tzrun-worker";
  missing.argv = {"/nonexistent/tzrun-worker"};
  try {
    (void)spawn(missing);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.exit_code(), 127);
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tzrun-worker"), std::string::npos);
  }

  fs::path noexec = fs::temp_directory_path() / ("tzrun_noexec_" + std::to_string(::getpid()));
  std::ofstream(noexec) << "#!/bin/sh\n";
  ::chmod(noexec.c_str(), 0644);
  SpawnRequest req = sh("");
  req.program = noexec.string();
  req.argv = {noexec.string()};
  try {
    (void)spawn(req);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.exit_code(), 126);
    EXPECT_EQ(e.error_number(), EACCES);
  }
  fs::remove(noexec);
  // Nothing was left behind: both failed children were reaped by spawn().
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

TEST(Guardian, KillsRegisteredGroupsWhenTheAgentGoesAway) {
  Guardian g;
  g.start();
  ASSERT_GT(g.pid(), 0);
  // A worker group with a grandchild: sh (leader) + sleep (same group).
  pid_t worker = spawn(sh("sleep 60 & wait"));
  pid_t unregistered = spawn(sh("exec sleep 60"));
  pid_t removed = spawn(sh("exec sleep 60"));
  g.add(worker);
  g.add(removed);
  g.add(unregistered);
  g.remove(unregistered);
  g.remove(removed);
  g.add(removed);          // re-added: must be killed
  pid_t gpid = g.close();  // EOF, as when tzrun is SIGKILLed
  int st = wait_status(gpid);
  EXPECT_TRUE(WIFEXITED(st));
  st = wait_status(worker);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_TRUE(eventually([&] { return !group_alive(worker); }));  // grandchild gone too
  st = wait_status(removed);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_TRUE(group_alive(unregistered));
  ::kill(unregistered, SIGKILL);
  (void)wait_status(unregistered);
}

TEST(Signals, NamesAndNumbers) {
  EXPECT_EQ(signal_from_name("SIGTERM"), SIGTERM);
  EXPECT_EQ(signal_from_name(" SIGUSR1"), SIGUSR1);
  EXPECT_EQ(signal_from_name("SIGIOT"), SIGABRT);
  EXPECT_EQ(signal_from_name("SIGPOLL"), SIGIO);
  EXPECT_EQ(signal_from_name("HUP"), SIGHUP);
  EXPECT_EQ(signal_from_name("15"), 15);
  EXPECT_EQ(signal_from_name("SIGNOPE"), -1);
  EXPECT_EQ(signal_from_name(""), -1);
  EXPECT_EQ(signal_from_name("0"), -1);
}
