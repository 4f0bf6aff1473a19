// Internal helpers of tzrun::cli: Python-compatible number parsing and
// argparse/textwrap-compatible line wrapping. (Trimming and splitting are tzrun::base's,
// include/tzrun/base/strings.hpp.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tzrun::cli::detail {

/// Python's int(str) for base 10: surrounding whitespace, optional sign,
/// digits with single '_' between digits. nullopt if invalid or outside int64.
std::optional<std::int64_t> PythonInt(std::string_view text);

/// Python's float(str): whitespace, sign, decimal/exponent forms, '_' between
/// digits, inf/infinity/nan (any case). No hex floats. nullopt if invalid.
std::optional<double> PythonFloat(std::string_view text);

/// textwrap.wrap(text, width) with Python 3.11 defaults (whitespace collapsed,
/// break_long_words, break_on_hyphens), as argparse's HelpFormatter uses it.
std::vector<std::string> Wrap(std::string_view text, int width);

/// Python repr() of a str for the common cases argparse messages show: 'x'.
std::string PyRepr(std::string_view text);

}  // namespace tzrun::cli::detail
