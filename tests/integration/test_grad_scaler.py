"""train_config.grad_scaler with mixed_precision FP16, as TorchEasyRec applies it
(tzrec/utils/dist_util.py _pipeline_backward: `optimizer._grad_scaler.scale(loss).backward()`).
The sparse optimizer is fused into the backward (TorchRec/FBGEMM), so embedding rows are updated
with the loss-scaled gradient; torch.amp.GradScaler.unscale_ / step then only reach the dense
parameters (those with a .grad). tzrec_train does the same.

One step of the small DLRM (generated Criteo-layout data, 1 rank) with sparse and dense SGD and
init_scale S = 1, 8 and 64 from the same initial rows w0: w_S = w0 - S * d, so
w_1 - w_64 = 9 * (w_1 - w_8) on every row that was updated (the embedding step scales with S),
while the dense weights stay within FP16 rounding of each other (unscaled before their step;
with SGD the step is proportional to the gradient, so an unscaled gradient would differ 64x).

Budget: 3 one-step jobs, about 10 s. Never reads ../shared.
"""
from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    checkpoints, criteo_generated, load_pt, small_dlrm, small_job, steps_edit)


def one_step(small_dlrm, data, model_dir, scale):
    edit = steps_edit(1, log_every=1, **{
        "train_config.sparse_optimizer": {"sgd_optimizer": {"lr": 0.5},
                                          "constant_learning_rate": {}},
        "train_config.dense_optimizer": {"sgd_optimizer": {"lr": 0.1},
                                         "constant_learning_rate": {}},
        "train_config.mixed_precision": "FP16",
        "train_config.grad_scaler": {"init_scale": scale, "growth_interval": 1000}})
    small_job(small_dlrm, data, model_dir, 1, edit)
    return load_pt(checkpoints(model_dir)[1] / "model-000000-of-000001.pt")


def test_embedding_updates_see_the_loss_scale(tmp_path, small_dlrm, criteo_generated):
    import torch

    w = {s: one_step(small_dlrm, criteo_generated, tmp_path / f"s{s}", s) for s in (1, 8, 64)}
    tables = [k for k in w[1] if not k.startswith("dense/")]
    assert tables, sorted(w[1])
    d8 = torch.cat([(w[1][k] - w[8][k]).flatten() for k in tables])
    d64 = torch.cat([(w[1][k] - w[64][k]).flatten() for k in tables])
    updated = d8.abs() > 1e-5
    assert updated.sum() > 100, "too few embedding values changed by the step"
    ratio = d64[updated] / d8[updated]
    assert torch.allclose(ratio, torch.full_like(ratio, 9.0), rtol=0.02), \
        f"w1-w64 / w1-w8 should be 9 (updates scaled by S): {ratio.min()} .. {ratio.max()}"
    for k in (k for k in w[1] if k.startswith("dense/") and w[1][k].is_floating_point()):
        assert torch.allclose(w[1][k], w[64][k], rtol=1e-3, atol=1e-5), k  # unscaled
