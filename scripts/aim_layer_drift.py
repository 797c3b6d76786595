"""The AIM's initial drift at finite d: the population gradient against Theorem 1 and its
Edgeworth correction (docs/aim.md, "Finite d").

At the simulator's initial matrices (one seed), the drift of an order parameter O(θ) under online
SGD on the family's time axis is

    dO/dt = −(α_d/τ_d) ⟨∇_θ O, ∇_θ E_x L(G(x; θ))⟩,

estimated here three ways: by Monte Carlo over fresh tokens (``finite``, with its standard error
over chunks), with E_x L replaced by Theorem 1's Gaussian potential Φ (``limit``; P1 Eq. 10), and
by Φ plus the forms' third-cumulant term (``edgeworth``; attndyn.models.aim.theory.population).
Lemma 10 says finite − limit = O(d^−½); the Edgeworth term is that O(d^−½) part, so
finite − edgeworth should be O(1/d). One JSON row per (d, seed) on stdout.

    python scripts/aim_layer_drift.py --d 48 96 192 384 --seeds 4 --samples 1000000
    python scripts/aim_layer_drift.py --d 64 --set output=softmax --set heads=2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from attndyn.core.config import parse_assignments
from attndyn.core.gaussian import antithetic
from attndyn.core.serial import json_safe
from attndyn.models.aim import AIMConfig
from attndyn.models.aim.observables import observe
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.population import sampled_drift, theory_drift
from attndyn.models.aim.theory.potential import potential_for

NAMES = ("t_1", "q_11", "q_12", "t_2", "q_22", "q_13", "q_24", "p_13", "p_24")


def drifts(config: AIMConfig, seed: int, samples: int, chunk: int, quad_log2: int) -> dict:
    student, teacher = initial_matrices(config, seed)
    names = [n for n in NAMES if n in observe(student, teacher, config.param, 2)]
    finite, se = sampled_drift(config, seed, names, samples, chunk)
    potential = potential_for(config, log2_qmc=quad_log2)
    potential = dataclasses.replace(potential, rule=antithetic(potential.rule), _jit={})
    limit = theory_drift(config, seed, names, potential, 2)
    edgeworth = theory_drift(config, seed, names, potential, 3)
    return {
        n: {"finite": finite[i], "se": se[i], "limit": limit[i], "edgeworth": edgeworth[i]}
        for i, n in enumerate(names)
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, nargs="+", default=[48, 96])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--samples", type=int, default=200_000)
    p.add_argument("--chunk", type=int, default=2_000)
    p.add_argument("--quad-log2", type=int, default=17)
    p.add_argument("--set", action="append", default=[], help="config field key=value")
    args = p.parse_args()
    base = dict(param="tied", output="two-layer", L=2, lr=0.05, batch=32, t_max=0.5)
    base |= parse_assignments(args.set) | {"dtype": "float64"}
    for d in args.d:
        config = AIMConfig(**{**base, "d": d})
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            row = drifts(config, seed, args.samples, args.chunk, args.quad_log2)
            out = {"d": d, "seed": seed, "wall_s": round(time.perf_counter() - t0, 1)}
            print(json.dumps(out | {"drift": json_safe(row)}), flush=True)


if __name__ == "__main__":
    main()
