"""The command line, run as a real process."""

import json
import subprocess
import sys

import pytest


def attndyn(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.parametrize(
    "args, field",
    [
        (["--set", "dd=3"], "dd"),
        (["--set", "d=0"], "d"),
        (["--set", "d=abc"], "d"),
        (["--set", "rho=12"], "rho"),
        (["--set", "activation=swish"], "activation"),
        (["--set", "L=2", "--set", "C=[[1, 2], [2, 1]]"], "C"),
        (["--set", "param=both"], "param"),
        (["--set", "lr=inf"], "lr"),
        (["--set", "t_max=1e300"], "t_max"),  # more steps than the 32-bit step index holds
        (["--set", "seeds=true"], "seeds"),
        (["--set", "seed=1099511627776"], "seed"),
        (["--set", "d\nx=1"], "d\\nx"),  # a newline in a key is shown escaped, on one line
        (["--set", "\x1b[31mred=1"], "\\x1b[31mred"),  # and an ANSI escape is not sent raw
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, field):
    out = tmp_path / "results"
    proc = attndyn("simulate", "aim", *args, "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0]
    assert "\x1b" not in proc.stderr
    assert not out.exists()


def test_unknown_family_exit_2(tmp_path):
    proc = attndyn("simulate", "bogus", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "unknown family 'bogus'" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_bench_unknown_family_exit_2():
    proc = attndyn("bench", "--name", "bogus")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'name'" in lines[0] and "circuits" in lines[0]


def test_bench_json_without_name_lists_the_benchmarks():
    from attndyn.models import benchmarks

    proc = attndyn("bench", "--json")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [row["name"] for row in listed] == sorted(benchmarks())
    assert all(row["family"] and row["description"] for row in listed)


@pytest.mark.slow  # 11 CPU s
def test_simulate_stores_then_reuses_and_query_reads_it(tmp_path):
    out = str(tmp_path / "results")
    args = [
        "simulate",
        "aim",
        "--set",
        "d=8",
        "--set",
        "t_max=0.02",
        "--set",
        "records=3",
        "--set",
        "test_size=4",
        "--seeds",
        "2",
        "--out",
        out,
        "--json",
    ]
    first = attndyn(*args)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert not summary["reused"] and set(summary["final"]) >= {"q_12", "p_12", "loss"}
    second = json.loads(attndyn(*args).stdout)
    assert second["reused"] and second["run_id"] == summary["run_id"]

    rows = json.loads(
        attndyn("query", "SELECT run_id, d, seeds FROM runs_aim", "--out", out, "--json").stdout
    )
    assert rows == [{"run_id": summary["run_id"], "d": 8, "seeds": 2}]
    csv = attndyn(
        "query", "SELECT count(*) AS n FROM observables WHERE name='q_12'", "--out", out, "--csv"
    ).stdout
    assert csv.splitlines() == ["n", "6"]  # 2 seeds × 3 record points
    bad = attndyn("query", "SELECT nope FROM runs", "--out", out)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # 4 CPU s
def test_results_folder_from_environment(tmp_path):
    import os

    env = dict(os.environ, ATTNDYN_RESULTS=str(tmp_path / "env-results"))
    proc = attndyn(
        "simulate",
        "aim",
        "--set",
        "d=6",
        "--set",
        "t_max=0.01",
        "--set",
        "records=2",
        "--set",
        "test_size=0",
        "--seeds",
        "1",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "env-results" / "runs").glob("*.parquet"))) == 1


@pytest.mark.parametrize(
    "args, field",
    [
        (["--control", "no-such-control"], "'control'"),
        (["--preset", "huge"], "'preset'"),
        (["--seed", "-1"], "seed"),
    ],
)
def test_run_bad_input_one_line_exit_2_nothing_written(tmp_path, args, field):
    out = tmp_path / "results"
    proc = attndyn("run", "circuits-ode", *args, "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0]
    assert not out.exists()


@pytest.mark.slow  # 5 CPU s
def test_json_stdout_is_only_json_when_lapack_complains(tmp_path):
    # lr = 1e6 diverges at once and LAPACK (inside XLA's SVD) prints "** On entry to SLASCL ..."
    # straight to file descriptor 1 (issue 14, item 8); stdout must still be the JSON alone
    proc = attndyn(
        "simulate",
        "circuits",
        *["--set", "lr=1e6", "--set", "t_max=20", "--set", "records=3"],
        *["--set", "test_size=8", "--seeds", "1", "--out", str(tmp_path / "r"), "--json"],
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["diverged_seeds"] == [1234]


NOISY = """
import ctypes, sys
import attndyn.api
real = attndyn.api.results
def noisy(out, **limits):
    ctypes.CDLL(None).puts(b"native noise")  # C stdio, buffered when stdout is a pipe
    return real(out, **limits)
attndyn.api.results = noisy
from attndyn.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("fmt, parse", [("--json", json.loads), ("--csv", str.split)])
def test_machine_readable_stdout_sends_native_output_to_stderr(tmp_path, fmt, parse):
    out = tmp_path / "r"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", NOISY, "query", "SELECT 1 AS x", "--out", str(out), fmt],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert parse(proc.stdout) in ([{"x": 1}], ["x", "1"])
    assert "native noise" in proc.stderr


def test_without_json_native_output_stays_on_stdout(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", NOISY, "query", "SELECT 1 AS x", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "native noise" in proc.stdout  # only --json/--csv divert


@pytest.mark.parametrize(
    "args, shown",
    [
        (["simulate", "aim", "--bogus"], "No such option: --bogus"),
        (["simulate"], "Missing argument 'family'"),
        (["nosuch"], "No such command 'nosuch'"),
        (["runs", "--json=3"], "'--json' does not take a value"),
        (["bench", "--name"], "'--name' requires an argument"),
        (["run", "circuits-ode", "--seed", "abc"], "'--seed'"),
        (["simulate", "aim", "--bo\ngus"], "--bo\\"),  # a newline, shown escaped
        (["simulate", "aim", "--\x1b[31mred"], "--\\x1b[31mred"),  # an ANSI escape, not sent raw
    ],
)
def test_usage_errors_one_line_exit_2(args, shown):
    proc = attndyn(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and shown in lines[0], proc.stderr
    assert "\x1b" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("args", [["--help"], [], ["simulate", "--help"]])
def test_help_exit_0(args):
    proc = attndyn(*args)
    assert proc.returncode == 0 and "Usage: attndyn" in proc.stdout and proc.stderr == ""
