#!/usr/bin/env python3
"""Golden values for tzrec_train_tests from the REAL torch.optim and torch's LRScheduler machinery.

Writes optim_golden.inc (C++ data tables read by dense_optimizer_test.cpp and lr_schedule_test.cpp):
  * kDenseCases: several steps of torch.optim.SGD/Adagrad/Adam/AdamW (CPU, float32, the default
    single-tensor path) on fixed tensors, a parameter without gradient at some steps and an lr change
    midway (param_groups[0]["lr"], what an LR scheduler writes); the final parameters and the
    optimizer's state_dict tensors.
  * kLrCases: the lr torch.optim sees before each training step when TorchEasyRec's schedules
    (tzrec/optim/lr_scheduler.py) drive it: each schedule is written here independently from its
    formula as a torch.optim.lr_scheduler.LRScheduler subclass, constructed on a real optimizer and
    stepped after every step (by_epoch false) or every epoch (by_epoch true) as tzrec/main.py does.

Usage: optim_golden.py [--write | --check] [--out PATH]
  --write rewrites the file; --check (the ctest train.optim_golden_current) exits 1 when the file
  differs from what the installed torch produces.
"""
from __future__ import annotations

import argparse
import bisect
import math
import pathlib
import sys

import torch
from torch.optim.lr_scheduler import LRScheduler

from golden_common import same_up_to_rounding

HERE = pathlib.Path(__file__).resolve().parent


def f32(v: float) -> str:
    return "%.9g" % v if math.isfinite(v) else "NAN"


def floats(t: torch.Tensor) -> str:
    return "{" + ", ".join(f32(float(x)) for x in t.detach().reshape(-1).tolist()) + "}"


# ---------------------------------------------------------------------------------------------
# Dense optimizers
# ---------------------------------------------------------------------------------------------

SHAPES = [(3,), (2, 2)]
STEPS = 4
# lr multiplier per step (what a schedule would write into param_groups[0]["lr"])
LR_SCALE = [1.0, 1.0, 0.5, 0.25]
# parameter index without a gradient at a step (torch skips it: no state, no step count)
NO_GRAD = {(0, 1), (2, 0)}

DENSE = [
    # name, kind, torch kwargs (TorchEasyRec passes lr/momentum/weight_decay/betas, the rest torch's)
    ("sgd_momentum_default", "kSgd", dict(lr=0.1, momentum=0.9, weight_decay=0.0)),
    ("sgd_dampening_wd", "kSgd", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("sgd_nesterov", "kSgd", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05)),
    ("sgd_plain_wd", "kSgd", dict(lr=0.1, momentum=0.0, weight_decay=0.1)),
    ("adagrad_default", "kAdagrad", dict(lr=0.1, weight_decay=0.0)),
    ("adagrad_all", "kAdagrad",
     dict(lr=0.1, weight_decay=0.02, lr_decay=0.1, initial_accumulator_value=0.1, eps=1e-6)),
    ("adam_default", "kAdam", dict(lr=0.01, betas=(0.9, 0.999), weight_decay=0.0)),
    ("adam_amsgrad_wd", "kAdam", dict(lr=0.01, betas=(0.9, 0.999), weight_decay=0.1, amsgrad=True)),
    ("adamw_wd", "kAdamW", dict(lr=0.01, betas=(0.9, 0.999), weight_decay=0.1)),
    ("adamw_amsgrad_betas_eps", "kAdamW",
     dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.0, amsgrad=True, eps=1e-6)),
]

TORCH_CLASS = {"kSgd": torch.optim.SGD, "kAdagrad": torch.optim.Adagrad,
               "kAdam": torch.optim.Adam, "kAdamW": torch.optim.AdamW}


def initial_tensors() -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
    g = torch.Generator().manual_seed(1234)
    params = [torch.randn(s, generator=g, dtype=torch.float32) for s in SHAPES]
    grads = [[torch.randn(s, generator=g, dtype=torch.float32) for s in SHAPES]
             for _ in range(STEPS)]
    return params, grads


def cpp_options(kind: str, kw: dict) -> str:
    fields = [f"o.kind = DenseOptimizerKind::{kind};", f"o.lr = {kw['lr']!r};",
              f"o.weight_decay = {kw.get('weight_decay', 0.0)!r};"]
    if kind == "kSgd":
        fields += [f"o.momentum = {kw.get('momentum', 0.0)!r};",
                   f"o.dampening = {kw.get('dampening', 0.0)!r};",
                   f"o.nesterov = {'true' if kw.get('nesterov') else 'false'};"]
    if kind == "kAdagrad":
        fields += [f"o.lr_decay = {kw.get('lr_decay', 0.0)!r};",
                   f"o.initial_accumulator_value = {kw.get('initial_accumulator_value', 0.0)!r};"]
    if kind in ("kAdam", "kAdamW"):
        b1, b2 = kw["betas"]
        fields += [f"o.beta1 = {b1!r};", f"o.beta2 = {b2!r};",
                   f"o.amsgrad = {'true' if kw.get('amsgrad') else 'false'};"]
    if "eps" in kw:
        fields.append(f"o.eps = {kw['eps']!r};")
    return " ".join(fields)


def dense_case(name: str, kind: str, kw: dict) -> str:
    params0, grads = initial_tensors()
    params = [torch.nn.Parameter(p.clone()) for p in params0]
    opt = TORCH_CLASS[kind](params, **kw)
    for step in range(STEPS):
        opt.param_groups[0]["lr"] = kw["lr"] * LR_SCALE[step]
        for i, p in enumerate(params):
            p.grad = None if (step, i) in NO_GRAD else grads[step][i].clone()
        opt.step()
    state_names = []
    for i, p in enumerate(params):
        for key, value in opt.state.get(p, {}).items():
            if isinstance(value, torch.Tensor):
                state_names.append(f'{{"p{i}/{key}", {floats(value)}}}')
    lines = [f"    {{\"{name}\",", f"     [] {{ DenseOptimizerOptions o; {cpp_options(kind, kw)} "
             "return o; }(),",
             "     {" + ", ".join(floats(p) for p in params) + "},",
             "     {" + ", ".join(state_names) + "}},"]
    return "\n".join(lines)


def dense_section() -> str:
    params0, grads = initial_tensors()
    out = ["// Shapes, steps, lr scale per step and the (step, param) pairs without gradient.",
           "inline const std::vector<std::vector<std::int64_t>> kDenseShapes = {" +
           ", ".join("{" + ", ".join(map(str, s)) + "}" for s in SHAPES) + "};",
           "inline const std::vector<double> kDenseLrScale = {" +
           ", ".join(map(repr, LR_SCALE)) + "};",
           "inline const std::vector<std::pair<int, int>> kDenseNoGrad = {" +
           ", ".join(f"{{{s}, {p}}}" for s, p in sorted(NO_GRAD)) + "};",
           "inline const std::vector<std::vector<float>> kDenseInitial = {" +
           ", ".join(floats(p) for p in params0) + "};",
           "// kDenseGrads[step][param]",
           "inline const std::vector<std::vector<std::vector<float>>> kDenseGrads = {" +
           ", ".join("{" + ", ".join(floats(g) for g in step) + "}" for step in grads) + "};",
           "inline const std::vector<DenseGoldenCase> kDenseCases = {"]
    out += [dense_case(*c) for c in DENSE]
    out.append("};")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# LR schedules: TorchEasyRec's formulas, written from their definitions, on torch's LRScheduler.
# ---------------------------------------------------------------------------------------------


class Schedule(LRScheduler):
    def __init__(self, optimizer, formula, by_epoch):
        self.formula = formula
        self.by_epoch = by_epoch
        super().__init__(optimizer)  # runs one step(): _step_count = 1

    def get_lr(self):
        count = max(self._step_count - 1, 0)
        return [0.0 if base == 0 else self.formula(base, count) for base in self.base_lrs]


def warmup_or(o, fn):
    def formula(base, count):
        if count < o.get("warmup_size", 0):
            scale = count / o["warmup_size"]
            w = o.get("warmup_learning_rate", 0.0)
            return (base - w) * scale + w
        return fn(base, count - o.get("warmup_size", 0))
    return formula


def exponential(o):
    def fn(base, elapsed):
        p = elapsed / o["decay_size"]
        if o.get("staircase", True):
            p = math.floor(p)
        return max(base * math.pow(o.get("decay_factor", 0.95), p), o.get("min_learning_rate", 0.0))
    return warmup_or(o, fn)


def manual(o):
    def formula(base, count):
        idx = bisect.bisect_left(o["schedule_sizes"], count)
        if idx > 0:
            return o["learning_rates"][idx - 1]
        if o.get("warmup", False):
            return (o["learning_rates"][0] - base) * (count / o["schedule_sizes"][0]) + base
        return base
    return formula


def cos_value(o, base, t, period):
    m = o.get("min_learning_rate", 0.0)
    return m + (base - m) * 0.5 * (1 + math.cos(math.pi * t / period))


def linear(o):
    def fn(base, elapsed):
        span = o["total_size"] - o.get("warmup_size", 0)
        m = o.get("min_learning_rate", 0.0)
        return m + (base - m) * (1.0 - min(elapsed, span) / span)
    return warmup_or(o, fn)


def cosine(o):
    return warmup_or(o, lambda base, e: cos_value(o, base, min(e, o["T_max"]), o["T_max"]))


def restarts(o):
    def fn(base, e):
        t0, tm = o["T_0"], o.get("T_mult", 1)
        if tm == 1:
            return cos_value(o, base, e % t0, t0)
        n = math.floor(math.log(e / t0 * (tm - 1) + 1, tm))
        return cos_value(o, base, e - t0 * (tm ** n - 1) // (tm - 1), t0 * tm ** n)
    return warmup_or(o, fn)


LR = [
    # name, kind, C++ option fields, python options, base lr
    ("constant", "kConstant", {}, lambda o: (lambda b, c: b), 0.01),
    ("exp_staircase", "kExponentialDecay", dict(decay_size=3), exponential, 0.1),
    ("exp_smooth_warmup_min", "kExponentialDecay",
     dict(decay_size=2, decay_factor=0.5, staircase=False, warmup_learning_rate=0.01,
          warmup_size=3, min_learning_rate=0.02), exponential, 0.1),
    ("exp_by_epoch", "kExponentialDecay", dict(decay_size=1, decay_factor=0.5, by_epoch=True),
     exponential, 0.1),
    ("manual", "kManualStep", dict(schedule_sizes=[2, 5], learning_rates=[0.05, 0.01]), manual,
     0.1),
    ("manual_warmup", "kManualStep",
     dict(schedule_sizes=[4, 8], learning_rates=[0.2, 0.02], warmup=True), manual, 0.1),
    ("manual_by_epoch", "kManualStep",
     dict(schedule_sizes=[1, 3], learning_rates=[0.05, 0.01], by_epoch=True), manual, 0.1),
    ("linear_warmup", "kLinearDecay",
     dict(total_size=10, min_learning_rate=0.01, warmup_learning_rate=0.0, warmup_size=2), linear,
     0.1),
    ("cosine_warmup", "kCosineAnnealing",
     dict(T_max=8, min_learning_rate=0.001, warmup_size=3, warmup_learning_rate=0.01), cosine, 0.1),
    ("restarts", "kCosineAnnealingWarmRestarts", dict(T_0=3, min_learning_rate=0.01), restarts,
     0.1),
    ("restarts_mult", "kCosineAnnealingWarmRestarts",
     dict(T_0=2, T_mult=2, warmup_size=1), restarts, 0.1),
    ("zero_base", "kExponentialDecay", dict(decay_size=1, warmup_learning_rate=0.5, warmup_size=2),
     exponential, 0.0),
]
LR_EPOCHS = 5
LR_STEPS_PER_EPOCH = 3
CPP_FIELD = {"T_max": "t_max", "T_0": "t_0", "T_mult": "t_mult"}


def cpp_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "{" + ", ".join(cpp_value(x) for x in v) + "}"
    return repr(v)


def lr_case(name, kind, opts, make, base) -> str:
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=base)
    by_epoch = kind == "kConstant" or opts.get("by_epoch", False)
    sched = Schedule(opt, make(opts), by_epoch)
    seen = []
    for _ in range(LR_EPOCHS):
        for _ in range(LR_STEPS_PER_EPOCH):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()  # what the training step does; the lr it used is recorded above
            if not sched.by_epoch:
                sched.step()
        if sched.by_epoch:
            sched.step()
    fields = " ".join(f"o.{CPP_FIELD.get(k, k)} = {cpp_value(v)};" for k, v in opts.items())
    return (f"    {{\"{name}\", [] {{ LrScheduleOptions o; o.kind = LrScheduleKind::{kind}; "
            f"{fields} return o; }}(), {base!r},\n     {{" +
            ", ".join(repr(x) for x in seen) + "}},")


def lr_section() -> str:
    out = [f"inline constexpr std::int64_t kLrEpochs = {LR_EPOCHS};",
           f"inline constexpr std::int64_t kLrStepsPerEpoch = {LR_STEPS_PER_EPOCH};",
           "// lrs[i]: the lr of training step i (epoch i / kLrStepsPerEpoch)",
           "inline const std::vector<LrGoldenCase> kLrCases = {"]
    out += [lr_case(*c) for c in LR]
    out.append("};")
    return "\n".join(out)


def generate() -> str:
    header = [
        "// GENERATED by tests/unit/worker/train/optim_golden.py from torch " +
        torch.__version__.split("+")[0] + " — do not edit;",
        "// regenerate: .venv/bin/python tests/unit/worker/train/optim_golden.py --write",
        "// clang-format off",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <string>",
        "#include <utility>",
        "#include <vector>",
        "",
        '#include "tzrec/train/dense_optimizer.hpp"',
        '#include "tzrec/train/lr_schedule.hpp"',
        "",
        "namespace tzrec::golden {",
        "",
        "struct DenseGoldenCase {",
        "  const char* name;",
        "  DenseOptimizerOptions options;",
        "  std::vector<std::vector<float>> final_params;  // per parameter, flattened",
        "  std::vector<std::pair<std::string, std::vector<float>>> state;  // \"p<i>/<key>\"",
        "};",
        "",
        "struct LrGoldenCase {",
        "  const char* name;",
        "  LrScheduleOptions options;",
        "  double base_lr;",
        "  std::vector<double> lrs;",
        "};",
        "",
    ]
    return "\n".join(header) + "\n" + dense_section() + "\n\n" + lr_section() + \
        "\n\n}  // namespace tzrec::golden\n// clang-format on\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", default=str(HERE / "optim_golden.inc"))
    args = ap.parse_args()
    text = generate()
    out = pathlib.Path(args.out)
    if args.check:
        if not out.exists() or not same_up_to_rounding(out.read_text(), text):
            print(f"{out} differs from what torch {torch.__version__} gives: run "
                  f"{pathlib.Path(__file__).name} --write and review the diff", file=sys.stderr)
            return 1
        print(f"{out.name} matches torch {torch.__version__}")
        return 0
    if args.write:
        out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
