// src/worker/train/cross.hpp — the cross networks of TorchEasyRec's DCN models
// (alibaba/TorchEasyRec tzrec/modules/interaction.py: Cross for DCNV1, CrossV2 for DCNV2; options
// from tzrec/protos/module.proto messages Cross and CrossV2) as libtorch modules that register
// their tensors into a model's lists (ParamBuilder, mlp.hpp).
//
// Cross (cross_num layers, input width D): x_0 = x,
//   x_{l+1} = (x_l · w_l) ⊙ x_0 + b_l + x_l      w_l [1, D] (a Linear(D, 1) without bias), b_l [D]
// so each layer adds the input scaled by one scalar per row. Tensor names (state dict of the
// module "<name>"): "<name>.w.<l>.weight" for every layer, then "<name>.b.<l>". Init as upstream's
// reset_parameters: w_l xavier_uniform_ (U(±sqrt(6 / (D + 1)))), b_l zeros.
//
// CrossV2 (cross_num layers, width D, low_rank r): x_0 = x,
//   x_{l+1} = x_0 ⊙ (V_l (U_l x_l) + c_l) + x_l   U_l [r, D] (Linear(D, r), no bias),
//                                                 V_l [D, r] and c_l [D] (Linear(r, D))
// Names: "<name>.u_kernels.<l>.weight" for every layer, then "<name>.v_kernels.<l>.weight" and
// ".bias"; torch.nn.Linear's default init (U(±1/sqrt(fan_in)), as upstream, which keeps it).
//
// Input [B, D] float, output [B, D] (OutDim() = D). Errors: ConfigError for cross_num < 1, D < 1
// or low_rank < 1, naming `name`. Thread-safety: Forward is const and keeps no state.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlp.hpp"  // ParamBuilder

namespace tzrec {

class Cross {
 public:
  Cross() = default;
  Cross(ParamBuilder& builder, const std::string& name, std::int64_t input_dim,
        std::int64_t cross_num);
  at::Tensor Forward(const at::Tensor& x) const;
  std::int64_t OutDim() const { return dim_; }

 private:
  std::vector<at::Tensor> w_;  // [1, D] each
  std::vector<at::Tensor> b_;  // [D] each
  std::int64_t dim_ = 0;
};

class CrossV2 {
 public:
  CrossV2() = default;
  CrossV2(ParamBuilder& builder, const std::string& name, std::int64_t input_dim,
          std::int64_t cross_num, std::int64_t low_rank);
  at::Tensor Forward(const at::Tensor& x) const;
  std::int64_t OutDim() const { return dim_; }

 private:
  std::vector<ParamBuilder::Linear> u_;  // [r, D], no bias
  std::vector<ParamBuilder::Linear> v_;  // [D, r] + [D]
  std::int64_t dim_ = 0;
};

}  // namespace tzrec
