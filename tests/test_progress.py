"""Progress bars (attndyn.core.progress_bars): shown on a terminal with steps and an ETA, never
with --json and never off a terminal."""

from __future__ import annotations

import io
import json
import sys

import pytest
from rich.console import Console

from attndyn.cli import main
from attndyn.core.progress import (
    listening,
    note,
    report_steps,
    run_finished,
    run_started,
    runs_planned,
)
from attndyn.core.progress_bars import Bars, counted, on_terminal

TINY = ["--set", "d=8", "--set", "t_max=0.05", "--set", "records=4", "--set", "batch=4"]
TINY += ["--set", "test_size=16", "--seeds", "2"]


def _terminal(get_time=None) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=150, get_time=get_time)
    return console, buffer


def test_bar_renders_steps_eta_and_the_run_count():
    clock = iter(range(10_000))
    console, buffer = _terminal(lambda: float(next(clock)))
    bars = Bars("runs", console=console, transient=False)
    with bars, listening(bars):
        run_started("aim 0123abcd")
        for done in (100, 200, 300, 400):
            report_steps(done, 1000)
            bars.progress.refresh()
        run_finished(False)
        run_started("aim:theory 4567")
        run_finished(True)
        bars.progress.refresh()
    text = buffer.getvalue()
    assert "aim 0123abcd" in text
    assert "400/1,000 steps" in text
    assert "ETA" in text and "0:00:0" in text  # 600 steps left at 100 per tick of the clock
    assert "2 runs done (1 stored, reused)" in text  # no total known: the count is labelled


def test_sweep_counts_failed_and_skipped_runs_on_the_same_bars():
    console, buffer = _terminal()
    bars = Bars("runs", console=console, transient=False)
    with bars, listening(bars):
        runs_planned(3, skipped=2)
        run_finished(False)
        run_finished(False, failed=True)
        note("stage: warm-up")
        bars.progress.refresh()
    text = buffer.getvalue()
    assert "1/3 done, 1 failed, 2 skipped (stored)" in text
    assert "stage: warm-up" in text
    assert bars.total == 3 and bars.done + bars.failed == 2


def test_notes_go_to_the_listener_or_to_stderr(capsys):
    from attndyn.core.progress import notes

    seen = Recorder()
    with listening(seen):
        notes(True)("compiling")
        notes(False)("dropped")
    assert seen.events == [("note", "compiling")]
    capsys.readouterr()
    notes(True)("to stderr")
    out, err = capsys.readouterr()
    assert out == "" and err == "to stderr\n"


def test_counted_shows_each_item_and_the_total():
    console, buffer = _terminal()
    seen = []
    import attndyn.core.progress_bars as module

    real = module.Bars
    try:
        module.Bars = lambda count, total, **_: real(count, total, console=console, transient=False)
        for item in counted(["a", "b"], "benchmarks", True):
            seen.append(item)
    finally:
        module.Bars = real
    assert seen == ["a", "b"]
    text = buffer.getvalue()
    assert "benchmark a" in text and "benchmark b" in text
    assert "2/2 done" in text


def test_on_terminal_needs_a_tty_and_no_machine_output(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert on_terminal(True, False)
    assert not on_terminal(True, True)  # --json / --csv
    assert not on_terminal(False, False)  # --no-progress
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not on_terminal(True, False)


@pytest.mark.parametrize("as_json", [False, True])
def test_simulate_bar_on_a_terminal_and_none_with_json(tmp_path, capsys, monkeypatch, as_json):
    """stderr "is" a terminal: the plain command draws the bar (steps of the run); with --json
    stdout is one JSON document and stderr has no bar."""
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    args = ["simulate", "aim", *TINY, "--out", str(tmp_path), "--yes"]
    with pytest.raises(SystemExit) as exit_:
        main(args + (["--json"] if as_json else []))
    assert exit_.value.code == 0
    out, err = capsys.readouterr()
    if as_json:
        assert json.loads(out)["run_id"]
        assert "steps" not in err and "━" not in err
    else:
        assert "steps" in err and "aim " in err


def test_no_bar_off_a_terminal(tmp_path, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "aim", *TINY, "--out", str(tmp_path), "--yes", "--force"])
    assert exit_.value.code == 0
    _, err = capsys.readouterr()
    assert "steps" not in err and "━" not in err


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def steps(self, done, total, unit):
        self.events.append(("steps", done, total, unit))

    def run_started(self, label):
        self.events.append(("started", label))

    def run_finished(self, reused, failed=False):
        self.events.append(("finished", reused) + (("failed",) if failed else ()))

    def runs_planned(self, total, skipped):
        self.events.append(("planned", total, skipped))

    def note(self, message):
        self.events.append(("note", message))


def test_theory_ode_reports_the_time_reached(monkeypatch):
    import numpy as np

    from attndyn.core import ode

    monkeypatch.setattr(ode, "REPORT_S", 0.0)
    seen = Recorder()
    with listening(seen):
        y = ode.integrate(lambda t, y: -y, np.ones(2), np.linspace(0, 5, 6))
    np.testing.assert_allclose(y[0], np.exp(-np.linspace(0, 5, 6)), rtol=1e-6)
    times = [e[1] for e in seen.events]
    assert len(times) > 5 and max(times) <= 5.0 and times[-1] > 4.0
    assert {e[2:] for e in seen.events} == {(5.0, "time")}
    quiet = Recorder()
    ode.integrate(lambda t, y: -y, np.ones(2), np.linspace(0, 5, 6))  # nobody listens
    assert quiet.events == []


def test_runs_report_start_and_end_computed_or_read_back(tmp_path):
    from attndyn import runs
    from attndyn.store import Store

    config = runs.family_config("aim", {"d": 8, "t_max": 0.05, "records": 2, "seeds": 1})
    store = Store(tmp_path)
    seen = Recorder()
    with listening(seen):
        for _ in range(2):
            runs.simulation("aim", config, store)
    rid = runs.run_id("aim", config)
    starts = [e for e in seen.events if e[0] == "started"]
    assert starts == [("started", f"aim {rid}")] * 2
    assert [e for e in seen.events if e[0] == "finished"] == [
        ("finished", False),
        ("finished", True),
    ]
    steps = [e for e in seen.events if e[0] == "steps"]
    assert steps and steps[-1][1:] == (config.total_steps, config.total_steps, "steps")


def test_api_simulate_shows_its_bar_when_asked(tmp_path, capsys, monkeypatch):
    import attndyn

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    capsys.readouterr()
    attndyn.simulate("aim", d=8, t_max=0.05, records=2, seeds=1, progress=True)
    assert "steps" in capsys.readouterr().err
    attndyn.simulate("aim", d=8, t_max=0.05, records=2, seeds=1)
    assert "steps" not in capsys.readouterr().err


def test_stdout_printed_under_the_bar_stays_on_stdout_when_it_is_a_file(capsys, monkeypatch):
    from attndyn.core.progress_bars import shown

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    capsys.readouterr()
    with shown(True, "runs"):
        run_started("aim abc")
        report_steps(5, 10)
        print("table row")
    out, err = capsys.readouterr()
    assert out == "table row\n"
    assert "table row" not in err and "5/10 steps" in err


def test_progress_is_shown_by_default_in_a_terminal_or_a_notebook(monkeypatch):
    """attndyn.simulate/predict/run show progress when stderr is a terminal or in a Jupyter
    kernel (progress=None), not when output goes to a file or a pipe (as under pytest)."""
    import sys
    import types

    from attndyn import api

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not api.interactive() and api._progress(None) is False and api._progress(True)

    class ZMQInteractiveShell:  # the class name IPython's kernel shell has
        pass

    fake = types.ModuleType("IPython")
    fake.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert api.interactive()
    fake.get_ipython = lambda: None  # type: ignore[attr-defined]  # plain IPython or none
    assert not api.interactive()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert api.interactive()
