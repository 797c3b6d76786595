"""The time of ``attndyn report`` on a results folder with many small runs.

Creates ``--n`` synthetic simulation runs with ``store_scale.py``'s generator (2 seeds × 20 record
points × 6 observables, written through ``Store.write`` like real runs) plus ``--theory`` theory
runs of the first configs (an ``AIMTheoryConfig`` with the same fields, so the report overlays
them), then runs ``attndyn report`` as a subprocess (process start and imports included) twice,
and times its parts in this process: gathering the data (views, the one observables query, the
damaged-file check) and rendering the pages.

Usage::

    python scripts/report_scale.py --n 10000 --root /tmp/attndyn-report-scale
    python scripts/report_scale.py --root /tmp/attndyn-report-scale --no-create
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import store_scale  # noqa: E402


def _write_theory(root: str, n: int) -> None:
    """Theory runs of the configs of store_scale's first ``n`` simulations."""
    import numpy as np

    from attndyn.core.config import run_id
    from attndyn.core.trajectory import make_trajectory
    from attndyn.models.aim.theory import AIMTheoryConfig
    from attndyn.store import Store

    store = Store(root)
    times = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, 19)])
    for i in range(n):
        sim = dict(d=16 * (1 + i % 8), lr=0.01 * (1 + (i // 8) % 5), seed=i // 40, seeds=2)
        config = AIMTheoryConfig(**sim, t_max=1.0, records=20)
        rng = np.random.default_rng(i)
        obs = {k: rng.standard_normal(times.size) for k in ("loss", "q_11", "q_12", "q_22")}
        traj = make_trajectory(
            obs,
            time=times,
            samples=np.round(times * 1000),
            family="aim",
            config=json.loads(config.model_dump_json()),
        )
        store.write(traj, run_id("aim:theory", config), wall_s=0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=9_500, help="simulation runs")
    parser.add_argument("--theory", type=int, default=500, help="theory runs")
    parser.add_argument("--root", type=Path, default=Path("/tmp/attndyn-report-scale"))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-create", action="store_true", help="time an existing folder")
    args = parser.parse_args()
    root = args.root
    if not args.no_create:
        shutil.rmtree(root, ignore_errors=True)
        print(f"creating {args.n} simulations and {args.theory} theory runs in {root} ...")
        start = time.perf_counter()
        store_scale.create(root, args.n, args.workers)
        _write_theory(str(root), args.theory)
        print(f"create: {time.perf_counter() - start:.1f} s", flush=True)
    n_files = sum(1 for _ in (root / "runs").glob("*.parquet"))
    print(f"runs on disk: {n_files}")
    (root / "catalog.parquet").unlink(missing_ok=True)  # the first report builds it
    for label in ("cold catalog", "warm catalog"):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "attndyn", "report", "--out", str(root)],
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            sys.exit(f"attndyn report failed:\n{proc.stderr}")
        print(f"attndyn report ({label}): {time.perf_counter() - start:.1f} s")

    from attndyn.report import site, sitedata
    from attndyn.store import check

    start = time.perf_counter()
    data = sitedata.collect(root)
    gathered = time.perf_counter()
    check.problems(root)
    checked = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        site.build(data, Path(tmp) / "site")
        rendered = time.perf_counter()
        size = sum(p.stat().st_size for p in (Path(tmp) / "site").rglob("*") if p.is_file())
    matched = len(data.theory_of)
    print(f"  gather (views, observables, check): {gathered - start:.1f} s")
    print(
        f"  the damaged-file check alone (runs --check, part of gather): {checked - gathered:.1f} s"
    )
    print(f"  render {len(data.runs) + 3} pages: {rendered - checked:.1f} s")
    print(f"  site size: {size / 1e6:.0f} MB; simulations with a theory overlaid: {matched}")


if __name__ == "__main__":
    main()
