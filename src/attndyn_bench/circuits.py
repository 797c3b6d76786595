"""PyTorch eager reference of the circuits benchmark (:mod:`attndyn.models.circuits.bench`): one
SGD step of FAFO written as in the authors' notebooks (Vashisht & Ramaswamy, arXiv 2608.06776),
one seed at a time."""

from __future__ import annotations

import math

import numpy as np

from attndyn.core.timing import calibrated_best, torch_threads
from attndyn.models.circuits.config import CircuitsConfig
from attndyn.models.circuits.data import class_distribution


def torch_reference_loop(config: CircuitsConfig, seed: int = 1234):
    """One SGD step of FAFO written as in the authors' notebooks (see the module docstring).
    Returns ``step()``; the model is the same as :func:`attndyn.models.circuits.build` for
    :func:`bench_config` except for the random streams."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    V, T = config.vocab, config.seq_len
    probs = class_distribution(config)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)  # the notebooks use the legacy global np.random

    def sample_sequence(c: int) -> np.ndarray:
        context = rng.choice(np.arange(V), p=probs[c], size=T - 2)
        return np.append(context, [config.query_start + c, config.label_start + c])

    def generate_data(batch: int) -> torch.Tensor:
        rows = []
        for _ in range(batch):
            c = rng.choice(np.arange(config.n_classes), p=[1 / config.n_classes] * config.n_classes)
            rows.append(torch.tensor(sample_sequence(int(c))))
        return torch.vstack(rows)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.key_layer = nn.Linear(V, V, bias=False)
            self.query_layer = nn.Linear(V, V, bias=False)
            self.value_layer = nn.Linear(V, V, bias=False)
            self.prediction_layer = nn.Linear(V, V, bias=False)
            self.value_layer.weight = nn.Parameter(torch.eye(V) * config.eye_scale)
            self.prediction_layer.weight = nn.Parameter(torch.eye(V) * config.eye_scale)

        def forward(self, x):
            key = self.key_layer(x)
            query = torch.unsqueeze(self.query_layer(x[:, -1]), dim=1)
            scores = (query @ key.transpose(-2, -1)) * (1 / math.sqrt(key.size(-1)))
            attn = nn.Softmax(dim=-1)(scores)
            context = torch.matmul(attn, self.value_layer(x))
            return self.prediction_layer(context)[:, 0, :], attn[:, 0, :]

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(
        [
            {"params": [model.query_layer.weight, model.key_layer.weight], "lr": config.lr_qk},
            {"params": [model.value_layer.weight, model.prediction_layer.weight], "lr": config.lr},
        ]
    )

    def step() -> float:
        data = generate_data(config.batch)
        inputs, labels = data[:, :-1], data[:, -1]
        inputs = F.one_hot(inputs, num_classes=V).float()
        optimizer.zero_grad()
        outputs, _ = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def time_torch(
    config: CircuitsConfig, min_seconds: float, repeats: int, threads: int | None = None
) -> dict:
    """Steps/s of :func:`torch_reference_loop` with torch's default intra-op threads
    (``threads=None``) or ``torch.set_num_threads(threads)`` for the duration."""
    import torch

    with torch_threads(threads):
        step = torch_reference_loop(config)

        def run(n: int) -> None:
            for _ in range(n):
                step()

        run(3)  # warm-up
        n, seconds, cpu = calibrated_best(run, min_seconds, repeats, start=4)
        used_threads = torch.get_num_threads()
    return {
        "seed_steps_per_s": n / seconds,
        "steps_timed": n,
        "cpus_used": cpu / seconds,
        "threads": used_threads,
        "version": torch.__version__,
    }
