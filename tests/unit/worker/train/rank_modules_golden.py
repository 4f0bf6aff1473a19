"""Golden values for tests/unit/worker/train/rank_modules_golden_test.cpp from the real PyTorch.

Builds, with torch.nn modules, TorchEasyRec's MaskNetModule / MaskBlock (tzrec/modules/masknet.py),
CIN and WuKongLayer with its LinearCompressBlock / FactorizationMachineBlock
(tzrec/modules/interaction.py), each with the attribute names of the upstream module so that
named_parameters() gives the upstream state-dict names and order. Every parameter is filled by a
fixed rule, one forward runs on a fixed input, and loss = sum(out * cos rule) is backpropagated;
the file records the parameter names, the output, the input's gradient and every parameter's
gradient as C++ data (rank_modules_golden.inc next to this file).

  .venv/bin/python tests/unit/worker/train/rank_modules_golden.py > \
      tests/unit/worker/train/rank_modules_golden.inc
  .venv/bin/python tests/unit/worker/train/rank_modules_golden.py --check   # ctest
"""
import sys

import torch
from torch import nn

from golden_common import fill, main, numbers, rule

ROWS = 5


class Perceptron(nn.Module):
    """tzrec/modules/mlp.py with the defaults: Linear then ReLU."""

    def __init__(self, i, o):
        super().__init__()
        self.perceptron = nn.Sequential(nn.Linear(i, o), nn.ReLU())

    def forward(self, x):
        return self.perceptron(x)


class MLP(nn.Module):
    def __init__(self, in_features, hidden_units):
        super().__init__()
        dims = [in_features] + list(hidden_units)
        self.mlp = nn.ModuleList(Perceptron(dims[i], dims[i + 1]) for i in range(len(hidden_units)))
        self.out_dim = dims[-1]

    def forward(self, x):
        for p in self.mlp:
            x = p(x)
        return x


class MaskBlock(nn.Module):
    def __init__(self, input_dim, mask_input_dim, hidden_dim, reduction_ratio, aggregation_dim):
        super().__init__()
        agg = aggregation_dim
        if reduction_ratio:
            agg = int(input_dim * reduction_ratio)
        self.mask_generator = nn.Sequential(
            nn.Linear(mask_input_dim, agg), nn.ReLU(), nn.Linear(agg, input_dim))
        self.ffn = nn.Sequential(nn.Linear(input_dim, hidden_dim), nn.LayerNorm(hidden_dim), nn.ReLU())

    def forward(self, x, m):
        return self.ffn(x * self.mask_generator(m))


class MaskNetModule(nn.Module):
    def __init__(self, feature_dim, n, hidden_dim, ratio, agg, parallel, top):
        super().__init__()
        self.ln_emb = nn.LayerNorm(feature_dim)
        self.parallel = parallel
        self.mask_blocks = nn.ModuleList()
        in_dim = feature_dim
        for _ in range(n):
            self.mask_blocks.append(MaskBlock(in_dim, feature_dim, hidden_dim, ratio, agg))
            if not parallel:
                in_dim = hidden_dim
        out = hidden_dim * n if parallel else hidden_dim
        self.top_mlp = MLP(out, top) if top else None

    def forward(self, e):
        ln = self.ln_emb(e)
        if self.parallel:
            h = torch.cat([b(ln, e) for b in self.mask_blocks], dim=-1)
        else:
            h = self.mask_blocks[0](ln, e)
            for b in self.mask_blocks[1:]:
                h = b(h, e)
        return self.top_mlp(h) if self.top_mlp is not None else h


class CIN(nn.Module):
    def __init__(self, feature_num, sizes):
        super().__init__()
        self.sizes = sizes
        self.cin_layers = nn.ModuleList()
        for i, s in enumerate(sizes):
            in_ch = feature_num * sizes[i - 1] if i > 0 else feature_num * feature_num
            self.cin_layers.append(nn.Conv1d(in_ch, s, kernel_size=1))

    def forward(self, x0):
        b, f, d = x0.shape
        x = x0
        outs = []
        for i, _ in enumerate(self.sizes):
            z = torch.einsum("bhd,bfd->bhfd", x, x0)
            h = f * self.sizes[i - 1] if i > 0 else f * f
            x = self.cin_layers[i](z.reshape(b, h, d))
            outs.append(x.sum(dim=2))
        return torch.cat(outs, dim=1)


class LinearCompressBlock(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))

    def forward(self, x):
        return (x.permute(0, 2, 1) @ self.weight).permute(0, 2, 1)


class FactorizationMachineBlock(nn.Module):
    def __init__(self, dim, n_in, n_out, c, hidden):
        super().__init__()
        self.n_in, self.n_out, self.dim, self.c = n_in, n_out, dim, c
        self.weight = nn.Parameter(torch.empty(n_in, c))
        self.norm = nn.LayerNorm(n_in * c)
        self.mlp = MLP(n_in * c, hidden)
        self.feature_out_liner = nn.Linear(self.mlp.out_dim, n_out * dim)

    def forward(self, x):
        y = torch.matmul(x, torch.matmul(x.permute(0, 2, 1), self.weight))
        y = self.mlp(self.norm(y.reshape(-1, self.n_in * self.c)))
        return self.feature_out_liner(y).view(-1, self.n_out, self.dim)


class WuKongLayer(nn.Module):
    def __init__(self, dim, n_in, lcb, fmb, c, hidden):
        super().__init__()
        self.lcb = LinearCompressBlock(n_in, lcb)
        self.fmb = FactorizationMachineBlock(dim, n_in, fmb, c, hidden)
        self.norm = nn.LayerNorm(dim)
        self.residual_projection = (LinearCompressBlock(n_in, lcb + fmb)
                                    if n_in != lcb + fmb else nn.Identity())

    def forward(self, x):
        out = torch.cat((self.fmb(x), self.lcb(x)), dim=1)
        return self.norm(out + self.residual_projection(x))


# kind, ints, ratio: masknet ints = feature_dim, n_mask_blocks, aggregation_dim, hidden_dim,
# use_parallel, top_mlp units...; cin ints = F, D, layer sizes...; wukong ints = F, D, lcb, fmb,
# compressed, feature_num_mlp units...
CASES = [
    ("masknet", [6, 2, 0, 4, 1, 3], 0.5),
    ("masknet", [6, 3, 0, 4, 0], 0.75),
    ("masknet", [6, 2, 5, 4, 0, 3, 2], 0.0),
    ("cin", [3, 4, 2, 3], 0.0),
    ("wukong", [3, 4, 2, 2, 2, 5], 0.0),
    ("wukong", [3, 4, 1, 2, 2, 4], 0.0),
]


def build(kind, ints, ratio):
    if kind == "masknet":
        fd, n, agg, hid, par = ints[:5]
        return MaskNetModule(fd, n, hid, ratio, agg, bool(par), ints[5:]), (ROWS, fd)
    if kind == "cin":
        return CIN(ints[0], ints[2:]), (ROWS, ints[0], ints[1])
    f, d, lcb, fmb, c = ints[:5]
    return WuKongLayer(d, f, lcb, fmb, c, ints[5:]), (ROWS, f, d)


def case(kind, ints, ratio) -> str:
    m, shape = build(kind, ints, ratio)
    params = list(m.named_parameters())
    with torch.no_grad():
        for k, (_, p) in enumerate(params):
            p.copy_(fill(k, p.numel()).reshape(p.shape))
    x = rule(shape, torch.sin, 0.37).requires_grad_(True)
    out = m(x)
    (out * rule(out.shape, torch.cos, 0.53)).sum().backward()
    grads = torch.cat([p.grad.double().flatten() for _, p in params])
    names = ", ".join(f'"{n}"' for n, _ in params)
    return (f'    {{"{kind}", {{{", ".join(map(str, ints))}}}, {ratio!r},\n'
            f"     {{{names}}},\n"
            f"     {{{numbers(out)}}},\n     {{{numbers(x.grad)}}},\n     {{{numbers(grads)}}}}},\n")


if __name__ == "__main__":
    sys.exit(main(case, CASES, __file__, "rank_modules_golden.inc",
                  f"{ROWS} rows; fields: kind, ints, ratio, parameter names, output, "
                  "input gradient, parameter gradients."))
