#include "text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <system_error>

#include "tzrun/base/strings.hpp"

namespace tzrun::cli::detail {
namespace {

bool IsSpace(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

/// Removes '_' separators that sit between two digits; nullopt if any other '_'.
std::optional<std::string> DropDigitUnderscores(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      out.push_back(s[i]);
      continue;
    }
    if (i == 0 || i + 1 >= s.size() || !IsDigit(s[i - 1]) || !IsDigit(s[i + 1])) {
      return std::nullopt;
    }
  }
  return out;
}

bool Iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// textwrap's "letter" is regex [^\d\W]: word characters except digits.
bool IsLetter(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// Splits a whitespace-free word the way textwrap.TextWrapper.wordsep_re does
/// for hyphenated words: after a '-' preceded by two letters (or letter '-'
/// letter) and followed by letter [-] letter.
void SplitHyphenated(std::string_view word, std::vector<std::string>& chunks) {
  std::size_t start = 0;
  for (std::size_t i = 1; i + 1 < word.size(); ++i) {
    if (word[i] != '-') continue;
    const bool before =
        (i >= 2 && IsLetter(word[i - 1]) && IsLetter(word[i - 2])) ||
        (i >= 3 && IsLetter(word[i - 1]) && word[i - 2] == '-' && IsLetter(word[i - 3]));
    if (!before) continue;
    const bool after = IsLetter(word[i + 1]) &&
                       ((i + 2 < word.size() && IsLetter(word[i + 2])) ||
                        (i + 3 < word.size() && word[i + 2] == '-' && IsLetter(word[i + 3])));
    if (!after) continue;
    chunks.emplace_back(word.substr(start, i + 1 - start));
    start = i + 1;
  }
  chunks.emplace_back(word.substr(start));
}

}  // namespace

std::optional<std::int64_t> PythonInt(std::string_view text_in) {
  const std::string stripped = base::Strip(text_in);
  std::string_view text = stripped;
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !IsDigit(text.front())) return std::nullopt;
  auto digits = DropDigitUnderscores(text);
  if (!digits) return std::nullopt;
  std::uint64_t magnitude = 0;
  const auto* first = digits->data();
  const auto* last = first + digits->size();
  auto [ptr, ec] = std::from_chars(first, last, magnitude);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (magnitude > kMax + (negative ? 1 : 0)) return std::nullopt;
  if (negative) {
    return magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                 : -static_cast<std::int64_t>(magnitude);
  }
  return static_cast<std::int64_t>(magnitude);
}

std::optional<double> PythonFloat(std::string_view text_in) {
  const std::string stripped = base::Strip(text_in);
  std::string_view text = stripped;
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (Iequals(text, "inf") || Iequals(text, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (Iequals(text, "nan")) return std::numeric_limits<double>::quiet_NaN();
  // Remaining grammar: digits [. digits] [e [sign] digits] with at least one digit
  // in the mantissa; std::from_chars accepts exactly that (plus inf/nan, handled).
  if (text.empty() || !(IsDigit(text.front()) || text.front() == '.')) return std::nullopt;
  auto clean = DropDigitUnderscores(text);
  if (!clean) return std::nullopt;
  for (char c : *clean) {
    if (!(IsDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
      return std::nullopt;
    }
  }
  double value = 0;
  const auto* first = clean->data();
  const auto* last = first + clean->size();
  auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ptr != last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Python: overflow -> inf, underflow -> 0.0 (strtod reports both that way).
    value = std::strtod(clean->c_str(), nullptr);
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

std::vector<std::string> Wrap(std::string_view text, int width) {
  // Chunks: words (split further at hyphens) and single-space separators,
  // after collapsing whitespace as argparse's _split_lines does.
  std::vector<std::string> chunks;
  const std::string stripped = base::Strip(text);
  std::string_view rest = stripped;
  while (!rest.empty()) {
    std::size_t end = 0;
    while (end < rest.size() && !IsSpace(rest[end])) ++end;
    SplitHyphenated(rest.substr(0, end), chunks);
    rest.remove_prefix(end);
    if (!rest.empty()) {
      chunks.emplace_back(" ");
      while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
    }
  }

  const auto w = static_cast<std::size_t>(width < 1 ? 1 : width);
  std::vector<std::string> lines;
  std::size_t next = 0;
  while (next < chunks.size()) {
    if (chunks[next] == " " && !lines.empty()) ++next;  // drop leading space
    std::vector<std::string> line;
    std::size_t len = 0;
    while (next < chunks.size() && len + chunks[next].size() <= w) {
      len += chunks[next].size();
      line.push_back(chunks[next++]);
    }
    if (next < chunks.size() && chunks[next].size() > w) {
      // _handle_long_word with break_long_words and break_on_hyphens.
      std::string& chunk = chunks[next];
      const std::size_t space_left = w > len ? w - len : 1;
      std::size_t cut = space_left;
      const auto hyphen = chunk.rfind('-', space_left - 1);
      if (hyphen != std::string::npos && hyphen > 0 && hyphen < space_left &&
          chunk.find_first_not_of('-') < hyphen) {
        cut = hyphen + 1;
      }
      line.push_back(chunk.substr(0, cut));
      chunk.erase(0, cut);
    }
    while (!line.empty() && line.back() == " ") line.pop_back();
    if (!line.empty()) {
      std::string joined;
      for (const auto& c : line) joined += c;
      lines.push_back(std::move(joined));
    }
  }
  return lines;
}

std::string PyRepr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace tzrun::cli::detail
