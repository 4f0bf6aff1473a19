// Cell text, hashing and number parsing (see cell.hpp).
#include "cell.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace tzrec::input {

void CellValues(const Cell& cell, std::string_view sep, std::vector<std::string>* values) {
  std::string buffer;
  switch (cell.kind) {
    case Cell::Kind::kNull:
      return;
    case Cell::Kind::kInt:
    case Cell::Kind::kFloat:
      values->emplace_back(CellText(cell, &buffer));
      return;
    case Cell::Kind::kString:
      ForEachToken(cell.s, sep, [&](std::string_view token) {
        if (!token.empty()) values->emplace_back(token);
      });
      return;
    case Cell::Kind::kList:
      for (std::int64_t k = 0; k < cell.i; ++k) {
        const Cell& item = cell.items[k];
        if (item.kind == Cell::Kind::kNull) continue;
        if (item.kind == Cell::Kind::kString && item.s.empty()) continue;
        values->emplace_back(CellText(item, &buffer));
      }
      return;
  }
}

std::uint64_t Fnv1a64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

namespace {

constexpr double kTwoPow63 = 9223372036854775808.0;

bool IsIntegral(double x) {
  return std::isfinite(x) && std::trunc(x) == x && std::fabs(x) < kTwoPow63;
}

}  // namespace

std::string_view CellText(const Cell& cell, std::string* buffer) {
  char tmp[64];
  std::to_chars_result res{};
  switch (cell.kind) {
    case Cell::Kind::kNull:
      return {};
    case Cell::Kind::kString:
      return cell.s;
    case Cell::Kind::kList: {
      std::string out;
      std::string item;
      for (std::int64_t k = 0; k < cell.i; ++k) {
        if (k > 0) out += ',';
        out += CellText(cell.items[k], &item);
      }
      *buffer = std::move(out);
      return *buffer;
    }
    case Cell::Kind::kInt:
      res = std::to_chars(tmp, tmp + sizeof(tmp), cell.i);
      break;
    case Cell::Kind::kFloat:
      if (IsIntegral(cell.d)) {
        res = std::to_chars(tmp, tmp + sizeof(tmp), static_cast<std::int64_t>(cell.d));
      } else {
        res = std::to_chars(tmp, tmp + sizeof(tmp), cell.d);
      }
      break;
  }
  buffer->assign(tmp, res.ptr);
  return *buffer;
}

std::string Describe(const Cell& cell) {
  std::string buffer;
  switch (cell.kind) {
    case Cell::Kind::kNull:
      return "null";
    case Cell::Kind::kString:
      return "'" + std::string(cell.s) + "'";
    case Cell::Kind::kList: {
      std::string out = "[";
      for (std::int64_t k = 0; k < cell.i; ++k) {
        if (k > 0) out += ", ";
        if (k == 8) {
          out += "... (" + std::to_string(cell.i) + " items)";
          break;
        }
        out += Describe(cell.items[k]);
      }
      return out + "]";
    }
    default:
      return std::string(CellText(cell, &buffer));
  }
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<double> ParseDouble(std::string_view text) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double value = 0.0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), value);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> ParseInteger(std::string_view text) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), value);
  if (res.ec == std::errc() && res.ptr == text.data() + text.size()) return value;
  const auto d = ParseDouble(text);
  if (d && IsIntegral(*d)) return static_cast<std::int64_t>(*d);
  return std::nullopt;
}

}  // namespace tzrec::input
