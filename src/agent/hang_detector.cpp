#include "hang_detector.hpp"

#include <dirent.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace tzrun::agent::detail {

std::vector<std::size_t> StalledRanks(const std::vector<RankProgress>& ranks,
                                      ProgressClock::time_point now,
                                      std::chrono::milliseconds timeout) {
  // Whether peers still progress (the stale ones fell behind) or none does (the whole group
  // stopped), every reporting rank without progress for `timeout` is stalled. Once one is, the
  // ranks that went quiet with it (within the grace) are named too: in a group that stopped
  // together they cross `timeout` a report interval apart, and the first to cross is not
  // necessarily the one that caused the stop.
  const auto grace = std::min<std::chrono::milliseconds>(kStallGrace, timeout / 2);
  bool any = false;
  for (const RankProgress& r : ranks) any = any || (r.line && now - r.last_change >= timeout);
  std::vector<std::size_t> stale;
  for (std::size_t i = 0; i < ranks.size() && any; ++i) {
    if (ranks[i].line && now - ranks[i].last_change >= timeout - grace) stale.push_back(i);
  }
  // The longest quiet first (the most likely cause of a group-wide stop).
  std::stable_sort(stale.begin(), stale.end(), [&](std::size_t a, std::size_t b) {
    return ranks[a].last_change < ranks[b].last_change;
  });
  return stale;
}

std::vector<std::size_t> OrderByLikelyCause(const std::vector<std::size_t>& stalled,
                                            const std::vector<StallFacts>& facts) {
  std::vector<std::size_t> pos(stalled.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = i;
  constexpr long long kNoStep = std::numeric_limits<long long>::max();
  std::stable_sort(pos.begin(), pos.end(), [&](std::size_t a, std::size_t b) {
    const StallFacts& x = facts[a];
    const StallFacts& y = facts[b];
    if (x.stopped != y.stopped) return x.stopped;
    return x.step.value_or(kNoStep) < y.step.value_or(kNoStep);
  });
  std::vector<std::size_t> out;
  out.reserve(pos.size());
  for (std::size_t i : pos) out.push_back(stalled[i]);
  return out;
}

std::optional<long long> ReportStep(const std::string& line) {
  std::istringstream in(line);
  long long step = 0;
  if (in >> step) return step;
  return std::nullopt;
}

bool IsStopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state == 'T' || state == 't';
}

std::string DescribeReport(const std::string& line) {
  std::istringstream in(line);
  long long step = 0;
  std::string phase;
  if (in >> step >> phase) return "step " + std::to_string(step) + ", phase " + phase;
  return "'" + line + "'";
}

std::string ReadProgressLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string ThreadStates(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return "(no /proc entry)";
  std::string out;
  int shown = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) {
      continue;
    }
    if (shown++ == 32) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + std::string("tid ") + e->d_name + " " +
           stat.substr(open, close - open + 1) + " " + stat[close + 2];
  }
  ::closedir(d);
  return out.empty() ? "(no threads)" : out;
}

std::string KeepStackLines(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("TID ", 0) == 0 || line.rfind("Thread ", 0) == 0 || line.rfind("#", 0) == 0) {
      kept += line + "\n";
    }
  }
  return kept;
}

namespace {

// The output of `sh -c cmd` (at most max_bytes); "" when it cannot be started.
std::string ReadCommand(const std::string& cmd, std::size_t max_bytes) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) {
    if (out.size() < max_bytes) out.append(buf.data(), std::min(n, max_bytes - out.size()));
  }
  ::pclose(p);
  return out;
}

}  // namespace

std::string ThreadBacktraces(pid_t pid, int timeout_s, std::size_t max_bytes) {
  const std::string limit = "timeout -k 2 " + std::to_string(timeout_s) + " ";
  const std::string id = std::to_string(pid);
  const bool eu = !ReadCommand("command -v eu-stack 2>/dev/null", 256).empty();
  const std::string tool = eu ? "eu-stack -p " + id : "gdb -batch -p " + id;
  const std::string cmd = eu ? limit + "eu-stack -p " + id + " 2>/dev/null"
                             : "command -v gdb >/dev/null 2>&1 && " + limit + "gdb -batch -nx -p " +
                                   id + " -ex 'thread apply all bt' 2>/dev/null";
  std::string kept = KeepStackLines(ReadCommand(cmd, 4 * max_bytes));
  if (kept.find('#') == std::string::npos) return "";
  if (kept.size() > max_bytes) kept.resize(max_bytes);
  return "backtrace (" + tool + "):\n" + kept;
}

}  // namespace tzrun::agent::detail
