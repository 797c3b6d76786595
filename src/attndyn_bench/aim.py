"""PyTorch eager reference of the AIM benchmark (:mod:`attndyn.models.aim.bench`): the tied
softmax AIM's online SGD step, one seed at a time, as a researcher writes it."""

from __future__ import annotations

import math

from attndyn.core.timing import calibrated_best, torch_threads
from attndyn.models.aim.bench import widths
from attndyn.models.aim.config import AIMConfig


def torch_loss(W, F, x, config: AIMConfig):
    """The batch loss in PyTorch: centred forms G = (Y Yᵀ − Tr(W Wᵀ) I)/√d for the student
    (Y = X W) and the teacher (Y* = X F*), row-wise softmax outputs, ½‖y − y*‖² averaged over the
    batch. Same model as :func:`attndyn.models.aim.build` for :func:`bench_config`."""
    import torch

    d = config.d
    eye = torch.eye(config.L)
    y = x @ W
    g = (y @ y.transpose(1, 2) - (W**2).sum() * eye) / math.sqrt(d)
    y_star = x @ F
    g_star = (y_star @ y_star.transpose(1, 2) - (F**2).sum() * eye) / math.sqrt(d)
    out = torch.softmax(config.beta * g, dim=-1)
    out_star = torch.softmax(config.beta * g_star, dim=-1)
    return 0.5 * ((out - out_star) ** 2).sum(dim=(1, 2)).mean()


def torch_step_fn(config: AIMConfig, seed: int = 0):
    """The reference update as a researcher writes it in PyTorch eager mode, for one seed:
    fresh ``torch.randn`` tokens, :func:`torch_loss`, ``backward()``, then
    ``W -= lr * W.grad; W.grad.zero_()`` under ``no_grad`` (step η = batch·α_d).
    Returns a function taking one SGD step."""
    import torch

    d, B = config.d, config.batch
    r, r_star = widths(config)
    lr = config.alpha_d * B
    torch.manual_seed(seed)
    W = (config.init_scale / math.sqrt(d)) * torch.randn(d, r)
    W.requires_grad_()
    F = math.sqrt(config.teacher_scale / d) * torch.randn(d, r_star)

    def step() -> None:
        x = torch.randn(B, config.L, d)
        loss = torch_loss(W, F, x, config)
        loss.backward()
        grad = W.grad
        assert grad is not None  # backward() filled it
        with torch.no_grad():
            W.sub_(lr * grad)
            grad.zero_()

    return step


def time_torch(config: AIMConfig, min_seconds: float, repeats: int, threads: int | None) -> dict:
    """samples/s of the PyTorch eager loop for ``config.seeds`` seeds run one after another
    (time of one seed × seeds; every seed costs the same), with torch's default intra-op threads
    (``threads=None``) or ``torch.set_num_threads(threads)`` for the duration."""

    with torch_threads(threads):
        step = torch_step_fn(config)

        def run(n: int) -> None:
            for _ in range(n):
                step()

        run(3)  # warm-up
        steps, seconds, _ = calibrated_best(run, min_seconds, repeats)
    return {
        "samples_per_s": steps * config.batch * config.seeds / (seconds * config.seeds),
        "steps": steps,
    }
