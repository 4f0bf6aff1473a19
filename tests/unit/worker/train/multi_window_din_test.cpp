// MultiWindowDinEncoder (sequence_encoders.hpp) against TorchEasyRec's MultiWindowDINEncoder
// (tzrec/modules/sequence.py) written from its formulas with libtorch ops, one row, window and
// item at a time: a = PReLU(Linear(ReLU(Linear(cat[s_t, q * s_t, q])))) for each item t inside the
// row's length, window k = sum of a · s_t over its items / max(min(length - start_k, w_k), 1),
// then the zero-padded query. Forward and the gradients of the query, the sequence and every
// parameter; sequences shorter and longer than the windows' sum, length 0, and padding that is
// not zero (it must not be read). The real torch's results are in sequence_golden_test.cpp.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sequence_encoders.hpp"

namespace tzrec {
namespace {

constexpr std::int64_t kDs = 4, kDq = 3;

at::Tensor Wave(const std::vector<std::int64_t>& shape, double scale, bool sine) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  const at::Tensor e = at::arange(n, at::kFloat) * scale;
  return ((sine ? at::sin(e) : at::cos(e)) * 1.5).reshape(shape);
}

// The encoder "e" with attn_mlp {hidden_units: [5]} (ReLU), from the formulas.
at::Tensor Reference(const std::map<std::string, at::Tensor>& p, const at::Tensor& query,
                     const at::Tensor& sequence, const std::vector<std::int64_t>& lengths,
                     const std::vector<std::int64_t>& windows) {
  const std::int64_t rows = sequence.size(0), len = sequence.size(1);
  const at::Tensor q = at::cat({query, at::zeros({rows, kDs - kDq})}, 1);
  const at::Tensor alpha = p.at("e.active.weight");
  std::vector<at::Tensor> out;
  for (std::int64_t b = 0; b < rows; ++b) {
    std::vector<at::Tensor> parts;
    std::int64_t start = 0;
    for (const std::int64_t w : windows) {
      at::Tensor acc = at::zeros({kDs});
      for (std::int64_t t = start; t < start + w && t < std::min(len, lengths[b]); ++t) {
        const at::Tensor s = sequence[b][t];
        const at::Tensor x = at::cat({s, q[b] * s, q[b]});
        const at::Tensor h = at::relu(at::linear(x, p.at("e.mlp.mlp.0.perceptron.0.weight"),
                                                 p.at("e.mlp.mlp.0.perceptron.0.bias")));
        const at::Tensor a = at::linear(h, p.at("e.linear.weight"), p.at("e.linear.bias"));
        acc = acc + (at::relu(a) - alpha * at::relu(-a)) * s;
      }
      const std::int64_t count = std::max<std::int64_t>(std::min(lengths[b] - start, w), 1);
      parts.push_back(acc / static_cast<double>(count));
      start += w;
    }
    parts.push_back(q[b]);
    out.push_back(at::cat(parts));
  }
  return at::stack(out);
}

void Check(std::int64_t len, const std::vector<std::int64_t>& lengths) {
  SCOPED_TRACE("L " + std::to_string(len));
  const std::vector<std::int64_t> windows = {1, 2, 3};
  std::vector<Parameter> params, buffers;
  ParamBuilder builder(&params, &buffers, 3, at::Device(at::kCPU));
  MultiWindowDinEncoderOptions options;
  options.attn_mlp.hidden_units = {5};
  options.windows_len = windows;
  const MultiWindowDinEncoder encoder(builder, &params, &buffers, "e", kDs, kDq, options);
  EXPECT_EQ(encoder.OutDim(), kDs * 4);
  std::map<std::string, at::Tensor> p;
  for (const auto& param : params) p[param.name] = param.tensor;
  // A PReLU weight other than its init, so that a negative score's slope is checked.
  p.at("e.active.weight").detach().fill_(-0.7);
  const std::int64_t rows = static_cast<std::int64_t>(lengths.size());
  const at::Tensor query = Wave({rows, kDq}, 0.41, false).set_requires_grad(true);
  // Every position is filled, padding included: the encoder must not read past a row's length.
  const at::Tensor sequence = Wave({rows, len, kDs}, 0.37, true).set_requires_grad(true);
  const at::Tensor got = encoder.Forward(query, sequence, at::tensor(lengths, at::kLong), true);
  const at::Tensor want = Reference(p, query, sequence, lengths, windows);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << got << want;
  std::vector<at::Tensor> inputs = {query, sequence};
  for (const auto& param : params) inputs.push_back(param.tensor);
  auto grads = [&](const at::Tensor& out) {
    for (auto& in : inputs) in.mutable_grad() = at::Tensor();
    (out * Wave({rows, encoder.OutDim()}, 0.53, false)).sum().backward();
    std::vector<at::Tensor> g;
    for (const auto& in : inputs) g.push_back(in.grad().defined() ? in.grad().clone() : in.grad());
    return g;
  };
  const std::vector<at::Tensor> g_got = grads(got);
  const std::vector<at::Tensor> g_want = grads(want);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(i == 0 ? "query" : i == 1 ? "sequence" : params[i - 2].name);
    ASSERT_TRUE(g_got[i].defined() && g_want[i].defined());
    EXPECT_TRUE(at::allclose(g_got[i], g_want[i], 1e-5, 1e-6)) << g_got[i] << g_want[i];
  }
  // Items past a row's length or past the windows' sum (6) get no gradient.
  for (std::int64_t b = 0; b < rows; ++b) {
    for (std::int64_t t = std::min<std::int64_t>(lengths[b], 6); t < len; ++t)
      EXPECT_EQ(g_got[1][b][t].abs().sum().item<float>(), 0.0F) << "row " << b << " item " << t;
  }
}

TEST(MultiWindowDin, ForwardAndGradientsMatchComposedTorch) {
  Check(4, {0, 2, 4, 1});     // L 4 < 6: windows past the lengths are zeros
  Check(8, {8, 0, 3, 6, 7});  // L 8 > 6: items 6 and 7 are not read
}

TEST(MultiWindowDin, TensorNamesAndBuffers) {
  std::vector<Parameter> params, buffers;
  ParamBuilder builder(&params, &buffers, 3, at::Device(at::kCPU));
  MultiWindowDinEncoderOptions options;
  options.attn_mlp.hidden_units = {5};
  options.attn_mlp.use_bn = true;
  options.windows_len = {2, 5, 1};
  const MultiWindowDinEncoder encoder(builder, &params, &buffers, "x", 4, 4, options);
  std::vector<std::string> names;
  for (const auto& param : params) names.push_back(param.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x.mlp.mlp.0.perceptron.0.weight",
                                             "x.mlp.mlp.0.perceptron.2.weight",
                                             "x.mlp.mlp.0.perceptron.2.bias", "x.linear.weight",
                                             "x.linear.bias", "x.active.weight"}));
  ASSERT_GE(buffers.size(), 2U);
  EXPECT_EQ(buffers[0].name, "x.windows_len");
  EXPECT_EQ(buffers[1].name, "x.cumsum_windows_len");
  EXPECT_TRUE(at::equal(buffers[0].tensor, at::tensor(std::vector<std::int64_t>{2, 5, 1})));
  EXPECT_TRUE(at::equal(buffers[1].tensor, at::tensor(std::vector<std::int64_t>{0, 2, 7})));
  EXPECT_EQ(buffers[2].name, "x.mlp.mlp.0.perceptron.2.running_mean");
  EXPECT_FLOAT_EQ(params.back().tensor.item<float>(), 0.25F);  // torch.nn.PReLU()'s init
}

}  // namespace
}  // namespace tzrec
