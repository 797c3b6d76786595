"""NumPy reference of the query benchmark (:mod:`attndyn.models.query.bench`): one projected SGA
step of the single-query softmax attention model (docs/query.md) written the way one writes it
in plain NumPy, for one seed and batch 1."""

from __future__ import annotations

import numpy as np

from attndyn.core.timing import calibrated_best


def numpy_gradient(q: np.ndarray, x: np.ndarray, beta: float) -> np.ndarray:
    """∇_q‖a‖² = 2β((w∘c)ᵀX − (wᵀc)a), c = Xa (docs/query.md), in NumPy."""
    s = beta * (x @ q)
    w = np.exp(s - s.max())
    w /= w.sum()
    a = w @ x
    h = w * (x @ a)
    return 2 * beta * (h @ x - h.sum() * a)


def numpy_step_fn(config, seed: int = 0):
    """One projected SGA step in plain NumPy (float32), for one seed and batch 1:
    tokens z ~ N(0, σ²I) with θξu added to the first n_I rows, s = βXq, w = softmax(s),
    a = wᵀX, c = Xa, g = 2β((w∘c)ᵀX − (wᵀc)a), q ← (q + η_k g)/‖q + η_k g‖."""
    d, n_i, n = config.d, config.n_informative, config.n_tokens
    sigma, beta, theta = config.sigma_eff, config.beta_eff, config.theta
    rng = np.random.default_rng(seed)
    u = np.zeros(d, np.float32)
    u[0] = 1.0
    q = rng.standard_normal(d).astype(np.float32)
    q /= np.linalg.norm(q)
    state = {"q": q, "k": 0}

    def draw() -> np.ndarray:
        x = rng.standard_normal((n, d), dtype=np.float32)
        if sigma != 1.0:
            x *= np.float32(sigma)
        xi = np.float32(rng.choice((-1.0, 1.0)))
        x[:n_i] += (theta * xi) * u
        return x

    def step() -> None:
        q, k = state["q"], state["k"]
        g = numpy_gradient(q, draw(), beta)
        eta = config.eta * (config.k0 / (k + config.k0)) ** config.gamma
        q = q + np.float32(eta) * g
        state["q"], state["k"] = q / np.linalg.norm(q), k + 1

    return step, draw


def time_numpy(config, min_seconds: float, repeats: int) -> dict:
    step, draw = numpy_step_fn(config)

    def run_steps(n: int) -> None:
        for _ in range(n):
            step()

    def run_draws(n: int) -> None:
        for _ in range(n):
            draw()

    run_steps(1)
    steps, seconds, _ = calibrated_best(run_steps, min_seconds, repeats)
    draws, draw_seconds, _ = calibrated_best(run_draws, min_seconds, repeats)
    return {"numpy_steps_per_s": steps / seconds, "numpy_draw_s": draw_seconds / draws}
