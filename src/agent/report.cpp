// Implementation of tzrun/agent/report.hpp (see there for the upstream behaviour followed).
#include "report.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <system_error>

#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kNotAvailable = "<N/A>";
constexpr std::string_view kNoTracebackHint =
    "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html";

using base::ErrnoText;

std::optional<double> ParseTimestamp(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != nullptr && *end == '\0') return d;
  }
  return std::nullopt;
}

bool IsRegularFile(const std::string& path) {
  if (path.empty()) return false;
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// Reads the whole file; nullopt if it cannot be opened.
std::optional<std::string> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

bool AllSpace(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// Number of code points of UTF-8 text (Python's len() of the decoded string).
std::size_t DisplayLen(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// datetime.fromtimestamp(int(ts)).isoformat(sep="_"): local time, whole seconds.
std::string FormatLocalTime(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds < 0 ? 0 : unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

double ToUnix(std::chrono::system_clock::time_point tp) {
  return std::chrono::duration<double>(tp.time_since_epoch()).count();
}

int TorchExitCode(const WorkerFailure& f) {
  return f.signal != 0 ? -f.signal : f.exit_code;
}

// Atomically replaces `path` with `content` (temp file + fsync + rename + dir fsync).
void WriteFileAtomic(const std::string& path, std::string_view content, std::string_view what) {
  if (path.empty()) throw ReportError(std::string(what) + ": empty output path; pass a file path");
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device rd;
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." +
                                  std::to_string(::getpid()) + "." + std::to_string(rd())))
                              .string();
  auto fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    throw ReportError("cannot write " + std::string(what) + " '" + path + "' (" + step +
                      "): " + ErrnoText(err) +
                      "; check that the directory exists and is writable and the disk has room");
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw ReportError("cannot write " + std::string(what) + " '" + path +
                      "' (creating a temporary file in '" + dir.string() + "'): " + ErrnoText(err) +
                      "; check that the directory exists and is writable");
  }
  std::string_view rest = content;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("write", err);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("fsync", err);
  }
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);  // best effort: durability of the rename
    ::close(dfd);
  }
}

struct SignalEntry {
  int sig;
  const char* name;
};

}  // namespace

// ---------------------------------------------------------------- error files

std::optional<ErrorFileInfo> ReadErrorFile(const std::string& path) {
  if (!IsRegularFile(path)) return std::nullopt;
  const auto text = Slurp(path);
  if (!text) {
    return ErrorFileInfo{"error file '" + path + "' exists but cannot be read: " +
                             ErrnoText(errno) + "; check its permissions",
                         "", std::nullopt};
  }
  if (AllSpace(*text)) return std::nullopt;
  const auto unparsable = [&](const std::string& why) {
    return ErrorFileInfo{"error file '" + path + "' could not be parsed (" + why +
                             "); expected torchelastic's JSON as written by "
                             "torch.distributed.elastic.multiprocessing.errors.record, or "
                             "{\"message\": \"...\", \"timestamp\": N}",
                         "", std::nullopt};
  };
  json doc;
  try {
    doc = json::parse(*text);
  } catch (const json::exception& e) {
    return unparsable(e.what());
  }
  if (!doc.is_object() || !doc.contains("message")) {
    return unparsable("no top-level \"message\" field");
  }
  const json& msg = doc["message"];
  ErrorFileInfo info;
  if (msg.is_string()) {
    info.message = msg.get<std::string>();
    if (doc.contains("timestamp")) info.timestamp = ParseTimestamp(doc["timestamp"]);
    return info;
  }
  if (!msg.is_object()) return unparsable("\"message\" is neither a string nor an object");
  if (auto it = msg.find("message"); it != msg.end()) {
    info.message = it->is_string() ? it->get<std::string>() : it->dump();
  }
  if (auto ei = msg.find("extraInfo"); ei != msg.end() && ei->is_object()) {
    if (auto cs = ei->find("py_callstack"); cs != ei->end() && cs->is_string()) {
      info.traceback = cs->get<std::string>();
    }
    if (auto ts = ei->find("timestamp"); ts != ei->end()) info.timestamp = ParseTimestamp(*ts);
    if (auto rt = ei->find("retryable"); rt != ei->end()) {
      info.not_retryable = (rt->is_string() && rt->get<std::string>() == "false") ||
                           (rt->is_boolean() && !rt->get<bool>());
    }
  }
  return info;
}

// ---------------------------------------------------------------- failures

std::string SignalName(int sig) {
  static const SignalEntry kNames[] = {
      {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},   {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"},     {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},     {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"},     {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"},   {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},   {SIGCHLD, "SIGCHLD"},
      {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},   {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},   {SIGXFSZ, "SIGXFSZ"},
      {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},
      {SIGSYS, "SIGSYS"},
#ifdef SIGSTKFLT
      {SIGSTKFLT, "SIGSTKFLT"},
#endif
#ifdef SIGPWR
      {SIGPWR, "SIGPWR"},
#endif
  };
  for (const auto& n : kNames) {
    if (n.sig == sig) return n.name;
  }
#ifdef SIGRTMIN
  if (sig == SIGRTMIN) return "SIGRTMIN";
  if (sig == SIGRTMAX) return "SIGRTMAX";
#endif
  return std::string(kNotAvailable);
}

int TzrunExitCode(const WorkerFailure& f) noexcept {
  return f.signal != 0 ? 128 + f.signal : f.exit_code;
}

std::size_t SelectRootCause(const std::vector<WorkerFailure>& failures) {
  const bool any_own = std::any_of(failures.begin(), failures.end(),
                                   [](const WorkerFailure& f) { return !f.stopped_by_tzrun; });
  // Ranks --hang-timeout killed together are ordered by how likely each caused the stall.
  std::optional<std::size_t> hung;
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const int order = failures[i].hang_order;
    if (order >= 0 && (!hung || order < failures[*hung].hang_order)) hung = i;
  }
  if (hung) return *hung;
  std::optional<std::size_t> best;
  double best_ts = 0;
  for (std::size_t i = 0; i < failures.size(); ++i) {
    if (any_own && failures[i].stopped_by_tzrun) continue;
    const auto info = ReadErrorFile(failures[i].error_file);
    const double ts = info && info->timestamp ? *info->timestamp : ToUnix(failures[i].time);
    if (!best || ts < best_ts) {
      best = i;
      best_ts = ts;
    }
  }
  return best.value_or(0);
}

namespace {

std::size_t CountLines(std::string_view s) {
  return s.empty() ? 0 : static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')) + 1;
}

std::string LinesWord(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " line" : " lines");
}

// One "[idx]:" block of torchrun's report (+ tzrun's stderr tail).
std::string FailureBlock(std::size_t idx, const WorkerFailure& f, std::string_view hostname) {
  const auto info = ReadErrorFile(f.error_file);
  const double ts = info && info->timestamp ? *info->timestamp : ToUnix(f.time);
  const bool has_info = info && !(info->traceback.empty() && info->message.empty());
  std::string msg;
  if (has_info) {
    msg = ReplaceAll(info->traceback.empty() ? info->message : info->traceback, "\n", "\n  ");
  } else if (f.signal != 0) {
    msg = "Signal " + std::to_string(f.signal) + " (" + SignalName(f.signal) +
          ") received by PID " + std::to_string(f.pid);
  } else {
    msg = std::string(kNoTracebackHint);
  }
  std::string block;
  block += "[" + std::to_string(idx) + "]:\n";
  block += "  time      : " + FormatLocalTime(ts) + "\n";
  block += "  host      : " + std::string(hostname) + "\n";
  block += "  rank      : " + std::to_string(f.global_rank) +
           " (local_rank: " + std::to_string(f.local_rank) + ")\n";
  block += "  exitcode  : " + std::to_string(TorchExitCode(f)) + " (pid: " + std::to_string(f.pid) +
           ")\n";
  block += "  error_file: " + (info ? f.error_file : std::string(kNotAvailable)) + "\n";
  block += "  traceback : " + msg;
  if (f.hang) block += "\n  hang      : " + ReplaceAll(*f.hang, "\n", "\n    ");
  if (!has_info && f.stderr_tail && !f.stderr_tail->empty()) {
    block += "\n  stderr    : last " + LinesWord(CountLines(*f.stderr_tail)) + ":\n    " +
             ReplaceAll(*f.stderr_tail, "\n", "\n    ");
  }
  return block;
}

std::string RankRef(const WorkerFailure& f) {
  return "rank " + std::to_string(f.global_rank) + " (local_rank: " + std::to_string(f.local_rank) +
         ", pid: " + std::to_string(f.pid);
}

}  // namespace

std::string FormatFailureReport(std::string_view entrypoint,
                                const std::vector<WorkerFailure>& failures, std::size_t root_index,
                                std::string_view hostname) {
  const std::string title = std::string(entrypoint) + " FAILED";
  std::size_t width = DisplayLen(title);
  std::string root_block;
  std::vector<std::string> others;
  std::vector<const WorkerFailure*> stopped;
  const bool root_stopped = root_index < failures.size() && failures[root_index].stopped_by_tzrun;

  std::size_t shown = 0;
  for (std::size_t idx = 0; idx < failures.size(); ++idx) {
    const WorkerFailure& f = failures[idx];
    if (f.stopped_by_tzrun && !root_stopped) {
      stopped.push_back(&f);
      continue;
    }
    std::string block = FailureBlock(shown++, f, hostname);
    std::size_t start = 0;
    while (start <= block.size()) {
      std::size_t nl = block.find('\n', start);
      if (nl == std::string::npos) nl = block.size();
      width = std::max(width, DisplayLen(std::string_view(block).substr(start, nl - start)));
      start = nl + 1;
    }
    if (idx == root_index) {
      root_block = std::move(block);
    } else {
      others.push_back(std::move(block));
    }
  }
  width = std::min<std::size_t>(width, 60);
  const std::string border(width, '=');
  const std::string section(width, '-');

  std::string out;
  out += border + "\n";
  out += title + "\n";
  out += section + "\n";
  out += "Failures:\n";
  if (others.empty()) {
    out += "  <NO_OTHER_FAILURES>\n";
  } else {
    for (const auto& o : others) out += o + "\n";
  }
  out += section + "\n";
  out += "Root Cause (first observed failure):\n";
  out += root_block + "\n";
  out += border + "\n";

  if (!stopped.empty()) {
    std::sort(stopped.begin(), stopped.end(), [](const WorkerFailure* a, const WorkerFailure* b) {
      return a->global_rank < b->global_rank;
    });
    out += "tzrun: stopped by tzrun after the failure (not failures themselves): ";
    for (std::size_t i = 0; i < stopped.size(); ++i) {
      if (i != 0) out += ", ";
      out +=
          RankRef(*stopped[i]) + ", exitcode: " + std::to_string(TorchExitCode(*stopped[i])) + ")";
    }
    out += "\n";
  }
  if (root_index < failures.size()) {
    const WorkerFailure& r = failures[root_index];
    out += "tzrun: root cause is " + RankRef(r) + "), ";
    if (r.signal != 0) {
      out += "killed by signal " + std::to_string(r.signal) + " (" + SignalName(r.signal) + ")";
    } else {
      out += "exited with code " + std::to_string(r.exit_code);
    }
    out += "; exit code " + std::to_string(TzrunExitCode(r)) + "\n";
  }
  for (const WorkerFailure& f : failures) {
    if (f.muted && (!f.stopped_by_tzrun || root_stopped)) {
      out += "tzrun: " + FormatMutedFailure(f, false) + "\n";
    }
  }
  return out;
}

std::string FormatMutedFailure(const WorkerFailure& f, bool with_tail) {
  std::string out = RankRef(f) + ") failed (exitcode: " + std::to_string(TorchExitCode(f)) +
                    ") with its output hidden by --local-ranks-filter; ";
  if (!f.stderr_tail) {
    out += "its stderr was not captured";
  } else if (f.stderr_tail->empty()) {
    out += "it wrote nothing to stderr";
  } else if (with_tail) {
    out += "its last stderr lines:\n  " + ReplaceAll(*f.stderr_tail, "\n", "\n  ");
  } else {
    out += "see its entry in the report above";
  }
  return out;
}

std::string FormatFailureLogMessage(const WorkerFailure& f, std::string_view entrypoint) {
  return "failed (exitcode: " + std::to_string(TorchExitCode(f)) +
         ") local_rank: " + std::to_string(f.local_rank) + " (pid: " + std::to_string(f.pid) +
         ") of binary: " + std::string(entrypoint);
}

std::string LocalFqdn() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  std::string hostname = host;
  // Python: gethostbyaddr(name) = resolve name (getaddrinfo) + reverse lookup, then the
  // first name containing a '.' among [primary name] + aliases, else the primary name.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  if (::getaddrinfo(hostname.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return hostname;
  }
  std::string result = hostname;
#ifdef __linux__
  const void* addr = nullptr;
  socklen_t len = 0;
  if (res->ai_family == AF_INET) {
    addr = &reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
    len = sizeof(in_addr);
  } else if (res->ai_family == AF_INET6) {
    addr = &reinterpret_cast<const sockaddr_in6*>(res->ai_addr)->sin6_addr;
    len = sizeof(in6_addr);
  }
  if (addr != nullptr) {
    hostent he{};
    hostent* out = nullptr;
    int herr = 0;
    std::vector<char> buf(16384);
    if (::gethostbyaddr_r(addr, len, res->ai_family, &he, buf.data(), buf.size(), &out, &herr) ==
            0 &&
        out != nullptr && out->h_name != nullptr) {
      result = out->h_name;
      if (result.find('.') == std::string::npos && out->h_aliases != nullptr) {
        for (char** a = out->h_aliases; *a != nullptr; ++a) {
          if (std::string_view(*a).find('.') != std::string_view::npos) {
            result = *a;
            break;
          }
        }
      }
    }
  }
#else
  char name[NI_MAXHOST];
  if (::getnameinfo(res->ai_addr, res->ai_addrlen, name, sizeof(name), nullptr, 0, NI_NAMEREQD) ==
      0) {
    result = name;
  }
#endif
  ::freeaddrinfo(res);
  return result;
}

bool CopyRootErrorFile(const WorkerFailure& root, const std::string& dest_path) {
  if (dest_path.empty() || !IsRegularFile(root.error_file)) return false;
  const auto text = Slurp(root.error_file);
  if (!text || AllSpace(*text)) return false;
  json doc;
  try {
    doc = json::parse(*text);
  } catch (const json::exception&) {
    return false;
  }
  const int code = TorchExitCode(root);
  if (code != 0 && doc.is_object()) {
    auto it = doc.find("message");
    if (it != doc.end() && it->is_object()) (*it)["errorCode"] = code;
  }
  WriteFileAtomic(dest_path, doc.dump(), "the agent error file (TORCHELASTIC_ERROR_FILE)");
  return true;
}

// ---------------------------------------------------------------- summary

namespace {

nlohmann::ordered_json RankJson(const RankOutcome& r) {
  nlohmann::ordered_json j;
  j["local_rank"] = r.local_rank;
  j["global_rank"] = r.global_rank;
  j["pid"] = static_cast<long long>(r.pid);
  j["exit_code"] = r.exit_code;
  j["signal"] = r.signal;
  if (r.signal != 0) {
    j["signal_name"] = SignalName(r.signal);
  } else {
    j["signal_name"] = nullptr;
  }
  if (r.exit_code == 0 && r.signal == 0) {
    j["state"] = "succeeded";
  } else if (r.hang) {
    j["state"] = "hung";
  } else if (r.stopped_by_tzrun) {
    j["state"] = "stopped";
  } else {
    j["state"] = r.signal != 0 ? "signaled" : "failed";
  }
  j["restarts"] = r.restarts;
  j["start_time"] = r.start_time;
  j["end_time"] = r.end_time;
  j["duration_s"] = std::max(0.0, r.end_time - r.start_time);
  j["error_message"] = r.error_message;
  j["stopped_by_tzrun"] = r.stopped_by_tzrun;
  if (r.stderr_tail && (r.exit_code != 0 || r.signal != 0)) {
    j["stderr_tail"] = *r.stderr_tail;
  } else {
    j["stderr_tail"] = nullptr;
  }
  if (r.hang) {
    j["hang"] = *r.hang;
  } else {
    j["hang"] = nullptr;
  }
  return j;
}

}  // namespace

std::string SummaryToJson(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["tool"] = "tzrun";
  j["run_id"] = s.run_id;
  j["hostname"] = s.hostname;
  j["outcome"] = s.outcome;
  j["exit_code"] = s.exit_code;
  j["restarts"] = s.restarts;
  j["failure_restarts"] = s.failure_restarts;
  j["membership_restarts"] = s.membership_restarts;
  j["no_restart_reason"] = nullptr;
  if (!s.no_restart_reason.empty()) j["no_restart_reason"] = s.no_restart_reason;
  j["world_size"] = s.world_size;
  j["start_time"] = s.start_time;
  j["end_time"] = s.end_time;
  j["duration_s"] = std::max(0.0, s.end_time - s.start_time);
  j["root_cause_rank"] = nullptr;
  j["root_cause"] = nullptr;
  if (s.root_cause_rank) {
    j["root_cause_rank"] = *s.root_cause_rank;
    for (const auto& r : s.ranks) {
      if (r.global_rank >= 0 && static_cast<std::size_t>(r.global_rank) == *s.root_cause_rank) {
        j["root_cause"] = RankJson(r);
        break;
      }
    }
  }
  j["ranks"] = nlohmann::ordered_json::array();
  for (const auto& r : s.ranks) j["ranks"].push_back(RankJson(r));
  j["attempts"] = nlohmann::ordered_json::array();
  for (const auto& a : s.attempts) {
    auto arr = nlohmann::ordered_json::array();
    for (const auto& r : a) arr.push_back(RankJson(r));
    j["attempts"].push_back(std::move(arr));
  }
  // Invalid UTF-8 in worker messages must not make the summary unwritable.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void WriteSummaryJson(const std::string& path, const RunSummary& s) {
  WriteFileAtomic(path, SummaryToJson(s), "the run summary (--summary-json)");
}

}  // namespace tzrun::agent
