// tzrun/base/strings.hpp — the string helpers both binaries share: trimming, case, splitting,
// joining, quoted lists for messages, and "did you mean" suggestions.
//
// Pure functions; thread-safe. ASCII semantics (std::isspace / std::tolower on unsigned char), as
// the Python code these messages mirror treats the option and key names it compares.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tzrun::base {

/// `s` without leading and trailing white space (space, \t, \n, \v, \f, \r).
std::string Strip(std::string_view s);

/// `s` with ASCII letters lower-cased.
std::string Lower(std::string_view s);

/// Python's `s.split(sep)`: every field, empty ones included ("a,,b" -> {"a", "", "b"};
/// "" -> {""}).
std::vector<std::string> Split(std::string_view s, char sep);

/// Python's `sep.join(parts)`.
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

/// "'a', 'b', 'c'" — each item in single quotes, comma separated. With `limit` > 0 and more items
/// than that, the first `limit` and then ", ... (N keys)" where N is items.size(); `noun` replaces
/// "keys" in that tail.
std::string QuotedList(const std::vector<std::string>& items, std::size_t limit = 0,
                       std::string_view noun = "keys");

/// Levenshtein distance: insertions, deletions and substitutions that turn `a` into `b`.
/// O(|a|·|b|) time, O(|b|) memory.
std::size_t EditDistance(std::string_view a, std::string_view b);

/// The candidate with the smallest edit distance to `key` (the first of equals); "" when
/// `candidates` is empty. For "unknown key 'x'; did you mean 'y'?" messages.
std::string ClosestName(std::string_view key, const std::vector<std::string>& candidates);

}  // namespace tzrun::base
