// Internal to the expr_feature expression language (include/tzrec/config/expr.hpp): the operator
// and function tables shared by the parser (expr_parse.cpp) and the evaluator (expr_eval.cpp).
#pragma once

#include <array>
#include <string_view>

namespace tzrec::expr_internal {

enum Op : int { kOr, kAnd, kLe, kGe, kNe, kEq, kLt, kGt, kAdd, kSub, kMul, kDiv, kPow };
inline constexpr std::array<std::string_view, 13> kOpNames = {
    "||", "&&", "<=", ">=", "!=", "==", "<", ">", "+", "-", "*", "/", "^"};

// Element-wise functions: name and argument count (-1: one or more).
struct Function {
  std::string_view name;
  int arity;
};
inline constexpr std::array<Function, 31> kFunctions = {{
    {"sin", 1},   {"cos", 1},     {"tan", 1},    {"asin", 1},  {"acos", 1},  {"atan", 1},
    {"sinh", 1},  {"cosh", 1},    {"tanh", 1},   {"asinh", 1}, {"acosh", 1}, {"atanh", 1},
    {"log2", 1},  {"log10", 1},   {"log", 1},    {"ln", 1},    {"exp", 1},   {"sqrt", 1},
    {"sign", 1},  {"abs", 1},     {"rint", 1},   {"floor", 1}, {"ceil", 1},  {"trunc", 1},
    {"round", 1}, {"sigmoid", 1}, {"roundp", 2}, {"min", -1},  {"max", -1},  {"sum", -1},
    {"avg", -1},
}};

// Vector functions (one value from a variable's values): name and argument count.
inline constexpr std::array<Function, 13> kVectorFunctions = {{
    {"len", 1},
    {"squared_norm", 1},
    {"reduce_min", 1},
    {"reduce_max", 1},
    {"reduce_sum", 1},
    {"reduce_mean", 1},
    {"reduce_prod", 1},
    {"variance", 1},
    {"pop_variance", 1},
    {"std_dev", 1},
    {"pop_std_dev", 1},
    {"dot", 2},
    {"euclid_dist", 2},
}};

}  // namespace tzrec::expr_internal
