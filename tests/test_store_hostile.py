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


def _rewrite(path, table, record) -> None:
    import json

    import pyarrow.parquet as pq

    meta = None if record is None else {b"attndyn": json.dumps(record).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_malformed_failure_and_experiment_records_are_foreign(store, tmp_path, monkeypatch, capsys):
    """Item 5: a `failures/<x>.parquet` with only `run_id, error, config` made `query`, `runs`,
    `summary` and `export` end in a BinderException while `runs --check` found nothing; a
    seal-stripped experiment file missing a column did the same. Each malformed record is now
    named by `runs --check` and left out of the views; every read command answers."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    from test_sweep_store import experiment_record

    root = store.root
    ids = store.run_ids()
    bare = root / "failures" / ("a" * 16 + ".parquet")
    pq.write_table(pa.table({"run_id": ["a" * 16], "error": ["x"], "config": ["{}"]}), bare)
    wrong = root / "failures" / ("b" * 16 + ".parquet")  # every column, one of them an integer
    row = {c: ["b" * 16 if c == "run_id" else "x"] for c in pq.read_schema(
        root / "failures" / ("f" * 16 + ".parquet")).names}  # fmt: skip
    row["created"] = [1]
    pq.write_table(pa.table(row), wrong)
    good = store.write_experiment(experiment_record("exp-a", ids[:2]), "exp-a-small-1")
    stripped = store.write_experiment(experiment_record("exp-b", ids[2:]), "exp-b-small-2")
    table = pq.read_table(stripped)
    record = json.loads(table.schema.metadata[b"attndyn"])
    del record["checksum"], record["record_checksum"]
    _rewrite(stripped, table.drop_columns(["passed"]), record)
    unsealed = store.write_experiment(experiment_record("exp-c", ids[:1]), "exp-c-small-3")
    table = pq.read_table(unsealed)
    record = json.loads(table.schema.metadata[b"attndyn"])
    del record["checksum"], record["record_checksum"]
    record["claims"][0]["passed"] = False  # a forged verdict, the seals removed
    _rewrite(unsealed, table, record)
    forged = store.write_experiment(experiment_record("exp-d", ids[:1]), "exp-d-small-4")
    table = pq.read_table(forged)
    record = json.loads(table.schema.metadata[b"attndyn"])
    record["claims"] = "passed"  # resealed, but not a list of claims
    from attndyn.store.files import record_checksum

    record["record_checksum"] = record_checksum(record)
    _rewrite(forged, table, record)
    run = store.path(ids[3])  # a run file, seals stripped and a column gone
    table = pq.read_table(run)
    record = json.loads(table.schema.metadata[b"attndyn"])
    del record["checksum"], record["record_checksum"]
    _rewrite(run, table.drop_columns(["samples"]), record)

    code, out, err = cli(monkeypatch, capsys, "runs", "--check", "--out", root)
    assert code == 1 and "Traceback" not in err
    found = dict(line.split(": ", 1) for line in out.strip().splitlines())
    expected = {bare: "no column", wrong: "column created", stripped: "no column passed",
                unsealed: "no checksum", forged: "claims", run: "no column samples"}  # fmt: skip
    assert set(found) == {str(p.relative_to(root)) for p in expected}, out
    for path, why in expected.items():
        assert why in found[str(path.relative_to(root))], (path, found)
    assert str(good.relative_to(root)) not in found
    monkeypatch.chdir(tmp_path)
    for args in (
        ("query", "SELECT * FROM failures"),
        ("query", "SELECT * FROM claims"),
        ("query", "SELECT * FROM experiments"),
        ("query", "SELECT sum(value) FROM observables"),
        ("runs",),
        ("runs", "--experiment", "exp-a"),
        ("summary",),
        ("summary", "--json"),
        ("export", "--output", tmp_path / "all.csv"),
    ):
        code, out, err = cli(monkeypatch, capsys, *args, "--out", root)
        assert code == 0 and "Traceback" not in err and "Exception" not in err, (args, err)
    res_ = __import__("attndyn").results(root)
    assert res_.query("SELECT run_id FROM failures").run_id.tolist() == ["f" * 16]
    assert res_.query("SELECT experiment FROM claims").experiment.tolist() == ["exp-a"]
    assert sorted(res_.query("SELECT run_id FROM runs").run_id) == sorted(ids[:3])
