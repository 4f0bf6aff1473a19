// Internal to tzrec::input: one input value (a "cell") as the readers deliver it, and the text and
// number helpers the transforms share. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tzrec::input {

// A value of one row and column. Strings view memory owned by the ColumnBlock that holds the cell.
// kList (a Parquet list<...> cell): `i` items at `items`, each a scalar cell (null, int, float or
// string), owned by the ColumnBlock too.
struct Cell {
  enum class Kind : std::uint8_t { kNull, kInt, kFloat, kString, kList };
  Kind kind = Kind::kNull;
  std::int64_t i = 0;
  double d = 0.0;
  std::string_view s;
  const Cell* items = nullptr;

  static Cell Null() { return {}; }
  static Cell Int(std::int64_t v) { return {Kind::kInt, v, 0.0, {}, nullptr}; }
  static Cell Float(double v) { return {Kind::kFloat, 0, v, {}, nullptr}; }
  static Cell String(std::string_view v) { return {Kind::kString, 0, 0.0, v, nullptr}; }
  static Cell List(const Cell* first, std::int64_t n) { return {Kind::kList, n, 0.0, {}, first}; }
  bool IsNull() const { return kind == Kind::kNull; }
};

// FNV-1a 64-bit hash of the bytes of `text` (stable across platforms and runs).
std::uint64_t Fnv1a64(std::string_view text);

// The text a cell hashes as: strings as they are, integers in decimal, integral floats (|x| < 2^63)
// as integers ("3" for 3.0), other floats in their shortest round-trip form. Null: "". A list:
// its items' texts joined by ','.
// Writes into `buffer` when it has to format; the result views `buffer` or the cell.
std::string_view CellText(const Cell& cell, std::string* buffer);

// Calls fn(token) for each token of `text` split on `sep` (the whole text when sep is empty);
// empty tokens are passed too.
template <typename Fn>
void ForEachToken(std::string_view text, std::string_view sep, Fn&& fn) {
  if (sep.empty()) {
    fn(text);
    return;
  }
  std::size_t start = 0;
  while (true) {
    const auto pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      fn(text.substr(start));
      return;
    }
    fn(text.substr(start, pos - start));
    start = pos + sep.size();
  }
}

// Appends the non-empty text values of `cell` to `values`: a number as its CellText, a string's
// tokens split on `sep`, a list's non-null, non-empty items (each as its CellText).
void CellValues(const Cell& cell, std::string_view sep, std::vector<std::string>* values);

// Human-readable value for error messages (strings quoted).
std::string Describe(const Cell& cell);

// `text` without leading/trailing spaces and tabs.
std::string_view Trim(std::string_view text);

// Strict parses of the whole (trimmed) text; nullopt when it is not such a number.
std::optional<double> ParseDouble(std::string_view text);
// An integer ("12", "-3") or an integral float text ("12.0", "1e3") within int64.
std::optional<std::int64_t> ParseInteger(std::string_view text);

}  // namespace tzrec::input
