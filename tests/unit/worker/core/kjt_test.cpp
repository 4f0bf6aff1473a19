// KeyedJaggedTensor / JaggedTensor / KeyedTensor semantics (TorchRec jagged_tensor.py).
#include "tzrec/core/kjt.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tzrec {
namespace {

using I64 = std::vector<std::int64_t>;

at::Tensor Long(const I64& v) {
  return at::tensor(v, at::kLong);
}
at::Tensor Float(const std::vector<float>& v) {
  return at::tensor(v, at::kFloat);
}

I64 Vec(const at::Tensor& t) {
  auto c = t.to(at::kLong).contiguous();
  return I64(c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel());
}

std::vector<float> FVec(const at::Tensor& t) {
  auto c = t.to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// keys a, b; B = 3; a: [10], [], [11, 12]; b: [20, 21], [22], []
KeyedJaggedTensor Sample(bool weighted = false) {
  std::optional<at::Tensor> w;
  if (weighted) w = Float({1, 2, 3, 4, 5, 6});
  return KeyedJaggedTensor({"a", "b"}, Long({10, 11, 12, 20, 21, 22}), Long({1, 0, 2, 2, 1, 0}), w);
}

TEST(Kjt, ConstructionOffsetsAndPerKey) {
  const auto kjt = Sample();
  EXPECT_EQ(kjt.Stride(), 3);
  EXPECT_EQ(kjt.NumKeys(), 2);
  EXPECT_FALSE(kjt.HasWeights());
  EXPECT_EQ(Vec(kjt.Offsets()), (I64{0, 1, 1, 3, 5, 6, 6}));
  EXPECT_EQ(kjt.LengthPerKey(), (I64{3, 3}));
  EXPECT_EQ(kjt.OffsetPerKey(), (I64{0, 3, 6}));
  EXPECT_EQ(kjt.KeyIndex("b"), 1);
  const auto b = kjt["b"];
  EXPECT_EQ(Vec(b.values), (I64{20, 21, 22}));
  EXPECT_EQ(Vec(b.lengths), (I64{2, 1, 0}));
  EXPECT_EQ(Vec(b.offsets), (I64{0, 2, 3, 3}));
  EXPECT_FALSE(b.weights.defined());
  const auto all = kjt.ToJaggedTensors();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(Vec(all[0].values), (I64{10, 11, 12}));
  EXPECT_EQ(Vec(all[0].offsets), (I64{0, 1, 1, 3}));
}

TEST(Kjt, AcceptsInt32LengthsAndExplicitStride) {
  KeyedJaggedTensor kjt({"a"}, Long({5, 6}), at::tensor(std::vector<int>{0, 2}, at::kInt),
                        std::nullopt, 2);
  EXPECT_EQ(kjt.Lengths().scalar_type(), at::kLong);
  EXPECT_EQ(kjt.Stride(), 2);
  EXPECT_EQ(kjt.LengthPerKey(), (I64{2}));
}

TEST(Kjt, EmptyBatchAndNoKeys) {
  KeyedJaggedTensor empty({"a", "b"}, Long({}), Long({}));
  EXPECT_EQ(empty.Stride(), 0);
  EXPECT_EQ(empty.LengthPerKey(), (I64{0, 0}));
  EXPECT_EQ(Vec(empty.Offsets()), (I64{0}));
  KeyedJaggedTensor none({}, Long({}), Long({}));
  EXPECT_EQ(none.Stride(), 0);
  EXPECT_EQ(none.OffsetPerKey(), (I64{0}));
}

TEST(Kjt, ValidationErrors) {
  // lengths numel != keys * stride
  EXPECT_THROW(KeyedJaggedTensor({"a", "b"}, Long({1, 2}), Long({1, 1, 0}), std::nullopt, 2),
               std::invalid_argument);
  EXPECT_THROW(KeyedJaggedTensor({"a", "b"}, Long({1, 2}), Long({1, 1, 0})), std::invalid_argument);
  // sum(lengths) != values numel
  try {
    KeyedJaggedTensor({"a"}, Long({1, 2}), Long({1, 2}));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sum(lengths) = 3"), std::string::npos) << e.what();
  }
  // weights numel != values numel
  EXPECT_THROW(KeyedJaggedTensor({"a"}, Long({1, 2}), Long({2}), Float({1})),
               std::invalid_argument);
  // negative length
  EXPECT_THROW(KeyedJaggedTensor({"a"}, Long({1}), Long({2, -1})), std::invalid_argument);
  // float values
  EXPECT_THROW(KeyedJaggedTensor({"a"}, Float({1}), Long({1})), std::invalid_argument);
  // 2-D lengths
  EXPECT_THROW(KeyedJaggedTensor({"a"}, Long({1}), Long({1}).view({1, 1})), std::invalid_argument);
  // missing key
  try {
    Sample()["zz"];
    FAIL() << "no throw";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("'zz'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << e.what();
  }
}

TEST(Kjt, FromOffsetsAndFromJaggedTensors) {
  auto kjt = KeyedJaggedTensor::FromOffsets({"a", "b"}, Long({10, 11, 12, 20, 21, 22}),
                                            Long({0, 1, 1, 3, 5, 6, 6}));
  EXPECT_EQ(Vec(kjt.Lengths()), (I64{1, 0, 2, 2, 1, 0}));
  EXPECT_EQ(kjt.Stride(), 3);
  EXPECT_THROW(KeyedJaggedTensor::FromOffsets({"a"}, Long({1}), Long({1, 1})),
               std::invalid_argument);

  const auto src = Sample(true);
  auto back = KeyedJaggedTensor::FromJaggedTensors(src.Keys(), src.ToJaggedTensors());
  EXPECT_EQ(back.Keys(), src.Keys());
  EXPECT_EQ(Vec(back.Values()), Vec(src.Values()));
  EXPECT_EQ(Vec(back.Lengths()), Vec(src.Lengths()));
  EXPECT_EQ(FVec(back.Weights()), FVec(src.Weights()));
  EXPECT_EQ(back.Stride(), 3);
}

TEST(Kjt, PermuteReordersAndRepeatsKeys) {
  const auto kjt = Sample(true);
  const auto p = kjt.Permute({1, 0, 1});
  EXPECT_EQ(p.Keys(), (std::vector<std::string>{"b", "a", "b"}));
  EXPECT_EQ(Vec(p.Lengths()), (I64{2, 1, 0, 1, 0, 2, 2, 1, 0}));
  EXPECT_EQ(Vec(p.Values()), (I64{20, 21, 22, 10, 11, 12, 20, 21, 22}));
  EXPECT_EQ(FVec(p.Weights()), (std::vector<float>{4, 5, 6, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(p.Stride(), 3);
  EXPECT_THROW(kjt.Permute({2}), std::out_of_range);
}

TEST(Kjt, SplitIntoKeyGroups) {
  const auto kjt = Sample(true);
  auto parts = kjt.Split({1, 1});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].Keys(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(Vec(parts[0].Values()), (I64{10, 11, 12}));
  EXPECT_EQ(Vec(parts[1].Lengths()), (I64{2, 1, 0}));
  EXPECT_EQ(FVec(parts[1].Weights()), (std::vector<float>{4, 5, 6}));
  auto zero = kjt.Split({0, 2});
  EXPECT_EQ(zero[0].NumKeys(), 0);
  EXPECT_EQ(zero[0].Stride(), 3);
  EXPECT_EQ(zero[1].Values().numel(), 6);
  EXPECT_THROW(kjt.Split({1}), std::invalid_argument);
  EXPECT_THROW(kjt.Split({3, -1}), std::invalid_argument);
}

TEST(Kjt, SliceBatch) {
  const auto kjt = Sample(true);
  const auto s = kjt.SliceBatch(1, 2);
  EXPECT_EQ(s.Stride(), 2);
  EXPECT_EQ(Vec(s.Lengths()), (I64{0, 2, 1, 0}));
  EXPECT_EQ(Vec(s.Values()), (I64{11, 12, 22}));
  EXPECT_EQ(FVec(s.Weights()), (std::vector<float>{2, 3, 6}));
  const auto first = kjt.SliceBatch(0, 1);
  EXPECT_EQ(Vec(first.Values()), (I64{10, 20, 21}));
  const auto none = kjt.SliceBatch(3, 0);
  EXPECT_EQ(none.Stride(), 0);
  EXPECT_EQ(none.Values().numel(), 0);
  EXPECT_THROW(kjt.SliceBatch(2, 2), std::out_of_range);
}

TEST(Kjt, ConcatAlongKeys) {
  const auto a = Sample();
  KeyedJaggedTensor c({"c"}, Long({30, 31}), Long({0, 0, 2}));
  const auto cat = KeyedJaggedTensor::Concat({a, c});
  EXPECT_EQ(cat.Keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(cat.LengthPerKey(), (I64{3, 3, 2}));
  EXPECT_EQ(Vec(cat["c"].values), (I64{30, 31}));
  EXPECT_EQ(Vec(cat["c"].offsets), (I64{0, 0, 0, 2}));
  KeyedJaggedTensor other_stride({"d"}, Long({1}), Long({1, 0}));
  EXPECT_THROW(KeyedJaggedTensor::Concat({a, other_stride}), std::invalid_argument);
  EXPECT_THROW(KeyedJaggedTensor::Concat({a, Sample(true)}), std::invalid_argument);
  // Concat of a split gives back the original.
  const auto round = KeyedJaggedTensor::Concat(Sample(true).Split({1, 1}));
  EXPECT_EQ(Vec(round.Values()), Vec(Sample().Values()));
  EXPECT_EQ(FVec(round.Weights()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(KeyedTensor, IndexingAndRegroup) {
  auto values = at::arange(10, at::kFloat).view({2, 5});
  KeyedTensor kt({"x", "y"}, {2, 3}, values);
  EXPECT_EQ(kt.OffsetPerKey(), (I64{0, 2, 5}));
  EXPECT_EQ(FVec(kt["y"]), (std::vector<float>{2, 3, 4, 7, 8, 9}));
  EXPECT_EQ(FVec(kt["x"]), (std::vector<float>{0, 1, 5, 6}));
  const auto r = kt.Regroup({"y", "x"});
  EXPECT_EQ(r.sizes(), (std::vector<std::int64_t>{2, 5}));
  EXPECT_EQ(FVec(r), (std::vector<float>{2, 3, 4, 0, 1, 7, 8, 9, 5, 6}));
  EXPECT_EQ(kt.Regroup({}).sizes(), (std::vector<std::int64_t>{2, 0}));
  EXPECT_THROW(kt["z"], std::out_of_range);
  EXPECT_THROW(KeyedTensor({"x"}, {4}, values), std::invalid_argument);
  EXPECT_THROW(KeyedTensor({"x", "y"}, {5}, values), std::invalid_argument);
}

TEST(KeyedTensor, KeysShareOneBackwardNodeAndGradientsLandInTheirColumns) {
  // Every key's view comes from one split: reading several keys (some twice) gives the values'
  // gradient each key's own gradient in its columns and zeros in unread ones, as per-key narrow()
  // views did, but from one backward node instead of one zero-filled [B, sum D] tensor per read.
  auto values = at::arange(12, at::kFloat).view({2, 6}).set_requires_grad(true);
  KeyedTensor kt({"a", "b", "c"}, {1, 2, 3}, values);
  EXPECT_EQ(kt["a"].grad_fn().get(), kt["c"].grad_fn().get());
  const auto loss =
      kt["c"].mul(2).sum().add(kt["a"].sum()).add(kt["a"].sum()).add(kt.Regroup({"c"}).sum());
  loss.backward();
  EXPECT_EQ(FVec(values.grad()), (std::vector<float>{2, 0, 0, 3, 3, 3, 2, 0, 0, 3, 3, 3}));
}

}  // namespace
}  // namespace tzrec
