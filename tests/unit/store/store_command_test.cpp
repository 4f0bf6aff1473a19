// `tzrun store` process behaviour, through the tzrun_store_cli_probe executable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tzrun/store/client.hpp"
#include "tzrun/store/server.hpp"

extern char** environ;

namespace tzrun::store {
namespace {

using namespace std::chrono_literals;

// A child process with stdout/stderr captured through pipes.
class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    args.insert(args.begin(), TZRUN_STORE_CLI_PROBE);
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
    if (err_ >= 0) ::close(err_);
  }
  [[nodiscard]] bool Started() const { return pid_ > 0; }
  /// Reads stdout until a full line arrives (or EOF / timeout).
  std::string ReadLine(std::chrono::milliseconds limit = 20s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (stdout_.find('\n') == std::string::npos && std::chrono::steady_clock::now() < end) {
      if (!Pump(out_, stdout_, 50)) break;
    }
    const auto nl = stdout_.find('\n');
    if (nl == std::string::npos) return {};
    std::string line = stdout_.substr(0, nl);
    stdout_.erase(0, nl + 1);
    return line;
  }
  void Kill(int sig) { ::kill(pid_, sig); }
  /// Waits for exit; returns the exit code (128+N for signal N, -1 on timeout).
  int Wait(std::chrono::milliseconds limit = 20s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      Pump(err_, stderr_, 10);
      Pump(out_, stdout_, 0);
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        while (Pump(err_, stderr_, 0)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  const std::string& StderrText() const { return stderr_; }
  const std::string& StdoutText() const { return stdout_; }

 private:
  static bool Pump(int fd, std::string& into, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    into.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  bool reaped_ = false;
  std::string stdout_;
  std::string stderr_;
};

std::uint16_t PortOf(const std::string& line) {
  const auto colon = line.rfind(':');
  return static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
}

TEST(StoreCommand, ServesAndStopsOnSigterm) {
  Child child({"--port", "0", "--host", "127.0.0.1", "--log-level", "debug"});
  ASSERT_TRUE(child.Started());
  const std::string line = child.ReadLine();
  ASSERT_EQ(line.rfind("tzrun store: listening on 127.0.0.1:", 0), 0u) << line;
  ClientOptions co;
  co.port = PortOf(line);
  co.timeout = 20s;
  {
    Client c(co);
    c.Set("k", "v");
    EXPECT_EQ(c.Get("k"), "v");
    EXPECT_EQ(c.Add("n", 2), 2);
  }
  child.Kill(SIGTERM);
  EXPECT_EQ(child.Wait(), 0) << child.StderrText();
  EXPECT_NE(child.StderrText().find("SIGTERM"), std::string::npos) << child.StderrText();
}

TEST(StoreCommand, DefaultHostListensOnAllInterfacesAndStopsOnSigint) {
  Child child({"--port", "0"});
  ASSERT_TRUE(child.Started());
  const std::string line = child.ReadLine();
  ASSERT_EQ(line.rfind("tzrun store: listening on ", 0), 0u) << line;
  EXPECT_TRUE(line.find("[::]:") != std::string::npos || line.find("0.0.0.0:") != std::string::npos)
      << line;
  ClientOptions co;
  co.port = PortOf(line);
  co.timeout = 20s;
  Client c(co);
  c.Set("k", "v");
  child.Kill(SIGINT);
  EXPECT_EQ(child.Wait(), 0) << child.StderrText();
}

// --max-count caps the keys of one multi-key request: over it, only that connection is closed.
TEST(StoreCommand, MaxCountCapsMultiKeyRequests) {
  Child child({"--port", "0", "--host", "127.0.0.1", "--max-count", "2"});
  ASSERT_TRUE(child.Started());
  const std::string line = child.ReadLine();
  ASSERT_EQ(line.rfind("tzrun store: listening on 127.0.0.1:", 0), 0u) << line;
  ClientOptions co;
  co.port = PortOf(line);
  co.timeout = 20s;
  Client ok(co);
  ok.MultiSet({"a", "b"}, {"1", "2"});
  EXPECT_EQ(ok.MultiGet({"a", "b"}), (std::vector<std::string>{"1", "2"}));
  {
    Client over(co);
    EXPECT_THROW(over.MultiGet({"a", "b", "a"}), StoreError);
  }
  EXPECT_EQ(ok.Get("a"), "1");  // the server and other connections are unaffected
  child.Kill(SIGTERM);
  EXPECT_EQ(child.Wait(), 0) << child.StderrText();
  EXPECT_NE(child.StderrText().find("max_count=2"), std::string::npos) << child.StderrText();
}

TEST(StoreCommand, PortInUseExits125WithClearMessage) {
  ServerOptions o;
  o.host = "127.0.0.1";
  Server blocker(o);
  blocker.Start();
  Child child({"--host", "127.0.0.1", "--port", std::to_string(blocker.Port())});
  ASSERT_TRUE(child.Started());
  EXPECT_EQ(child.Wait(), 125);
  EXPECT_NE(child.StderrText().find("already in use"), std::string::npos) << child.StderrText();
  EXPECT_NE(child.StderrText().find(std::to_string(blocker.Port())), std::string::npos);
  EXPECT_NE(child.StderrText().find("--port"), std::string::npos) << child.StderrText();
  EXPECT_TRUE(child.StdoutText().empty()) << child.StdoutText();
}

TEST(StoreCommand, BadFlagsExit2) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--bogus"},
                                                                {"--port", "70000"},
                                                                {"--port", "abc"},
                                                                {"--log-level", "loud"},
                                                                {"--max-count", "many"}}) {
    Child child(args);
    ASSERT_TRUE(child.Started());
    EXPECT_EQ(child.Wait(), 2) << args[0] << ": " << child.StderrText();
  }
}

TEST(StoreCommand, HelpExits0) {
  Child child({"--help"});
  ASSERT_TRUE(child.Started());
  EXPECT_EQ(child.Wait(), 0);
  EXPECT_NE(child.StdoutText().find("--max-connections"), std::string::npos) << child.StdoutText();
  EXPECT_NE(child.StdoutText().find("--max-count"), std::string::npos) << child.StdoutText();
}

}  // namespace
}  // namespace tzrun::store
