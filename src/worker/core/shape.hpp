// Internal to tzrec::core: a tensor's shape as "[2, 3]" ("undefined" for an undefined tensor),
// for error messages.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace tzrec::core_detail {

inline std::string Shape(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string out = "[";
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (d) out += ", ";
    out += std::to_string(t.size(d));
  }
  return out + "]";
}

}  // namespace tzrec::core_detail
