"""Acceptance test of issue 14: files corrupted, truncated, renamed and replaced in every folder
of a results store; every read command still answers and reports them, ``runs --check`` lists
each one, and a sweep recomputes exactly the damaged runs."""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from attndyn import runs
from attndyn.store import Store
from attndyn.store.catalog import CATALOG
from attndyn.sweep import load_spec, run_sweep

sys.path.insert(0, os.path.dirname(__file__))
from helpers import cli  # noqa: E402
from test_sweep_store import experiment_record  # noqa: E402

SPEC = """
family = "aim"
group_seeds = false
[base]
d = 8
t_max = 0.05
records = 4
batch = 4
test_size = 8
seeds = 1
[grid]
seed = [0, 1, 2, 3, 4, 5]
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The sweep's six runs (each alone in its task, so stored exactly as ``simulate`` stores
    it, computed here in-process), two experiment records and two failure records."""
    folder = tmp_path_factory.mktemp("damage")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    root = folder / "store"
    store = Store(root)
    items = load_spec(spec).expand()
    for item in items:
        runs.simulation("aim", runs.family_config("aim", item.config), store)
    ids = [item.run_id for item in items]
    assert sorted(store.run_ids()) == sorted(ids)
    for i, key in enumerate(("exp-a", "exp-b", "exp-c")):
        store.write_experiment(experiment_record(key, ids[i : i + 2]), f"{key}-small-{i}")
    for rid in ("f1", "f2"):
        store.write_failure(rid, kind="family", name="aim", config={}, error="boom")
    return spec, root, ids


def _flip(path, offset: int, n: int = 32) -> None:
    data = bytearray(path.read_bytes())
    for i in range(offset, offset + n):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def damage(root, ids) -> dict[str, str]:
    """Damage files in every folder; returns the damaged files (relative paths) by kind."""
    store = Store(root)
    r = {i: store.path(rid) for i, rid in enumerate(ids)}
    r[0].write_bytes(r[0].read_bytes()[: r[0].stat().st_size // 2])  # truncated
    _flip(r[1], 100)  # corrupted inside its data
    table = pq.read_table(r[2])  # a footer that is not JSON
    pq.write_table(table.replace_schema_metadata({b"attndyn": b"{not json"}), r[2])
    renamed = r[3].with_name("0" * 16 + ".parquet")  # renamed: the name is not its run id
    r[3].rename(renamed)
    r[4].write_bytes(r[5].read_bytes())  # replaced by another run's file
    exp = root / "experiments"
    (exp / "exp-a-small-0.parquet").write_bytes(b"")  # truncated to nothing
    shutil.copy(r[5], exp / "exp-b-small-1.parquet")  # replaced by a run file
    (exp / "notes.txt").write_text("foreign")
    fail = root / "failures"
    _flip(fail / "f1.parquet", 20, 400)  # corrupted
    (fail / "f2.parquet").rename(fail / "f3.parquet")  # renamed
    (root / CATALOG).write_bytes(b"PAR1 garbage")  # a cache: rebuilt, not a problem
    for sub in ("quarantine", "figures"):  # never read as results
        (root / sub).mkdir(exist_ok=True)
        (root / sub / "junk.parquet").write_bytes(b"junk")
    return {
        f"runs/{ids[0]}.parquet": "unreadable",
        f"runs/{ids[1]}.parquet": "",
        f"runs/{ids[2]}.parquet": "not valid JSON",
        f"runs/{renamed.name}": f"names run '{ids[3]}'",
        f"runs/{ids[4]}.parquet": f"names run '{ids[5]}'",
        "experiments/exp-a-small-0.parquet": "unreadable",
        "experiments/exp-b-small-1.parquet": "experiment",
        "experiments/notes.txt": "foreign",
        "failures/f1.parquet": "",
        "failures/f3.parquet": "another run",
    }


@pytest.mark.slow  # 14 CPU s
def test_damage_in_every_folder_is_reported_and_only_damaged_runs_are_redone(
    built, tmp_path, monkeypatch, capsys
):
    spec, prebuilt, ids = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    expected = damage(root, ids)
    store = Store(root)
    assert store.problem(ids[1]) is not None  # the flipped bytes did damage run 1

    code, out, err = cli(monkeypatch, capsys, "runs", "--check", "--out", str(root))
    assert code == 1 and "Traceback" not in err
    lines = out.strip().splitlines()
    assert len(lines) == len(expected)  # one line per damaged or foreign file
    found = dict(line.split(": ", 1) for line in lines)
    assert set(found) == set(expected)
    for file, why in expected.items():
        assert why in found[file], (file, found[file])
    code, out, _ = cli(monkeypatch, capsys, "runs", "--check", "--json", "--out", str(root))
    assert code == 1 and {p["file"] for p in json.loads(out)} == set(expected)

    reads = [
        ("runs",),
        ("runs", "--json"),
        ("runs", "--family", "aim", "--where", "seed >= 0"),
        ("query", "SELECT count(*) AS n FROM observables"),
        ("query", "SELECT * FROM claims"),
        ("query", "SELECT * FROM experiments"),
        ("query", "SELECT * FROM failures"),
        ("export", "--output", str(tmp_path / "all.csv")),
    ]
    for args in reads:
        code, out, err = cli(monkeypatch, capsys, *args, "--out", str(root))
        assert code == 0, (args, err)
        assert "Traceback" not in err and "error:" not in err, (args, err)
        assert "invalid SQL" not in err and "invalid value" not in err  # the user's query is fine
        warned = [line for line in err.splitlines() if line.startswith("warning:")]
        assert len(warned) == len(set(warned))  # one line per file
        if args[0] == "runs":  # each damaged run file is named once, run 1 (flipped data,
            for file in list(expected)[:5]:  # intact footer) too: the catalog reads it whole
                assert sum(file in w for w in warned) == 1, (file, warned)
    code, out, _ = cli(monkeypatch, capsys, "runs", "--json", "--out", str(root))
    listed = [row["run_id"] for row in json.loads(out)]
    assert listed == [ids[5]]  # run 1's rows are not served (issue 33 item 2)
    sql = "SELECT key FROM experiments"
    code, out, _ = cli(monkeypatch, capsys, "query", sql, "--json", "--out", str(root))
    assert json.loads(out) == [{"key": "exp-c-small-2"}]

    summary = run_sweep(spec, root, workers=1, progress=False)
    assert (summary.done, summary.skipped, summary.failed) == (5, 1, 0)  # exactly the damaged
    assert sorted(store.run_ids()) == sorted([*ids, "0" * 16])  # the foreign file stays
    assert all(store.problem(rid) is None for rid in ids)
    assert len(list((root / "quarantine").glob("*.parquet"))) == 1 + 4  # junk + 4 moved aside
    original = {rid: Store(prebuilt).read(rid) for rid in ids}
    for rid in ids:
        np.testing.assert_allclose(
            store.read(rid)["loss"].values, original[rid]["loss"].values, rtol=1e-5
        )
    code, out, _ = cli(monkeypatch, capsys, "runs", "--check", "--out", str(root))
    left = {line.split(": ", 1)[0] for line in out.strip().splitlines()}
    assert left == set(list(expected)[3:4] + list(expected)[5:])  # not runs: left to the user


def _edit_footer(path, edit) -> None:
    """Rewrite ``path`` with its footer record changed by ``edit`` (checksums kept as written)."""
    table = pq.read_table(path)
    record = json.loads(table.schema.metadata[b"attndyn"])
    edit(record)
    pq.write_table(table.replace_schema_metadata({b"attndyn": json.dumps(record).encode()}), path)


def test_an_edited_footer_is_damage(built, tmp_path, monkeypatch, capsys):
    """Issue 33 item 3: a run file whose record was edited (config d 8 → 999, wall_s 10⁹, run id
    and data checksum kept) and an experiment record with an edited value are damaged: `runs
    --check` names them, and load-or-compute does not reuse the run."""
    _, prebuilt, ids = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    store = Store(root)
    run = store.path(ids[0])

    def edit(record):
        record["config"]["d"] = 999
        record["wall_s"] = 1e9

    _edit_footer(run, edit)
    _edit_footer(root / "experiments" / "exp-c-small-2.parquet",
                 lambda r: r["claims"][0].update(value=123.0))  # fmt: skip
    assert "footer record" in store.problem(ids[0])
    code, out, err = cli(monkeypatch, capsys, "runs", "--check", "--out", str(root))
    assert code == 1 and "Traceback" not in err
    found = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert "footer record" in found[f"runs/{ids[0]}.parquet"]
    assert "footer record" in found["experiments/exp-c-small-2.parquet"]
    config = runs.family_config("aim", Store(prebuilt).metadata(ids[0])["config"])
    runs.simulation("aim", config, store)  # the edited file is quarantined and recomputed
    assert store.problem(ids[0]) is None and store.metadata(ids[0])["config"]["d"] == 8
    assert any((root / "quarantine").glob(f"{ids[0]}*"))


def test_query_never_serves_a_damaged_files_rows(built, tmp_path, monkeypatch, capsys):
    """Issue 33 item 2: a run file whose data miss their checksum (one value changed, footer
    intact) and one with flipped page bytes: the observables view leaves both out, with one
    warning each, and serves the others."""
    _, prebuilt, ids = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    store = Store(root)
    table = pq.read_table(store.path(ids[0]))
    values = table.column("value").to_numpy().copy()
    values[0] += 1.0
    changed = table.set_column(table.schema.get_field_index("value"), "value", [values])
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), store.path(ids[0]))
    _flip(store.path(ids[1]), 100)
    sql = "SELECT DISTINCT run_id FROM observables ORDER BY run_id"
    code, out, err = cli(monkeypatch, capsys, "query", sql, "--json", "--out", str(root))
    assert code == 0, err
    assert [r["run_id"] for r in json.loads(out)] == sorted(ids[2:])
    for rid in ids[:2]:
        assert sum(rid in line for line in err.splitlines() if "warning" in line) == 1, err


def test_show_of_a_damaged_file_and_export_to_a_folder_are_one_line(
    built, tmp_path, monkeypatch, capsys
):
    """Issue 33 items 4–5: `show` on a truncated run file or one whose record is not JSON is one
    line with exit 1 (a damaged folder); `export --output` onto a folder is bad input (exit 2)
    and writes nothing."""
    _, prebuilt, ids = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    store = Store(root)
    store.path(ids[0]).write_bytes(store.path(ids[0]).read_bytes()[:200])
    table = pq.read_table(store.path(ids[1]))
    pq.write_table(table.replace_schema_metadata({b"attndyn": b"{x"}), store.path(ids[1]))
    for rid, why in ((ids[0], "unreadable"), (ids[1], "not valid JSON")):
        code, out, err = cli(monkeypatch, capsys, "show", rid, "--out", str(root))
        assert code == 1 and len(err.strip().splitlines()) == 1 and why in err, err
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = cli(monkeypatch, capsys, "export", "--output", str(tmp_path), "--out",
                         str(prebuilt))  # fmt: skip
    assert code == 2 and "'output'" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_linked_run_file_is_left_out_and_reported(built, tmp_path, monkeypatch, capsys):
    """Issue 33 item 4: a run file replaced by a symbolic link to a copy outside the folder made
    `report` end in a traceback (the views cannot read outside the folder); the catalog now
    leaves links out with one warning and `runs --check` names them."""
    _, prebuilt, ids = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    store = Store(root)
    shutil.rmtree(root / "experiments")  # the fixture's records are minimal, not reportable
    outside = tmp_path / "elsewhere.parquet"
    store.path(ids[0]).rename(outside)
    store.path(ids[0]).symlink_to(outside)
    code, out, err = cli(monkeypatch, capsys, "report", "--out", str(root))
    assert code == 0 and "Traceback" not in err and "symbolic link" in err, err
    code, out, err = cli(monkeypatch, capsys, "runs", "--check", "--out", str(root))
    assert code == 1 and f"runs/{ids[0]}.parquet: a symbolic link" in out


def test_a_run_stored_meanwhile_by_another_sweep_counts_as_skipped(tmp_path):
    """Issue 33 item 5: two sweeps on one folder both reported ran = 4 though each run was
    computed once; a run that another process stored after this sweep's plan is skipped."""
    from attndyn.sweep import plan_sweep

    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.replace("[0, 1, 2, 3, 4, 5]", "[0, 1, 2]"))
    root = tmp_path / "store"
    plan = plan_sweep(spec, root)  # nothing stored yet
    first = plan.items[0]
    runs.simulation("aim", runs.family_config("aim", first.config), Store(root))  # the other
    summary = run_sweep(plan, root, workers=1, progress=False)
    assert (summary.done, summary.skipped, summary.failed) == (2, 1, 0)


def test_report_into_an_unwritable_place_is_one_line(built, tmp_path, monkeypatch, capsys):
    """Issue 33 item 4: `report --output` under /proc (not writable even for root) ended in a
    traceback: one line, exit 1."""
    _, prebuilt, _ = built
    root = tmp_path / "store"
    shutil.copytree(prebuilt, root)
    shutil.rmtree(root / "experiments")  # the fixture's records are minimal, not reportable
    code, out, err = cli(monkeypatch, capsys, "report", "--out", str(root), "--output",
                         "/proc/attndyn-report")  # fmt: skip
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
