"""Coverage of the claims' intervals at the seed counts the claims use beyond the test suite's
(docs/claims.md, "Verdicts with uncertainty"; issue 49 item 5).

    python scripts/coverage_counts.py [--reps 400] [--counts 125 128 160 1000 1024]

The seed counts in use are read from the measured records (docs/claims/measured/*.json,
``n_seeds``); tests/test_interval_coverage.py measures n = 2 … 80, this script the larger ones,
with the same cases (Gaussian and skewed Gamma(4) per-seed values; means, paired differences,
ratios, paired ratios and log–log slopes over three d; tests/test_interval_coverage.py ``case``)
and the percentile bootstrap of a ratio. It prints a Markdown table of coverage at nominal 0.95.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_interval_coverage import case, draw, ratio  # noqa: E402

from attndyn.claims.stats import bootstrap_ci  # noqa: E402

SHAPES = ("mean", "paired-difference", "ratio", "paired-ratio", "slope")


def counts_in_use() -> Counter:
    seen: Counter = Counter()
    for path in (ROOT / "docs" / "claims" / "measured").glob("*.json"):
        for entry in json.loads(path.read_text()).values():
            if not entry["control"]:
                seen.update(c["n_seeds"] for c in entry["claims"] if c.get("n_seeds"))
    return seen


def t_coverage(shape: str, law: str, n: int, reps: int) -> float:
    rng = np.random.default_rng(1000 * n + len(shape) + (law == "gamma"))
    hits = 0
    for _ in range(reps):
        interval, truth = case(shape, rng, law, n)
        hits += interval.low <= truth <= interval.high
    return hits / reps


def bootstrap_coverage(n: int, reps: int) -> float:
    rng = np.random.default_rng(7 + n)
    hits = 0
    for r in range(reps):
        a, b = draw(rng, "gamma", n, 2.0), draw(rng, "gamma", n, 1.0)
        interval = bootstrap_ci([a, b], ratio, n_boot=400, seed=r)
        hits += interval.low <= 2.0 <= interval.high
    return hits / reps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--counts", type=int, nargs="*")
    args = parser.parse_args()
    used = counts_in_use()
    counts = args.counts or sorted(n for n in used if n > 80)
    print("| n | claims using it | " + " | ".join(SHAPES) + " | bootstrap ratio |")
    print("|---" * (len(SHAPES) + 3) + "|")
    for n in counts:
        cells = []
        for shape in SHAPES:
            g, m = (t_coverage(shape, law, n, args.reps) for law in ("gauss", "gamma"))
            cells.append(f"{min(g, m):.3f}–{max(g, m):.3f}")
        boot = bootstrap_coverage(n, max(100, args.reps // 2))
        print(f"| {n} | {used.get(n, 0)} | " + " | ".join(cells) + f" | {boot:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
