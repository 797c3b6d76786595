"""What the HTML report shows, gathered from a results folder (docs/report.md).

Everything is read through the store's views (docs/store.md): ``experiments`` and each record's
footer (claims, preconditions, the runs it used), ``runs``, ``failures``, the observables reduced
to seed mean, min and max per run, name and time in one DuckDB query, and the problems that
``attndyn runs --check`` lists (:mod:`attndyn.store.check`). Nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from attndyn.core.config import GridConfig, SimulationConfig, flatten
from attndyn.store import check, queries
from attndyn.store.files import META_KEY, Store

# columns of the run table that are the run's own, not config fields
HIDDEN_FIELDS = {"seed", "seeds"}
MAX_POINTS = 2000  # record points per observable on a run page (evenly spaced in the record index)
FAILURE_FIELDS = ("run_id", "kind", "name", "sweep", "error", "traceback", "created")


@dataclass
class SiteData:
    """A results folder, ready to render. ``series[run_id][name]`` holds ``t``, ``mean``,
    ``lo``, ``hi`` (min and max over the finite seeds) and ``n`` (seeds); ``theory_of`` maps a
    simulation's run id to the theory runs of its config, ``simulations_of`` the reverse."""

    root: Path
    experiments: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    config_columns: list[str] = field(default_factory=list)
    series: dict[str, dict[str, dict[str, list | int]]] = field(default_factory=dict)
    theory_of: dict[str, list[str]] = field(default_factory=dict)
    simulations_of: dict[str, list[str]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    damaged: list[check.Problem] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)  # figures/*.png of no experiment record

    @property
    def diverged(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["n_diverged"]]

    @property
    def empty(self) -> bool:
        return not (self.runs or self.experiments or self.failures or self.damaged or self.figures)


def _number(v: Any) -> float | None:
    """A finite float, else None (JSON has no NaN)."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _paper(name: str) -> str:
    """The experiment's one-line description (its paper and figure), or '' when the experiment
    is not installed here."""
    from attndyn.claims import get_experiment

    try:
        return get_experiment(name).description
    except Exception:  # a plug-in experiment no longer installed: the record still shows
        return ""


def _retired(name: str) -> list[dict[str, str]]:
    """The experiment's retired claims (:class:`~attndyn.claims.spec.Retired`), or [] when the
    experiment is not installed here."""
    from attndyn.claims import get_experiment

    try:
        return [r.as_dict() for r in get_experiment(name).retired]
    except Exception:  # a plug-in experiment no longer installed: the record still shows
        return []


def _experiments(con) -> list[dict[str, Any]]:
    rows = con.execute(
        "SELECT key, experiment, preset, control, verdict, passed, n_claims, n_passed, wall_s, "
        "created, file FROM experiments ORDER BY created DESC, key"
    ).fetchall()
    cols = ["key", "experiment", "preset", "control", "verdict", "passed", "n_claims"]
    cols += ["n_passed", "wall_s", "created", "file"]
    papers: dict[str, str] = {}
    out = []
    for row in rows:
        exp = dict(zip(cols, row, strict=True))
        record = json.loads(pq.read_schema(exp["file"]).metadata[META_KEY])
        exp["claims"] = [
            c | {k: _number(c.get(k)) for k in ("value", "ci_low", "ci_high")}
            for c in record.get("claims", [])
        ]
        exp["preconditions"] = record.get("preconditions", [])
        exp["summary"] = record.get("summary", {})
        exp["config"] = record.get("config", {})
        exp["run_ids"] = record.get("run_ids", [])
        if exp["experiment"] not in papers:
            papers[exp["experiment"]] = _paper(exp["experiment"])
        exp["paper"] = papers[exp["experiment"]]
        exp["retired"] = _retired(exp["experiment"])
        figure = Path(exp["file"]).parents[1] / "figures" / f"{exp['key']}.png"
        if not figure.is_file() and record.get("figure"):  # where the record says it wrote it
            figure = Path(record["figure"])
        exp["figure"] = figure if figure.is_file() else None
        out.append(exp)
    return out


def _runs(con, root: Path) -> list[dict[str, Any]]:
    rows = con.execute(
        "SELECT run_id, family, kind, experiment, sweep, status, n_diverged, wall_s, created, "
        "config FROM runs ORDER BY family, kind, created, run_id"
    ).fetchall()
    store = Store(root)
    out = []
    for rid, family, kind, exps, sweep, status, n_div, wall, created, cfg in rows:
        flat = flatten(json.loads(cfg) if cfg else {})
        run = {
            "run_id": rid,
            "family": family,
            "kind": kind,
            "experiment": exps or "",
            "sweep": sweep or "",
            "status": status,
            "n_diverged": int(n_div or 0),
            "wall_s": _number(wall),
            "created": created or "",
            "config": flat,
            "seeds": flat.get("seeds") if kind == "simulation" else None,
            "diverged_step": {},
        }
        if run["n_diverged"]:  # the per-seed marks are in the record only
            with contextlib.suppress(Exception):
                steps = store.metadata(rid).get("diverged_step", {})
                run["diverged_step"] = {s: v for s, v in steps.items() if v >= 0}
        out.append(run)
    return out


def config_columns(runs: list[dict[str, Any]]) -> list[str]:
    """The config fields whose value differs between runs, in first-seen order."""
    values: dict[str, set[str]] = {}
    for run in runs:
        for k, v in run["config"].items():
            values.setdefault(k, set()).add(json.dumps(v))
    seen = {k: len(v) for k, v in values.items()}
    counts = len(runs)
    return [
        k
        for k, n in seen.items()
        if k not in HIDDEN_FIELDS
        and (n > 1 or sum(k in r["config"] for r in runs) not in (0, counts))
    ]


def _series(con) -> dict[str, dict[str, dict[str, list | int]]]:
    """Seed mean, min and max of every observable of every run, by time (one query)."""
    frame = con.execute(
        "SELECT run_id, name, time, avg(value) AS mean, min(value) AS lo, max(value) AS hi, "
        "count(value) AS n FROM observables GROUP BY ALL ORDER BY run_id, name, time"
    ).df()
    if frame.empty:
        return {}
    rid = frame["run_id"].to_numpy(dtype=object)
    name = frame["name"].to_numpy(dtype=object)
    cols = {c: frame[c].to_numpy(dtype=float) for c in ("time", "mean", "lo", "hi")}
    n = frame["n"].to_numpy(dtype=float)
    # boundaries of (run_id, name) groups in the sorted rows
    change = np.flatnonzero((rid[1:] != rid[:-1]) | (name[1:] != name[:-1])) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(rid)]])
    out: dict[str, dict[str, dict[str, list | int]]] = {}
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        pick = np.arange(a, b)
        if b - a > MAX_POINTS:  # a page plots at most MAX_POINTS, the first and last kept
            pick = a + np.unique(np.linspace(0, b - a - 1, MAX_POINTS).round().astype(int))
        out.setdefault(str(rid[a]), {})[str(name[a])] = {
            "t": _finite_list(cols["time"][pick]),
            "mean": _finite_list(cols["mean"][pick]),
            "lo": _finite_list(cols["lo"][pick]),
            "hi": _finite_list(cols["hi"][pick]),
            "n": int(n[a:b].max()),
        }
    return out


def _finite_list(values: np.ndarray) -> list[float | None]:
    """Floats with NaN as None (missing values of diverged seeds)."""
    return [None if v != v else v for v in values.tolist()]


def match_theory(runs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """simulation run id -> theory run ids of its config: same family, and every field of the
    simulation's config, except the simulator's own (seeds, seed, dtype: the fields a
    :class:`~attndyn.core.config.SimulationConfig` adds to a GridConfig, when the theory has
    none of them), present in the theory's with the same value. A built-in theory's ``Config``
    is the simulator's plus its own fields (e.g. ``method``; models/*/theory); a plug-in's may be
    the simulator's grid alone (docs/plugins.md)."""
    sim_only = frozenset(SimulationConfig.model_fields) - frozenset(GridConfig.model_fields)
    theories: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if run["kind"] == "theory":
            theories.setdefault(run["family"], []).append(run)
    indexed: set[tuple[str, frozenset]] = set()
    index: dict[tuple[str, str], list[str]] = {}  # (family, sim fields as JSON) -> theory ids
    out: dict[str, list[str]] = {}

    def key_of(config: dict[str, Any], fields: frozenset) -> str:
        return json.dumps({k: config[k] for k in sorted(fields)})

    for run in runs:
        family = run["family"]
        if run["kind"] != "simulation" or family not in theories:
            continue
        fields = frozenset(run["config"])
        if (family, fields) not in indexed:  # this family's theories on these fields, once
            indexed.add((family, fields))
            for th in theories[family]:
                shared = fields if fields <= th["config"].keys() else fields - sim_only
                if shared <= th["config"].keys():
                    index.setdefault((family, key_of(th["config"], shared)), []).append(
                        th["run_id"]
                    )
        for shared in (fields, fields - sim_only):
            if found := index.get((family, key_of(run["config"], shared))):
                out[run["run_id"]] = found
                break
    return out


def collect(root: Path) -> SiteData:
    """Everything the report shows of the results folder ``root`` (an existing folder)."""

    def ask(con) -> SiteData:
        data = SiteData(root=root)
        data.experiments = _experiments(con)
        data.runs = _runs(con, root)
        data.series = _series(con)
        data.failures = [
            dict(zip(FAILURE_FIELDS, r, strict=True))
            for r in con.execute(
                f"SELECT {', '.join(FAILURE_FIELDS)} FROM failures ORDER BY created DESC"
            ).fetchall()
        ]
        return data

    data = queries.answer(root, ask)
    data.config_columns = config_columns(data.runs)
    data.theory_of = match_theory(data.runs)
    for sim, ths in data.theory_of.items():
        for th in ths:
            data.simulations_of.setdefault(th, []).append(sim)
    data.damaged = check.problems(root)
    shown = {e["figure"] for e in data.experiments}
    figures = root / "figures"
    if figures.is_dir():  # e.g. the demo's figure
        data.figures = sorted(p for p in figures.glob("*.png") if p not in shown)
    return data
