"""Sweep specs: expansion, zip, grouping into tasks, and bad specs (exit 2, nothing written)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap

import pytest
from helpers import cli

from attndyn.claims.runner import experiment_config, experiment_key
from attndyn.core.config import run_id
from attndyn.errors import InputError
from attndyn.runs import family_config as make_config
from attndyn.sweep import load_spec, make_tasks, parse_spec, plan_sweep

ISSUE_SPEC = """
family = "aim"
[base]
param = "tied"
[grid]
d = [16, 20, 24, 28, 32]
seed = [0, 1, 2, 3, 4, 5, 6, 7]
"""


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_issue_spec_expands_to_40_runs_in_grid_order(tmp_path):
    spec = load_spec(write(tmp_path, ISSUE_SPEC))
    items = spec.expand()
    assert len(items) == 40
    expected = [  # a grid over seed implies seeds = 1: each run stores its own seed only
        run_id("aim", make_config("aim", {"param": "tied", "d": d, "seed": s, "seeds": 1}))
        for d, s in itertools.product([16, 20, 24, 28, 32], range(8))
    ]
    assert [r.run_id for r in items] == expected
    assert items[0].point == {"d": 16, "seed": 0} and items[-1].point == {"d": 32, "seed": 7}


def test_issue_spec_groups_seeds_into_one_vmapped_task_per_d(tmp_path):
    spec = load_spec(write(tmp_path, ISSUE_SPEC))
    items = spec.expand()
    tasks = make_tasks(spec, items)
    assert len(tasks) == 5
    for task, d in zip(tasks, [16, 20, 24, 28, 32], strict=True):
        (group,) = task.groups
        assert {r.config["d"] for r in group.runs} == {d}
        assert len(group.runs) == 8
        # seeds = 1 per grid point: configs seed = 0..7 are seeds 0..7, simulated once each
        assert group.seeds == tuple(range(8))
        assert [r.config["seeds"] for r in group.runs] == [1] * 8
    assert sorted(r.run_id for t in tasks for r in t.runs) == sorted(r.run_id for r in items)


def test_grouping_is_a_function_of_the_spec_only(tmp_path):
    spec = load_spec(write(tmp_path, ISSUE_SPEC))
    first = make_tasks(spec, spec.expand())
    again = make_tasks(load_spec(write(tmp_path, ISSUE_SPEC, "copy.toml")), spec.expand())
    assert [t.groups for t in first] == [t.groups for t in again]
    # what is already stored does not change the tasks (a partial store plans the same tasks)
    plan = plan_sweep(spec, tmp_path / "empty-results")
    assert [t.groups for t in plan.tasks] == [t.groups for t in first]


def test_group_seeds_false_runs_each_config_alone(tmp_path):
    spec = load_spec(write(tmp_path, "group_seeds = false\n" + ISSUE_SPEC))
    tasks = make_tasks(spec, spec.expand())
    assert len(tasks) == 40
    assert all(len(t.groups) == 1 and t.groups[0].seeds is None for t in tasks)


def test_max_group_seeds_splits_groups_in_seed_order(tmp_path):
    spaced = ISSUE_SPEC.replace("seed = [0, 1, 2, 3, 4, 5, 6, 7]", "seed = [0, 2, 4, 6, 8]")
    spaced = spaced.replace('param = "tied"', 'param = "tied"\nseeds = 2')
    spec = load_spec(write(tmp_path, "max_group_seeds = 5\n" + spaced))
    tasks = make_tasks(spec, spec.expand())
    for task in tasks:
        (group,) = task.groups
        seeds = group.seeds or tuple(range(group.runs[0].config["seed"], 10))  # a lone run
        assert len(seeds) <= 5
        for r in group.runs:  # every config's seeds are inside its group
            assert set(range(r.config["seed"], r.config["seed"] + 2)) <= set(seeds)
    assert len(tasks) == 5 * 3  # seeds 0-3 (configs 0, 2), 4-7 (4, 6), config 8 alone
    assert [t.groups[0].seeds for t in tasks[:3]] == [(0, 1, 2, 3), (4, 5, 6, 7), None]
    assert sum(len(t.runs) for t in tasks) == 25


def test_zip_pairs_lists_and_a_zip_list_crosses_the_pair_with_the_rest():
    base = {"family": "aim", "base": {"d": 8}}
    paired = parse_spec({**base, "zip": True, "grid": {"lr": [0.1, 0.2], "seed": [3, 4]}})
    assert list(paired.points()) == [{"lr": 0.1, "seed": 3}, {"lr": 0.2, "seed": 4}]
    partial = parse_spec(
        {
            **base,
            "zip": ["lr", "batch"],
            "grid": {"lr": [0.1, 0.2], "seed": [0, 1], "batch": [2, 4]},
        }
    )
    assert list(partial.points()) == [
        {"lr": 0.1, "batch": 2, "seed": 0},
        {"lr": 0.1, "batch": 2, "seed": 1},
        {"lr": 0.2, "batch": 4, "seed": 0},
        {"lr": 0.2, "batch": 4, "seed": 1},
    ]


def test_duplicate_points_are_run_once():
    spec = parse_spec({"family": "aim", "grid": {"d": [8, 8, 10]}})
    assert len(spec.expand()) == 2


def test_experiment_spec_expands_to_experiment_runs():
    spec = parse_spec(
        {
            "experiment": "aim-parameterization",
            "preset": "small",
            "zip": True,
            "grid": {"seeds": [2, 3], "seed": [0, 2]},  # seeds 0-1 and 2-4: disjoint
        }
    )
    items = spec.expand()
    keys = [
        experiment_key(
            "aim-parameterization",
            "small",
            experiment_config("aim-parameterization", "small", {"seeds": n, "seed": s})[1],
        )
        for n, s in ((2, 0), (3, 2))
    ]
    assert [r.run_id for r in items] == keys
    assert [len(t.groups) for t in make_tasks(spec, items)] == [1, 1]


def test_dry_run_lists_runs_and_writes_nothing(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, ISSUE_SPEC)
    out = tmp_path / "results"
    code, stdout, _ = cli(
        monkeypatch, capsys, "sweep", str(path), "--dry-run", "--json", "--out", str(out)
    )
    assert code == 0
    rows = json.loads(stdout)["rows"]
    assert len(rows) == 40 and not any(r["stored"] for r in rows)
    assert {r["task"] for r in rows} == set(range(5))
    assert not out.exists()
    code, stdout, _ = cli(monkeypatch, capsys, "sweep", str(path), "--dry-run", "--out", str(out))
    assert code == 0 and "40 runs in 5 tasks: 0 stored, 40 to run" in stdout
    assert not out.exists()


BAD_SPECS = [
    ('experiment = "no-such-experiment"\n[grid]\nseeds = [1]\n', "unknown experiment"),
    ('family = "no-such-family"\n[grid]\nd = [8]\n', "unknown family"),
    ('family = "aim"\n[grid]\ndd = [8, 16]\n', "unknown config field 'dd'"),
    ('family = "aim"\n[base]\nwidth = 3\n[grid]\nd = [8]\n', "unknown config field 'width'"),
    ('family = "aim"\nworkers = 3\n[grid]\nd = [8]\n', "unknown key 'workers'"),
    ('family = "aim"\n[grid]\nd = ["big", "small"]\n', "invalid value for 'd'"),
    ('family = "aim"\n[base]\nparam = "both"\n[grid]\nd = [8]\n', "invalid value for 'param'"),
    ('family = "aim"\n[grid]\nd = 16\n', "grid 'd' must be a list"),
    ('family = "aim"\n[grid]\nd = []\n', "grid 'd' is an empty list"),
    ('family = "aim"\n[grid]\n', "[grid] is empty"),
    ('family = "aim"\n[base]\nd = 8\n', "[grid] is empty"),
    ('family = "aim"\n[grid\nd = [8]\n', "not valid TOML"),
    ('family = "aim"\nzip = true\n[grid]\nd = [8, 16]\nseed = [1]\n', "equal lengths"),
    ('family = "aim"\n[base]\nd = 8\n[grid]\nd = [8]\n', "in both [base] and [grid]"),
    (
        'experiment = "aim-parameterization"\n[grid]\nnope = [1]\n',
        "unknown config field 'nope'",
    ),
    (
        'experiment = "aim-parameterization"\npreset = "huge"\n[grid]\nseeds = [1]\n',
        "invalid value for 'preset'",
    ),
    ('family = "aim"\nexperiment = "aim-parameterization"\n[grid]\nd = [8]\n', "exactly one"),
]


@pytest.mark.parametrize("text, message", BAD_SPECS)
def test_bad_spec_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "results"
    code, stdout, stderr = cli(monkeypatch, capsys, "sweep", str(path), "--out", str(out))
    assert code == 2, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], stderr
    assert lines[0].startswith("error: ")
    assert not out.exists()


def test_unreadable_spec_file(tmp_path, monkeypatch, capsys):
    out = tmp_path / "results"
    code, _, stderr = cli(
        monkeypatch, capsys, "sweep", str(tmp_path / "missing.toml"), "--out", str(out)
    )
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "cannot read sweep spec" in stderr and not out.exists()
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, _, stderr = cli(monkeypatch, capsys, "sweep", str(binary), "--out", str(out))
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and not out.exists()


def test_bad_executor_options_exit_2(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, ISSUE_SPEC)
    out = tmp_path / "results"
    for args, message in [
        (["--executor", "mpi"], "'executor'"),
        (["--workers", "0"], "'workers'"),
        (["--address", "tcp://127.0.0.1:1"], "--address needs --executor dask"),
    ]:
        code, _, stderr = cli(monkeypatch, capsys, "sweep", str(path), "--out", str(out), *args)
        assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_bad_spec_as_a_real_process(tmp_path):
    """The installed entry point: exit code 2 and one line, nothing written."""
    path = tmp_path / "bad.toml"
    path.write_text('family = "aim"\n[grid]\nd = ["x"]\n')
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "sweep", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "invalid value for 'd'" in proc.stderr
    assert not out.exists()


def test_parse_errors_are_input_errors():
    with pytest.raises(InputError, match="'max_group_seeds' must be a positive integer"):
        parse_spec({"family": "aim", "max_group_seeds": 0, "grid": {"d": [8]}})
    with pytest.raises(InputError, match="'zip' must be"):
        parse_spec({"family": "aim", "zip": "yes", "grid": {"d": [8]}})
