"""Acceptance tests of issue 48: a results folder used as a hostile user and an unlucky disk
would. Each numbered probe of the issue is a test here (synthetic runs, no simulation)."""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from helpers import cli  # noqa: E402
from test_sweep_store import fake_run  # noqa: E402

from attndyn.store import Store  # noqa: E402
from attndyn.store.files import RESULT_FOLDERS  # noqa: E402


@pytest.fixture
def store(tmp_path):
    """Four synthetic aim runs, a failure record; cwd is ``tmp_path/work``."""
    st = Store(tmp_path / "results")
    for d in (8, 16):
        for seed in (0, 2):
            fake_run(st, d=d, lr=0.01, seed=seed, seeds=2)
    st.write_failure("f" * 16, kind="family", name="aim", config={"d": 8}, error="boom")
    return st


def snapshot(root) -> dict[str, str]:
    """Relative path -> SHA-256 of every entry in the folders of stored results."""
    out = {}
    for sub in RESULT_FOLDERS:
        for dirpath, dirs, files in os.walk(root / sub):
            for name in dirs + files:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if os.path.isfile(path) and not os.path.islink(path):
                    out[rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
                else:
                    out[rel] = "dir" if os.path.isdir(path) else "other"
    return out


def test_export_and_report_never_write_inside_the_stored_results(
    store, tmp_path, monkeypatch, capsys
):
    """Item 3: `export --format parquet --output <results>/runs/<id>.parquet --where
    "run_id='<other>'"` overwrote run <id> (exit 0); `--output <results>/runs/new.parquet`
    planted a foreign file. Any output inside the results folder (a symbolic link to it
    included) is refused with one line and exit 2; `report --output` into runs/, experiments/
    or failures/ likewise; no read command changes those folders."""
    root = store.root
    ids = store.run_ids()
    before = snapshot(root)
    link = tmp_path / "link"
    link.symlink_to(root / "runs")
    outputs = [
        store.path(ids[0]),
        root / "runs" / "new.parquet",
        root / "experiments" / "x.parquet",
        root / "failures" / ("f" * 16 + ".parquet"),
        root / "export.csv",
        root,
        link / "new.parquet",
    ]
    for output in outputs:
        code, out, err = cli(monkeypatch, capsys, "export", "--format", "parquet", "--output",
                             output, "--where", f"run_id = '{ids[1]}'", "--out", root)  # fmt: skip
        assert code == 2 and out == "", (output, err)
        assert len(err.strip().splitlines()) == 1 and "'output'" in err, err
        assert "Traceback" not in err
    for output in (root / "runs" / "site", root / "failures", link / "site"):
        code, out, err = cli(monkeypatch, capsys, "report", "--output", output, "--out", root)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "'output'" in err, err
    monkeypatch.chdir(tmp_path)
    for args in (
        ("query", "SELECT count(*) FROM observables"),
        ("runs",),
        ("runs", "--check"),
        ("show", ids[0]),
        ("summary",),
        ("export", "--output", tmp_path / "fine.csv"),
    ):
        code, out, err = cli(monkeypatch, capsys, *args, "--out", root)
        assert code == 0, (args, err)
    assert (tmp_path / "fine.csv").is_file()
    assert snapshot(root) == before
