// The evaluator of the expr_feature expression language (include/tzrec/config/expr.hpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "expr_internal.hpp"
#include "tzrec/config/expr.hpp"

namespace tzrec {

using namespace expr_internal;  // NOLINT(google-build-using-namespace): the tables

namespace {

using Values = std::vector<double>;

// Calls fn(k, a_k, b_k) over the broadcast of a and b: equal lengths element by element, a single
// value against every element, other lengths padded to the longer with `fill`.
template <typename Fn>
Values Zip(const Values& a, const Values& b, double fill, Fn&& fn) {
  const std::size_t n = std::max(a.size(), b.size());
  Values out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const double x = a.size() == 1 ? a[0] : (k < a.size() ? a[k] : fill);
    const double y = b.size() == 1 ? b[0] : (k < b.size() ? b[k] : fill);
    out[k] = fn(x, y);
  }
  return out;
}

bool True(double v) {
  return v != 0.0;
}

double ApplyBinary(int op, double x, double y) {
  switch (op) {
    case kOr:
      return (True(x) || True(y)) ? 1.0 : 0.0;
    case kAnd:
      return (True(x) && True(y)) ? 1.0 : 0.0;
    case kLe:
      return x <= y ? 1.0 : 0.0;
    case kGe:
      return x >= y ? 1.0 : 0.0;
    case kNe:
      return x != y ? 1.0 : 0.0;
    case kEq:
      return x == y ? 1.0 : 0.0;
    case kLt:
      return x < y ? 1.0 : 0.0;
    case kGt:
      return x > y ? 1.0 : 0.0;
    case kAdd:
      return x + y;
    case kSub:
      return x - y;
    case kMul:
      return x * y;
    case kDiv:
      return x / y;
    default:
      return std::pow(x, y);
  }
}

double ApplyUnary(std::string_view name, double x) {
  static const std::vector<std::pair<std::string_view, double (*)(double)>> kTable = {
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"log2", [](double v) { return std::log2(v); }},
      {"log10", [](double v) { return std::log10(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"ln", [](double v) { return std::log(v); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"sign", [](double v) { return v < 0 ? -1.0 : (v > 0 ? 1.0 : 0.0); }},
      {"abs", [](double v) { return std::fabs(v); }},
      {"rint", [](double v) { return std::floor(v + 0.5); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"trunc", [](double v) { return std::trunc(v); }},
      {"round", [](double v) { return std::round(v); }},
      {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
  };
  for (const auto& [n, fn] : kTable) {
    if (n == name) return fn(x);
  }
  throw std::logic_error("expression: no unary function " + std::string(name));
}

// One value from a variable's values (a vector function of one argument).
double Reduce(std::string_view name, const Values& v) {
  const double n = static_cast<double>(v.size());
  double sum = 0.0, squares = 0.0;
  for (const double x : v) sum += x, squares += x * x;
  if (name == "len") return n;
  if (name == "squared_norm") return squares;
  if (name == "reduce_min") return *std::min_element(v.begin(), v.end());
  if (name == "reduce_max") return *std::max_element(v.begin(), v.end());
  if (name == "reduce_sum") return sum;
  if (name == "reduce_mean") return sum / n;
  if (name == "reduce_prod") {
    double p = 1.0;
    for (const double x : v) p *= x;
    return p;
  }
  const double mean = sum / n;
  double deviations = 0.0;
  for (const double x : v) deviations += (x - mean) * (x - mean);
  if (name == "variance") return deviations / n;
  if (name == "pop_variance") return deviations / (n - 1.0);
  if (name == "std_dev") return std::sqrt(deviations / n);
  if (name == "pop_std_dev") return std::sqrt(deviations / (n - 1.0));
  throw std::logic_error("expression: no vector function " + std::string(name));
}

}  // namespace

std::vector<double> Expression::Evaluate(const std::vector<std::vector<double>>& values,
                                         double fill) const {
  if (values.size() != variables_.size()) {
    throw std::logic_error("expression \"" + text_ + "\": " + std::to_string(values.size()) +
                           " value lists for " + std::to_string(variables_.size()) + " variables");
  }
  return Eval(root_, values, fill);
}

std::vector<double> Expression::Eval(int index, const std::vector<std::vector<double>>& values,
                                     double fill) const {
  const Node& n = nodes_[static_cast<std::size_t>(index)];
  auto child = [&](std::size_t k) { return Eval(n.children[k], values, fill); };
  switch (n.kind) {
    case Node::Kind::kNumber:
      return {n.number};
    case Node::Kind::kVariable: {
      const Values& v = values[static_cast<std::size_t>(n.index)];
      if (n.scalar_only && v.size() != 1) {
        throw std::invalid_argument(
            "variable '" + variables_[static_cast<std::size_t>(n.index)] + "' has " +
            std::to_string(v.size()) +
            " values, but an expression with a vector function takes one value of a variable "
            "used outside the vector functions' arguments");
      }
      return v;
    }
    case Node::Kind::kSign: {
      Values v = child(0);
      if (n.index == 0) {
        for (double& x : v) x = -x;
      }
      return v;
    }
    case Node::Kind::kBinary:
      return Zip(child(0), child(1), fill,
                 [&](double x, double y) { return ApplyBinary(n.index, x, y); });
    case Node::Kind::kIf: {  // cond_k ? then_k : otherwise_k over the broadcast of the three
      const Values cond = child(0), then = child(1), otherwise = child(2);
      const std::size_t len = std::max({cond.size(), then.size(), otherwise.size()});
      auto at = [&](const Values& v, std::size_t k) {
        return v.size() == 1 ? v[0] : (k < v.size() ? v[k] : fill);
      };
      Values out(len);
      for (std::size_t k = 0; k < len; ++k) {
        out[k] = True(at(cond, k)) ? at(then, k) : at(otherwise, k);
      }
      return out;
    }
    case Node::Kind::kCall: {
      const Function& f = kFunctions[static_cast<std::size_t>(n.index)];
      if (f.arity == 1) {
        Values v = child(0);
        for (double& x : v) x = ApplyUnary(f.name, x);
        return v;
      }
      if (f.name == "roundp") {
        return Zip(child(0), child(1), fill, [](double x, double digits) {
          const double scale = std::pow(10.0, digits);
          return std::round(x * scale) / scale;
        });
      }
      Values acc = child(0);  // min / max / sum / avg over the arguments, element by element
      for (std::size_t k = 1; k < n.children.size(); ++k) {
        acc = Zip(acc, child(k), fill, [&](double a, double b) {
          if (f.name == "min") return std::min(a, b);
          if (f.name == "max") return std::max(a, b);
          return a + b;
        });
      }
      if (f.name == "avg") {
        for (double& x : acc) x /= static_cast<double>(n.children.size());
      }
      return acc;
    }
    case Node::Kind::kVector: {
      const Function& f = kVectorFunctions[static_cast<std::size_t>(n.index)];
      if (f.arity == 1) return {Reduce(f.name, child(0))};
      const Values a = child(0), b = child(1);
      double total = 0.0;
      for (const double x : Zip(a, b, fill, [&](double x, double y) {
             return f.name == "dot" ? x * y : (x - y) * (x - y);
           })) {
        total += x;
      }
      return {f.name == "dot" ? total : std::sqrt(total)};
    }
  }
  throw std::logic_error("expression: bad node");
}

}  // namespace tzrec
