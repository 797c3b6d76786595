"""Benchmark: the Fig. 3 fixed-attention training step, attndyn vs the authors' notebook loop.

attndyn: ``attndyn.models.circuits.theory.fixed_attention`` (five α stacked, one jitted
``fori_loop``, batch 128, seq_len 64); timed after a warm-up run of the same program, so
compilation is excluded. Reference: the notebooks' loop (FIg-3-Code/*.ipynb) re-typed in
PyTorch on CPU: NumPy ``choice`` sampling per class, one-hot, fixed attention,
``nn.Linear`` OV, CrossEntropyLoss, ``optim.SGD``, one α per model as in the notebooks. Both are
timed in the same process. Usage: ``python bench/circuits_fixed_attention.py [steps]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def attndyn_per_step(ov: str, steps: int) -> float:
    from attndyn.models.circuits.theory.fixed_attention import FixedAttentionConfig, simulate

    cfg = FixedAttentionConfig(ov=ov, t_max=steps, records=2, eval_size=128)
    simulate(cfg)  # compile
    start = time.perf_counter()
    simulate(cfg)
    return (time.perf_counter() - start) / steps


def torch_per_step(ov: str, steps: int, alpha: float = 0.2) -> float:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(1)  # 2 threads were slower on the shared machine
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


def main(steps: int = 2000) -> None:
    for ov in ("collapsed", "factorised"):
        ours = attndyn_per_step(ov, steps)
        ref = torch_per_step(ov, max(200, steps // 10))
        print(
            f"{ov:10s} attndyn {ours * 1e3:.3f} ms/step for 5 alphas "
            f"({ours / 5 * 1e3:.3f} ms per model-step); torch notebook loop "
            f"{ref * 1e3:.3f} ms per model-step; speedup per model-step {ref / (ours / 5):.1f}x"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
