// tzrec/config/expr.hpp — the expression language of TorchEasyRec's expr_feature (pyfg's
// expr_feature, a muParser dialect; TorchEasyRec docs/source/feature/feature.md "ExprFeature").
//
// Grammar (lowest precedence first; binary operators are left-associative except '^'):
//   expr    := or ['?' expr ':' expr]             if-then-else, right-associative
//   or      := and {'||' and}                     1 / 0; a value is true when it is != 0
//   and     := cmp {'&&' cmp}
//   cmp     := add {('<=' | '>=' | '!=' | '==' | '<' | '>') add}
//   add     := mul {('+' | '-') mul}
//   mul     := sign {('*' | '/') sign}
//   sign    := ('-' | '+') sign | power           signs bind looser than '^': -2^2 = -4
//   power   := primary ['^' sign]                 right-associative: 2^3^2 = 2^9
//   primary := number | _pi | _e | variable | function '(' expr {',' expr} ')' | '(' expr ')'
// Numbers: 12, 1.5, .5, 2e-3. Arithmetic is IEEE double (x/0 = inf, 0/0 = NaN).
// Functions (element-wise over multi-value variables): sin cos tan asin acos atan sinh cosh tanh
// asinh acosh atanh log2 log10 log ln (log and ln: base e) exp sqrt abs sign (-1, 0, 1)
// rint (floor(x + 0.5)) floor ceil trunc round (half away from zero) roundp(x, n)
// (round(x * 10^n) / 10^n) sigmoid (1 / (1 + e^-x)), and min max sum avg of 1 or more arguments.
// Vector functions (one value from the values of variables, which must be their arguments, each a
// variable name): len squared_norm (sum of squares) reduce_min reduce_max reduce_sum reduce_mean
// reduce_prod variance (divide by n) pop_variance (n - 1) std_dev (n) pop_std_dev (n - 1), and
// dot(a, b), euclid_dist(a, b). In an expression with a vector function, every other use of a
// variable must have one value.
// Multi-value: a variable holds 1 or more values; an operation on two value lists of the same
// length works element by element, a single value applies to every element, and lists of other
// lengths are padded to the longer with `fill` (expr_feature.fill_missing, NaN when unset).
//
// Refused at parse (ConfigError naming the part, the position and the fix): any other character
// or name, the bitwise '&' and '|', the pyfg functions rnd (random), l2_norm (ambiguous: the norm
// or the normalized vector), sphere_dist and haversine (radius and unit undocumented), a wrong
// argument count, a vector function argument that is not a variable name.
// Thread-safety: immutable after construction; Evaluate may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tzrec {

class Expression {
 public:
  // Parses `text`; `variables` are the names the expression may use (expr_feature.variables
  // after their "side:"). Throws ConfigError.
  Expression(const std::string& text, std::vector<std::string> variables);

  const std::string& Text() const { return text_; }
  const std::vector<std::string>& Variables() const { return variables_; }

  // The values of the expression; values[i] holds variable i's values (1 or more each). Throws
  // std::invalid_argument when a variable that must have one value has more (the message names
  // it and the count).
  std::vector<double> Evaluate(const std::vector<std::vector<double>>& values, double fill) const;

  struct Node {
    enum class Kind : std::uint8_t { kNumber, kVariable, kSign, kBinary, kIf, kCall, kVector };
    Kind kind = Kind::kNumber;
    double number = 0.0;  // kNumber
    int index = 0;        // kVariable: variable; kCall / kVector: function; kBinary / kSign: op
    bool scalar_only = false;  // kVariable outside a vector function in an expression with one
    std::vector<int> children;
  };

 private:
  friend class ExpressionParser;
  std::vector<double> Eval(int node, const std::vector<std::vector<double>>& values,
                           double fill) const;

  std::string text_;
  std::vector<std::string> variables_;
  std::vector<Node> nodes_;
  int root_ = 0;
};

}  // namespace tzrec
