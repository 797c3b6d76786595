"""PyTorch eager references of the markov benchmark (:mod:`attndyn.models.markov.bench`): one
population GD step (the loss of Prop. 2.3 of arXiv 2605.01199 by autograd) and one Adam step of
the Def. 2.2 model on fixed Markov sequences, one seed at a time."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.timing import calibrated_best, torch_threads
from attndyn.models.markov import data
from attndyn.models.markov.data import data_law


def torch_population_step(config, seed: int = 0):
    """One population GD step in PyTorch eager: the loss of Prop. 2.3 by autograd,
    p ← p − lr·∇p (float32)."""
    import torch

    law = data_law(config)
    g = torch.Generator().manual_seed(seed)
    d, m, eps = law.d, config.m, config.epsilon
    shapes = {"W0": (d, m), "WQ": (m, m), "WK": (m, m), "W1": (m, d)}
    p = {k: (eps * torch.randn(s, generator=g)).requires_grad_() for k, s in shapes.items()}
    pi = torch.tensor(law.pi, dtype=torch.float32)
    P = torch.tensor(law.P, dtype=torch.float32)

    def loss() -> torch.Tensor:
        phi = (p["W0"] @ p["WQ"]) @ (p["W0"] @ p["WK"]).T
        A = torch.softmax(torch.log(pi)[None, :] + phi, dim=1)
        logp = torch.log_softmax(A @ (p["W0"] @ p["W1"]), dim=1)
        return -(pi[:, None] * P * logp).sum()

    def step() -> float:
        value = loss()
        grads = torch.autograd.grad(value, list(p.values()))
        with torch.no_grad():
            for t, gr in zip(p.values(), grads, strict=True):
                t -= config.lr * gr
        return float(value.detach())

    return step, p, loss


def torch_adam_step(config, seed: int = 0):
    """One Adam step of the Def. 2.2 model on a fixed set of Markov sequences in PyTorch eager
    (one seed; batch indices drawn with ``torch.randint``)."""
    import torch

    law = data_law(config)
    seqs = data.sample_sequences(
        jax.random.PRNGKey(seed), jnp.asarray(law.P, jnp.float32), config.n_sequences,
        config.seq_len + 1,
    )  # fmt: skip
    sequences = torch.from_numpy(np.array(seqs, dtype=np.int64))
    g = torch.Generator().manual_seed(seed)
    d, m, eps = law.d, config.m, config.epsilon
    shapes = {"W0": (d, m), "WQ": (m, m), "WK": (m, m), "W1": (m, d)}
    p = {k: (eps * torch.randn(s, generator=g)).requires_grad_() for k, s in shapes.items()}
    opt = torch.optim.Adam(list(p.values()), lr=config.lr)

    def batch_loss(batch: torch.Tensor) -> torch.Tensor:
        inputs, labels = batch[:, :-1], batch[:, -1]
        phi = (p["W0"] @ p["WQ"]) @ (p["W0"] @ p["WK"]).T
        M = p["W0"] @ p["W1"]
        scores = phi[inputs[:, -1:], inputs]  # Φ_{x_s, x_t}, (B, s)
        a = torch.softmax(scores, dim=1)
        z = torch.einsum("bt,btd->bd", a, M[inputs])
        return torch.nn.functional.cross_entropy(z, labels)

    def step() -> float:
        idx = torch.randint(0, config.n_sequences, (config.batch,), generator=g)
        opt.zero_grad()
        value = batch_loss(sequences[idx])
        value.backward()
        opt.step()
        return float(value.detach())

    return step, p, batch_loss


def time_torch(step, min_seconds: float, repeats: int) -> dict:
    """Steps/s of a PyTorch eager ``step`` with torch's default intra-op threads and with one
    thread (on a loaded 2-core machine the default hand-off can be far slower); the faster is
    the reference."""

    def run(n: int) -> None:
        for _ in range(n):
            step()

    out = {}
    for label, threads in (("default", None), ("1", 1)):
        with torch_threads(threads):
            run(2)
            steps, seconds, _ = calibrated_best(run, min_seconds, repeats, start=4)
        out[label] = steps / seconds
    return {"rate": max(out.values()), "threads": max(out, key=out.__getitem__), **out}
