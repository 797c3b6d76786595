"""Long segments run in chunks (attndyn.core.progress): the trajectory does not depend on the
chunking, and progress is reported between chunks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import quadratic_gauss_newton

from attndyn import runs
from attndyn.core.flow import integrate_flow
from attndyn.core.progress import Chunker, listening
from attndyn.core.trainer import train
from attndyn.models.aim import build


class Fixed(Chunker):
    """Chunks of exactly ``length`` steps (the remainder of a segment excepted)."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.length = length

    def took(self, steps: int, seconds: float) -> None:
        pass


class Recorder:
    def __init__(self) -> None:
        self.reports: list[tuple[float, float, str]] = []

    def steps(self, done, total, unit):
        self.reports.append((done, total, unit))

    def run_started(self, label):
        pass

    def run_finished(self, reused, failed=False):
        pass

    def runs_planned(self, total, skipped):
        pass

    def note(self, message):
        pass


@pytest.mark.slow  # 4 CPU s
def test_trainer_trajectory_does_not_depend_on_the_chunking():
    """aim (d = 8, 3 seeds, SGD with label noise) on 3 record points: one call per segment,
    chunks of 7 steps and the adaptive default give bitwise-equal observables and parameters
    (every step's key is fold_in(data key, k), whoever runs it)."""
    config = runs.family_config(
        "aim", dict(d=8, t_max=0.2, records=3, grid="linear", batch=4, seeds=3, test_size=16)
    )
    problem = build(config)
    steps = np.array([0, 37, 150])
    seeds = np.arange(3)
    whole = train(problem, steps, seeds, Fixed(10**9))
    sevens = train(problem, steps, seeds, Fixed(7))
    seen = Recorder()
    with listening(seen):
        adaptive = train(problem, steps, seeds)
    for other in (sevens, adaptive):
        for name, values in whole.observables.items():
            np.testing.assert_array_equal(other.observables[name], values, err_msg=name)
        for group, theta in whole.final_params.items():
            np.testing.assert_array_equal(np.asarray(other.final_params[group]), theta)
    done = [r[0] for r in seen.reports]
    assert done == sorted(done) and done[-1] == 150
    assert {r[1:] for r in seen.reports} == {(150, "steps")}
    assert len(done) > 2  # the first chunk is one step: segments are split


def _stiff_flow(solver: str):
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    C = np.diag([30.0, 10.0, 1.0, 0.1]) @ q
    y0 = rng.normal(size=4)
    init = lambda key: ({"y": jnp.asarray(y0)}, {"C": jnp.asarray(C)})  # noqa: E731
    grad = lambda p, s: {"y": s["C"].T @ (s["C"] @ p["y"])}  # noqa: E731
    obs = lambda p, s: {f"y{i}": p["y"][i] for i in range(4)}  # noqa: E731
    gn = quadratic_gauss_newton() if solver == "ros2" else None
    return init, grad, obs, gn


@pytest.mark.slow  # 30 CPU s
def test_flow_result_does_not_depend_on_the_chunking():
    """bs3 and ros2 (whose chunks end at a Jacobian refresh) on a stiff quadratic flow: chunks of
    5 steps give the same records and step counts as one call per segment, bitwise."""
    times = np.array([0.0, 0.1, 1.0, 3.0])
    with jax.enable_x64():
        for solver in ("bs3", "ros2"):
            init, grad, obs, gn = _stiff_flow(solver)
            args = (init, grad, obs, times, np.array([0, 1]))
            whole = integrate_flow(*args, rtol=1e-5, gauss_newton=gn, chunker=Fixed(10**9))
            seen = Recorder()
            with listening(seen):
                fives = integrate_flow(*args, rtol=1e-5, gauss_newton=gn, chunker=Fixed(5))
            np.testing.assert_array_equal(fives.steps, whole.steps, err_msg=solver)
            assert whole.steps[-1] > 50  # many chunks of 5
            for name, values in whole.observables.items():
                np.testing.assert_array_equal(fives.observables[name], values, err_msg=solver)
            assert len(seen.reports) > whole.steps[-1] // 8
            assert seen.reports[-1][0] == 3.0 and seen.reports[-1][2] == "time"


def test_chunk_length_grows_to_the_target_and_shrinks_for_slow_steps():
    chunker = Chunker(target_s=0.5)
    assert chunker.next(1000) == 1
    chunker.took(1, 2.0)  # the compiling call: slow
    assert chunker.next(10**9) == 1
    chunker.took(1, 1e-4)
    assert chunker.next(10**9) == 8  # at most ×8 per chunk
    for _ in range(10):
        n = chunker.next(10**9)
        chunker.took(n, n * 1e-5)  # 10 µs a step
    assert chunker.next(10**9) == 50_000
    chunker.took(50_000, 5.0)  # steps got slower
    assert chunker.next(10**9) == 5_000
    assert chunker.next(17) == 17
