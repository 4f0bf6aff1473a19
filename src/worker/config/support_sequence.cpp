// The support rows of the sequence encoders (SeqEncoderConfig and its messages; see support.cpp
// and internal.hpp).
#include <vector>

#include "internal.hpp"

namespace tzrec::config_internal {
namespace {

constexpr Support kH = Support::kHonoured;
constexpr Support kN = Support::kNoEffect;

constexpr const char* kSeqConfig = "config.SequenceFeaturesAccepted";
constexpr const char* kSeqModel = "train.Model.PoolingEncoderAppendsPooledSequences";
constexpr const char* kSeqAttention = "train.Model.AttentionEncodersMatchComposedTorch";
constexpr const char* kMultiWindowModel = "train.Model.MultiWindowDinEncoderMatchesComposedTorch";
constexpr const char* kMultiWindowModule =
    "train.MultiWindowDin.ForwardAndGradientsMatchComposedTorch";

#define P "tzrec.protos."
const std::vector<FieldSupport> kRows = {
    {P "SeqEncoderConfig.pooling_encoder", kH, "sum / mean over the sequence", kSeqModel},
    {P "SeqEncoderConfig.din_encoder", kH,
     "DIN target attention over the unpooled sequence (multi_tower only)", kSeqAttention},
    {P "SeqEncoderConfig.simple_attention", kH,
     "dot-product attention over the unpooled sequence (multi_tower only)", kSeqAttention},
    {P "SeqEncoderConfig.multi_window_din_encoder", kH,
     "DIN weights (PReLU, no softmax) averaged over windows of the unpooled sequence, then the "
     "query (multi_tower only)",
     kMultiWindowModel},
    {P "DINEncoder.name", kN, "its tensors are named by group and encoder index",
     "config.NoEffectWarns"},
    {P "DINEncoder.input", kH, "the sequence group it attends over (query: its other features)",
     kSeqAttention},
    {P "DINEncoder.attn_mlp", kH, "the attention MLP (required)", kSeqAttention},
    {P "SimpleAttention.name", kN, "the encoder has no tensors to name", "config.NoEffectWarns"},
    {P "SimpleAttention.input", kH,
     "the sequence group it attends over (query: its other features, same width)", kSeqAttention},
    {P "PoolingEncoder.name", kN, "the encoder has no tensors to name", "config.NoEffectWarns"},
    {P "PoolingEncoder.input", kH, "the sequence group it pools", kSeqConfig},
    {P "PoolingEncoder.pooling_type", kH,
     "sum | mean (mean divides by the sequence length; empty: zeros)", kSeqModel},
    {P "MultiWindowDINEncoder.name", kN, "its tensors are named by group and encoder index",
     "config.NoEffectWarns"},
    {P "MultiWindowDINEncoder.input", kH,
     "the sequence group it attends over (query: its other features)", kMultiWindowModel},
    {P "MultiWindowDINEncoder.attn_mlp", kH, "the attention MLP (required)", kMultiWindowModule},
    {P "MultiWindowDINEncoder.windows_len", kH,
     "the windows' lengths from the sequence's start (required, each >= 1; items past their sum "
     "are not read)",
     kMultiWindowModule},
};
#undef P

}  // namespace

const std::vector<FieldSupport>& SequenceSupportRows() {
  return kRows;
}

}  // namespace tzrec::config_internal
