"""One computation per run (issue 14, item 8): per-run locks, writability checked before
computing, temporaries of dead writers cleaned, read commands on a missing folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from helpers import cli

from attndyn.core.config import run_id
from attndyn.runs import family_config
from attndyn.store import Store, locks
from attndyn.store.check import problems

TINY = {"d": 8, "seeds": 2, "t_max": 0.05, "records": 4, "batch": 4, "test_size": 8}


def simulate_args(out) -> list[str]:
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    return [sys.executable, "-m", "attndyn", "simulate", "aim", *sets, "--out", str(out), "--json"]


@pytest.mark.slow  # 10 CPU s
def test_two_identical_simulations_racing_compute_once(tmp_path):
    """Both processes are held at the run's lock (the test holds it until both wait there),
    so both have found the run missing; then exactly one computes and the other reads it."""
    out = tmp_path / "res"
    store = Store(out)
    rid = run_id("aim", family_config("aim", TINY))
    waiting = [threading.Event(), threading.Event()]
    errs: list[list[str]] = [[], []]

    def read_err(i, proc):
        for line in proc.stderr:
            errs[i].append(line)
            if "waiting for another process computing run" in line:
                waiting[i].set()

    with store.lock(rid):
        procs = [
            subprocess.Popen(
                simulate_args(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        readers = [threading.Thread(target=read_err, args=(i, p)) for i, p in enumerate(procs)]
        for t in readers:
            t.start()
        both_wait = all(w.wait(timeout=180) for w in waiting)
    outputs = [json.loads(p.stdout.read()) for p in procs]
    codes = [p.wait(timeout=180) for p in procs]
    for t in readers:
        t.join(timeout=10)
    assert both_wait, errs
    assert codes == [0, 0], errs
    assert sorted(o["reused"] for o in outputs) == [False, True]  # one computation
    assert outputs[0]["run_id"] == outputs[1]["run_id"] == rid
    assert outputs[0]["final"] == outputs[1]["final"]
    assert store.run_ids() == [rid]
    # the lock file is neither a run nor a problem, and nothing temporary is left
    assert (out / "locks" / f"{rid}.lock").is_file()
    assert problems(out) == []
    assert [p.name for p in out.rglob("*.tmp")] == []


def _no_compute(monkeypatch):
    from attndyn.models import get_family

    calls = []
    monkeypatch.setattr(get_family("aim"), "simulate", lambda *a, **k: calls.append(a))
    return calls


@pytest.mark.parametrize("how", ["under-a-file", "read-only"])
def test_unwritable_folder_fails_before_computing(tmp_path, monkeypatch, capsys, how):
    if how == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders; 'under-a-file' covers root")
        out = tmp_path / "ro"
        out.mkdir()
        out.chmod(0o500)
    else:
        (tmp_path / "afile").write_text("x")
        out = tmp_path / "afile" / "sub"
    calls = _no_compute(monkeypatch)
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    spec = tmp_path / "s.toml"
    spec.write_text('family = "aim"\n[base]\nd = 8\nt_max = 0.05\n[grid]\nseed = [0, 1]\n')
    for args in (
        ("simulate", "aim", *sets),
        ("sweep", str(spec), "--workers", "1", "--no-progress"),
        ("run", "aim-solvable", "--preset", "tiny"),
    ):
        code, stdout, err = cli(monkeypatch, capsys, *args, "--out", out)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (args, err)
        assert lines[0].startswith("error: cannot write results to") and stdout == ""
    assert calls == []  # nothing was computed
    if how == "under-a-file":
        assert (tmp_path / "afile").read_text() == "x"


def test_temporaries_of_dead_writers_go_at_the_next_write(tmp_path):
    store = Store(tmp_path / "res")
    store.runs.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = store.runs / f".abc.{locks.HOST}-{dead.pid}.deadbeef.tmp"
    mine = locks.temp_path(store.runs, "def")  # a live writer (this process)
    other_host = store.runs / f".ghi.ffffff-{dead.pid}.cafecafe.tmp"  # maybe alive elsewhere
    for path in (stale, mine, other_host):
        path.write_bytes(b"half a file")
    assert locks._owner(mine.name) == (locks.HOST, os.getpid())
    sys.path.insert(0, os.path.dirname(__file__))
    from test_sweep_store import fake_run

    fake_run(store, d=8, seed=0, seeds=2)
    assert not stale.exists() and mine.exists() and other_host.exists()
    old = 0.0
    os.utime(other_host, (old, old))  # older than an hour: removed whoever wrote it
    assert store.clean_temporary() == 1 and not other_host.exists() and mine.exists()


@pytest.mark.parametrize(
    "args", [("runs",), ("runs", "--check"), ("export",), ("query", "SELECT 1 AS x")]
)
def test_read_commands_on_a_missing_folder_exit_2(tmp_path, monkeypatch, capsys, args):
    missing = tmp_path / "no-such-folder"
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(monkeypatch, capsys, *args, "--out", missing)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and str(missing) in lines[0], err
    assert out == "" and not missing.exists() and not (tmp_path / "attndyn-export.csv").exists()


def test_results_in_python_on_a_missing_folder_is_an_input_error(tmp_path):
    import attndyn
    from attndyn.errors import InputError

    with pytest.raises(InputError, match="no results folder"):
        attndyn.results(tmp_path / "missing")


def test_a_config_refused_at_build_time_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Issue 33 item 5: `simulate markov` with a track outside [0, d) is refused only when the
    model is built, under the run's lock: exit 2 with one line, and neither the lock file nor the
    folders the lock created stay."""
    out = tmp_path / "res"
    code, _, err = cli(monkeypatch, capsys, "simulate", "markov", "--set", "d=4", "--set",
                       "track=[99]", "--out", str(out))  # fmt: skip
    assert code == 2 and "'track'" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    (out / "runs").mkdir(parents=True)  # an existing folder keeps what it had
    code, _, _ = cli(monkeypatch, capsys, "simulate", "markov", "--set", "d=4", "--set",
                     "track=[99]", "--out", str(out))  # fmt: skip
    assert code == 2 and sorted(p.name for p in out.rglob("*")) == ["runs"]


@pytest.mark.parametrize("args", [("runs",), ("query", "SELECT 1"), ("runs", "--check")])
def test_a_folder_that_cannot_be_read_is_one_line_exit_1(tmp_path, monkeypatch, capsys, args):
    """Issue 33 item 4: a folder the user cannot read raised PermissionError through every read
    command (as root the permission cannot be taken away, so the error is injected): one line,
    exit 1 (the environment, not the input)."""
    import attndyn.store.catalog as catalog
    import attndyn.store.check as check_mod

    def refuse(*_a, **_k):
        raise PermissionError(13, "Permission denied", str(tmp_path / "runs"))

    monkeypatch.setattr(catalog, "load", refuse)  # every view opens the catalog
    monkeypatch.setattr(check_mod, "problems", refuse)
    (tmp_path / "runs").mkdir()
    code, out, err = cli(monkeypatch, capsys, *args, "--out", str(tmp_path))
    assert code == 1 and err.strip() == f"error: Permission denied: {tmp_path / 'runs'}", err
