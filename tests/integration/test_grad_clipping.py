"""train_config.grad_clipping (norm) through the real job, against torch.nn.utils.clip_grad_norm_.

One training step with SGD moves every dense weight by -lr * g' (torch's SGD takes the gradient
itself as the first momentum buffer), g' the clipped dense gradient. Two unclipped one-step jobs
with lr L and 2L give the gradient g = (w_L - w_2L) / L and the initial weights w0 = 2 w_L - w_2L,
so torch.nn.utils.clip_grad_norm_ applied to g (in torch, not by tzrec_train) predicts the weights
of every clipped job: norm_type 1, 2 and inf clip the same gradient by different norms
(TorchEasyRec: torchrec's GradientClippingOptimizer calls clip_grad_norm_ on the dense
parameters). enable_global_grad_clip changes nothing, as in TorchEasyRec (no param_to_pgs: the
dense gradients, all-reduced and equal on every rank, are clipped by their norm either way).

Generated data (always runs); 8 one-step jobs of 2 ranks.
"""
import math

import pytest

from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    checkpoints, criteo_generated, load_pt, small_dlrm, small_job, steps_edit)

LR = 1.0
WORLD = 2


def one_step(small_dlrm, data, model_dir, lr, clipping=None):
    edit = {"train_config.dense_optimizer": {"sgd_optimizer": {"lr": lr, "momentum": 0.9},
                                             "constant_learning_rate": {}}}
    if clipping is not None:
        edit["train_config.grad_clipping"] = clipping
    small_job(small_dlrm, data, model_dir, WORLD, steps_edit(1, log_every=1, **edit))
    shard = checkpoints(model_dir)[1] / f"model-000000-of-{WORLD:06d}.pt"
    return {k: v.double() for k, v in load_pt(shard).items() if k.startswith("dense/")}


@pytest.fixture(scope="module")
def gradient(tmp_path_factory, small_dlrm, criteo_generated):
    """(w0, g) of the dense parameters at step 1, from the unclipped jobs with lr L and 2L."""
    tmp = tmp_path_factory.mktemp("clip_base")
    w1 = one_step(small_dlrm, criteo_generated, tmp / "lr1", LR)
    w2 = one_step(small_dlrm, criteo_generated, tmp / "lr2", 2 * LR)
    w0 = {k: 2 * w1[k] - w2[k] for k in w1}
    g = {k: (w1[k] - w2[k]) / LR for k in w1}
    return w0, g


def torch_clipped(g, max_norm, norm_type):
    """The gradient after torch.nn.utils.clip_grad_norm_ (float64 copies of g)."""
    import torch
    params = []
    for name in sorted(g):
        p = torch.zeros_like(g[name], requires_grad=True)
        p.grad = g[name].clone()
        params.append((name, p))
    torch.nn.utils.clip_grad_norm_([p for _, p in params], max_norm, norm_type=norm_type)
    return {name: p.grad for name, p in params}


def norm(g, p):
    import torch
    flat = torch.cat([v.flatten() for v in g.values()])
    return torch.linalg.vector_norm(flat, p).item()


def test_norm_type_clips_as_torch(tmp_path, small_dlrm, criteo_generated, gradient):
    import torch
    w0, g = gradient
    assert norm(g, math.inf) > 0
    # One max_gradient between g's inf-norm and 2-norm: p=1 and p=2 clip (p=1 harder), p=inf
    # does not; then p=inf with half its norm, so that the inf-norm clips too.
    max_norm = math.sqrt(norm(g, 2) * norm(g, math.inf))
    cases = [(1.0, max_norm), (2.0, max_norm), (math.inf, max_norm),
             (math.inf, norm(g, math.inf) / 2)]
    ratio = {}
    full = torch.cat([g[k].flatten() for k in sorted(g)])
    for i, (p, limit) in enumerate(cases):
        clip = {"clipping_type": "norm", "max_gradient": limit,
                "norm_type": "Infinity" if math.isinf(p) else p}  # protobuf JSON's inf
        w = one_step(small_dlrm, criteo_generated, tmp_path / f"case{i}", LR, clip)
        want = torch_clipped(g, limit, p)
        scale = full.abs().max().item()
        for k in w:
            step = w0[k] - w[k]  # = LR * the clipped gradient
            assert torch.allclose(step, LR * want[k], rtol=1e-3, atol=1e-4 * scale), (p, k)
        step = torch.cat([(w0[k] - w[k]).flatten() for k in sorted(w)]) / LR
        ratio[(p, limit)] = (step @ full / (full @ full)).item()
        # the coefficient clip_grad_norm_ takes: max_norm / (norm + 1e-6), at most 1
        assert ratio[(p, limit)] == pytest.approx(min(1.0, limit / (norm(g, p) + 1e-6)),
                                                  rel=1e-3), (p, limit)
    # norm_type changes the update of one max_gradient: each p clips g by its own norm.
    r1, r2, rinf = (ratio[(p, max_norm)] for p in (1.0, 2.0, math.inf))
    assert r1 < 0.5 * r2 and r2 < 0.99 and rinf == pytest.approx(1.0, rel=1e-3), ratio


def test_enable_global_grad_clip_has_no_effect(tmp_path, small_dlrm, criteo_generated):
    import torch
    clip = {"clipping_type": "norm", "max_gradient": 0.01, "norm_type": 2.0}
    local = one_step(small_dlrm, criteo_generated, tmp_path / "local", LR, clip)
    glob = one_step(small_dlrm, criteo_generated, tmp_path / "global", LR,
                    {**clip, "enable_global_grad_clip": True})
    assert all(torch.equal(local[k], glob[k]) for k in local)
