"""The two-layer AIM along SGD's path: online SGD against the population flow with and without the
Edgeworth term (docs/aim.md, "Finite d", "Along SGD's path").

Runs (or reads back from OUT) the SGD runs and the per-seed `population-flow` predictions
(cumulants 2 and 3) of the tied model with one residual layer and a softmax readout, then prints,
per d, the change Δ of each order parameter over the horizon, the gap SGD − flow paired by seed,
and the log–log slope of the gap over d (jackknife-t over seed pairs). The docs' table: OUT with
`--d 96 192 384 --sgd-seeds 16 16 8 --theory-seeds 4` (about an hour on two cores).

    python scripts/aim_layer_paths.py --out results --d 96 192 --sgd-seeds 8 8 --theory-seeds 2
"""

from __future__ import annotations

import argparse

import numpy as np

import attndyn
from attndyn.claims.stats import jackknife_ci

MODEL = dict(param="tied", output="softmax", layers=1, L=2, batch=32, lr=0.05, t_max=0.5)
GRID = dict(grid="linear", records=11)
NAMES = ("t_1", "q_11", "q_13", "q_12", "t_2", "q_22", "p_24")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--d", type=int, nargs="+", default=[96, 192, 384])
    p.add_argument("--sgd-seeds", type=int, nargs="+", default=[16, 16, 8])
    p.add_argument("--theory-seeds", type=int, default=4)
    p.add_argument("--quad-log2", type=int, default=16)
    args = p.parse_args()
    common = dict(MODEL, **GRID, out=args.out, progress=False)
    gaps: dict = {}
    for d, n_sgd in zip(args.d, args.sgd_seeds, strict=True):
        sgd = attndyn.simulate("aim", d=d, seeds=n_sgd, **common)
        print(f"d = {d}: SGD {n_sgd} seeds, theory seeds 0..{args.theory_seeds - 1}")
        for name in NAMES:
            delta = sgd[name].values[:, -1] - sgd[name].values[:, 0]
            se_sgd = delta.std(ddof=1) / np.sqrt(n_sgd)
            row = f"  {name:5s} SGD Δ {delta.mean():+.5f} ± {se_sgd:.5f}"
            for cum in (2, 3):
                pairs = []
                for s in range(args.theory_seeds):
                    flow = attndyn.predict(
                        "aim", d=d, seeds=1, seed=s, method="population-flow", cumulants=cum,
                        quad_log2=args.quad_log2, rtol=1e-6, **common,
                    )  # fmt: skip
                    pairs.append(delta[s] - float(flow[name].values[-1] - flow[name].values[0]))
                gaps.setdefault((name, cum), []).append(pairs)
                se = np.std(pairs, ddof=1) / np.sqrt(len(pairs))
                row += f" | cumulants {cum}: gap {np.mean(pairs):+.5f} ± {se:.5f}"
            print(row)
    logd = np.log(args.d)
    print(f"log–log slope of |gap| over d = {args.d} (jackknife-t 95 %):")
    for (name, cum), groups in gaps.items():
        iv = jackknife_ci(
            groups,
            lambda *g: float(np.polyfit(logd, np.log(np.abs([np.mean(x) for x in g])), 1)[0]),
        )
        print(f"  {name} cumulants {cum}: {iv.value:.3f} [{iv.low:.3f}, {iv.high:.3f}]")


if __name__ == "__main__":
    main()
