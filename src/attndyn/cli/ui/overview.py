"""``attndyn show RUN_ID`` and ``attndyn summary``: one stored run, and a whole results folder,
read without SQL (docs/store.md describes the files and views they read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from attndyn.core.suggest import closest
from attndyn.errors import InputError
from attndyn.store.files import Store, results_dir


def folder(out) -> Path:
    """The results folder ``out`` (InputError, with a "did you mean", if it is not one)."""
    from attndyn.store.views import connect

    root = results_dir(out)
    if not root.is_dir():
        connect(root)  # raises the one error for a missing folder
    return root


def resolve(store: Store, prefix: str) -> str:
    """The stored run id that starts with ``prefix``; InputError naming the candidates when
    several do, or the closest ids when none does."""
    ids = store.run_ids()
    hits = [i for i in ids if i.startswith(prefix)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        shown = ", ".join(sorted(hits)[:10]) + (" …" if len(hits) > 10 else "")
        raise InputError(
            f"invalid value for 'run_id': {prefix!r} matches {len(hits)} runs: {shown}; "
            "give more characters"
        )
    near = closest(prefix, [i[: max(len(prefix), 4)] for i in ids], n=3)
    full = [i for i in ids if any(i.startswith(n) for n in near)][:3]
    hint = f" (did you mean {' or '.join(repr(i) for i in full)}?)" if full else ""
    raise InputError(
        f"invalid value for 'run_id': no stored run starts with {prefix!r} in {store.root}{hint}"
        " (attndyn runs lists them)"
    )


def final_values(traj, names=None) -> dict[str, dict[str, float | int | None]]:
    """Per observable (``names``, default all, sorted) at the last record point: mean and std
    over the finite seeds (None when no seed is finite) and how many seeds are finite (a theory
    run: its value, std 0)."""
    out = {}
    for name in sorted(traj.data_vars) if names is None else names:
        last = np.asarray(traj[name].isel(time=-1).values, dtype=float).reshape(-1)
        finite = last[np.isfinite(last)]
        mean, std = (float(np.mean(finite)), float(np.std(finite))) if finite.size else (None, None)
        out[name] = {"mean": mean, "std": std, "finite_seeds": int(finite.size)}
    return out


def show(out, prefix: str) -> dict[str, Any]:
    """Everything about one stored run: family, kind, status, config, seeds, diverged seeds
    (with the step), wall time, file and final observables."""
    store = Store(folder(out))
    rid = resolve(store, prefix)
    meta = store.metadata(rid)
    traj = store.read(rid)
    seeds = [int(s) for s in traj["seed"].values] if "seed" in traj.coords else []
    steps = {int(k): int(v) for k, v in (meta.get("diverged_step") or {}).items()}
    config = meta.get("config")
    return {
        "run_id": rid,
        "family": meta.get("family"),
        "kind": meta.get("kind"),
        "status": meta.get("status"),
        "created": meta.get("created"),
        "version": meta.get("version"),
        "wall_s": meta.get("wall_s"),
        "file": str(store.path(rid)),
        "config": json.loads(config) if isinstance(config, str) else config,
        "seeds": seeds,
        "diverged": [{"seed": s, "step": st} for s, st in sorted(steps.items()) if st >= 0],
        "time": float(traj["time"].values[-1]),
        "final": final_values(traj),
    }


def _rows(con, sql: str) -> list[dict[str, Any]]:
    frame = con.execute(sql).df()
    return json.loads(frame.to_json(orient="records"))


def summary(out) -> dict[str, Any]:
    """Counts of a results folder: runs by family and kind and by experiment, experiment
    records with their verdicts, diverged runs, failures and damaged or foreign files."""
    from attndyn.store.check import problems
    from attndyn.store.views import connect

    root = folder(out)
    con = connect(root)
    count = con.execute("SELECT count(*) FROM runs").fetchone()
    assert count is not None  # an aggregate gives one row
    return {
        "folder": str(root),
        "runs": count[0],
        "by_family": _rows(
            con,
            "SELECT family, kind, count(*) AS runs, sum(CASE WHEN n_diverged > 0 THEN 1 ELSE 0 "
            "END) AS diverged_runs, sum(n_diverged) AS diverged_seeds FROM runs "
            "GROUP BY family, kind ORDER BY family, kind",
        ),
        "by_experiment": _rows(
            con,
            "SELECT experiment, count(DISTINCT run_id) AS runs FROM experiment_runs "
            "GROUP BY experiment ORDER BY experiment",
        ),
        "experiments": _rows(
            con,
            "SELECT experiment, preset, control, verdict, n_passed, n_claims, created "
            "FROM experiments ORDER BY created",
        ),
        "diverged": _rows(
            con,
            "SELECT run_id, family, n_diverged FROM runs WHERE n_diverged > 0 ORDER BY created",
        ),
        "failures": _rows(con, "SELECT run_id, kind, name, error FROM failures ORDER BY created"),
        "damaged": [{"file": p.file, "problem": p.problem} for p in problems(root)],
    }
