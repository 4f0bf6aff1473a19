"""Golden values for tests/unit/worker/train/multi_task_golden_test.cpp from the real PyTorch.

Builds with torch.nn the dense parts of TorchEasyRec's multi-task models over one DEEP group of
IN_DIM raw features: SimpleMultiTask (tzrec/models/simple_multi_task.py: a TaskTower per task),
MMoE (tzrec/models/mmoe.py with tzrec/modules/mmoe.py and tzrec/modules/task_tower.py) and DBMTL
(tzrec/models/dbmtl.py: bottom_mlp, optional MMoE, task_mlps, relation_mlps, task_outputs) and PLE
(tzrec/models/ple.py with tzrec/modules/extraction_net.py: extraction layers of task and shared
experts with softmax gates, the last without a shared gate, then TaskTowers), MLPs
as tzrec/modules/mlp.py (Linear + ReLU perceptrons). Every parameter is filled by a fixed rule;
one training forward gives the logits [B, T]; the loss is the sum over tasks of
BCEWithLogits(logits[:, t], label_t) (mean), and its backward the parameter gradients. Writes
the state-dict names, logits and gradients as C++ data (multi_task_golden.inc next to this file).

  .venv/bin/python tests/unit/worker/train/multi_task_golden.py \
      > tests/unit/worker/train/multi_task_golden.inc

train.multi_task_golden_current checks the committed file against a fresh run.
"""
import sys

import torch
from torch import nn
from torch.nn import functional as F

from golden_common import same_up_to_rounding

IN_DIM = 4
ROWS = 6


class MLP(nn.Module):
    def __init__(self, in_features, hidden_units):
        super().__init__()
        dims = [in_features] + hidden_units
        self.mlp = nn.ModuleList()
        for i in range(len(hidden_units)):
            p = nn.Module()
            p.perceptron = nn.Sequential(nn.Linear(dims[i], dims[i + 1]), nn.ReLU())
            self.mlp.append(p)
        self.hidden_units = hidden_units

    def output_dim(self):
        return self.hidden_units[-1]

    def forward(self, x):
        for p in self.mlp:
            x = p.perceptron(x)
        return x


class MMoE(nn.Module):
    def __init__(self, in_features, expert, num_expert, num_task, gate):
        super().__init__()
        self.expert_mlps = nn.ModuleList(MLP(in_features, expert) for _ in range(num_expert))
        gate_in = in_features
        self.gate = gate
        if gate is not None:
            self.gate_mlps = nn.ModuleList(MLP(in_features, gate) for _ in range(num_task))
            gate_in = gate[-1]
        self.gate_finals = nn.ModuleList(nn.Linear(gate_in, num_expert) for _ in range(num_task))

    def output_dim(self):
        return self.expert_mlps[0].output_dim()

    def forward(self, x):
        experts = torch.stack([e(x) for e in self.expert_mlps], dim=1)
        out = []
        for i, final in enumerate(self.gate_finals):
            g = self.gate_mlps[i](x) if self.gate is not None else x
            g = F.softmax(final(g), dim=1).unsqueeze(1)
            out.append(torch.matmul(g, experts).squeeze(1))
        return out


class TaskTower(nn.Module):
    def __init__(self, in_features, mlp):
        super().__init__()
        self.tower_mlp = None
        linear_in = in_features
        if mlp is not None:
            self.tower_mlp = MLP(in_features, mlp)
            linear_in = mlp[-1]
        self.linear = nn.Linear(linear_in, 1)

    def forward(self, x):
        if self.tower_mlp is not None:
            x = self.tower_mlp(x)
        return self.linear(x)


class SimpleMultiTask(nn.Module):
    def __init__(self, towers):
        super().__init__()
        self._task_tower = nn.ModuleList(TaskTower(IN_DIM, t) for t in towers)

    def forward(self, x):
        return torch.cat([t(x) for t in self._task_tower], dim=1)


class MMoEModel(nn.Module):
    def __init__(self, expert, num_expert, gate, towers):
        super().__init__()
        self.mmoe = MMoE(IN_DIM, expert, num_expert, len(towers), gate)
        self._task_tower = nn.ModuleList(TaskTower(self.mmoe.output_dim(), t) for t in towers)

    def forward(self, x):
        inputs = self.mmoe(x)
        return torch.cat([t(inputs[i]) for i, t in enumerate(self._task_tower)], dim=1)


class Dbmtl(nn.Module):
    """towers: (name, mlp or None, relation_tower_names, relation_mlp or None)."""

    def __init__(self, bottom, expert, num_expert, gate, towers):
        super().__init__()
        self.towers = towers
        dim = IN_DIM
        self.bottom_mlp = None
        if bottom is not None:
            self.bottom_mlp = MLP(dim, bottom)
            dim = bottom[-1]
        self.mmoe = None
        if expert is not None:
            self.mmoe = MMoE(dim, expert, num_expert, len(towers), gate)
            dim = self.mmoe.output_dim()
        self.task_mlps = nn.ModuleDict()
        for name, mlp, _, _ in towers:
            if mlp is not None:
                self.task_mlps[name] = MLP(dim, mlp)
        self.relation_mlps = nn.ModuleDict()
        for name, _, rels, rmlp in towers:
            if rmlp is None:
                continue
            rdim = self.task_mlps[name].output_dim() if name in self.task_mlps else dim
            for r in rels:
                if r in self.relation_mlps:
                    rdim += self.relation_mlps[r].output_dim()
                elif r in self.task_mlps:
                    rdim += self.task_mlps[r].output_dim()
                else:
                    rdim += dim
            self.relation_mlps[name] = MLP(rdim, rmlp)
        self.task_outputs = nn.ModuleList()
        for name, _, _, _ in towers:
            if name in self.relation_mlps:
                d = self.relation_mlps[name].output_dim()
            elif name in self.task_mlps:
                d = self.task_mlps[name].output_dim()
            else:
                d = dim
            self.task_outputs.append(nn.Linear(d, 1))

    def forward(self, x):
        if self.bottom_mlp is not None:
            x = self.bottom_mlp(x)
        inputs = self.mmoe(x) if self.mmoe is not None else [x] * len(self.towers)
        task_net = {}
        for i, (name, _, _, _) in enumerate(self.towers):
            task_net[name] = self.task_mlps[name](inputs[i]) if name in self.task_mlps else inputs[i]
        relation_net = {}
        for name, _, rels, rmlp in self.towers:
            if rmlp is not None:
                parts = [task_net[name]] + [relation_net[r] for r in rels]
                relation_net[name] = self.relation_mlps[name](torch.cat(parts, dim=1))
            else:
                relation_net[name] = task_net[name]
        return torch.cat([self.task_outputs[i](relation_net[t[0]])
                          for i, t in enumerate(self.towers)], dim=1)


class ExtractionNet(nn.Module):
    def __init__(self, task_in, shared_in, share_num, per_task, share_net, task_net, final):
        super().__init__()
        self._final = final
        self._shared_layers = nn.ModuleList(MLP(shared_in, share_net) for _ in range(share_num))
        if not final:
            self._shared_gate = nn.Linear(shared_in, len(task_in) * per_task + share_num)
        self._task_layers = nn.ModuleList(
            nn.ModuleList(MLP(d, task_net) for _ in range(per_task)) for d in task_in)
        self._task_gates = nn.ModuleList(nn.Linear(d, per_task + share_num) for d in task_in)
        self.dims = [task_net[-1]] * len(task_in) + [share_net[-1]]

    @staticmethod
    def gate(selector, vecs, layer):
        g = F.softmax(layer(selector), dim=1).unsqueeze(1)
        return torch.matmul(g, torch.stack(vecs, dim=1)).squeeze(1)

    def forward(self, task_fea, shared_fea):
        shared = [m(shared_fea) for m in self._shared_layers]
        all_task, outs = [], []
        for i, layers in enumerate(self._task_layers):
            experts = [m(task_fea[i]) for m in layers]
            outs.append(self.gate(task_fea[i], experts + shared, self._task_gates[i]))
            all_task.extend(experts)
        shared_out = None
        if not self._final:
            shared_out = self.gate(shared_fea, all_task + shared, self._shared_gate)
        return outs, shared_out


class Ple(nn.Module):
    """layers: (share_num, expert_num_per_task, share_expert_net, task_expert_net)."""

    def __init__(self, layers, towers):
        super().__init__()
        task_in, shared_in = [IN_DIM] * len(towers), IN_DIM
        self._extraction_nets = nn.ModuleList()
        for i, (share_num, per_task, share_net, task_net) in enumerate(layers):
            net = ExtractionNet(task_in, shared_in, share_num, per_task, share_net, task_net,
                                i == len(layers) - 1)
            self._extraction_nets.append(net)
            task_in, shared_in = net.dims[:-1], net.dims[-1]
        self._task_tower = nn.ModuleList(TaskTower(task_in[i], t) for i, t in enumerate(towers))

    def forward(self, x):
        task, shared = [x] * len(self._task_tower), x
        for net in self._extraction_nets:
            task, shared = net(task, shared)
        return torch.cat([t(task[i]) for i, t in enumerate(self._task_tower)], dim=1)


# name (the C++ test builds the same config), module
CASES = [
    ("simple_multi_task", lambda: SimpleMultiTask([[3], None])),
    ("mmoe_gate_mlp", lambda: MMoEModel([3, 2], 3, [2], [[2], None])),
    ("mmoe", lambda: MMoEModel([3], 2, None, [None, [2]])),
    ("dbmtl_mmoe_relations", lambda: Dbmtl([5], [4], 2, None, [
        ("t0", [3], [], None), ("t1", [3], ["t0"], [2]), ("t2", None, ["t0", "t1"], [2])])),
    ("dbmtl_bottom_relation", lambda: Dbmtl([5], None, 3, None, [
        ("ctr", [3], [], None), ("cvr", [3], ["ctr"], [2])])),
    ("ple_two_layers", lambda: Ple([(2, 1, [5, 3], [3]), (1, 2, [3], [4, 3])],
                                   [[2], None, [2]])),
    ("ple_one_layer", lambda: Ple([(1, 2, [3], [3])], [None, [2]])),
]


def fill(k: int, n: int) -> torch.Tensor:
    """Parameter k (named_parameters order), n elements: 0.5 sin(0.7 e + 1.3 k + 0.1)."""
    e = torch.arange(n, dtype=torch.float64)
    return (0.5 * torch.sin(0.7 * e + 1.3 * k + 0.1)).float()


def inputs():
    e = torch.arange(ROWS * IN_DIM, dtype=torch.float64)
    return (2 * torch.sin(0.37 * e)).float().reshape(ROWS, IN_DIM)


def labels(t: int) -> torch.Tensor:
    """Label of task t, row r: (r + t) % 3 == 0."""
    return torch.tensor([1.0 if (r + t) % 3 == 0 else 0.0 for r in range(ROWS)])


def numbers(t: torch.Tensor) -> str:
    return ", ".join(f"{v:.9g}" for v in t.detach().double().flatten().tolist())


def case(name, make) -> str:
    m = make()
    params = list(m.named_parameters())
    with torch.no_grad():
        for k, (_, p) in enumerate(params):
            p.copy_(fill(k, p.numel()).reshape(p.shape))
    m.train()
    logits = m(inputs())
    loss = sum(F.binary_cross_entropy_with_logits(logits[:, t], labels(t))
               for t in range(logits.shape[1]))
    loss.backward()
    grads = torch.cat([p.grad.flatten() for _, p in params])
    names = ", ".join(f'"{n}"' for n, _ in params)
    return (f'    {{"{name}",\n     {{{names}}},\n     {{{numbers(logits)}}},\n'
            f"     {{{numbers(loss)}}},\n     {{{numbers(grads)}}}}},\n")


def main() -> str:
    torch.manual_seed(0)
    out = [f"// Generated by tests/unit/worker/train/multi_task_golden.py with torch"
           f" {torch.__version__.split('+')[0]} (do not edit).\n",
           f"// {IN_DIM} raw features, {ROWS} rows; fields: case, parameter names, training logits"
           " [B, T], summed task loss, gradients (parameter order).\n"]
    for name, make in CASES:
        out.append(case(name, make))
    return "".join(out)


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        import pathlib
        committed = (pathlib.Path(__file__).parent / "multi_task_golden.inc").read_text()
        if not same_up_to_rounding(committed, main()):
            sys.exit("multi_task_golden.inc is stale: regenerate it with multi_task_golden.py")
        sys.exit(0)
    sys.stdout.write(main())
