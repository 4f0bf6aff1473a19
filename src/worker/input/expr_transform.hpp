// Internal to tzrec::input: the feature generation of expr_feature (TorchEasyRec
// tzrec/features/expr_feature.py with pyfg), fg_mode FG_NORMAL / FG_DAG. Construction parses the
// expression (include/tzrec/config/expr.hpp); the methods throw InputError naming the feature, the
// variable and the value. Immutable after construction; const methods may run concurrently.
//
// Inputs: one cell per variable, in variables order. A cell's values: a text split on separator,
// each part a number (parsed as double); a list's items; an integer; a float (as pyfg reads a
// numeric column: rounded to float32). A null, blank or empty-list cell is missing: then the
// sample's value is default_value (parsed as double; "" with boundaries: no id), the expression is
// not evaluated (pyfg's expr_feature). A part or item that is not a number is an error.
// Output: with boundaries each value of the expression (double) bucketizes into an id in
// [0, len(boundaries)] (the number of boundaries <= value); value_dim n > 0 keeps the first n.
// Without boundaries the expression must give one value, written as a float. A NaN (or, dense,
// an infinite) value is an error naming the inputs: the model cannot use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cell.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/config/expr.hpp"

namespace tzrec::input {

class ExprTransform {
 public:
  // `config` holds an expr_feature. Throws ConfigError (the expression) or std::runtime_error.
  explicit ExprTransform(const protos::FeatureConfig& config);

  bool Sparse() const { return !boundaries_.empty(); }
  // Table rows with boundaries (len + 1); 0 dense.
  std::int64_t TableSize() const {
    return Sparse() ? static_cast<std::int64_t>(boundaries_.size()) + 1 : 0;
  }
  std::size_t Inputs() const { return expression_.Variables().size(); }

  // One sample's ids from its input cells cells[0..Inputs()).
  void AppendIds(const Cell* const* cells, std::vector<std::int64_t>* out) const;
  // One sample's one float.
  void WriteDense(const Cell* const* cells, float* out) const;

 private:
  // The values of the expression; nullopt when an input is missing.
  std::optional<std::vector<double>> Values(const Cell* const* cells) const;
  // One input cell's values (empty: missing).
  void CellValues(std::size_t variable, const Cell& cell, std::vector<double>* out) const;
  // The inputs of one sample, for error messages: "a=1, b=\"x\"".
  std::string DescribeInputs(const Cell* const* cells) const;

  std::string name_;
  Expression expression_;
  std::string separator_;
  double fill_ = 0.0;
  std::string default_text_;
  double default_value_ = 0.0;
  std::size_t max_ids_ = 0;
  std::vector<double> boundaries_;
};

}  // namespace tzrec::input
