// The DCN cross networks (src/worker/train/cross.hpp; TorchEasyRec tzrec/modules/interaction.py).
#include "cross.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>

#include <cmath>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

void CheckSizes(const std::string& name, std::int64_t input_dim, std::int64_t cross_num) {
  if (cross_num < 1) {
    throw ConfigError(name + ".cross_num: must be >= 1, got " + std::to_string(cross_num) +
                      " (the number of cross layers)");
  }
  if (input_dim < 1) {
    throw ConfigError(name + ": the input group has width " + std::to_string(input_dim) +
                      "; give the model's feature group at least one feature");
  }
}

}  // namespace

Cross::Cross(ParamBuilder& builder, const std::string& name, std::int64_t input_dim,
             std::int64_t cross_num)
    : dim_(input_dim) {
  CheckSizes(name, input_dim, cross_num);
  // xavier_uniform_ of a [1, D] weight: fan_in D, fan_out 1.
  const double bound = std::sqrt(6.0 / static_cast<double>(input_dim + 1));
  for (std::int64_t l = 0; l < cross_num; ++l) {
    w_.push_back(
        builder.AddUniform(name + ".w." + std::to_string(l) + ".weight", {1, input_dim}, bound));
  }
  for (std::int64_t l = 0; l < cross_num; ++l)
    b_.push_back(builder.AddFilled(name + ".b." + std::to_string(l), input_dim, 0.0));
}

at::Tensor Cross::Forward(const at::Tensor& x) const {
  at::Tensor xl = x;
  for (std::size_t l = 0; l < w_.size(); ++l) xl = at::matmul(xl, w_[l].t()) * x + b_[l] + xl;
  return xl;
}

CrossV2::CrossV2(ParamBuilder& builder, const std::string& name, std::int64_t input_dim,
                 std::int64_t cross_num, std::int64_t low_rank)
    : dim_(input_dim) {
  CheckSizes(name, input_dim, cross_num);
  if (low_rank < 1) {
    throw ConfigError(name + ".low_rank: must be >= 1, got " + std::to_string(low_rank) +
                      " (the rank of each layer's factorised matrix)");
  }
  for (std::int64_t l = 0; l < cross_num; ++l) {
    u_.push_back(builder.AddLinear(name + ".u_kernels." + std::to_string(l), input_dim, low_rank,
                                   /*bias=*/false));
  }
  for (std::int64_t l = 0; l < cross_num; ++l) {
    v_.push_back(builder.AddLinear(name + ".v_kernels." + std::to_string(l), low_rank, input_dim,
                                   /*bias=*/true));
  }
}

at::Tensor CrossV2::Forward(const at::Tensor& x) const {
  at::Tensor xl = x;
  for (std::size_t l = 0; l < u_.size(); ++l) {
    const at::Tensor h = at::linear(at::linear(xl, u_[l].weight), v_[l].weight, v_[l].bias);
    xl = x * h + xl;
  }
  return xl;
}

}  // namespace tzrec
