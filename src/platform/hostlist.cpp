// Slurm compressed host lists and TorchX -j job shapes (see
// include/tzrun/platform/platform.hpp).
#include <cctype>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/base/strings.hpp"
#include "tzrun/platform/platform.hpp"

namespace tzrun::platform {
namespace {

[[noreturn]] void BadHostlist(std::string_view list, const std::string& why) {
  throw std::invalid_argument("cannot expand Slurm host list '" + std::string(list) + "': " + why +
                              " (expected names like node[01-03,07],gpu5)");
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::uint64_t ToU64(std::string_view list, std::string_view digits) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size()) {
    BadHostlist(list, "number '" + std::string(digits) + "' is out of range");
  }
  return v;
}

std::string Padded(std::uint64_t v, std::size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

/// Expands the inside of one bracket group: "01-03,07" -> {"01","02","03","07"}.
std::vector<std::string> ExpandRanges(std::string_view list, std::string_view body,
                                      std::size_t limit) {
  std::vector<std::string> out;
  if (body.empty()) BadHostlist(list, "empty brackets []");
  std::size_t start = 0;
  while (start <= body.size()) {
    const auto comma = body.find(',', start);
    const auto item = body.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const auto dash = item.find('-');
    const auto lo_text = item.substr(0, dash);
    const auto hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    if (!AllDigits(lo_text) || !AllDigits(hi_text)) {
      BadHostlist(list, "range '" + std::string(item) + "' is not N or N-M with digits");
    }
    const auto lo = ToU64(list, lo_text);
    const auto hi = ToU64(list, hi_text);
    if (lo > hi) BadHostlist(list, "range '" + std::string(item) + "' is reversed");
    if (hi - lo >= limit || out.size() + (hi - lo) >= limit) {
      BadHostlist(list, "more than " + std::to_string(limit) + " hosts");
    }
    for (auto v = lo; v <= hi; ++v) {
      out.push_back(Padded(v, lo_text.size()));
      if (v == std::numeric_limits<std::uint64_t>::max()) break;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

/// Expands one host expression (no top-level commas): "r[1-2]n[01,03]x".
void ExpandOne(std::string_view list, std::string_view expr, std::size_t limit,
               std::vector<std::string>& out) {
  if (expr.empty()) BadHostlist(list, "empty host name");
  std::vector<std::string> partial{""};
  std::size_t i = 0;
  while (i < expr.size()) {
    const auto open = expr.find('[', i);
    const auto text =
        expr.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i);
    if (text.find(']') != std::string_view::npos) BadHostlist(list, "unbalanced ']'");
    for (auto& p : partial) p += text;
    if (open == std::string_view::npos) break;
    const auto close = expr.find(']', open + 1);
    if (close == std::string_view::npos) BadHostlist(list, "unbalanced '['");
    const auto body = expr.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) BadHostlist(list, "nested '['");
    const auto items = ExpandRanges(list, body, limit);
    if (partial.size() * items.size() + out.size() > limit) {
      BadHostlist(list, "more than " + std::to_string(limit) + " hosts");
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * items.size());
    for (const auto& p : partial) {
      for (const auto& s : items) next.push_back(p + s);
    }
    partial = std::move(next);
    i = close + 1;
  }
  for (auto& p : partial) out.push_back(std::move(p));
}

[[noreturn]] void BadShape(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid job shape '" + std::string(text) + "': " + why +
                              " (use [[MIN:]MAX x]NPROC with positive integers, e.g. 8, 2x8 or "
                              "1:4x8; MIN <= MAX)");
}

int Positive(std::string_view text, std::string_view part, const char* what) {
  int v = 0;
  auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
  if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
    BadShape(text, std::string(what) + " '" + std::string(part) + "' is not an integer");
  }
  if (v <= 0) BadShape(text, std::string(what) + " must be > 0, got " + std::to_string(v));
  return v;
}

}  // namespace

std::vector<std::string> ExpandHostlist(std::string_view list, std::size_t limit) {
  std::vector<std::string> out;
  std::size_t depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') {
      if (depth == 0) BadHostlist(list, "unbalanced ']'");
      --depth;
    }
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const std::string expr = base::Strip(list.substr(start, i - start));
      ExpandOne(list, expr, limit, out);
      start = i + 1;
    }
  }
  if (depth != 0) BadHostlist(list, "unbalanced '['");
  return out;
}

std::string JobShape::Nnodes() const {
  if (min_nodes == max_nodes) return std::to_string(max_nodes);
  return std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

JobShape ParseJobShape(std::string_view text) {
  // torchx/components/dist.py::parse_nnodes + the "[[min:]max x]nproc" split of ddp().
  JobShape shape;
  const auto x = text.find_first_of("xX");
  std::string_view nodes;
  std::string_view nproc = text;
  if (x != std::string_view::npos) {
    nodes = text.substr(0, x);
    nproc = text.substr(x + 1);
    if (nproc.find_first_of("xX") != std::string_view::npos) BadShape(text, "more than one 'x'");
  }
  shape.nproc_per_node = Positive(text, nproc, "NPROC");
  if (x != std::string_view::npos) {
    const auto colon = nodes.find(':');
    if (colon == std::string_view::npos) {
      shape.min_nodes = shape.max_nodes = Positive(text, nodes, "node count");
    } else {
      shape.min_nodes = Positive(text, nodes.substr(0, colon), "MIN");
      shape.max_nodes = Positive(text, nodes.substr(colon + 1), "MAX");
      if (shape.min_nodes > shape.max_nodes) {
        BadShape(text, "MIN " + std::to_string(shape.min_nodes) + " is larger than MAX " +
                           std::to_string(shape.max_nodes));
      }
    }
  }
  return shape;
}

}  // namespace tzrun::platform
