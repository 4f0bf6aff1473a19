// Pure HTTP/1.1 and encoding helpers of the etcd client (see etcd_http.hpp).
#include "etcd_http.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "tzrun/base/strings.hpp"

namespace tzrun::rendezvous::detail {
namespace {

constexpr std::string_view kB64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool Unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

/// Decodes a chunked body starting at `s`; nullopt when malformed or incomplete.
std::optional<std::string> Dechunk(std::string_view s) {
  std::string out;
  while (true) {
    const auto eol = s.find("\r\n");
    if (eol == std::string_view::npos) return std::nullopt;
    std::string_view size_text = s.substr(0, eol);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    std::size_t size = 0;
    auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc() || size_text.empty()) return std::nullopt;
    s.remove_prefix(eol + 2);
    if (size == 0) return out;  // trailers ignored
    if (s.size() < size + 2) return std::nullopt;
    out.append(s.substr(0, size));
    s.remove_prefix(size + 2);
  }
}

}  // namespace

std::string PercentEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += PercentEncode(k, false) + "=" + PercentEncode(v, false);
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) |
                            (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                            static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kB64[(n >> shift) & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += rest == 2 ? kB64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t n = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      std::size_t v = 0;
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
      } else if (pad > 0 || (v = kB64.find(c)) == std::string_view::npos) {
        return std::nullopt;
      }
      n = (n << 6) | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>((n >> 16) & 255);
    if (pad < 2) out += static_cast<char>((n >> 8) & 255);
    if (pad < 1) out += static_cast<char>(n & 255);
  }
  return out;
}

std::optional<HttpResponse> ParseHttpResponse(std::string_view raw, std::string* why) {
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    *why = "no complete response head";
    return std::nullopt;
  }
  const auto lines = base::Split(raw.substr(0, head_end), '\n');
  HttpResponse r;
  const std::string status_line = base::Strip(lines.front());
  int status = 0;
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 ||
      std::from_chars(status_line.data() + 9, status_line.data() + 12, status).ec != std::errc()) {
    *why = "bad status line '" + status_line + "'";
    return std::nullopt;
  }
  r.status = status;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    r.headers[base::Lower(base::Strip(lines[i].substr(0, colon)))] =
        base::Strip(lines[i].substr(colon + 1));
  }
  const std::string_view body = raw.substr(head_end + 4);
  if (auto te = r.headers.find("transfer-encoding");
      te != r.headers.end() && base::Lower(te->second) == "chunked") {
    auto decoded = Dechunk(body);
    if (!decoded) {
      *why = "malformed or truncated chunked body";
      return std::nullopt;
    }
    r.body = std::move(*decoded);
  } else if (auto cl = r.headers.find("content-length"); cl != r.headers.end()) {
    std::size_t n = 0;
    if (std::from_chars(cl->second.data(), cl->second.data() + cl->second.size(), n).ec !=
            std::errc() ||
        body.size() < n) {
      *why = "body shorter than Content-Length " + cl->second;
      return std::nullopt;
    }
    r.body = std::string(body.substr(0, n));
  } else {
    r.body = std::string(body);
  }
  return r;
}

}  // namespace tzrun::rendezvous::detail
