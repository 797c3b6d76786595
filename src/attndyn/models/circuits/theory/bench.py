"""Benchmark ``circuits-fixed-attention``: one training step of the Fig. 3 fixed-attention model
(arXiv 2608.06776 Fig. 3; :mod:`attndyn.models.circuits.theory.fixed_attention`) against the
authors' notebook loop, both timed in the same process.

attndyn: the five α of the default config stacked in one jitted ``fori_loop`` (batch 128,
seq_len 64), timed after a warm-up run of the same program, so compilation is excluded.
Reference: the notebooks' loop (FIg-3-Code/*.ipynb) re-typed in PyTorch on CPU with one thread:
NumPy ``choice`` sampling per class, one-hot, fixed attention, ``nn.Linear`` OV,
CrossEntropyLoss, ``optim.SGD``, one α per model as in the notebooks. Rows (one per OV
parameterisation): milliseconds per step of the stacked run, per model-step (÷ number of α) and
of the reference, and ``speedup_per_model_step``.
"""

from __future__ import annotations

import time

import numpy as np

from attndyn.core.progress import notes
from attndyn.core.timing import torch_reference_status, torch_threads
from attndyn.models.circuits.theory.fixed_attention import FixedAttentionConfig, simulate

OVS = ("collapsed", "factorised")


def attndyn_per_step(ov: str, steps: int) -> tuple[float, int]:
    """(seconds per step of the α-stacked run, number of α), compilation excluded."""
    cfg = FixedAttentionConfig(ov=ov, t_max=steps, records=2, eval_size=128)
    simulate(cfg)  # compile
    start = time.perf_counter()
    simulate(cfg)
    return (time.perf_counter() - start) / steps, len(cfg.alphas)


def torch_per_step(ov: str, steps: int, alpha: float = 0.2) -> float:
    """Seconds per step of the notebooks' loop (one model, one α), after 20 warm-up steps."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    probs = []
    for i in range(4):
        p = np.zeros(50)
        p[:10] = 1
        p[(i + 1) * 10 : (i + 2) * 10] = np.arange(0.1, 1.1, 0.1)
        probs.append(p / p.sum())

    rng = np.random.default_rng(1234)  # the notebooks use the legacy np.random.choice

    def generate(batch=32, seq_len=64):
        seqs = []
        for c in range(4):
            ctx = rng.choice(np.arange(50), p=probs[c], size=(batch, seq_len - 2))
            tail = np.array([[1 + c, 5 + c]] * batch)
            seqs.append(torch.tensor(np.concatenate([ctx, tail], axis=1)))
        batch_ = torch.cat(seqs)
        return batch_[torch.randperm(len(batch_))]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = nn.Linear(50, 50, bias=False) if ov == "factorised" else None
            self.pred = nn.Linear(50, 50, bias=ov == "collapsed")

        def forward(self, x):
            index = x > 9
            s1 = index.sum(1, keepdim=True)
            s2 = (~index).sum(1, keepdim=True)
            mask = index.float()
            attn = alpha * mask / s1 + (1 - alpha) * (1 - mask) / s2
            h = F.one_hot(x, num_classes=50).float()
            if self.value is not None:
                h = self.value(h)
            return self.pred(torch.matmul(attn[:, None, :], h))[:, 0, :]

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    crit = nn.CrossEntropyLoss()

    def step():
        data = generate()
        opt.zero_grad()
        crit(model(data[:, :-1]), data[:, -1]).backward()
        opt.step()

    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def run_fixed_attention_benchmark(
    quick: bool = False, torch_reference: bool = True, log: bool = True, steps: int | None = None
) -> list[dict]:
    """One row per OV parameterisation; ``steps`` attndyn steps (default 2,000, ``quick`` 200)
    and max(200, steps/10) reference steps (one torch thread: two were slower on a shared
    machine)."""
    steps = steps or (200 if quick else 2000)
    say = notes(log)
    use_torch, torch_note = torch_reference_status(torch_reference)
    if torch_reference and not use_torch:
        say(f"PyTorch reference skipped: {torch_note}")
    rows = []
    for ov in OVS:
        say(f"{ov}: attndyn ...")
        ours, n_alpha = attndyn_per_step(ov, steps)
        row = {
            "ov": ov,
            "alphas": n_alpha,
            "steps_timed": steps,
            "ms_per_step": ours * 1e3,
            "ms_per_model_step": ours / n_alpha * 1e3,
            "torch_ms_per_model_step": None,
            "speedup_per_model_step": None,
            "torch_note": torch_note,
        }
        if use_torch:
            say(f"{ov}: PyTorch notebook loop ...")
            with torch_threads(1):
                ref = torch_per_step(ov, max(200, steps // 10))
            row["torch_ms_per_model_step"] = ref * 1e3
            row["speedup_per_model_step"] = ref / (ours / n_alpha)
        rows.append(row)
    return rows
