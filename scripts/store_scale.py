"""Listing and querying a results folder with many small runs.

Creates ``--n`` synthetic runs (small Trajectories: 2 seeds × 20 record points × 6 observables,
written through ``Store.write`` exactly like real runs), then times, each in a fresh process:

- ``list``: what ``attndyn runs`` does (open the views, ``SELECT * FROM runs``), cold (first read
  of the folder) and warm (again, nothing changed); ``list aim``: the typed view ``runs_aim``
  (what ``attndyn runs --family aim`` reads);
- ``list+1``: the same after one more run was written (the catalog is updated incrementally);
- ``query``: a typical analysis query: the seed-mean final loss per (d, lr), joining ``runs_aim``
  and ``observables`` over every run;
- ``cli``: ``attndyn runs --family aim --where "d = 64" --csv`` as a subprocess (process start and
  imports included).

Usage::

    python scripts/store_scale.py --n 10000 --root /tmp/attndyn-scale      # create and time
    python scripts/store_scale.py --root /tmp/attndyn-scale --no-create    # time an existing folder
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

QUERY = """
SELECT r.d, r.lr, avg(o.value) AS final_loss, count(*) AS n
FROM runs_aim r JOIN observables o USING (run_id)
WHERE o.name = 'loss' AND o.time = 1.0
GROUP BY r.d, r.lr ORDER BY r.d, r.lr
"""


def _write_chunk(args: tuple[str, int, int]) -> int:
    import numpy as np

    from attndyn.core.config import run_id
    from attndyn.core.trajectory import make_trajectory
    from attndyn.models.aim import AIMConfig
    from attndyn.store import Store

    root, start, stop = args
    store = Store(root)
    times = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, 19)])
    steps = np.round(times * 1000).astype(np.int64)
    names = ("loss", "q_11", "q_12", "q_22", "m_1", "t_1")
    for i in range(start, stop):
        config = AIMConfig(
            d=16 * (1 + i % 8),
            lr=0.01 * (1 + (i // 8) % 5),
            seed=i // 40,
            seeds=2,
            t_max=1.0,
            records=20,
        )
        rng = np.random.default_rng(i)
        obs = {n: rng.standard_normal((2, times.size)) for n in names}
        traj = make_trajectory(
            obs,
            time=times,
            samples=steps,
            step=steps,
            seeds=np.arange(config.seed, config.seed + 2),
            family="aim",
            config=json.loads(config.model_dump_json()),
        )
        store.write(traj, run_id("aim", config), wall_s=0.01)
    return stop - start


def create(root: Path, n: int, workers: int) -> float:
    start = time.perf_counter()
    chunks = [(str(root), a, min(n, a + 250)) for a in range(0, n, 250)]
    with ProcessPoolExecutor(workers) as pool:
        done = sum(pool.map(_write_chunk, chunks))
    assert done == n
    return time.perf_counter() - start


TIMER = """
import json, sys, time
t0 = time.perf_counter()
from attndyn.store import connect
root, what = sys.argv[1], sys.argv[2]
if len(sys.argv) > 4:  # compare with another views module (e.g. the one before the catalog)
    import importlib.util
    spec = importlib.util.spec_from_file_location("views", sys.argv[4])
    views = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(views)
    connect = views.connect
t1 = time.perf_counter()
con = connect(root)
if what == "list":
    rows = con.execute("SELECT * FROM runs ORDER BY created, run_id").fetchall()
else:
    rows = con.execute(sys.argv[3]).fetchall()
t2 = time.perf_counter()
print(json.dumps({"rows": len(rows), "seconds": t2 - t1, "import_s": t1 - t0}))
"""


def timed(root: Path, what: str, sql: str = "", views: str | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", TIMER, str(root), what, sql, *([views] if views else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def check_cost(root: Path, repeats: int = 3) -> None:
    """The catalog's first build with and without its whole-file check (``catalog._verified``),
    alternating in this process (the same files, the same load)."""
    from attndyn.store import catalog as cat

    check = cat._verified

    def build(verify: bool) -> float:
        (root / cat.CATALOG).unlink(missing_ok=True)
        cat._verified = check if verify else (lambda runs, footers: footers)
        try:
            start = time.perf_counter()
            cat.load(root)
            return time.perf_counter() - start
        finally:
            cat._verified = check

    for _ in range(repeats):
        bare, full = build(False), build(True)
        print(f"catalog build: footers only {bare:.2f} s, with the whole-file check {full:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--root", type=Path, default=Path("/tmp/attndyn-store-scale"))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-create", action="store_true", help="time an existing folder")
    parser.add_argument(
        "--compare",
        help="also time this views module (e.g. the store's views.py before the catalog)",
    )
    parser.add_argument(
        "--check-cost",
        action="store_true",
        help="only time the catalog's first build with and without its whole-file check",
    )
    args = parser.parse_args()
    root = args.root
    if not args.no_create:
        shutil.rmtree(root, ignore_errors=True)
        print(f"creating {args.n} runs in {root} ...", flush=True)
        print(f"create: {create(root, args.n, args.workers):.1f} s", flush=True)
    if args.check_cost:
        check_cost(root)
        return
    catalog = root / "catalog.parquet"
    if catalog.exists():
        catalog.unlink()
    n_files = sum(1 for _ in (root / "runs").glob("*.parquet"))
    print(f"runs on disk: {n_files}")
    report = {}
    report["list (cold)"] = timed(root, "list")
    report["list (warm)"] = timed(root, "list")
    _write_chunk((str(root), n_files, n_files + 1))  # a new run (index not used yet)
    report["list (+1 run)"] = timed(root, "list")
    report["list aim (typed view)"] = timed(root, "query", "SELECT * FROM runs_aim")
    report["query: final loss by (d, lr), all runs"] = timed(root, "query", QUERY)
    report["query: again"] = timed(root, "query", QUERY)
    one = min(p.stem for p in (root / "runs").glob("*.parquet"))
    one_sql = f"SELECT * FROM observables WHERE run_id = '{one}'"
    report["query: one run's observables"] = timed(root, "query", one_sql)
    if args.compare:
        report["[compare] list"] = timed(root, "list", "", args.compare)
        report["[compare] query: final loss by (d, lr)"] = timed(root, "query", QUERY, args.compare)
        report["[compare] query: one run's observables"] = timed(
            root, "query", one_sql, args.compare
        )
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "attndyn", "runs", "--out", str(root)]
        + ["--family", "aim", "--where", "d = 64", "--csv"],
        check=True,
        capture_output=True,
    )
    report["cli: attndyn runs --family aim --where 'd = 64' --csv"] = {
        "rows": None,
        "seconds": time.perf_counter() - start,
    }
    for name, row in report.items():
        rows = "" if row["rows"] is None else f"  ({row['rows']} rows)"
        print(f"{name:45s} {row['seconds']:7.2f} s{rows}")


if __name__ == "__main__":
    main()
