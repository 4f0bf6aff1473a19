// CIN (src/worker/train/cin.hpp; TorchEasyRec tzrec/modules/interaction.py).
#include "cin.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/matmul.h>

#include "tzrec/error.hpp"

namespace tzrec {

Cin::Cin(ParamBuilder& b, std::vector<Parameter>* parameters, const std::string& name,
         std::int64_t feature_num, const std::vector<std::int64_t>& layer_sizes) {
  if (layer_sizes.empty()) throw ConfigError(name + ".cin_layer_size: empty; give the layer sizes");
  std::int64_t prev = feature_num;
  for (std::size_t k = 0; k < layer_sizes.size(); ++k) {
    const std::int64_t h = layer_sizes[k];
    if (h < 1) {
      throw ConfigError(name + ".cin_layer_size[" + std::to_string(k) + "]: must be > 0, got " +
                        std::to_string(h));
    }
    const std::string p = name + ".cin_layers." + std::to_string(k);
    const std::size_t at = parameters->size();
    const ParamBuilder::Linear l = b.AddLinear(p, prev * feature_num, h);
    // Conv1d keeps a trailing kernel dim of 1: re-register the weight with that shape.
    at::Tensor w = l.weight.detach().unsqueeze(-1).clone().set_requires_grad(true);
    (*parameters)[at].tensor = w;
    weights_.push_back(w);
    biases_.push_back(l.bias);
    prev = h;
    out_dim_ += h;
  }
}

at::Tensor Cin::Forward(const at::Tensor& x0) const {
  const std::int64_t batch = x0.size(0);
  const std::int64_t d = x0.size(2);
  at::Tensor x = x0;
  std::vector<at::Tensor> outs;
  for (std::size_t k = 0; k < weights_.size(); ++k) {
    // [B, H, 1, D] * [B, 1, F, D] → [B, H·F, D] (the einsum bhd,bfd->bhfd)
    const at::Tensor z = (x.unsqueeze(2) * x0.unsqueeze(1)).reshape({batch, -1, d});
    // Conv1d with kernel 1: [H_k, H·F] @ [B, H·F, D] + bias
    x = at::matmul(weights_[k].squeeze(-1), z) + biases_[k].unsqueeze(-1);
    outs.push_back(x.sum(2));
  }
  return at::cat(outs, 1);
}

}  // namespace tzrec
