"""A family and an experiment in a separate pip-installed package (tests/plugins/attndyn_toy),
registered only through their ``attndyn.families`` and ``attndyn.experiments`` entry points, work
in simulate, predict, the store, sweep, run, describe, cite and the CLI with no edit to
attndyn."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import attndyn
from attndyn.core import registry

PLUGIN = Path(__file__).parent / "plugins" / "attndyn_toy"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """Install the toy package into a fresh folder with pip and put it on the import path of
    this process and of every child (sweep workers, the CLI)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(PLUGIN)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    old_env = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), old_env]))
    registry.refresh()
    yield target
    sys.path.remove(str(target))
    if old_env is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old_env
    for name in [m for m in sys.modules if m.startswith("attndyn_toy")]:
        del sys.modules[name]
    registry.refresh()


def test_not_registered_without_install():
    registry.refresh()
    assert "toy" not in registry.names(registry.FAMILIES)


def test_simulate_matches_the_closed_form(toy):
    """64 seeds: the seed mean of R = ‖w − w*‖²/d is within 5 standard errors of the exact
    expectation (1 − 2η/d + η²(d + 2)/d²)^k at every record point."""
    sim = attndyn.simulate("toy", d=32, lr=0.5, t_max=4, records=6, seeds=64)
    theory = attndyn.predict("toy", d=32, lr=0.5, t_max=4, records=6)
    np.testing.assert_array_equal(sim["time"].values, theory["time"].values)
    R = sim["R"].values
    se = R.std(axis=0, ddof=1) / np.sqrt(R.shape[0]) + 1e-12
    assert np.all(np.abs(R.mean(axis=0) - theory["R"].values) <= 5 * se)
    assert theory["R"].values[-1] < 0.1 * theory["R"].values[0]
    # negative control: the same band rejects a theory whose step is 20 % off
    wrong = attndyn.predict("toy", d=32, lr=0.6, t_max=4, records=6)
    assert np.any(np.abs(R.mean(axis=0) - wrong["R"].values) > 5 * se)


def test_store_round_trip_and_query(toy, tmp_path):
    first = attndyn.simulate("toy", out=tmp_path, d=16, t_max=1, records=3, seeds=2)
    again = attndyn.simulate("toy", out=tmp_path, d=16, t_max=1, records=3, seeds=2)
    np.testing.assert_array_equal(first["R"].values, again["R"].values)
    runs = attndyn.results(tmp_path).runs()
    assert list(runs["family"]) == ["toy"]


@pytest.mark.slow  # 5 CPU s
def test_sweep_runs_the_plugin(toy, tmp_path):
    from attndyn.sweep import run_sweep

    spec = tmp_path / "toy.toml"
    spec.write_text(
        textwrap.dedent("""
        family = "toy"
        [base]
        t_max = 1
        records = 3
        [grid]
        d = [8, 16]
        seed = [0, 1]
    """)
    )
    summary = run_sweep(spec, tmp_path / "out", executor="local", workers=1, progress=False)
    assert summary.ok and summary.done == 4


def _cli(*args, out):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args, "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )  # fmt: skip


@pytest.mark.slow  # 19 CPU s
def test_cli_lists_simulates_and_predicts_the_plugin(toy, tmp_path):
    listed = subprocess.run(
        [sys.executable, "-m", "attndyn", "list"], capture_output=True, text=True, timeout=300
    )
    assert listed.returncode == 0 and "toy" in listed.stdout
    sim = _cli("simulate", "toy", "--set", "d=8", "--set", "t_max=1", "--json", out=tmp_path)
    assert sim.returncode == 0, sim.stderr
    assert '"R"' in sim.stdout
    pred = _cli("predict", "toy", "--set", "d=8", "--json", out=tmp_path)
    assert pred.returncode == 0, pred.stderr
    bad = _cli("simulate", "toy", "--set", "d=1", out=tmp_path)
    assert bad.returncode == 2 and "'d'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_docs_example_is_the_package_and_runs_as_printed(tmp_path, monkeypatch):
    """docs/plugins.md prints the toy's two files in full: the blocks equal the package's files,
    and, written out and imported from the page alone, simulate and predict agree (mean R of 64
    seeds within 5 standard errors of the closed form at t = 1)."""
    import re

    page = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text()
    heading_then_block = r"`src/attndyn_toy/(\w+\.py)`[^\n]*\n(?:[^\n]*\n)*?```python\n(.*?)```"
    blocks = dict(re.findall(heading_then_block, page, re.S))
    source = PLUGIN / "src" / "attndyn_toy"
    assert set(blocks) == {"__init__.py", "theory.py", "experiment.py"}
    assert blocks["experiment.py"].count("\n") <= 80  # the bound on the example
    for name, text in blocks.items():
        assert text == (source / name).read_text(), name
    package = tmp_path / "attndyn_toy"
    package.mkdir()
    for name, text in blocks.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [m for m in sys.modules if m.startswith("attndyn_toy")]:
        monkeypatch.delitem(sys.modules, module)
    import attndyn_toy
    from attndyn_toy import theory

    config = attndyn_toy.Config(d=32, t_max=1.0, seeds=64, records=3)
    sim = attndyn_toy.simulate(config)
    pred = theory.predict(theory.Config(d=32, t_max=1.0, records=3))
    R = sim["R"].values[:, -1]
    assert abs(R.mean() - pred["R"].values[-1]) < 5 * R.std() / np.sqrt(len(R))


def test_the_experiment_plugin_runs_with_its_claims_and_control(toy, tmp_path):
    """docs/plugins.md's toy-decay: at tiny both claims pass; under the control step-off the
    claim it names fails by value (control-failed-as-expected); both are stored as claims."""
    from attndyn.claims import experiment_names

    assert "toy-decay" in experiment_names()
    outcome = attndyn.run("toy-decay", preset="tiny", out=tmp_path, progress=False)
    assert outcome.verdict == "passed", [c.as_dict() for c in outcome.claims]
    assert [c.name for c in outcome.claims] == ["sgd-tracks-theory", "error-falls-tenfold"]
    assert outcome.figure.is_file()
    control = attndyn.run("toy-decay", preset="tiny", control="step-off", out=tmp_path,
                          progress=False)  # fmt: skip
    assert control.verdict == "control-failed-as-expected"
    claims = attndyn.results(tmp_path).query("SELECT count(*) AS n FROM claims")
    assert int(claims["n"][0]) == 4


def test_the_claims_table_keeps_names_values_and_verdicts_on_a_narrow_terminal(
    toy, tmp_path, monkeypatch, capsys
):
    """attndyn run's claims table at 60 columns: whole claim names, their values and verdicts;
    what is left out (the statement) is named."""
    from helpers import cli
    from rich.console import Console

    from attndyn.cli.ui import terminal

    monkeypatch.setattr(terminal, "console", Console(width=60))
    code, out, err = cli(monkeypatch, capsys, "run", "toy-decay", "--preset", "tiny",
                         "--out", tmp_path, "--no-progress")  # fmt: skip
    assert code == 0, err
    assert "sgd-tracks-theory" in out and "error-falls-tenfold" in out, out
    assert out.count("pass") >= 2 and "not shown" in out and "statement" in out, out


def test_an_undeclared_preset_is_one_line_exit_2(toy, monkeypatch, capsys, tmp_path):
    """toy-decay declares tiny and small only: --preset paper is refused naming both, before
    anything runs; describe and cite still answer (cite: no arXiv paper named)."""
    from helpers import cli

    for extra in ([], ["--dry-run"], ["--yes"]):
        code, out, err = cli(monkeypatch, capsys, "run", "toy-decay", "--preset", "paper",
                             "--out", tmp_path, *extra)  # fmt: skip
        assert code == 2 and out == "" and err.count("\n") == 1, (extra, err)
        assert "toy-decay declares no 'paper' preset (its presets: tiny, small)" in err
    assert not (tmp_path / "runs").exists()
    code, out, _ = cli(monkeypatch, capsys, "describe", "toy-decay", "--json")
    assert code == 0 and '"paper": "the toy family\'s closed form, no paper"' in out
    code, out, _ = cli(monkeypatch, capsys, "cite", "toy-decay")
    assert code == 0 and "% toy-decay names no arXiv paper" in out
