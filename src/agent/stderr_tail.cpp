// Implementation of stderr_tail.hpp (a tzrun extension; see there).
#include "stderr_tail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace tzrun::agent {
namespace {

// First byte index >= pos that starts a UTF-8 sequence (at most 3 continuation bytes skipped).
std::size_t Utf8Start(std::string_view s, std::size_t pos) {
  for (std::size_t i = pos; i < s.size() && i < pos + 4; ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return i;
  }
  return pos;
}

}  // namespace

std::string TailLines(std::string_view data, bool cut_at_start, std::size_t max_lines,
                      std::size_t max_bytes) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos <= data.size()) {
    std::size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) nl = data.size();
    std::string_view line = data.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = nl + 1;
  }
  if (!data.empty() && data.back() == '\n') lines.pop_back();  // nothing after the last '\n'
  if (cut_at_start && lines.size() > 1) lines.erase(lines.begin());
  // Blank lines at the end say nothing.
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty() || max_lines == 0 || max_bytes == 0) return "";

  std::size_t first = lines.size();
  std::size_t bytes = 0;
  while (first > 0 && lines.size() - first < max_lines) {
    const std::size_t add = lines[first - 1].size() + (first == lines.size() ? 0 : 1);
    if (bytes + add > max_bytes) break;
    bytes += add;
    --first;
  }
  std::string out;
  if (first == lines.size()) {  // the last line alone is too long: keep its end
    const std::string_view last = lines.back();
    out = std::string(last.substr(Utf8Start(last, last.size() - max_bytes)));
    return out;
  }
  for (std::size_t i = first; i < lines.size(); ++i) {
    if (i != first) out += '\n';
    out += lines[i];
  }
  return out;
}

void StderrTail::Feed(std::string_view bytes) {
  if (bytes.size() >= kTailBytes + 1) {
    bytes.remove_prefix(bytes.size() - (kTailBytes + 1));
    buf_.assign(bytes);
    cut_ = true;
    return;
  }
  buf_.append(bytes);
  if (buf_.size() > 2 * (kTailBytes + 1)) {  // amortised: trim only now and then
    buf_.erase(0, buf_.size() - (kTailBytes + 1));
    cut_ = true;
  }
}

std::string StderrTail::Text() const {
  std::string_view v = buf_;
  bool cut = cut_;
  if (v.size() > kTailBytes + 1) {
    v.remove_prefix(v.size() - (kTailBytes + 1));
    cut = true;
  }
  return TailLines(v, cut);
}

std::optional<std::string> ReadFileTail(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  off_t start = 0;
  if (::fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(kTailBytes + 1)) {
    start = st.st_size - static_cast<off_t>(kTailBytes + 1);
  }
  std::string buf(kTailBytes + 1, '\0');
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n =
        ::pread(fd, buf.data() + got, buf.size() - got, start + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buf.resize(got);
  return TailLines(buf, start > 0);
}

}  // namespace tzrun::agent
