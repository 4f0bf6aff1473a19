// Implementation of tzrun/agent/logs.hpp (see there for the upstream behaviour followed).
#include "logs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include "filtered_log.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

namespace fs = std::filesystem;

using base::ErrnoText;

// Python's tempfile.gettempdir() candidates: $TMPDIR, $TEMP, $TMP, then /tmp.
std::string TempRoot() {
  for (const char* var : {"TMPDIR", "TEMP", "TMP"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      std::error_code ec;
      if (fs::is_directory(v, ec)) return v;
    }
  }
  return "/tmp";
}

// Python's tempfile.mkdtemp(prefix=..., dir=...): <dir>/<prefix><8 chars of [a-z0-9_]>,
// mode 0700, absolute path.
std::string MakeTempDir(const std::string& dir, const std::string& prefix) {
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyz0123456789_";
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<std::uint64_t>(::getpid()));
  std::uniform_int_distribution<std::size_t> pick(0, kChars.size() - 1);
  std::error_code ec;
  fs::path base = fs::absolute(dir, ec);
  if (ec) base = dir;
  int last_err = 0;
  for (int tries = 0; tries < 100; ++tries) {
    std::string name = prefix;
    for (int i = 0; i < 8; ++i) name += kChars[pick(gen)];
    fs::path candidate = base / name;
    if (::mkdir(candidate.c_str(), 0700) == 0) return candidate.lexically_normal().string();
    last_err = errno;
    if (last_err != EEXIST) break;
  }
  throw LogDirError("cannot create a log directory '" + (base / (prefix + "XXXXXXXX")).string() +
                    "': " + ErrnoText(last_err) +
                    "; pass a writable directory with --log-dir (or set TMPDIR)");
}

void RemoveAllOrThrow(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw LogDirError("cannot remove the old attempt log directory '" + p.string() +
                      "': " + ec.message() + "; check its permissions or use another --log-dir");
  }
}

void MkdirOrThrow(const fs::path& p, bool parents) {
  std::error_code ec;
  if (parents) {
    fs::create_directories(p, ec);
  } else if (!fs::create_directory(p, ec) && !ec) {
    return;  // already existed
  }
  if (ec) {
    throw LogDirError("cannot create log directory '" + p.string() + "': " + ec.message() +
                      "; check permissions and free space or use another --log-dir");
  }
}

// Distinct colours for rank prefixes (ANSI SGR foreground codes); red is left out on
// purpose (it reads as "error").
constexpr std::array<int, 10> kPalette = {36, 32, 33, 35, 34, 96, 92, 93, 95, 94};

bool WantColor(int fd, ColorMode mode) {
  if (mode == ColorMode::kAlways) return true;
  if (mode == ColorMode::kNever) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return ::isatty(fd) == 1;
}

}  // namespace

// ---------------------------------------------------------------- LogDir

LogDir LogDir::Create(const std::optional<std::string>& base, const std::string& run_id) {
  LogDir d;
  if (base && *base == kDevNull) {
    d.disabled_ = true;
    d.run_dir_ = std::string(kDevNull);
    return d;
  }
  std::string root;
  if (!base || base->empty()) {
    root = MakeTempDir(TempRoot(), "torchelastic_");
  } else {
    root = *base;
    std::error_code ec;
    const auto st = fs::status(root, ec);
    if (fs::exists(st) && !fs::is_directory(st)) {
      throw LogDirError("--log-dir '" + root +
                        "' exists and is not a directory; pass a directory path (it is created "
                        "if missing) or /dev/null to disable log files");
    }
    if (!fs::exists(st)) MkdirOrThrow(root, /*parents=*/true);
  }
  std::string safe_id = run_id.empty() ? std::string("none") : run_id;
  for (char& c : safe_id) {
    if (c == '/') c = '_';
  }
  d.run_dir_ = MakeTempDir(root, safe_id + "_");
  return d;
}

std::string LogDir::AttemptDir(int attempt) const {
  if (disabled_) return std::string(kDevNull);
  return run_dir_ + "/attempt_" + std::to_string(attempt);
}

std::string LogDir::RankDir(int attempt, int local_rank) const {
  if (disabled_) return std::string(kDevNull);
  return AttemptDir(attempt) + "/" + std::to_string(local_rank);
}

std::string LogDir::StdoutPath(int attempt, int local_rank) const {
  if (disabled_) return std::string(kDevNull);
  return RankDir(attempt, local_rank) + "/stdout.log";
}

std::string LogDir::StderrPath(int attempt, int local_rank) const {
  if (disabled_) return std::string(kDevNull);
  return RankDir(attempt, local_rank) + "/stderr.log";
}

std::string LogDir::ErrorFile(int attempt, int local_rank) const {
  if (disabled_) return "";
  return RankDir(attempt, local_rank) + "/error.json";
}

void LogDir::ResetAttempt(int attempt, int local_world_size) const {
  if (disabled_) return;
  const fs::path dir = AttemptDir(attempt);
  RemoveAllOrThrow(dir);
  MkdirOrThrow(dir, /*parents=*/true);
  for (int r = 0; r < local_world_size; ++r) {
    MkdirOrThrow(dir / std::to_string(r), /*parents=*/false);
  }
}

// ---------------------------------------------------------------- ConsoleSink

ConsoleSink::ConsoleSink(int out_fd, int err_fd, ColorMode mode)
    : out_fd_(out_fd),
      err_fd_(err_fd),
      out_color_(WantColor(out_fd, mode)),
      err_color_(WantColor(err_fd, mode)) {}

void ConsoleSink::AppendPrefix(std::string& buf, bool color, std::string_view prefix,
                               int local_rank) const {
  if (prefix.empty()) return;
  if (!color) {
    buf += prefix;
    return;
  }
  const std::size_t idx =
      static_cast<std::size_t>(local_rank < 0 ? -local_rank : local_rank) % kPalette.size();
  buf += "\x1b[";
  buf += std::to_string(kPalette[idx]);
  buf += 'm';
  buf += prefix;
  buf += "\x1b[0m";
}

void ConsoleSink::WriteLine(int stream, std::string_view prefix, std::string_view line,
                            int local_rank) {
  const bool color = Colored(stream);
  std::string buf;
  buf.reserve(prefix.size() + line.size() + 16);
  AppendPrefix(buf, color, prefix, local_rank);
  buf += line;
  buf += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  WriteAll(stream == 2 ? err_fd_ : out_fd_, buf, 1);
}

void ConsoleSink::WriteLines(int stream, std::string_view prefix,
                             const std::vector<std::string_view>& lines, int local_rank) {
  if (lines.empty()) return;
  const bool color = Colored(stream);
  std::string one_prefix;
  AppendPrefix(one_prefix, color, prefix, local_rank);
  std::size_t total = 0;
  for (auto l : lines) total += one_prefix.size() + l.size() + 1;
  std::string buf;
  buf.reserve(total);
  for (auto l : lines) {
    buf += one_prefix;
    buf += l;
    buf += '\n';
  }
  std::lock_guard<std::mutex> lock(mu_);
  WriteAll(stream == 2 ? err_fd_ : out_fd_, buf, lines.size());
}

std::size_t ConsoleSink::DroppedLines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

// Caller holds mu_.
void ConsoleSink::WriteAll(int fd, std::string_view data, std::size_t nlines) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // non-blocking console: wait for room
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 1000) >= 0) continue;
      if (errno == EINTR) continue;
    }
    dropped_ += nlines;  // EPIPE, EBADF, EIO, ...: the console is gone
    return;
  }
}

// ---------------------------------------------------------------- TeeRouter

TeeRouter::TeeRouter(ConsoleSink& sink, std::string prefix, int stream, int file_fd,
                     bool to_console, int local_rank)
    : sink_(sink),
      prefix_(std::move(prefix)),
      stream_(stream),
      file_fd_(file_fd),
      to_console_(to_console),
      local_rank_(local_rank) {}

void TeeRouter::WriteFile(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(file_fd_, bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    file_error_ = "writing the log file (fd " + std::to_string(file_fd_) +
                  ") failed: " + ErrnoText(errno) +
                  "; further output of this stream goes to the console only — free disk space "
                  "or choose another --log-dir";
    file_fd_ = -1;
    return;
  }
}

namespace {
// Largest cut <= n that does not split a UTF-8 sequence (falls back to n for invalid data).
std::size_t Utf8Cut(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s.size();
  for (std::size_t cut = n; cut > 0 && n - cut <= 3; --cut) {
    if ((static_cast<unsigned char>(s[cut]) & 0xC0) != 0x80) return cut;  // s[cut] starts a char
  }
  return n;
}
}  // namespace

void TeeRouter::Feed(std::string_view bytes) {
  if (bytes.empty()) return;
  if (file_fd_ >= 0) WriteFile(bytes);
  if (!to_console_) return;

  std::vector<std::string_view> lines;
  auto add_line = [&lines](std::string_view line) {
    while (line.size() > kMaxLine) {
      const std::size_t cut = Utf8Cut(line, kMaxLine);
      lines.push_back(line.substr(0, cut));
      line.remove_prefix(cut);
    }
    lines.push_back(line);
  };

  std::string head;  // pending_ + the start of `bytes`, when a pending line completes
  std::size_t pos = 0;
  if (!pending_.empty()) {
    const std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(bytes);
      pos = bytes.size();
    } else {
      head = std::move(pending_);
      pending_.clear();
      head.append(bytes.substr(0, nl));
      add_line(head);
      pos = nl + 1;
    }
  }
  while (pos < bytes.size()) {
    const std::size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) {
      pending_.append(bytes.substr(pos));
      break;
    }
    add_line(bytes.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (!lines.empty()) EmitLines(lines, true);

  // An over-long line still without a newline: flush its full chunks now.
  if (pending_.size() > kMaxLine) {
    std::string_view pv = pending_;
    std::vector<std::string_view> chunks;
    while (pv.size() > kMaxLine) {
      const std::size_t cut = Utf8Cut(pv, kMaxLine);
      chunks.push_back(pv.substr(0, cut));
      pv.remove_prefix(cut);
    }
    EmitLines(chunks, false);
    pending_ = std::string(pv);
  }
}

void TeeRouter::EmitLines(const std::vector<std::string_view>& lines, bool had_newline) {
  sink_.WriteLines(stream_, prefix_, lines, local_rank_);
  if (filtered_ == nullptr) return;
  for (const auto line : lines) filtered_->Offer(prefix_, line, had_newline);
}

void TeeRouter::Finish() {
  if (!to_console_ || pending_.empty()) return;
  EmitLines({pending_}, false);
  pending_.clear();
}

// ---------------------------------------------------------------- make_prefix

std::string MakePrefix(const std::string& tmpl, const std::string& role, int local_rank,
                       int global_rank) {
  if (tmpl.empty()) return "[" + role + std::to_string(local_rank) + "]:";

  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "role_name") return role;
    if (name == "local_rank") return std::to_string(local_rank);
    if (name == "rank") return std::to_string(global_rank);
    return std::nullopt;
  };
  // Python's Template.idpattern (?a:[_a-z][_a-z0-9]*) with re.IGNORECASE.
  auto id_start = [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  auto id_char = [&](char c) { return id_start(c) || (c >= '0' && c <= '9'); };

  std::string out;
  out.reserve(tmpl.size() + 16);
  std::size_t i = 0;
  while (i < tmpl.size()) {
    const char c = tmpl[i];
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '$') {  // escaped
      out += '$';
      i += 2;
      continue;
    }
    if (i + 1 < tmpl.size() && id_start(tmpl[i + 1])) {  // $name
      std::size_t j = i + 1;
      while (j < tmpl.size() && id_char(tmpl[j])) ++j;
      const std::string_view name(tmpl.data() + i + 1, j - i - 1);
      if (auto v = lookup(name)) {
        out += *v;
      } else {
        out.append(tmpl, i, j - i);
      }
      i = j;
      continue;
    }
    if (i + 2 < tmpl.size() && tmpl[i + 1] == '{' && id_start(tmpl[i + 2])) {  // ${name}
      std::size_t j = i + 2;
      while (j < tmpl.size() && id_char(tmpl[j])) ++j;
      if (j < tmpl.size() && tmpl[j] == '}') {
        const std::string_view name(tmpl.data() + i + 2, j - i - 2);
        if (auto v = lookup(name)) {
          out += *v;
        } else {
          out.append(tmpl, i, j + 1 - i);
        }
        i = j + 1;
        continue;
      }
    }
    out += '$';  // invalid placeholder: left verbatim
    ++i;
  }
  return out;
}

}  // namespace tzrun::agent
