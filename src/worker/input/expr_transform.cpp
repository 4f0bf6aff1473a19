// The feature generation of expr_feature (see expr_transform.hpp).
#include "expr_transform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

std::vector<std::string> VariableNames(const protos::ExprFeature& f) {
  std::vector<std::string> names;
  for (const std::string& v : f.variables()) {
    const std::size_t colon = v.rfind(':');
    names.push_back(colon == std::string::npos ? v : v.substr(colon + 1));
  }
  return names;
}

}  // namespace

ExprTransform::ExprTransform(const protos::FeatureConfig& config)
    : name_(FeatureName(config)),
      expression_(config.expr_feature().expression(), VariableNames(config.expr_feature())),
      separator_(config.expr_feature().separator()),
      default_text_(config.expr_feature().default_value()),
      max_ids_(config.expr_feature().value_dim()) {
  const protos::ExprFeature& f = config.expr_feature();
  fill_ = f.has_fill_missing() ? static_cast<double>(f.fill_missing())
                               : std::numeric_limits<double>::quiet_NaN();
  for (const float b : f.boundaries()) boundaries_.push_back(static_cast<double>(b));
  if (!std::is_sorted(boundaries_.begin(), boundaries_.end())) {
    throw std::runtime_error("feature '" + name_ + "': boundaries must be increasing");
  }
  if (!(Sparse() && default_text_.empty())) {
    const auto parsed = ParseDouble(default_text_);
    if (!parsed) {
      throw std::runtime_error("feature '" + name_ + "': default_value \"" + default_text_ +
                               "\" is not a number; give a number such as \"0\"");
    }
    default_value_ = *parsed;
  }
  if (separator_.empty()) {
    throw std::runtime_error("feature '" + name_ + "': separator is empty");
  }
}

void ExprTransform::CellValues(std::size_t variable, const Cell& cell,
                               std::vector<double>* out) const {
  auto bad = [&](const std::string& value) {
    return InputError("feature '" + name_ + "': variable '" + expression_.Variables()[variable] +
                      "' has the value " + value +
                      ", which is not a number; give numbers (multi-value text split by the "
                      "expr_feature's separator)");
  };
  auto scalar = [&](const Cell& c) {
    switch (c.kind) {
      case Cell::Kind::kInt:
        out->push_back(static_cast<double>(c.i));
        return;
      case Cell::Kind::kFloat:  // pyfg reads a numeric column as float32
        out->push_back(static_cast<double>(static_cast<float>(c.d)));
        return;
      case Cell::Kind::kString: {
        const auto v = ParseDouble(c.s);
        if (!v) throw bad(Describe(c));
        out->push_back(*v);
        return;
      }
      default:
        throw bad(Describe(c));
    }
  };
  switch (cell.kind) {
    case Cell::Kind::kNull:
      return;
    case Cell::Kind::kList:
      for (std::int64_t k = 0; k < cell.i; ++k) scalar(cell.items[k]);
      return;
    case Cell::Kind::kString: {
      if (Trim(cell.s).empty()) return;
      ForEachToken(cell.s, separator_, [&](std::string_view part) { scalar(Cell::String(part)); });
      return;
    }
    default:
      scalar(cell);
  }
}

std::optional<std::vector<double>> ExprTransform::Values(const Cell* const* cells) const {
  std::vector<std::vector<double>> inputs(Inputs());
  for (std::size_t v = 0; v < inputs.size(); ++v) {
    CellValues(v, *cells[v], &inputs[v]);
    if (inputs[v].empty()) return std::nullopt;
  }
  try {
    return expression_.Evaluate(inputs, fill_);
  } catch (const std::invalid_argument& error) {
    throw InputError("feature '" + name_ + "': expression \"" + expression_.Text() +
                     "\": " + error.what() + " (inputs " + DescribeInputs(cells) + ")");
  }
}

std::string ExprTransform::DescribeInputs(const Cell* const* cells) const {
  std::string text;
  for (std::size_t v = 0; v < Inputs(); ++v) {
    if (v > 0) text += ", ";
    text += expression_.Variables()[v] + "=" + Describe(*cells[v]);
  }
  return text;
}

void ExprTransform::AppendIds(const Cell* const* cells, std::vector<std::int64_t>* out) const {
  const auto values = Values(cells);
  std::vector<double> ids;
  if (!values) {
    if (default_text_.empty()) return;
    ids.push_back(default_value_);
  }
  const std::vector<double>& xs = values ? *values : ids;
  const std::size_t n = max_ids_ > 0 ? std::min(max_ids_, xs.size()) : xs.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (std::isnan(xs[k])) {
      throw InputError("feature '" + name_ + "': expression \"" + expression_.Text() +
                       "\" is NaN for the inputs " + DescribeInputs(cells) +
                       " (0/0, a function outside its domain, or lists of different lengths "
                       "padded with fill_missing, NaN when unset); fix the data or the expression, "
                       "or set fill_missing");
    }
    out->push_back(std::upper_bound(boundaries_.begin(), boundaries_.end(), xs[k]) -
                   boundaries_.begin());
  }
}

void ExprTransform::WriteDense(const Cell* const* cells, float* out) const {
  const auto values = Values(cells);
  if (!values) {
    out[0] = static_cast<float>(default_value_);
    return;
  }
  if (values->size() != 1) {
    throw InputError("feature '" + name_ + "': expression \"" + expression_.Text() + "\" gives " +
                     std::to_string(values->size()) + " values for the inputs " +
                     DescribeInputs(cells) +
                     "; a dense expr_feature takes one value: reduce the lists (reduce_sum, dot, "
                     "...) or add boundaries for one id per value");
  }
  const double x = values->front();
  if (!std::isfinite(x)) {
    throw InputError("feature '" + name_ + "': expression \"" + expression_.Text() + "\" is " +
                     std::to_string(x) + " for the inputs " + DescribeInputs(cells) +
                     " (division by zero, a function outside its domain, or lists padded with "
                     "fill_missing, NaN when unset); fix the data or the expression");
  }
  out[0] = static_cast<float>(x);
}

}  // namespace tzrec::input
