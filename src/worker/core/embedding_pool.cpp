// Pooled lookups on CPU float32 (PooledSumInto, and PooledSum when no autograd is needed): each
// bag's rows summed straight into its output row, which may be a column slice of a wider tensor
// (the sharded EBC's all-to-all buffer), with the rows of the ids kPrefetchRows ahead prefetched.
// The arithmetic is at::embedding_bag's (FBGEMM's EmbeddingSpMDM): out = 0, then out += row in id
// order, or out = fma(weight, row, out) for weighted bags.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "embedding_rows.hpp"
#include "tzrec/core/embedding.hpp"

namespace tzrec {
namespace {

// Ids ahead of the one being summed whose rows are prefetched.
constexpr std::int64_t kPoolAhead = core_detail::kPrefetchRows;

struct PoolArgs {
  const float* w;
  std::int64_t cols;
  const std::int64_t* ids;
  const std::int64_t* offsets;
  const float* psw;  // per-sample weights or nullptr
  float* out;
  std::int64_t out_stride;
};

// Bags [begin, end) of `a`, each summed in its output row. (A register accumulator for fixed
// widths with one store per bag measured slower here.)
inline __attribute__((always_inline)) void PoolBagsImpl(const PoolArgs& a, std::int64_t begin,
                                                        std::int64_t end) {
  const std::int64_t cols = a.cols;
  const std::int64_t last = a.offsets[end];
  const auto row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  const auto prefetch = [&](std::int64_t i) {
    if (i < last) core_detail::PrefetchBytes(a.w + a.ids[i] * cols, row_bytes, false);
  };
  for (std::int64_t i = a.offsets[begin]; i < a.offsets[begin] + kPoolAhead; ++i) prefetch(i);
  for (std::int64_t b = begin; b < end; ++b) {
    float* o = a.out + b * a.out_stride;
#pragma omp simd
    for (std::int64_t c = 0; c < cols; ++c) o[c] = 0.0F;
    for (std::int64_t i = a.offsets[b]; i < a.offsets[b + 1]; ++i) {
      prefetch(i + kPoolAhead);
      const float* r = a.w + a.ids[i] * cols;
      if (a.psw != nullptr) {
        const float s = a.psw[i];
#pragma omp simd
        for (std::int64_t c = 0; c < cols; ++c) o[c] = std::fma(s, r[c], o[c]);
      } else {
#pragma omp simd
        for (std::int64_t c = 0; c < cols; ++c) o[c] += r[c];
      }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void PoolBagsAvx2(const PoolArgs& a, std::int64_t begin,
                                                      std::int64_t end) {
  PoolBagsImpl(a, begin, end);
}
const bool kHasAvx2Fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif

void PoolBags(const PoolArgs& a, std::int64_t begin, std::int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHasAvx2Fma) {
    PoolBagsAvx2(a, begin, end);
    return;
  }
#endif
  PoolBagsImpl(a, begin, end);
}

}  // namespace

bool PooledSumInto(const at::Tensor& weight, const at::Tensor& ids, const at::Tensor& offsets,
                   const at::Tensor& per_sample_weights, at::Tensor& out) {
  const bool fast =
      weight.defined() && weight.dim() == 2 && weight.device().is_cpu() &&
      weight.scalar_type() == at::kFloat && weight.is_contiguous() &&
      !(at::GradMode::is_enabled() && weight.requires_grad()) && ids.defined() &&
      ids.device().is_cpu() && ids.scalar_type() == at::kLong && ids.dim() == 1 &&
      offsets.defined() && offsets.device().is_cpu() && offsets.scalar_type() == at::kLong &&
      offsets.dim() == 1 && offsets.numel() >= 1 && out.defined() && out.device().is_cpu() &&
      out.scalar_type() == at::kFloat && out.dim() == 2 && out.size(0) == offsets.numel() - 1 &&
      out.size(1) == weight.size(1) && (out.size(1) <= 1 || out.stride(1) == 1) &&
      (!per_sample_weights.defined() ||
       (per_sample_weights.device().is_cpu() && per_sample_weights.scalar_type() == at::kFloat &&
        per_sample_weights.dim() == 1 && per_sample_weights.numel() == ids.numel()));
  if (!fast) return false;
  const at::Tensor id = ids.contiguous();
  const at::Tensor off = offsets.contiguous();
  const at::Tensor psw =
      per_sample_weights.defined() ? per_sample_weights.contiguous() : at::Tensor();
  const std::int64_t bags = off.numel() - 1;
  const auto* op = off.data_ptr<std::int64_t>();
  if (op[0] != 0 || op[bags] != id.numel()) return false;  // the checked path reports it
  for (std::int64_t b = 0; b < bags; ++b) {
    if (op[b + 1] < op[b]) return false;
  }
  const auto* ip = id.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < id.numel(); ++i) {
    if (ip[i] < 0 || ip[i] >= weight.size(0)) {
      throw std::out_of_range("PooledSum: id " + std::to_string(ip[i]) +
                              " is outside the table rows [0, " + std::to_string(weight.size(0)) +
                              ")");
    }
  }
  if (bags == 0 || weight.size(1) == 0) return true;
  const PoolArgs args{weight.data_ptr<float>(),
                      weight.size(1),
                      ip,
                      op,
                      psw.defined() ? psw.data_ptr<float>() : nullptr,
                      out.data_ptr<float>(),
                      out.stride(0)};
  at::parallel_for(0, bags, 256,
                   [&](std::int64_t begin, std::int64_t end) { PoolBags(args, begin, end); });
  return true;
}

}  // namespace tzrec
