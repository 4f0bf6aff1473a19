#include "events.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "tzrun/base/strings.hpp"

namespace tzrun::agent {
namespace {

// Decodes one UTF-8 sequence at s[i]; returns the code point (U+FFFD for invalid bytes).
char32_t NextCodePoint(std::string_view s, std::size_t& i) {
  const auto c = static_cast<unsigned char>(s[i++]);
  if (c < 0x80) return c;
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
  if (extra < 0) return 0xFFFD;
  char32_t cp = c & (0x3F >> extra);
  for (; extra > 0; --extra) {
    if (i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
  }
  return cp;
}

void AppendU(std::string& out, unsigned v) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xFU];
}

/// Python json.dumps of a parsed JSON value.
std::string PyDump(const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += PyJsonString(k) + ": " + PyDump(v);
    }
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + PyDump(j[i]);
    return out + "]";
  }
  if (j.is_string()) return PyJsonString(j.get<std::string>());
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_null()) return "null";
  if (j.is_number_float()) return PyJsonFloat(j.get<double>());
  return j.dump();  // integers
}

template <typename T>
std::string Opt(const std::optional<T>& v) {
  return v ? std::to_string(*v) : "null";
}

/// {"k": v, ...} from already serialized values, in order.
std::string Object(const std::vector<std::pair<std::string_view, std::string>>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += PyJsonString(items[i].first) + ": " + items[i].second;
  }
  return out + "}";
}

// "[" + item + "]" built by appending: operator+ on a literal made GCC 12 -O3 print -Wrestrict
// false positives.
std::string InList(const std::string& item) {
  std::string out = "[";
  return out.append(item).append("]");
}

}  // namespace

std::string PyJsonString(std::string_view s) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = NextCodePoint(s, i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      AppendU(out, static_cast<unsigned>(cp));
    } else {
      const char32_t v = cp - 0x10000;
      AppendU(out, 0xD800 + static_cast<unsigned>(v >> 10));
      AppendU(out, 0xDC00 + static_cast<unsigned>(v & 0x3FF));
    }
  }
  return out + "\"";
}

std::string PyJsonFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::array<char, 64> buf{};
  // Python's repr: shortest round trip, fixed notation for 1e-4 <= |v| < 1e16.
  const double a = std::fabs(v);
  const bool fixed = a == 0 || (a >= 1e-4 && a < 1e16);
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v,
                           fixed ? std::chars_format::fixed : std::chars_format::scientific);
  std::string out(buf.data(), res.ptr);
  if (fixed && out.find('.') == std::string::npos) out += ".0";
  return out;  // scientific: C++'s "1e+16" / "1.5e-05" are Python's spelling too
}

std::string PyJsonReserialize(const std::string& text) {
  const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (text.empty() || j.is_discarded()) return R"({"message": "<NONE>"})";
  return PyDump(j);
}

std::string SerializeEvent(const AgentEventInfo& e) {
  std::vector<std::pair<std::string_view, std::string>> md = {
      {"group_world_size", Opt(e.group_world_size)}, {"entry_point", PyJsonString(e.entry_point)}};
  if (e.worker) {
    md.emplace_back("local_rank", InList(std::to_string(e.local_rank)));
    md.emplace_back("role_rank", InList(std::to_string(e.role_rank)));
    md.emplace_back("role_world_size", InList(std::to_string(e.role_world_size)));
    md.emplace_back("exit_code", InList(Opt(e.exit_code)));
    md.emplace_back("worker_pid", InList(Opt(e.worker_pid)));
  }
  const std::string metadata = Object({
      {"run_id", PyJsonString(e.run_id)},
      {"global_rank", e.worker ? std::to_string(e.global_rank) : "null"},
      {"group_rank", Opt(e.group_rank)},
      {"worker_id", e.worker && e.worker_id ? PyJsonString(std::to_string(*e.worker_id)) : "null"},
      {"role", PyJsonString(e.role)},
      {"hostname", PyJsonString(e.hostname)},
      {"state", PyJsonString(e.state)},
      {"total_run_time", std::to_string(e.total_run_time)},
      {"rdzv_backend", PyJsonString(e.rdzv_backend)},
      {"raw_error", e.raw_error ? PyJsonString(*e.raw_error) : "null"},
      {"metadata", PyJsonString(Object(md))},
      {"agent_restarts", std::to_string(e.agent_restarts)},
      {"duration_ms", e.duration_ms ? PyJsonFloat(*e.duration_ms) : "null"},
  });
  return Object({{"name", PyJsonString("torchelastic.worker.status." + e.state)},
                 {"source", e.worker ? R"("WORKER")" : R"("AGENT")"},
                 {"timestamp", "0"},
                 {"metadata", metadata}});
}

EventLog::EventLog(const std::string& handler, const std::string& loglevel) {
  // torchrun: the events logger's level is LOGLEVEL (default INFO); records are at INFO.
  const std::string level = base::Lower(base::Strip(loglevel));
  const bool info_shown = level.empty() || level == "info" || level == "debug" || level == "notset";
  enabled_ = handler == "console" && info_shown;
}

void EventLog::Record(const AgentEventInfo& e) const {
  if (!enabled_) return;
  const std::string line = SerializeEvent(e) + "\n";
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno != EINTR) {
      return;  // stderr closed: events are best effort, as a logging handler
    }
  }
}

}  // namespace tzrun::agent
