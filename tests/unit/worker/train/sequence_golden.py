"""Golden values for tests/unit/worker/train/sequence_golden_test.cpp from the real PyTorch.

Builds, with torch.nn modules and torch ops, TorchEasyRec's sequence encoders DINEncoder,
SimpleAttention, PoolingEncoder and MultiWindowDINEncoder (tzrec/modules/sequence.py; the
attention MLPs as
tzrec/modules/mlp.py builds it with dim=3, Dice as tzrec/modules/activation.py), with the
attribute names of the upstream modules so that named_parameters() / named_buffers() give the
upstream state-dict names and order. Every parameter is filled by a fixed rule, one forward runs
in training mode on fixed inputs whose padding is not zero (so the pinned results include what
upstream does with padding), with sequence lengths including 0 and L, and
loss = sum(out * cos rule) is backpropagated; the file records the names, the output and the
gradients of the query, the sequence and every parameter, and the buffers (BatchNorm running
statistics) after the forward as C++ data (sequence_golden.inc).

  .venv/bin/python tests/unit/worker/train/sequence_golden.py > \
      tests/unit/worker/train/sequence_golden.inc
  .venv/bin/python tests/unit/worker/train/sequence_golden.py --check   # ctest
"""
import sys

import torch
from torch import nn
from torch.nn import functional as F

from golden_common import fill, main, numbers, rule


class Transpose(nn.Module):
    def forward(self, x):
        return x.transpose(1, 2)


class Dice(nn.Module):
    """tzrec/modules/activation.py Dice with dim=3."""

    def __init__(self, hidden):
        super().__init__()
        self.bn = nn.BatchNorm1d(hidden)
        self.alpha = nn.Parameter(torch.zeros(hidden))

    def forward(self, x):
        x = x.transpose(1, 2)
        p = torch.sigmoid(self.bn(x))
        return (self.alpha.unsqueeze(1) * (1 - p) * x + p * x).transpose(1, 2)


def activation(name, hidden):
    if name == "Dice":
        return Dice(hidden)
    return {"nn.ReLU": nn.ReLU, "nn.Sigmoid": nn.Sigmoid}[name]()


class Perceptron(nn.Module):
    """tzrec/modules/mlp.py Perceptron with dim=3 (no dropout)."""

    def __init__(self, i, o, act, use_bn):
        super().__init__()
        self.perceptron = nn.Sequential(nn.Linear(i, o, bias=not use_bn))
        if use_bn:
            self.perceptron.append(Transpose())
            self.perceptron.append(nn.BatchNorm1d(o))
            self.perceptron.append(Transpose())
        self.perceptron.append(activation(act, o))

    def forward(self, x):
        return self.perceptron(x)


class MLP(nn.Module):
    def __init__(self, in_features, hidden_units, act, use_bn):
        super().__init__()
        dims = [in_features] + list(hidden_units)
        self.mlp = nn.ModuleList(
            Perceptron(dims[i], dims[i + 1], act, use_bn) for i in range(len(hidden_units)))

    def forward(self, x):
        for p in self.mlp:
            x = p(x)
        return x


def truncate(max_len, sequence, lengths):
    if max_len > 0:
        return sequence[:, :max_len, :], torch.clamp_max(lengths, max_len)
    return sequence, lengths


def masked_softmax_pool(attn, sequence, lengths):
    """attn [B, 1, L]: where(mask, attn, -(2**31) + 1), softmax over L, weighted sum."""
    mask = torch.arange(sequence.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
    padding = torch.ones_like(attn) * (-(2**31) + 1)
    scores = F.softmax(torch.where(mask.unsqueeze(1), attn, padding), dim=-1)
    return torch.matmul(scores, sequence).squeeze(1)


class DINEncoder(nn.Module):
    def __init__(self, ds, dq, max_len, hidden, act, use_bn):
        super().__init__()
        self.ds, self.dq, self.max_len = ds, dq, max_len
        self.mlp = MLP(ds * 4, hidden, act, use_bn)
        self.linear = nn.Linear(hidden[-1], 1)

    def forward(self, query, sequence, lengths):
        sequence, lengths = truncate(self.max_len, sequence, lengths)
        if self.dq < self.ds:
            query = F.pad(query, (0, self.ds - self.dq))
        q = query.unsqueeze(1).expand(-1, sequence.size(1), -1)
        attn = self.linear(self.mlp(torch.cat([q, sequence, q - sequence, q * sequence], -1)))
        return masked_softmax_pool(attn.transpose(1, 2), sequence, lengths)


class SimpleAttention(nn.Module):
    def __init__(self, max_len):
        super().__init__()
        self.max_len = max_len

    def forward(self, query, sequence, lengths):
        sequence, lengths = truncate(self.max_len, sequence, lengths)
        attn = torch.matmul(sequence, query.unsqueeze(2)).squeeze(2)
        return masked_softmax_pool(attn.unsqueeze(1), sequence, lengths)


class PoolingEncoder(nn.Module):
    def __init__(self, pooling_type, max_len):
        super().__init__()
        self.mean, self.max_len = pooling_type == "mean", max_len

    def forward(self, query, sequence, lengths):
        sequence, lengths = truncate(self.max_len, sequence, lengths)
        out = torch.sum(sequence, dim=1)
        if self.mean:
            out = out / torch.clamp_min(lengths, 1).unsqueeze(1)
        return out


class MultiWindowDINEncoder(nn.Module):
    """Target attention without softmax: PReLU(Linear(mlp(cat[s, q * s, q]))) weights the items,
    each window of windows_len (from the sequence's start) is summed by torch.segment_reduce over
    the weighted sequence padded, or cut, to sum(windows_len) items, and divided by
    max(min(length - start, window), 1); the padded query is appended as one more window."""

    def __init__(self, ds, dq, windows, hidden, act, use_bn):
        super().__init__()
        self.ds, self.dq, self.total = ds, dq, sum(windows)
        starts = [sum(windows[:k]) for k in range(len(windows))]
        self.register_buffer("windows_len", torch.tensor(windows))
        self.register_buffer("cumsum_windows_len", torch.tensor(starts))
        self.mlp = MLP(ds * 3, hidden, act, use_bn)
        self.linear = nn.Linear(hidden[-1], 1)
        self.active = nn.PReLU()

    def forward(self, query, sequence, lengths):
        seq_len = sequence.size(1)
        mask = torch.arange(seq_len).unsqueeze(0) < lengths.unsqueeze(1)
        if self.dq < self.ds:
            query = F.pad(query, (0, self.ds - self.dq))
        q = query.unsqueeze(1).expand(-1, seq_len, -1)
        attn = self.active(self.linear(self.mlp(torch.cat([sequence, q * sequence, q], -1))))
        weighted = attn * mask.unsqueeze(2) * sequence
        padded = F.pad(weighted, (0, 0, 0, self.total - seq_len)).transpose(0, 1)
        sums = torch.segment_reduce(padded, reduce="sum", lengths=self.windows_len,
                                    axis=0).transpose(0, 1)
        count = torch.min(lengths.unsqueeze(1) - self.cumsum_windows_len.unsqueeze(0),
                          self.windows_len)
        sums = sums / torch.max(count, torch.ones_like(count)).unsqueeze(2)
        return torch.cat([sums, query.unsqueeze(1)], dim=1).reshape(sums.shape[0], -1)


# kind, ints, text, lengths. ints = Ds, Dq, L, max_seq_length, then for din use_bn and the
# attn_mlp hidden units; text = the attn_mlp activation (din) or the pooling_type (pooling).
# multi_window: ints = Ds, Dq, L, K, the K windows_len, use_bn, the attn_mlp hidden units.
CASES = [
    ("din", [4, 4, 4, 0, 0, 5, 3], "nn.ReLU", [0, 2, 4, 1]),
    ("din", [4, 3, 5, 3, 1, 6], "Dice", [0, 5, 2, 3]),
    ("din", [2, 1, 3, 0, 1, 4, 2], "nn.Sigmoid", [3, 0, 1]),
    ("simple", [4, 4, 4, 0], "", [0, 2, 4, 1]),
    ("simple", [3, 3, 5, 2], "", [0, 5, 1, 2]),
    ("pooling", [4, 0, 4, 0], "mean", [0, 2, 4, 1]),
    ("pooling", [4, 0, 4, 0], "sum", [0, 2, 4, 1]),
    ("pooling", [3, 0, 5, 3], "mean", [0, 5, 2, 1]),
    # L 4 < W 6: windows past the lengths; L 7 > W 5: items past W dropped; lengths 0 and L.
    ("multi_window", [4, 3, 4, 3, 1, 2, 3, 0, 5, 3], "nn.ReLU", [0, 2, 4, 1]),
    ("multi_window", [3, 3, 7, 2, 2, 3, 1, 4], "Dice", [7, 0, 3, 5, 1]),
]


def build(kind, ints, text):
    ds, dq, _, max_len = ints[:4]
    if kind == "din":
        return DINEncoder(ds, dq, max_len, ints[5:], text, bool(ints[4]))
    if kind == "multi_window":
        windows = ints[4:4 + max_len]
        rest = ints[4 + max_len:]
        return MultiWindowDINEncoder(ds, dq, windows, rest[1:], text, bool(rest[0]))
    if kind == "simple":
        return SimpleAttention(max_len)
    return PoolingEncoder(text, max_len)


def case(kind, ints, text, lengths) -> str:
    m = build(kind, ints, text)
    m.train()
    params = list(m.named_parameters())
    with torch.no_grad():
        for k, (_, p) in enumerate(params):
            p.copy_(fill(k, p.numel()).reshape(p.shape))
    ds, dq, seq_len = ints[:3]
    b = len(lengths)
    query = rule((b, max(dq, 1)), torch.cos, 0.41).requires_grad_(True)
    sequence = rule((b, seq_len, ds), torch.sin, 0.37).requires_grad_(True)
    out = m(query, sequence, torch.tensor(lengths, dtype=torch.int64))
    (out * rule(out.shape, torch.cos, 0.53)).sum().backward()
    grads = torch.cat([p.grad.double().flatten() for _, p in params]) if params else None
    names = ", ".join(f'"{n}"' for n, _ in params)
    buffers = ", ".join(f'"{n}"' for n, _ in m.named_buffers())
    stats = [v.double().flatten() for _, v in m.named_buffers()]
    stats = torch.cat(stats) if stats else None  # after the forward: running stats over B·L
    return (f'    {{"{kind}", {{{", ".join(map(str, ints))}}}, "{text}", '
            f'{{{", ".join(map(str, lengths))}}},\n'
            f"     {{{names}}},\n     {{{buffers}}},\n     {{{numbers(stats)}}},\n"
            f"     {{{numbers(out)}}},\n     {{{numbers(query.grad)}}},\n"
            f"     {{{numbers(sequence.grad)}}},\n     {{{numbers(grads)}}}}},\n")


if __name__ == "__main__":
    sys.exit(main(case, CASES, __file__, "sequence_golden.inc",
                  "fields: kind, ints, text, lengths, parameter names, buffer names, buffer values "
                  "after the forward, output, "
                  "query gradient, sequence gradient, parameter gradients."))
