"""Benchmark: the tied AIM theory against the simulator, for the same trajectory.

Setting: the Fig. 1 model of P1 (arXiv 2609.03858): tied S = WWᵀ, L = 2 tokens, row-wise softmax,
½-MSE, a Wishart teacher, two indices (student and teacher), α_d = 0.05/(d log d), batch 64, in
the convergent regime γ = 8 (weight decay; ``aim-truncation`` measures there that the truncation
error falls geometrically in M uniformly in time, the behaviour Cor. 2 proves for γ > γ*).
Horizon t = 10 on the tied axis t = 4nα_d/d. Rows (``family: "aim-theory"``):

- ``hierarchy``: Eq. 11 truncated at M = 6 (Eq. 13; 36 moments), integrated to t = 10 from the
  initial moments of the simulator's seed 0 at d = 512 (``TiedHierarchy.solve``, DOP853,
  rtol 1e-8). ``seconds`` is the integration alone, best of 3 (``seconds_all``), with Γ already
  compiled (``compile_s`` is the first calls). Target (from the issue): under 2 s.
- ``matrix-flow``: the matrix-level flow dS/dt = −Σ Γ(S_l S + S S_l) − (γ/2)S at d = 512 from
  the same initial matrices over the same horizon (``MatrixFlow.solve``, RK45, rtol 1e-8).
- ``simulator``: online SGD for the same trajectory (one seed, d = 512, batch 64, float32): the
  number of steps to t = 10 times the steady-state seconds per step of the trainer's jitted
  ``advance`` (measured on ``steps_timed`` steps after compilation; the full run would take
  ``seconds``, too long to run in a benchmark).

Each theory row carries ``ratio_to_simulator`` = its seconds over the simulator's, and
``max_abs_diff_vs_flow`` (hierarchy: max over t₁, q₁₁, q₁₂ and the record times of
|hierarchy − flow|). ``quick=True`` shortens the flow's horizon (``horizon`` says which) and the
simulator's timing; the hierarchy row is always the full t = 10.
"""

from __future__ import annotations

import os
import time

import numpy as np

from attndyn.core.config import validate
from attndyn.core.timing import AdvanceRunner
from attndyn.models.aim import AIMConfig, build
from attndyn.models.aim.theory import AIMTheoryConfig, initial_matrices, initial_observables
from attndyn.models.aim.theory.hierarchy import MatrixFlow, TiedHierarchy
from attndyn.models.aim.theory.potential import potential_for

FAMILY = "aim-theory"
D = 512
M = 6
GAMMA = 8.0
HORIZON = 10.0
TARGET_HIERARCHY_S = 2.0
REPEATS = 3
NAMES = ("t_1", "q_11", "q_12")


def bench_config(d: int = D, t_max: float = HORIZON) -> dict:
    return dict(
        param="tied",
        L=2,
        output="softmax",
        d=d,
        seeds=1,
        lr=0.05,
        batch=64,
        weight_decay=GAMMA,
        t_max=t_max,
        records=20,
        grid="linear",
        test_size=0,
    )


def _moments_of(S: np.ndarray, d: int) -> dict[str, np.ndarray]:
    return {
        "t_1": np.trace(S[:, 0], axis1=1, axis2=2) / d,
        "q_11": np.einsum("tab,tab->t", S[:, 0], S[:, 0]) / d,
        "q_12": np.einsum("tab,tab->t", S[:, 0], S[:, 1]) / d,
    }


def time_simulator(values: dict, min_steps: int) -> dict:
    """Seconds per step of the trainer's jitted advance (one seed) and the steps to t_max."""
    config = AIMConfig(**values)
    run = AdvanceRunner(build(config), np.arange(1))
    start = time.perf_counter()
    run(min_steps)
    per_step = (time.perf_counter() - start) / min_steps
    steps = config.total_steps
    return {"per_step_s": per_step, "steps": steps, "seconds": per_step * steps}


def run_theory_benchmark(
    quick: bool = False, torch_reference: bool = True, log: bool = True
) -> list[dict]:
    """Rows ``hierarchy``, ``matrix-flow`` and ``simulator`` (see the module docstring)."""
    values = bench_config()
    config = validate(AIMTheoryConfig, values)
    potential = potential_for(config, log2_qmc=config.quad_log2)
    times = np.linspace(0.0, HORIZON, 21)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    # the hierarchy (compile Γ first: the autodiff path and the Price path near the boundary)
    start = time.perf_counter()
    mu = initial_observables(config, M)
    q0 = np.array([[mu["q_11"], mu["q_12"]], [mu["q_12"], mu["q_22"]]])
    potential.gamma_tied(q0)
    potential.gamma_tied(np.diag([0.0, mu["q_22"]]))
    compile_s = time.perf_counter() - start
    calls = [0]

    def gamma(q):
        calls[0] += 1
        return potential.gamma_tied(q)

    hierarchy = TiedHierarchy(2, (1,), M, gamma, GAMMA)
    runs = []
    for _ in range(1 if quick else REPEATS):
        calls[0] = 0
        start = time.perf_counter()
        sol = hierarchy.solve(hierarchy.initial(mu), times, config.rtol)
        runs.append(time.perf_counter() - start)
    hier_s = min(runs)
    hier_calls = calls[0]

    # the matrix flow at d = 512 from the same matrices
    flow_t = times if not quick else times[times <= 1.0]
    student, teacher = initial_matrices(config, 0)
    S0 = np.stack([student["F"][0] @ student["F"][0].T, teacher["F"][0] @ teacher["F"][0].T])
    calls[0] = 0
    start = time.perf_counter()
    path = MatrixFlow((1,), gamma, GAMMA).solve(S0, flow_t, config.rtol)
    flow_s = time.perf_counter() - start
    flow_calls = calls[0]
    ref = _moments_of(path, D)
    n = len(flow_t)
    diff = max(float(np.nanmax(np.abs(sol[k][:n] - ref[k]))) for k in NAMES)

    sim = time_simulator(values, min_steps=200 if quick else 2000)
    common = dict(family=FAMILY, d=D, M=M, weight_decay=GAMMA, load_average_1min=load)
    return [
        dict(
            common,
            name="hierarchy",
            horizon=HORIZON,
            seconds=hier_s,
            seconds_all=runs,
            compile_s=compile_s,
            gamma_calls=hier_calls,
            moments=len(hierarchy.words),
            ratio_to_simulator=hier_s / sim["seconds"],
            max_abs_diff_vs_flow=diff,
            target=f"seconds < {TARGET_HIERARCHY_S}",
            target_met=hier_s < TARGET_HIERARCHY_S,
        ),
        dict(
            common,
            name="matrix-flow",
            horizon=float(flow_t[-1]),
            seconds=flow_s,
            gamma_calls=flow_calls,
            ratio_to_simulator=flow_s / sim["seconds"] * (HORIZON / float(flow_t[-1])),
            ratio_note="flow seconds scaled to t = 10 when quick" if quick else None,
        ),
        dict(
            common,
            name="simulator",
            horizon=HORIZON,
            seconds=sim["seconds"],
            steps=sim["steps"],
            per_step_s=sim["per_step_s"],
            steps_timed=200 if quick else 2000,
            batch=values["batch"],
            ratio_to_simulator=1.0,
        ),
    ]
