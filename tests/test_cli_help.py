"""A CLI that explains itself: examples in every help (each one run or validated), --version and
-h, describe, show, summary, "did you mean", tables that fit the terminal."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
import typer
from helpers import cli
from rich.console import Console

import attndyn
from attndyn.cli import app as cli_mod
from attndyn.cli.ui import terminal
from attndyn.cli.ui.examples import EXAMPLES
from attndyn.version import __version__

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A results folder with two tiny aim runs; their ids."""
    root = tmp_path_factory.mktemp("help-results")
    base = dict(d=8, seeds=2, t_max=0.05, records=4, batch=4, test_size=16)
    ids = [
        attndyn.simulate("aim", out=root, **base).attrs["run_id"],
        attndyn.simulate("aim", out=root, **{**base, "t_max": 0.06}).attrs["run_id"],
    ]
    return root, ids


def commands() -> dict:
    return typer.main.get_command(cli_mod.app).commands


def test_version_and_short_help(monkeypatch, capsys):
    code, out, _ = cli(monkeypatch, capsys, "--version")
    assert (code, out.strip()) == (0, f"attndyn {__version__}")
    code, out, _ = cli(monkeypatch, capsys, "-h")
    assert code == 0 and "Usage" in out
    for name in commands():
        code, out, err = cli(monkeypatch, capsys, name, "-h")
        assert code == 0 and "Usage" in out, (name, err)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_command_has_examples_in_its_help(monkeypatch, capsys):
    assert set(commands()) <= set(EXAMPLES)
    for name in commands():
        code, out, _ = cli(monkeypatch, capsys, name, "--help")
        assert code == 0
        for line, _what in EXAMPLES[name]:
            assert _flat(line) in _flat(out), (name, line)
    for name in ("simulate", "predict"):
        _, out, _ = cli(monkeypatch, capsys, name, "--help")
        assert "attndyn describe FAMILY" in _flat(out)
        for family in attndyn.models.family_names():
            assert family in out


def _validate(name: str, params: dict, tmp: Path) -> None:
    """What a command that computes would check before computing (it must not raise)."""
    from attndyn import runs
    from attndyn.claims.runner import experiment_config
    from attndyn.cli.options import config_values as _values
    from attndyn.models import benchmarks
    from attndyn.sweep.run import plan_sweep

    if name == "simulate":
        runs.family_config(params["family"], _values(params["set_"], params["seeds"]))
    elif name == "predict":
        runs.theory_config(params["family"], _values(params["set_"]))
    elif name == "run":
        values = _values(params["set_"], params["seeds"])
        experiment_config(params["name"], params["preset"], values, params["control"])
    elif name == "sweep":
        toml = re.search(r"```toml\n(# dims\.toml.*?)```", (DOCS / "sweeps.md").read_text(), re.S)
        (tmp / "dims.toml").write_text(toml.group(1))
        plan_sweep(tmp / params["spec"], tmp / "sweep-results")
    elif name == "bench":
        assert params["name"] in benchmarks()


COMPUTES = {"simulate", "predict", "run", "sweep", "demo"}


def test_every_example_works(folder, monkeypatch, capsys, tmp_path):
    """Commands that read run for real on the scratch folder; commands that compute are parsed
    and their config validated (the tests of those commands run them)."""
    root, ids = folder
    monkeypatch.chdir(tmp_path)
    group = typer.main.get_command(cli_mod.app)
    for name, examples in EXAMPLES.items():
        for line, _ in examples:
            argv = shlex.split(line.replace("RUN_ID", ids[0][:6]))[1:]
            assert argv[0] == name
            ctx = group.commands[name].make_context(name, argv[1:])  # parses: options exist
            if name in COMPUTES or (name == "bench" and ctx.params["name"]):
                _validate(name, ctx.params, tmp_path)
                continue
            if "out" in ctx.params:
                argv += ["--out", str(root)]
            code, out, err = cli(monkeypatch, capsys, *argv)
            assert code == 0, (line, err)
            assert (out + err).strip(), line  # runs --check reports on stderr


@pytest.mark.parametrize(
    "args, hint",
    [
        (["simulate", "aim", "--set", "dd=3"], "'d'"),
        (["simulate", "aimm"], "'aim'"),
        (["describe", "aim-solvabl"], "'aim-solvable'"),
        (["run", "aim-solvable", "--preset", "tinyy"], "'tiny'"),
        (["run", "aim-solvable", "--control", "time2x"], "'time-2x'"),
        (["bench", "--name", "circuit"], "'circuits'"),
        (["simulat"], "'simulate'"),
    ],
)
def test_did_you_mean(args, hint, monkeypatch, capsys):
    code, out, err = cli(monkeypatch, capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "did you mean" in err.lower() and hint in err, err


def test_unknown_experiment_filter_and_missing_folder(folder, monkeypatch, capsys, tmp_path):
    root, _ = folder
    for cmd in (["runs"], ["export", "--output", str(tmp_path / "x.csv")]):
        code, _, err = cli(monkeypatch, capsys, *cmd, "--out", root, "--experiment", "aim-solvabl")
        assert code == 2 and "did you mean 'aim-solvable'" in err, err
    assert not (tmp_path / "x.csv").exists()
    missing = root.parent / (root.name + "x")
    for cmd in (["runs"], ["query", "SELECT 1"], ["export"], ["show", "ab"], ["summary"]):
        code, _, err = cli(monkeypatch, capsys, *cmd, "--out", missing)
        assert code == 2 and f"did you mean {root.name!r}" in err, (cmd, err)


def test_show_prefix_json_and_errors(folder, monkeypatch, capsys):
    root, ids = folder
    code, out, _ = cli(monkeypatch, capsys, "show", ids[0][:5], "--out", root, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["run_id"] == ids[0] and info["family"] == "aim" and info["kind"] == "simulation"
    assert info["seeds"] == [0, 1] and info["config"]["d"] == 8
    traj = attndyn.results(root).trajectory(ids[0])
    loss = traj["loss"].isel(time=-1).values
    assert info["final"]["loss"]["mean"] == pytest.approx(float(np.mean(loss)))
    assert info["final"]["loss"]["std"] == pytest.approx(float(np.std(loss)))
    common = ids[0][: next(i for i, (a, b) in enumerate(zip(*ids, strict=True)) if a != b)]
    code, _, err = cli(monkeypatch, capsys, "show", common, "--out", root)
    assert code == 2 and ids[0] in err and ids[1] in err
    typo = ("0" if ids[0][0] != "0" else "1") + ids[0][1:8]
    code, _, err = cli(monkeypatch, capsys, "show", typo, "--out", root)
    assert code == 2 and "no stored run" in err


def test_summary_counts_and_damaged_files(folder, monkeypatch, capsys):
    root, ids = folder
    code, out, _ = cli(monkeypatch, capsys, "summary", "--out", root, "--json")
    info = json.loads(out)
    assert code == 0 and info["runs"] == len(ids)
    assert info["by_family"][0] == {
        "family": "aim",
        "kind": "simulation",
        "runs": 2,
        "diverged_runs": 0,
        "diverged_seeds": 0,
    }
    assert info["damaged"] == [] and info["failures"] == []
    junk = root / "runs" / "notes.txt"
    junk.write_text("not a run")
    try:
        code, out, _ = cli(monkeypatch, capsys, "summary", "--out", root, "--json")
        assert [d["file"] for d in json.loads(out)["damaged"]] == ["runs/notes.txt"]
    finally:
        junk.unlink()


@pytest.mark.parametrize("width", [80, 160])
def test_tables_fit_the_terminal(width, folder, monkeypatch, capsys):
    root, ids = folder
    monkeypatch.setattr(terminal, "console", Console(width=width))
    for args in (["runs"], ["query", "SELECT * FROM runs"], ["summary"], ["show", ids[1]]):
        code, out, err = cli(monkeypatch, capsys, *args, "--out", root)
        assert code == 0, err
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= width, (args, out)
        expected = {"summary": [], "show": [ids[1]]}.get(args[0], ids)
        assert all(i in out for i in expected), (args, out)  # ids in full, never cut
    _, out, _ = cli(monkeypatch, capsys, "query", "SELECT * FROM runs", "--out", root)
    if width == 80:
        assert "not shown" in out and "--json" in out  # config, file, … do not fit in 80


@pytest.mark.parametrize("width", [60, 80])
def test_runs_keeps_status_and_diverged_on_a_narrow_terminal(width, folder, monkeypatch, capsys):
    """The config fields that vary are dropped before the status and n_diverged columns."""
    root, ids = folder
    monkeypatch.setattr(terminal, "console", Console(width=width))
    code, out, err = cli(monkeypatch, capsys, "runs", "--out", root)
    assert code == 0, err
    header = next(line for line in out.splitlines() if "run_id" in line)
    assert "status" in header and "n_diverged" in header, out
    assert all(i in out for i in ids) and max(map(len, out.splitlines())) <= width


def test_fit_never_drops_kept_columns_nor_cuts_claim_names():
    from attndyn.cli.ui.tables import fit

    claims = ["truncations-improve-with-N", "sgd-tracks-exact-d128"]
    columns = ["claim", "statement", "value [CI]", "seeds", "target", "verdict"]
    rows = [[c, "a statement of the claim " * 4, "0.0123 [0.0101, 0.0234]", 12, "> 0", "pass"]
            for c in claims]  # fmt: skip
    for width in (60, 80):
        table, dropped = fit(columns, rows, width, keep=("value [CI]", "verdict"))
        console = Console(width=width, record=True)
        console.print(table)
        text = console.export_text()
        assert all(c in text for c in claims) and "pass" in text, text
        assert "value [CI]" not in dropped and "verdict" not in dropped
        assert dropped and max(map(len, text.splitlines())) <= width


def test_fit_keeps_ids_wraps_text_and_marks_missing():
    from attndyn.cli.ui.tables import MISSING, fit

    rid = "0123456789abcdef"
    columns = ["run_id", "note", *[f"column_{i}" for i in range(12)]]
    rows = [[rid, "a long sentence " * 8, None, float("nan"), *range(10)]]
    table, dropped = fit(columns, rows, 60)
    console = Console(width=60, record=True)
    console.print(table)
    text = console.export_text()
    assert rid in text and max(map(len, text.splitlines())) <= 60
    assert dropped and dropped == columns[len(columns) - len(dropped) :]
    kept = [c for c in columns if c not in dropped]
    if "column_0" in kept:
        assert MISSING in text


def test_describe_family_and_experiment(monkeypatch, capsys):
    from attndyn.claims import get_experiment
    from attndyn.claims.runner import PRESETS, experiment_config
    from attndyn.models import get_family

    code, out, _ = cli(monkeypatch, capsys, "describe", "aim", "--json")
    info = json.loads(out)
    fields = get_family("aim").Config.model_fields
    assert code == 0 and [f["name"] for f in info["fields"]] == list(fields)
    by_name = {f["name"]: f for f in info["fields"]}
    assert by_name["d"]["default"] == fields["d"].default and by_name["d"]["description"]
    assert "tied" in by_name["param"]["range"] and info["theory"]["fields"]
    code, out, _ = cli(monkeypatch, capsys, "describe", "aim-solvable", "--json")
    info = json.loads(out)
    exp = get_experiment("aim-solvable")
    declared = {n for p in PRESETS for n in exp.claim_names(experiment_config(exp.name, p, {})[1])}
    assert {c["name"] for c in info["claims"]} == declared
    assert all(c.get("target") and c.get("statistic") for c in info["claims"])
    assert {c["name"] for c in info["controls"]} == set(exp.controls)
    assert "2609.03858" in info["paper"] and info["presets"]["tiny"] == exp.presets["tiny"]
    code, out, _ = cli(monkeypatch, capsys, "describe", "aim-solvable")
    assert code == 0 and "gap-shrinks-with-d" in out and "time-2x" in out


def test_every_experiment_claim_has_its_meaning():
    """The claims pages name every declared claim (exactly or by a pattern such as
    ``sgd-tracks-exact-d<d>``), so describe has a meaning for each."""
    from attndyn.claims import experiment_names
    from attndyn.cli.ui.describe import describe_experiment

    missing = {
        name: [c["name"] for c in describe_experiment(name)["claims"] if len(c) == 2]
        for name in experiment_names()
    }
    assert {k: v for k, v in missing.items() if v} == {}


def test_type_names_read_as_python():
    """describe's type column: variadic tuples as ``tuple[float, ...]`` (not ``Ellipsis``)."""
    from typing import Literal

    from attndyn.cli.ui.describe import type_name

    assert type_name(tuple[float, ...] | None) == "tuple[float, ...] | None"
    assert type_name(list[int]) == "list[int]"
    assert type_name(Literal["a", "b"]) == "str"
