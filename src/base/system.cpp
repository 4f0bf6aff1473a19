// tzrun::base system helpers (include/tzrun/base/system.hpp).
#include "tzrun/base/system.hpp"

#include <unistd.h>

#include <array>
#include <cstdint>
#include <random>
#include <string_view>
#include <system_error>

extern char**
    environ;  // NOLINT(readability-redundant-declaration): POSIX, not in <unistd.h> by C++

namespace tzrun::base {

std::string ErrnoText(int err) {
  return std::error_code(err, std::generic_category()).message();
}

std::map<std::string, std::string> EnvironMap() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

std::string Uuid4() {
  std::random_device rd;
  std::array<unsigned char, 16> b{};
  for (std::size_t i = 0; i < b.size(); i += 4) {
    const auto r = rd();
    for (std::size_t j = 0; j < 4; ++j) b[i + j] = static_cast<unsigned char>(r >> (8 * j));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0fU) | 0x40U);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3fU) | 0x80U);  // RFC 4122 variant
  std::string s;
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[b[i] >> 4U]);
    s.push_back(kHex[b[i] & 0xfU]);
  }
  return s;
}

std::string DurationText(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  if (d.count() > 1000) {
    return std::to_string(d.count() / 1000) + "." + std::to_string(d.count() % 1000 / 100) + " s";
  }
  return std::to_string(d.count()) + " ms";
}

}  // namespace tzrun::base
