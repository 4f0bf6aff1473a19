// The parser of the expr_feature expression language (include/tzrec/config/expr.hpp): a
// recursive descent over exactly the documented grammar; everything else is refused by name.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "expr_internal.hpp"
#include "tzrec/config/expr.hpp"
#include "tzrec/error.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {

using namespace expr_internal;  // NOLINT(google-build-using-namespace): the tables

namespace {

constexpr const char* kFunctionList =
    "functions: sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh log2 log10 log ln exp "
    "sqrt abs sign rint floor ceil trunc round roundp sigmoid min max sum avg; vector functions: "
    "len squared_norm reduce_min reduce_max reduce_sum reduce_mean reduce_prod variance "
    "pop_variance std_dev pop_std_dev dot euclid_dist";

bool NameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Why a known pyfg function is refused, or nullptr.
const char* RefusedFunction(std::string_view name) {
  if (name == "rnd") {
    return "rnd (a random number) is not reproducible and is not implemented; remove it";
  }
  if (name == "l2_norm") {
    return "l2_norm is documented as \"l2 normalize of a vector\", which may be the norm or the "
           "normalized vector; write sqrt(squared_norm(v)) for the norm";
  }
  if (name == "sphere_dist" || name == "haversine") {
    return "pyfg does not document the earth radius and unit of sphere_dist / haversine, so "
           "they are not implemented; compute the distance offline into a column";
  }
  return nullptr;
}

}  // namespace

class ExpressionParser {
 public:
  explicit ExpressionParser(Expression* e) : e_(*e), text_(e->text_) {}

  void Run() {
    Skip();
    if (pos_ == text_.size()) Fail("empty expression", "write an expression of the variables");
    e_.root_ = Ternary();
    Skip();
    if (pos_ < text_.size()) Unexpected();
    if (has_vector_) MarkScalarOnly(e_.root_);
  }

 private:
  [[noreturn]] void Fail(const std::string& what, const std::string& fix) const {
    throw ConfigError("expression \"" + text_ + "\": " + what + " at position " +
                      std::to_string(pos_ + 1) + "; " + fix);
  }
  [[noreturn]] void Unexpected() const {
    const char c = text_[pos_];
    if (c == '&' || c == '|') {
      Fail(std::string("the bitwise operator '") + c + "'",
           "it is not implemented (use && / || for logic)");
    }
    if (c == ')' || c == ',' || c == ':') {
      Fail(std::string("unexpected '") + c + "'", "check the parentheses and the ?: operator");
    }
    Fail(std::string("unexpected '") + c + "'",
         std::string("operators: ?: || && <= >= != == < > + - * / ^ and parentheses; ") +
             kFunctionList);
  }

  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) {
      ++pos_;
    }
  }
  bool Accept(std::string_view token) {
    Skip();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    // '|' / '&' alone are the refused bitwise operators, '<' is not the start of "<=", ...
    pos_ += token.size();
    return true;
  }
  void Expect(char c, const std::string& what) {
    Skip();
    if (pos_ >= text_.size()) Fail("the expression ends early", "add " + what);
    if (text_[pos_] != c) Unexpected();
    ++pos_;
  }

  int Add(Expression::Node node) {
    e_.nodes_.push_back(std::move(node));
    return static_cast<int>(e_.nodes_.size()) - 1;
  }
  int Binary(int op, int left, int right) {
    Expression::Node n;
    n.kind = Expression::Node::Kind::kBinary;
    n.index = op;
    n.children = {left, right};
    return Add(std::move(n));
  }

  int Ternary() {
    const int cond = Or();
    if (!Accept("?")) return cond;
    const int then = Ternary();
    Expect(':', "the ':' of the ?: operator");
    const int otherwise = Ternary();
    Expression::Node n;
    n.kind = Expression::Node::Kind::kIf;
    n.children = {cond, then, otherwise};
    return Add(std::move(n));
  }
  int Or() {
    int left = And();
    while (Accept("||")) left = Binary(kOr, left, And());
    return left;
  }
  int And() {
    int left = Compare();
    while (Accept("&&")) left = Binary(kAnd, left, Compare());
    return left;
  }
  int Compare() {
    int left = Sum();
    while (true) {
      int op = -1;
      for (int candidate : {kLe, kGe, kNe, kEq, kLt, kGt}) {
        if (Accept(kOpNames[static_cast<std::size_t>(candidate)])) {
          op = candidate;
          break;
        }
      }
      if (op < 0) return left;
      left = Binary(op, left, Sum());
    }
  }
  int Sum() {
    int left = Product();
    while (true) {
      if (Accept("+")) {
        left = Binary(kAdd, left, Product());
      } else if (Accept("-")) {
        left = Binary(kSub, left, Product());
      } else {
        return left;
      }
    }
  }
  int Product() {
    int left = Sign();
    while (true) {
      if (Accept("*")) {
        left = Binary(kMul, left, Sign());
      } else if (Accept("/")) {
        left = Binary(kDiv, left, Sign());
      } else {
        return left;
      }
    }
  }
  int Sign() {
    const bool minus = Accept("-");
    if (!minus && !Accept("+")) return Power();
    Expression::Node n;
    n.kind = Expression::Node::Kind::kSign;
    n.index = minus ? 0 : 1;
    n.children = {Sign()};
    return Add(std::move(n));
  }
  int Power() {
    const int base = Primary();
    if (!Accept("^")) return base;
    return Binary(kPow, base, Sign());
  }

  int Primary();
  int Number();
  int Call(const std::string& name, std::size_t at);
  void MarkScalarOnly(int node);

  Expression& e_;
  const std::string& text_;
  std::size_t pos_ = 0;
  bool has_vector_ = false;
};

int ExpressionParser::Primary() {
  Skip();
  if (pos_ >= text_.size()) Fail("the expression ends early", "complete the expression");
  const char c = text_[pos_];
  if (c == '(') {
    ++pos_;
    const int inner = Ternary();
    Expect(')', "a ')'");
    return inner;
  }
  if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.') return Number();
  if (!NameStart(c)) Unexpected();
  const std::size_t at = pos_;
  while (pos_ < text_.size() && NameChar(text_[pos_])) ++pos_;
  const std::string name = text_.substr(at, pos_ - at);
  Skip();
  if (pos_ < text_.size() && text_[pos_] == '(') return Call(name, at);
  Expression::Node n;
  if (name == "_pi" || name == "_e") {
    n.number = name == "_pi" ? M_PI : M_E;
    return Add(std::move(n));
  }
  for (std::size_t i = 0; i < e_.variables_.size(); ++i) {
    if (e_.variables_[i] == name) {
      n.kind = Expression::Node::Kind::kVariable;
      n.index = static_cast<int>(i);
      return Add(std::move(n));
    }
  }
  pos_ = at;
  Fail("unknown name '" + name + "'",
       e_.variables_.empty()
           ? "list it in variables (\"side:" + name + "\")"
           : "the variables are " + tzrun::base::Join(e_.variables_, ", ") + " (did you mean '" +
                 tzrun::base::ClosestName(name, e_.variables_) + "'?); add \"side:" + name +
                 "\" to variables, or use the constants _pi, _e");
}

int ExpressionParser::Number() {
  const std::size_t at = pos_;
  std::size_t digits = 0;
  while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
    ++pos_, ++digits;
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
      ++pos_, ++digits;
    }
  }
  if (digits == 0) {
    pos_ = at;
    Unexpected();
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    std::size_t p = pos_ + 1;
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p])) != 0) {
      pos_ = p;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
        ++pos_;
      }
    }
  }
  if (pos_ < text_.size() && NameChar(text_[pos_])) {
    Fail("a number runs into a name (\"" + text_.substr(at, pos_ - at + 1) + "\")",
         "put an operator between them, e.g. 2*x");
  }
  Expression::Node n;
  n.number = std::strtod(text_.substr(at, pos_ - at).c_str(), nullptr);
  return Add(std::move(n));
}

int ExpressionParser::Call(const std::string& name, std::size_t at) {
  Expression::Node n;
  int arity = 0;
  bool found = false;
  for (std::size_t i = 0; i < kFunctions.size() && !found; ++i) {
    if (kFunctions[i].name == name) {
      n.kind = Expression::Node::Kind::kCall;
      n.index = static_cast<int>(i);
      arity = kFunctions[i].arity;
      found = true;
    }
  }
  for (std::size_t i = 0; i < kVectorFunctions.size() && !found; ++i) {
    if (kVectorFunctions[i].name == name) {
      n.kind = Expression::Node::Kind::kVector;
      n.index = static_cast<int>(i);
      arity = kVectorFunctions[i].arity;
      found = true;
      has_vector_ = true;
    }
  }
  if (!found) {
    pos_ = at;
    if (const char* why = RefusedFunction(name)) Fail("the function " + name, why);
    Fail("unknown function '" + name + "'", kFunctionList);
  }
  ++pos_;  // '('
  Skip();
  if (pos_ < text_.size() && text_[pos_] == ')') {
    ++pos_;
  } else {
    do {
      const std::size_t arg_at = pos_;
      const int arg = Ternary();
      if (n.kind == Expression::Node::Kind::kVector &&
          e_.nodes_[static_cast<std::size_t>(arg)].kind != Expression::Node::Kind::kVariable) {
        pos_ = arg_at;
        Fail("an argument of " + name + " that is not a variable name",
             "vector functions take variables, e.g. " + name + "(a" + (arity == 2 ? ", b)" : ")"));
      }
      n.children.push_back(arg);
    } while (Accept(","));
    Expect(')', "the ')' of " + name + "(");
  }
  const int got = static_cast<int>(n.children.size());
  if ((arity >= 0 && got != arity) || (arity < 0 && got == 0)) {
    pos_ = at;
    Fail(name + " with " + std::to_string(got) + " argument(s)",
         name + " takes " + (arity < 0 ? std::string("1 or more") : std::to_string(arity)));
  }
  return Add(std::move(n));
}

// In an expression with a vector function, a variable used elsewhere must have one value.
void ExpressionParser::MarkScalarOnly(int node) {
  Expression::Node& n = e_.nodes_[static_cast<std::size_t>(node)];
  if (n.kind == Expression::Node::Kind::kVector) return;
  if (n.kind == Expression::Node::Kind::kVariable) n.scalar_only = true;
  for (const int child : n.children) MarkScalarOnly(child);
}

Expression::Expression(const std::string& text, std::vector<std::string> variables)
    : text_(text), variables_(std::move(variables)) {
  ExpressionParser(this).Run();
}

}  // namespace tzrec
