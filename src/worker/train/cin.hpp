// src/worker/train/cin.hpp — TorchEasyRec's CIN, xDeepFM's compressed interaction network
// (tzrec/modules/interaction.py: CIN; options from tzrec/protos/module.proto message CIN).
//
// On x0 [B, F, D] with layer sizes H_1..H_L (H_0 = F):
//   z_k   = einsum("bhd,bfd->bhfd", x_{k-1}, x0).view(B, H_{k-1}·F, D)
//   x_k   = Conv1d(H_{k-1}·F → H_k, kernel 1)(z_k)                     [B, H_k, D]
//   out   = concat_k sum_d x_k                                          [B, H_1 + ... + H_L]
// Tensor names (creation order = torch's): "<name>.cin_layers.<k>.weight" [H_k, H_{k-1}·F, 1]
// and ".bias" [H_k]; init as torch.nn.Conv1d's default (U(±1/sqrt(fan_in)) for both, fan_in =
// H_{k-1}·F), which is torch.nn.Linear's (ParamBuilder::AddLinear).
//
// Errors: ConfigError for an empty or zero layer size. Forward: pure (no state); any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlp.hpp"

namespace tzrec {

class Cin {
 public:
  Cin() = default;
  Cin(ParamBuilder& b, std::vector<Parameter>* parameters, const std::string& name,
      std::int64_t feature_num, const std::vector<std::int64_t>& layer_sizes);
  // x0 [B, feature_num, D] → [B, OutDim()].
  at::Tensor Forward(const at::Tensor& x0) const;
  std::int64_t OutDim() const { return out_dim_; }

 private:
  std::vector<at::Tensor> weights_;  // [H_k, H_{k-1}·F, 1]
  std::vector<at::Tensor> biases_;
  std::int64_t out_dim_ = 0;
};

}  // namespace tzrec
