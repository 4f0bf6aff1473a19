// A raw feature's normalizer (TorchEasyRec fg's forms; include/tzrec/config/config.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

std::string Num(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// method=expression's expr: "x", "log(x)" or "log(x+C)" (spaces ignored).
void ParseExpression(const std::string& text, const std::string& expr, const std::string& forms,
                     Normalizer* n) {
  std::string e;
  for (char c : expr) {
    if (c != ' ') e += c;
  }
  if (e == "x") {
    n->expression_is_log = false;
  } else if (e == "log(x)") {
    n->expression_is_log = true;
    n->offset = 0.0;
  } else if (e.size() > 7 && e.compare(0, 6, "log(x+") == 0 && e.back() == ')') {
    const std::string c = e.substr(6, e.size() - 7);
    double value = 0;
    const auto [end, error] = std::from_chars(c.data(), c.data() + c.size(), value);
    if (error != std::errc() || end != c.data() + c.size() || !std::isfinite(value)) {
      throw ConfigError("normalizer \"" + text + "\": C in log(x+C) is not a number ('" + c +
                        "'); " + forms);
    }
    n->expression_is_log = true;
    n->offset = value;
  } else {
    throw ConfigError("normalizer \"" + text + "\": expression '" + expr +
                      "' is not supported (only x, log(x) and log(x+C)); " + forms);
  }
}

// "k=v,k=v" → {k: v} (spaces around keys and values dropped; expr=... runs to the end).
std::map<std::string, std::string> SplitParams(const std::string& text, const std::string& forms) {
  std::map<std::string, std::string> params;
  std::size_t start = 0;
  while (start <= text.size()) {
    start = std::min(text.find_first_not_of(' ', start), text.size());
    std::size_t comma = text.find(',', start);
    if (text.compare(start, 5, "expr=") == 0) comma = std::string::npos;
    const std::string part = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("normalizer \"" + text + "\": '" + part + "' is not key=value; " + forms);
    }
    params[tzrun::base::Strip(part.substr(0, eq))] = tzrun::base::Strip(part.substr(eq + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return params;
}

}  // namespace

double Normalizer::Apply(double x) const {
  if (method == "log1p") return x > -1.0 ? std::log1p(x) : 0.0;
  if (method == "log10") return x > threshold ? std::log10(x) : fallback;
  if (method == "expression") {
    if (!expression_is_log) return x;
    return x + offset > 0.0 ? std::log(x + offset) : 0.0;
  }
  if (method == "minmax") return (x - min) / (max - min);
  if (method == "zscore") return (x - mean) / std;
  return x;
}

Normalizer ParseNormalizer(const std::string& text) {
  Normalizer normalizer;
  const std::string forms =
      "accepted forms: \"method=log1p\", \"method=expression,expr=log(x+C)\", "
      "\"method=expression,expr=x\", \"method=minmax,min=A,max=B\", "
      "\"method=zscore,mean=A,standard_deviation=B\", \"method=log10,threshold=T,default=D\"";
  if (text.empty()) return normalizer;
  const std::map<std::string, std::string> params = SplitParams(text, forms);
  auto number = [&](const std::string& key) {
    const auto it = params.find(key);
    if (it == params.end()) {
      throw ConfigError("normalizer \"" + text + "\": method " + normalizer.method + " needs " +
                        key + "=<number>; " + forms);
    }
    double value = 0;
    const std::string& s = it->second;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (error != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(value)) {
      throw ConfigError("normalizer \"" + text + "\": " + key + "=" + s + " is not a number; " +
                        forms);
    }
    return value;
  };
  auto allow_only = [&](const std::vector<std::string>& keys) {
    for (const auto& [key, value] : params) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        throw ConfigError("normalizer \"" + text + "\": unknown parameter '" + key +
                          "' for method " + normalizer.method + "; " + forms);
      }
    }
  };
  const auto method = params.find("method");
  if (method == params.end()) {
    throw ConfigError("normalizer \"" + text + "\": no method=...; " + forms);
  }
  normalizer.method = method->second;
  if (normalizer.method == "log1p") {
    allow_only({"method"});
  } else if (normalizer.method == "log10") {
    allow_only({"method", "threshold", "default"});
    if (params.count("threshold") != 0) normalizer.threshold = number("threshold");
    if (params.count("default") != 0) normalizer.fallback = number("default");
  } else if (normalizer.method == "expression") {
    allow_only({"method", "expr"});
    const auto expr = params.find("expr");
    if (expr == params.end()) {
      throw ConfigError("normalizer \"" + text + "\": method expression needs expr=...; " + forms);
    }
    ParseExpression(text, expr->second, forms, &normalizer);
  } else if (normalizer.method == "minmax") {
    allow_only({"method", "min", "max"});
    normalizer.min = number("min");
    normalizer.max = number("max");
    if (!(normalizer.max > normalizer.min)) {
      throw ConfigError("normalizer \"" + text + "\": max (" + Num(normalizer.max) +
                        ") must be > min (" + Num(normalizer.min) + ")");
    }
  } else if (normalizer.method == "zscore") {
    allow_only({"method", "mean", "standard_deviation", "std"});
    normalizer.mean = number("mean");
    normalizer.std = number(params.count("std") != 0 ? "std" : "standard_deviation");
    if (!(normalizer.std > 0)) {
      throw ConfigError("normalizer \"" + text + "\": std must be > 0, got " + Num(normalizer.std));
    }
  } else {
    throw ConfigError("normalizer \"" + text + "\": unknown method '" + normalizer.method + "'; " +
                      forms);
  }
  return normalizer;
}

}  // namespace tzrec
