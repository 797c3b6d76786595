"""Seeds stored once, lazy grids and cost estimates (issue 14, items 7 and 10).

- every sweep spec in the docs stores each (config without seed, seed) trajectory in one run,
  and a sweep that runs does so in the store's observables view (the last test);
- a 10⁷-point grid answers a dry run with its counts, without building the grid;
- ``--dry-run`` prints steps, memory and a calibrated time; above ``--max-hours`` a run or a
  sweep needs ``--yes`` (exit 2, one line, nothing written).
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
import time
import tomllib
import tracemalloc
from pathlib import Path

import pytest
from helpers import cli

from attndyn.errors import InputError
from attndyn.runs import family_config
from attndyn.store import connect
from attndyn.sweep import load_spec, parse_spec
from attndyn.sweep.estimate import SAMPLE, estimate_sweep

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(d=8, t_max=0.05, records=4, batch=4, test_size=8)


def documented_specs() -> list[tuple[str, str]]:
    """(where, TOML) of every sweep spec in the README, docs/ and the spec module's docstring."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```toml\n(.*?)```", text, re.S)):
            if "[grid]" in block:
                found.append((f"{path.name} block {i}", block))
    doc = (ROOT / "src/attndyn/sweep/spec.py").read_text(encoding="utf-8")
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    found.append(("sweep/spec.py docstring", textwrap.dedent(block)))
    return found


def stored_seeds(items) -> dict[str, list[int]]:
    """Per config without seed/seeds: every seed its runs store (seed … seed + seeds − 1)."""
    seeds: dict[str, list[int]] = {}
    for item in items:
        rest = {k: v for k, v in item.config.items() if k not in ("seed", "seeds")}
        first, n = item.config["seed"], item.config["seeds"]
        seeds.setdefault(json.dumps(rest, sort_keys=True), []).extend(range(first, first + n))
    return seeds


def test_no_documented_sweep_stores_a_seed_twice():
    specs = documented_specs()
    assert len(specs) >= 3, specs  # README, docs/sweeps.md, the module docstring
    for where, text in specs:
        items = parse_spec(tomllib.loads(text), label=where).expand()
        for rest, seeds in stored_seeds(items).items():
            assert len(seeds) == len(set(seeds)), (where, rest, sorted(seeds))
        if "seed" in tomllib.loads(text)["grid"]:  # the grid's seeds are the stored seeds
            assert {item.config["seeds"] for item in items} == {1}, where


@pytest.mark.parametrize(
    "grid, base, field",
    [
        ({"seed": [0, 1]}, {"seeds": 4}, "grid.seed"),  # the case: seeds 0-3 and 1-4
        ({"seed": [0, 3], "seeds": [4]}, {}, "grid.seed"),
        ({"seeds": [2, 4]}, {}, "grid.seeds"),  # seed 0 both times: 0-1 inside 0-3
    ],
)
def test_overlapping_seed_ranges_are_rejected(tmp_path, monkeypatch, capsys, grid, base, field):
    spec = tmp_path / "overlap.toml"
    lines = ['family = "aim"', "[base]", *(f"{k} = {v}" for k, v in {**TINY, **base}.items())]
    lines += ["[grid]", *(f"{k} = {v}" for k, v in grid.items())]
    spec.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results"
    for extra in ([], ["--dry-run"]):
        code, stdout, stderr = cli(
            monkeypatch, capsys, "sweep", str(spec), "--out", str(out), *extra
        )
        assert code == 2 and stdout == ""
        (line,) = stderr.strip().splitlines()
        assert f"{field}: seed ranges overlap" in line and "space seeds by ≥ seeds" in line
        assert "set seeds = 1" in line
    assert not out.exists()


def test_seed_grid_implies_one_seed_unless_seeds_is_set():
    grid = {"lr": [0.02], "seed": [0, 1]}
    plain = parse_spec({"family": "aim", "base": TINY, "grid": grid}).expand()
    assert [(r.config["seed"], r.config["seeds"]) for r in plain] == [(0, 1), (1, 1)]
    spaced = {"family": "aim", "base": {**TINY, "seeds": 2}, "grid": {"seed": [0, 2]}}
    assert [r.config["seeds"] for r in parse_spec(spaced).expand()] == [2, 2]
    with pytest.raises(InputError, match="grid.seed: seed ranges overlap"):
        parse_spec({"family": "aim", "base": {**TINY, "seeds": 2}, "grid": grid}).expand()


def test_experiment_sweeps_reject_overlapping_seeds_too():
    spec = {"experiment": "aim-parameterization", "base": {"seeds": 2}, "grid": {"seed": [0, 1]}}
    with pytest.raises(InputError, match="grid.seed: seed ranges overlap"):
        parse_spec(spec).expand()
    spec["grid"]["seed"] = [0, 2]  # no seeds = 1 implied for experiments: spaced ranges pass
    assert [r.config["seeds"] for r in parse_spec(spec).expand()] == [2, 2]


def test_points_are_lazy_and_indexable():
    spec = parse_spec(
        {
            "family": "aim",
            "zip": ["lr", "batch"],
            "grid": {"lr": [0.1, 0.2], "seed": [0, 1, 2], "batch": [2, 4], "d": [8, 9]},
        }
    )
    expected = [
        {"lr": lr, "batch": b, "seed": s, "d": d}
        for (lr, b), s, d in itertools.product([(0.1, 2), (0.2, 4)], [0, 1, 2], [8, 9])
    ]
    assert spec.size == 12
    points = spec.points()
    assert not isinstance(points, list) and next(points) == expected[0]
    assert [spec.point(i) for i in range(12)] == expected
    assert spec.sample(5) == [0, 3, 6, 8, 11] and spec.sample(20) == list(range(12))


def big_spec(path: Path) -> Path:
    """10⁷ grid points: 100 step constants × 100 noise levels × 1000 seeds."""
    base = "\n".join(f"{k} = {v}" for k, v in TINY.items())
    lrs = [round(0.001 * (i + 1), 4) for i in range(100)]
    noise = [round(0.001 * i, 4) for i in range(100)]
    path.write_text(
        f'family = "aim"\n[base]\n{base}\n[grid]\nlr = {lrs}\nlabel_noise = {noise}\n'
        f"seed = {list(range(1000))}\n"
    )
    return path


def test_a_ten_million_point_dry_run_answers_with_counts(tmp_path, monkeypatch, capsys):
    path = big_spec(tmp_path / "big.toml")
    spec = load_spec(path)
    tracemalloc.start()
    try:
        est, plan = estimate_sweep(spec, tmp_path / "results", calibrated=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert plan is None and est.points == 10**7 and est.sampled
    assert est.validated == SAMPLE and peak < 50e6  # never the grid: ~GBs as a list of dicts
    start = time.perf_counter()
    out = tmp_path / "results"
    code, stdout, stderr = cli(
        monkeypatch, capsys, "sweep", str(path), "--dry-run", "--out", str(out)
    )
    assert code == 0, stderr
    assert "10000000 grid points" in stdout and f"{SAMPLE} evenly spaced points validated" in stdout
    assert re.search(r"time: ≈ [\d.]+", stdout), stdout
    assert time.perf_counter() - start < 60 and not out.exists()


def test_simulate_dry_run_prints_steps_memory_and_time_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    out = tmp_path / "results"
    sets = [a for k, v in {**TINY, "seeds": 3}.items() for a in ("--set", f"{k}={v}")]
    args = ["simulate", "aim", *sets, "--out", str(out)]
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--dry-run", "--json")
    assert code == 0, stderr
    est = json.loads(stdout)
    config = family_config("aim", {**TINY, "seeds": 3})
    assert (est["steps"], est["seeds"], est["stored"]) == (config.total_steps, 3, False)
    assert est["seed_steps"] == config.total_steps * 3
    assert est["seconds"] > 0 and est["memory_bytes"] == 8 * est["values"]
    assert not out.exists()
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--json")  # the run itself
    assert code == 0, stderr
    stored = connect(out).execute("SELECT count(*) FROM observables").fetchone()[0]
    assert est["values"] == stored  # every recorded value, counted before the run
    code, stdout, _ = cli(monkeypatch, capsys, *args, "--dry-run")
    assert code == 0 and "(stored)" in stdout and "time: " in stdout
    assert f"steps: {config.total_steps} × 3 seeds" in stdout


def test_a_run_above_max_hours_needs_yes(tmp_path, monkeypatch, capsys):
    out = tmp_path / "results"
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    args = ["simulate", "aim", *sets, "--out", str(out)]
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9")
    assert code == 2 and stdout == ""
    (line,) = stderr.strip().splitlines()
    assert "above --max-hours 1e-09" in line and "--yes" in line
    assert not out.exists()
    code, _, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9", "--yes", "--json")
    assert code == 0, stderr
    assert len(list((out / "runs").glob("*.parquet"))) == 1
    code, _, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "0")
    assert code == 2 and "'max-hours'" in stderr


@pytest.mark.long
def test_aim_at_a_long_horizon_is_refused_without_yes(tmp_path, monkeypatch, capsys):
    """The default limit (an hour): aim at t_max = 10⁴ (8.5·10⁸ steps; t_max = 10⁶ is beyond
    the trainer's step counter and rejected outright). Slow (~6 s: the calibration times
    enough steps to trust its per-step time); the refusal itself is tested above."""
    out = tmp_path / "results"
    code, _, stderr = cli(
        monkeypatch, capsys, "simulate", "aim", "--set", "t_max=1e4", "--out", str(out)
    )
    assert code == 2
    (line,) = stderr.strip().splitlines()
    assert "is estimated at" in line and "above --max-hours 1" in line and "--yes" in line
    assert not out.exists()


@pytest.mark.slow  # ~10 s: calibrates a real run before the dry run
def test_sweep_dry_run_json_and_the_limit(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "small.toml"
    base = "\n".join(f"{k} = {v}" for k, v in TINY.items())
    spec.write_text(f'family = "aim"\n[base]\n{base}\n[grid]\nlr = [0.02, 0.03]\nseed = [0, 1]\n')
    out = tmp_path / "results"
    code, stdout, stderr = cli(
        monkeypatch, capsys, "sweep", str(spec), "--dry-run", "--json", "--out", str(out)
    )
    assert code == 0, stderr
    est = json.loads(stdout)
    configs = [
        family_config("aim", {**TINY, "lr": lr, "seed": s, "seeds": 1})
        for lr in (0.02, 0.03)
        for s in (0, 1)
    ]
    assert (est["points"], est["runs"], est["to_run"], est["tasks"]) == (4, 4, 4, 2)
    assert est["steps"] == sum(c.total_steps * c.seeds for c in configs)
    assert est["seconds"] > 0 and est["memory_bytes"] > 0 and not est["sampled"]
    assert len(est["rows"]) == 4 and not out.exists()
    args = ["sweep", str(spec), "--out", str(out), "--workers", "1", "--no-progress"]
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9")
    assert code == 2 and stdout == "" and not out.exists()
    (line,) = stderr.strip().splitlines()
    assert line.startswith("error: sweep small (4 runs) is estimated at") and "--yes" in line
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9", "--yes")
    assert code == 0, stderr
    assert len(list((out / "runs").glob("*.parquet"))) == 4
    assert_each_seed_stored_once(out, n_configs=2, seeds=[0, 1])


def assert_each_seed_stored_once(out, n_configs, seeds):
    """In the observables view, each (config without seed, seed) comes from exactly one run,
    and the stored seeds are the grid's."""
    rows = (
        connect(out)
        .execute(
            "SELECT DISTINCT o.run_id, o.seed, r.config FROM observables o "
            "JOIN runs r USING (run_id)"
        )
        .fetchall()
    )
    owners: dict[tuple[str, int], set[str]] = {}
    for rid, seed, config in rows:
        rest = {k: v for k, v in json.loads(config).items() if k not in ("seed", "seeds")}
        owners.setdefault((json.dumps(rest, sort_keys=True), seed), set()).add(rid)
    assert len(owners) == n_configs * len(seeds)
    assert all(len(runs) == 1 for runs in owners.values()), owners
    assert sorted({seed for _, seed in owners}) == seeds
