"""The experiment machinery and the CLI contract of `attndyn list` / `attndyn run`."""

import json
import subprocess
import sys

import pytest

from attndyn.claims import experiment_names, get_experiment, list_experiments
from attndyn.claims.runner import experiment_config


def attndyn(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, timeout=timeout
    )


def test_every_registered_experiment_has_presets_and_a_description():
    assert "aim-parameterization" in experiment_names()
    for name, description in list_experiments():
        exp = get_experiment(name)
        assert description and "\n" not in description
        assert set(exp.presets) == {"tiny", "small", "paper"}
        for preset in exp.presets:
            experiment_config(name, preset, {})  # presets validate


def test_list_prints_every_experiment():
    proc = attndyn("list")
    assert proc.returncode == 0
    for name in experiment_names():
        assert name in proc.stdout


@pytest.mark.parametrize(
    "args, field",
    [
        (["run", "no-such-experiment"], "unknown experiment"),
        (["run", "aim-parameterization", "--preset", "huge"], "preset"),
        (["run", "aim-parameterization", "--set", "d=[0, 8]"], "d"),
        (["run", "aim-parameterization", "--set", "colour=1"], "colour"),
    ],
)
def test_run_bad_input_exit_2(tmp_path, args, field):
    proc = attndyn(*args, "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and field in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.e2e
def test_run_json_contract_strict_exit_code_control_and_claims_view(tmp_path):
    out = str(tmp_path / "r")
    tiny = ("run", "aim-parameterization", "--preset", "tiny", "--out", out)
    proc = attndyn(*tiny, "--json")
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert set(outcome) == {
        "experiment",
        "preset",
        "control",
        "verdict",
        "run_ids",
        "preconditions",
        "claims",
        "summary",
        "figure",
    }
    assert outcome["experiment"] == "aim-parameterization" and outcome["preset"] == "tiny"
    assert outcome["control"] is None and outcome["verdict"] == "passed"
    for claim in outcome["claims"]:
        assert set(claim) == {
            "name",
            "statement",
            "value",
            "ci_low",
            "ci_high",
            "n_seeds",
            "target",
            "passed",
            "refuted",
            "margin",
        }
        assert claim["n_seeds"] == 8 and claim["ci_low"] <= claim["value"] <= claim["ci_high"]
    assert attndyn(*tiny, "--strict").returncode == 0
    # the negative control (the direct arm trains h1): the claim it names fails, so --strict
    # exits 0 only because it failed
    control = attndyn(*tiny, "--control", "direct-h1", "--strict", "--json")
    assert control.returncode == 0, control.stderr
    record = json.loads(control.stdout)
    assert record["verdict"] == "control-failed-as-expected"
    by_name = {c["name"]: c for c in record["claims"]}
    assert not by_name["direct-h2-trapped"]["passed"]
    rows = json.loads(
        attndyn(
            "query",
            "SELECT claim, n_seeds, passed FROM claims WHERE key LIKE '%tiny%'",
            "--out",
            out,
            "--json",
        ).stdout
    )
    assert len(rows) == 2 * len(outcome["claims"]) and {r["n_seeds"] for r in rows} == {8}


@pytest.mark.long
@pytest.mark.parametrize("name", experiment_names())
def test_small_preset_passes_strict(tmp_path, name):
    proc = attndyn(
        "run", name, "--preset", "small", "--strict", "--out", str(tmp_path), timeout=1800
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
