"""Each experiment's tiny preset and negative controls, run end to end (docs/claims.md).

tests/test_experiment_runs_a.py and tests/test_experiment_runs_b.py each take half of the
experiments (alternately, in name order), so that pytest-xdist (``--dist loadfile``) runs the
halves on two workers; within a file, an experiment's controls reuse the runs its tiny preset
stored (one results folder per file).
"""

from __future__ import annotations

from figure_checks import capture_figures, unlabelled_axes
from test_experiment_claims import EXPERIMENTS, PINNED

from attndyn.claims import get_experiment
from attndyn.claims.runner import run_experiment


def half(i: int) -> list[str]:
    """The experiments of file ``i`` (0 or 1)."""
    return EXPERIMENTS[i::2]


def controls(names: list[str]) -> list[tuple[str, str]]:
    return [(n, c) for n in names for c in sorted(get_experiment(n).controls)]


def check_tiny(name, store, monkeypatch) -> None:
    """Strict at tiny, the pinned claims, and a figure that labels every axis showing data
    (captured as it is saved, so no experiment is run twice)."""
    figures = capture_figures(get_experiment(name), monkeypatch)
    outcome = run_experiment(name, "tiny", out=store)
    failed = [(c.name, c.value, c.target) for c in outcome.claims if not c.passed]
    unmet = [c.text for c in outcome.preconditions if not c.passed]
    assert outcome.strict_ok, f"{name}: failed {failed}, preconditions unmet {unmet}"
    assert [c.name for c in outcome.claims] == PINNED[name]
    assert len(figures) == 1 and outcome.figure.stat().st_size > 0
    assert unlabelled_axes(figures[0]) == [], f"{name}: axes without an x or y label"


def check_control(name, control, store) -> None:
    """The negative control fails every claim it names (a wrong model fails by value)."""
    outcome = run_experiment(name, "tiny", out=store, control=control)
    expected = outcome.expected_failures
    survived = [c.name for c in outcome.claims if c.name in expected and c.passed]
    assert outcome.verdict == "control-failed-as-expected", f"{name}/{control}: {survived} pass"
