// Unit tests for src/agent/logs.{hpp,cpp}: log-dir layout, tee routing, console sink,
// prefixes (expected values checked against torchrun 2.11 / Python string.Template).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "logs.hpp"

namespace fs = std::filesystem;
using tzrun::agent::ColorMode;
using tzrun::agent::ConsoleSink;
using tzrun::agent::LogDir;
using tzrun::agent::LogDirError;
using tzrun::agent::MakePrefix;
using tzrun::agent::TeeRouter;

namespace {

// A fresh directory under the build's temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tzrun_logs_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& Path() const { return path_; }

 private:
  fs::path path_;
};

// An anonymous read/write file used as a console or log-file fd.
class MemFile {
 public:
  MemFile() : f_(std::tmpfile()) {}
  ~MemFile() { std::fclose(f_); }
  int Fd() const { return fileno(f_); }
  std::string Contents() const {
    std::string out;
    char buf[65536];
    off_t off = 0;
    while (true) {
      const ssize_t n = ::pread(Fd(), buf, sizeof(buf), off);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  std::FILE* f_;
};

// Restores an environment variable on scope exit.
class EnvGuard {
 public:
  explicit EnvGuard(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~EnvGuard() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(s.substr(pos));
      break;
    }
    lines.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

}  // namespace

// ------------------------------------------------------------------ LogDir

TEST(LogDir, LayoutMatchesTorchrunDefaultLogsSpecs) {
  TempDir tmp;
  const auto base = tmp.Path() / "logs";  // does not exist yet: created like torchrun
  const LogDir d = LogDir::Create(base.string(), "myrun");
  EXPECT_FALSE(d.Disabled());
  const fs::path run(d.RunDir());
  EXPECT_TRUE(run.is_absolute());
  EXPECT_EQ(run.parent_path(), base);
  EXPECT_TRUE(std::regex_match(run.filename().string(), std::regex("myrun_[a-z0-9_]{8}"))) << run;
  EXPECT_TRUE(fs::is_directory(run));
  EXPECT_EQ(fs::status(run).permissions() & fs::perms::all, fs::perms::owner_all);  // mkdtemp

  EXPECT_EQ(d.AttemptDir(2), d.RunDir() + "/attempt_2");
  EXPECT_EQ(d.RankDir(2, 11), d.RunDir() + "/attempt_2/11");
  EXPECT_EQ(d.StdoutPath(0, 1), d.RunDir() + "/attempt_0/1/stdout.log");
  EXPECT_EQ(d.StderrPath(0, 1), d.RunDir() + "/attempt_0/1/stderr.log");
  EXPECT_EQ(d.ErrorFile(3, 10), d.RunDir() + "/attempt_3/10/error.json");

  d.ResetAttempt(0, 12);
  for (int r = 0; r < 12; ++r) EXPECT_TRUE(fs::is_directory(d.RankDir(0, r))) << r;
  EXPECT_FALSE(fs::exists(d.RankDir(0, 12)));
  // Only directories: log files appear when the agent opens them, error.json when the
  // worker writes it.
  EXPECT_TRUE(fs::is_empty(d.RankDir(0, 0)));
}

TEST(LogDir, TwoAgentsGetDistinctRunDirs) {
  TempDir tmp;
  const LogDir a = LogDir::Create(tmp.Path().string(), "none");
  const LogDir b = LogDir::Create(tmp.Path().string(), "none");
  EXPECT_NE(a.RunDir(), b.RunDir());
}

TEST(LogDir, ResetWipesARepeatedAttemptOnly) {
  TempDir tmp;
  const LogDir d = LogDir::Create(tmp.Path().string(), "r");
  d.ResetAttempt(0, 2);
  std::ofstream(d.StdoutPath(0, 1)) << "old";
  std::ofstream(d.AttemptDir(0) + "/stray.txt") << "old";
  d.ResetAttempt(1, 2);
  std::ofstream(d.StdoutPath(1, 0)) << "attempt1";
  d.ResetAttempt(0, 3);  // repeated attempt number (membership-change restart)
  EXPECT_FALSE(fs::exists(d.StdoutPath(0, 1)));
  EXPECT_FALSE(fs::exists(d.AttemptDir(0) + "/stray.txt"));
  EXPECT_TRUE(fs::is_directory(d.RankDir(0, 2)));
  EXPECT_TRUE(fs::exists(d.StdoutPath(1, 0)));  // other attempts untouched
}

TEST(LogDir, DefaultBaseIsATorchelasticTempDir) {
  TempDir tmp;
  EnvGuard g("TMPDIR");
  ::setenv("TMPDIR", tmp.Path().c_str(), 1);
  const LogDir d = LogDir::Create(std::nullopt, "job");
  const fs::path run(d.RunDir());
  EXPECT_EQ(run.parent_path().parent_path(), tmp.Path());
  EXPECT_TRUE(std::regex_match(run.parent_path().filename().string(),
                               std::regex("torchelastic_[a-z0-9_]{8}")))
      << run;
  EXPECT_TRUE(std::regex_match(run.filename().string(), std::regex("job_[a-z0-9_]{8}")));
  // An empty --log-dir behaves like an absent one (Python: `if not log_dir`).
  const LogDir e = LogDir::Create(std::string(), "job");
  EXPECT_EQ(fs::path(e.RunDir()).parent_path().parent_path(), tmp.Path());
}

TEST(LogDir, RelativeBaseGivesAbsolutePaths) {
  TempDir tmp;
  const auto old = fs::current_path();
  fs::current_path(tmp.Path());
  const LogDir d = LogDir::Create(std::string("rel/logs"), "x");
  fs::current_path(old);
  EXPECT_TRUE(fs::path(d.RunDir()).is_absolute());
  EXPECT_EQ(fs::path(d.RunDir()).parent_path(), tmp.Path() / "rel" / "logs");
}

TEST(LogDir, SlashInRunIdDoesNotNestDirectories) {
  TempDir tmp;
  const LogDir d = LogDir::Create(tmp.Path().string(), "a/b");
  EXPECT_EQ(fs::path(d.RunDir()).parent_path(), tmp.Path());
  EXPECT_EQ(fs::path(d.RunDir()).filename().string().rfind("a_b_", 0), 0u);
}

TEST(LogDir, BaseThatIsAFileIsRejectedWithAClearMessage) {
  TempDir tmp;
  const auto file = tmp.Path() / "afile";
  std::ofstream(file) << "x";
  try {
    (void)LogDir::Create(file.string(), "r");
    FAIL() << "expected LogDirError";
  } catch (const LogDirError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
}

TEST(LogDir, UncreatableBaseThrows) {
  TempDir tmp;
  const auto file = tmp.Path() / "afile";
  std::ofstream(file) << "x";
  EXPECT_THROW((void)LogDir::Create((file / "sub").string(), "r"), LogDirError);
}

TEST(LogDir, DevNullDisablesEverything) {
  const LogDir d = LogDir::Create(std::string("/dev/null"), "r");
  EXPECT_TRUE(d.Disabled());
  EXPECT_EQ(d.RunDir(), "/dev/null");
  EXPECT_EQ(d.AttemptDir(0), "/dev/null");
  EXPECT_EQ(d.StdoutPath(0, 0), "/dev/null");
  EXPECT_EQ(d.StderrPath(1, 3), "/dev/null");
  EXPECT_EQ(d.ErrorFile(0, 0), "");  // torchrun exports TORCHELASTIC_ERROR_FILE=""
  EXPECT_NO_THROW(d.ResetAttempt(0, 4));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// ------------------------------------------------------------------ TeeRouter

namespace {
const std::string kInput = "a\nbb\n\nccc\r\nlast";
const std::string kConsoleBeforeFinish = "[p]:a\n[p]:bb\n[p]:\n[p]:ccc\r\n";
const std::string kConsoleAfterFinish = kConsoleBeforeFinish + "[p]:last\n";
}  // namespace

TEST(TeeRouter, AnyTwoWaySplitGivesTheSameLines) {
  for (std::size_t cut = 0; cut <= kInput.size(); ++cut) {
    MemFile console, file;
    ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
    TeeRouter t(sink, "[p]:", 1, file.Fd(), true, 0);
    t.Feed(std::string_view(kInput).substr(0, cut));
    t.Feed(std::string_view(kInput).substr(cut));
    EXPECT_EQ(console.Contents(), kConsoleBeforeFinish) << "cut at " << cut;
    t.Finish();
    EXPECT_EQ(console.Contents(), kConsoleAfterFinish) << "cut at " << cut;
    EXPECT_EQ(file.Contents(), kInput) << "cut at " << cut;
  }
}

TEST(TeeRouter, ByteByByteAndRandomChunks) {
  std::mt19937 gen(42);
  for (int round = 0; round < 50; ++round) {
    MemFile console, file;
    ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
    TeeRouter t(sink, "[p]:", 2, file.Fd(), true, 0);
    std::size_t pos = 0;
    while (pos < kInput.size()) {
      const std::size_t n = round == 0 ? 1 : std::uniform_int_distribution<std::size_t>(0, 5)(gen);
      t.Feed(std::string_view(kInput).substr(pos, n));
      pos += n;
    }
    t.Finish();
    t.Finish();  // idempotent
    EXPECT_EQ(console.Contents(), kConsoleAfterFinish) << "round " << round;
    EXPECT_EQ(file.Contents(), kInput);
  }
}

TEST(TeeRouter, StreamSelectsTheConsoleFd) {
  MemFile out, err;
  ConsoleSink sink(out.Fd(), err.Fd(), ColorMode::kNever);
  TeeRouter o(sink, "[o]:", 1, -1, true, 0);
  TeeRouter e(sink, "[e]:", 2, -1, true, 0);
  o.Feed("x\n");
  e.Feed("y\n");
  EXPECT_EQ(out.Contents(), "[o]:x\n");
  EXPECT_EQ(err.Contents(), "[e]:y\n");
}

TEST(TeeRouter, NotToConsoleOnlyWritesTheFile) {
  MemFile console, file;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  TeeRouter t(sink, "[p]:", 1, file.Fd(), false, 0);
  t.Feed(kInput);
  t.Finish();
  EXPECT_EQ(console.Contents(), "");
  EXPECT_EQ(file.Contents(), kInput);
}

TEST(TeeRouter, BinaryBytesPassThroughUnchanged) {
  MemFile console, file;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  TeeRouter t(sink, "", 1, file.Fd(), true, 0);
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  t.Feed(bytes);
  t.Finish();
  EXPECT_EQ(file.Contents(), bytes);
  // The console gets the same bytes (no prefix) plus a newline for the unterminated tail.
  EXPECT_EQ(console.Contents(), bytes + "\n");
}

TEST(TeeRouter, LongLinesAreFlushedInChunks) {
  MemFile console, file;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  TeeRouter t(sink, "[p]:", 1, file.Fd(), true, 0);
  const std::size_t total = 3 * TeeRouter::kMaxLine + 1000;
  std::string line;
  for (std::size_t i = 0; i < total; ++i) line += static_cast<char>('a' + i % 26);
  for (std::size_t pos = 0; pos < total; pos += 1000) {
    t.Feed(std::string_view(line).substr(pos, 1000));
  }
  // Three full chunks already on the console although no newline arrived yet.
  auto lines = SplitLines(console.Contents());
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_EQ(l.size(), 4 + TeeRouter::kMaxLine);
  t.Feed("\nnext\n");
  lines = SplitLines(console.Contents());
  ASSERT_EQ(lines.size(), 5u);
  std::string rebuilt;
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(lines[i].rfind("[p]:", 0), 0u);
    rebuilt += lines[i].substr(4);
  }
  EXPECT_EQ(rebuilt, line);
  EXPECT_EQ(lines[4], "[p]:next");
  EXPECT_EQ(file.Contents(), line + "\nnext\n");
}

TEST(TeeRouter, LongLineInOneFeedIsChunkedToo) {
  MemFile console;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  TeeRouter t(sink, "", 1, -1, true, 0);
  const std::string line(2 * TeeRouter::kMaxLine + 5, 'z');
  t.Feed(line + "\n");
  const auto lines = SplitLines(console.Contents());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].size(), TeeRouter::kMaxLine);
  EXPECT_EQ(lines[1].size(), TeeRouter::kMaxLine);
  EXPECT_EQ(lines[2].size(), 5u);
}

TEST(TeeRouter, ChunksDoNotSplitUtf8Characters) {
  MemFile console;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  TeeRouter t(sink, "", 1, -1, true, 0);
  std::string line;
  while (line.size() < 2 * TeeRouter::kMaxLine + 100) line += "\xe2\x82\xac";  // U+20AC
  t.Feed(line);
  t.Finish();
  const auto lines = SplitLines(console.Contents());
  ASSERT_GE(lines.size(), 3u);
  std::string rebuilt;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), TeeRouter::kMaxLine);
    EXPECT_EQ(l.size() % 3, 0u) << "a chunk cut a 3-byte character";
    rebuilt += l;
  }
  EXPECT_EQ(rebuilt, line);
}

TEST(TeeRouter, FileWriteFailureKeepsTheConsoleGoing) {
  MemFile console;
  ConsoleSink sink(console.Fd(), console.Fd(), ColorMode::kNever);
  const int ro = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // write() fails with EBADF
  ASSERT_GE(ro, 0);
  TeeRouter t(sink, "[p]:", 1, ro, true, 0);
  EXPECT_TRUE(t.FileError().empty());
  t.Feed("one\n");
  EXPECT_FALSE(t.FileError().empty());
  EXPECT_NE(t.FileError().find("--log-dir"), std::string::npos) << t.FileError();
  t.Feed("two\n");
  EXPECT_EQ(console.Contents(), "[p]:one\n[p]:two\n");
  ::close(ro);
}

// ------------------------------------------------------------------ ConsoleSink

TEST(ConsoleSink, ConcurrentLongLinesNeverInterleave) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::string received;
  std::thread reader([&] { received = ReadAll(p[0]); });

  constexpr int kThreads = 8;
  constexpr int kLinesPerThread = 60;
  {
    ConsoleSink sink(p[1], p[1], ColorMode::kNever);
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&sink, t] {
        const std::string prefix = "[w" + std::to_string(t) + "]:";
        for (int i = 0; i < kLinesPerThread; ++i) {
          // 3..20 KB: well above PIPE_BUF, so a pipe would split unsynchronised writes.
          const std::string body(3000 + (i * 977 + t * 131) % 17000, static_cast<char>('a' + t));
          if (i % 3 == 0) {
            std::vector<std::string_view> batch = {body, body};
            sink.WriteLines(1 + i % 2, prefix, batch, t);
          } else {
            sink.WriteLine(1 + i % 2, prefix, body, t);
          }
        }
      });
    }
    for (auto& w : writers) w.join();
  }
  ::close(p[1]);
  reader.join();
  ::close(p[0]);

  const auto lines = SplitLines(received);
  std::vector<int> count(kThreads, 0);
  for (const auto& l : lines) {
    ASSERT_GE(l.size(), 5u);
    ASSERT_EQ(l.substr(0, 2), "[w");
    const int t = l[2] - '0';
    ASSERT_TRUE(t >= 0 && t < kThreads) << l.substr(0, 10);
    ASSERT_EQ(l.substr(3, 2), "]:");
    const std::string body = l.substr(5);
    ASSERT_EQ(body.find_first_not_of(static_cast<char>('a' + t)), std::string::npos)
        << "line of writer " << t << " contains foreign bytes";
    ++count[t];
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(count[t], kLinesPerThread + (kLinesPerThread + 2) / 3) << "writer " << t;
  }
}

TEST(ConsoleSink, NonBlockingFullPipeWaitsInsteadOfDropping) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::fcntl(p[1], F_SETFL, ::fcntl(p[1], F_GETFL) | O_NONBLOCK);
  // Fill the pipe completely so the next write gets EAGAIN.
  const std::string filler(4096, 'f');
  std::size_t filled = 0;
  while (true) {
    const ssize_t n = ::write(p[1], filler.data(), filler.size());
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
  }
  std::string received;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    received = ReadAll(p[0]);
  });
  const std::string body(100000, 'x');  // needs many partial writes on top of EAGAIN
  {
    ConsoleSink sink(p[1], p[1], ColorMode::kNever);
    sink.WriteLine(1, "[r]:", body, 0);
    EXPECT_EQ(sink.DroppedLines(), 0u);
  }
  ::close(p[1]);
  reader.join();
  ::close(p[0]);
  ASSERT_EQ(received.size(), filled + 4 + body.size() + 1);
  EXPECT_EQ(received.substr(filled), "[r]:" + body + "\n");
}

TEST(ConsoleSink, NoEscapeCodesOnPipes) {
  EnvGuard g("NO_COLOR");
  ::unsetenv("NO_COLOR");
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  {
    ConsoleSink sink(p[1], p[1]);
    EXPECT_FALSE(sink.Colored(1));
    EXPECT_FALSE(sink.Colored(2));
    sink.WriteLine(1, "[default0]:", "hello", 0);
  }
  ::close(p[1]);
  EXPECT_EQ(ReadAll(p[0]), "[default0]:hello\n");
  ::close(p[0]);
}

namespace {
struct Pty {
  int master = -1;
  int slave = -1;
  Pty() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return;
    slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    termios tio{};
    if (slave >= 0 && ::tcgetattr(slave, &tio) == 0) {
      ::cfmakeraw(&tio);
      ::tcsetattr(slave, TCSANOW, &tio);
    }
  }
  ~Pty() {
    if (slave >= 0) ::close(slave);
    if (master >= 0) ::close(master);
  }
  std::string ReadSome() const {
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
};
}  // namespace

TEST(ConsoleSink, ColourOnTerminalsUnlessNoColor) {
  Pty pty;
  if (pty.slave < 0) GTEST_SKIP() << "no pseudo-terminal available";
  EnvGuard g("NO_COLOR");

  ::unsetenv("NO_COLOR");
  {
    ConsoleSink sink(pty.slave, pty.slave);
    EXPECT_TRUE(sink.Colored(1));
    sink.WriteLine(1, "[default0]:", "hi", 0);
    const std::string got = pty.ReadSome();
    EXPECT_NE(got.find("\x1b["), std::string::npos);
    EXPECT_NE(got.find("[default0]:"), std::string::npos);
    EXPECT_NE(got.find("\x1b[0mhi"), std::string::npos) << "only the prefix is coloured";
  }
  ::setenv("NO_COLOR", "", 1);  // empty => ignored (no-color.org)
  EXPECT_TRUE(ConsoleSink(pty.slave, pty.slave).Colored(1));

  ::setenv("NO_COLOR", "1", 1);
  {
    ConsoleSink sink(pty.slave, pty.slave);
    EXPECT_FALSE(sink.Colored(1));
    EXPECT_FALSE(sink.Colored(2));
    sink.WriteLine(2, "[default0]:", "hi", 0);
    EXPECT_EQ(pty.ReadSome(), "[default0]:hi\n");
  }
  EXPECT_FALSE(ConsoleSink(pty.slave, pty.slave, ColorMode::kNever).Colored(1));
}

TEST(ConsoleSink, AlwaysModeGivesDistinctColoursPerRank) {
  MemFile out;
  ConsoleSink sink(out.Fd(), out.Fd(), ColorMode::kAlways);
  sink.WriteLine(1, "[a]:", "x", 0);
  sink.WriteLine(1, "[b]:", "y", 1);
  const auto lines = SplitLines(out.Contents());
  ASSERT_EQ(lines.size(), 2u);
  const auto code0 = lines[0].substr(0, lines[0].find('m'));
  const auto code1 = lines[1].substr(0, lines[1].find('m'));
  EXPECT_EQ(code0.rfind("\x1b[", 0), 0u);
  EXPECT_NE(code0, code1);
  EXPECT_EQ(lines[0], code0 + "m[a]:\x1b[0mx");
}

TEST(ConsoleSink, ClosedConsoleDropsLinesInsteadOfFailing) {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[0]);
  {
    ConsoleSink sink(p[1], p[1], ColorMode::kNever);
    sink.WriteLine(1, "", "lost", 0);
    sink.WriteLines(1, "", {"a", "b"}, 0);
    EXPECT_EQ(sink.DroppedLines(), 3u);
  }
  ::close(p[1]);
  ::sigaction(SIGPIPE, &old, nullptr);
}

// ------------------------------------------------------------------ make_prefix

TEST(MakePrefix, DefaultsToRoleAndLocalRank) {
  EXPECT_EQ(MakePrefix("", "default", 0, 0), "[default0]:");
  EXPECT_EQ(MakePrefix("", "trainer", 3, 13), "[trainer3]:");
  EXPECT_EQ(MakePrefix("", "default", 11, 27), "[default11]:");
}

TEST(MakePrefix, TemplateFollowsPythonSafeSubstitute) {
  // Expected values produced by Python's string.Template(t).safe_substitute(
  //   role_name="trainer", local_rank=3, rank=13).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"${rank}", "13"},
      {"[${role_name}${local_rank}|${rank}]:", "[trainer3|13]:"},
      {"$rank:", "13:"},
      {"$foo ${bar} $", "$foo ${bar} $"},
      {"$$rank", "$rank"},
      {"${rank", "${rank"},
      {"$local_rankx", "$local_rankx"},
      {"$Rank", "$Rank"},
      {"$1x", "$1x"},
      {"a$", "a$"},
      {"${ rank}", "${ rank}"},
      {"$local_rank$rank", "313"},
      {"${}", "${}"},
  };
  for (const auto& [tmpl, want] : cases) {
    EXPECT_EQ(MakePrefix(tmpl, "trainer", 3, 13), want) << "template " << tmpl;
  }
}
