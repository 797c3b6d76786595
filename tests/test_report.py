"""``attndyn report`` without a browser: bad folders, an empty folder, theory matching, the site
replaced whole and not taken for results (tests/test_report_browser.py opens it in Chromium)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attndyn.cli import main
from attndyn.core.config import run_id
from attndyn.core.trajectory import make_trajectory
from attndyn.models.aim import AIMConfig
from attndyn.models.aim.theory import AIMTheoryConfig
from attndyn.report import sitedata
from attndyn.report.site import MARKER, write_report
from attndyn.store import Store
from attndyn.store.check import problems

TIMES = np.array([0.0, 0.5, 1.0])


def _store_run(store: Store, config, seeds: int | None, values: np.ndarray) -> str:
    """Write a three-point run of ``config`` through the Store API; its id as a real run's."""
    theory = seeds is None
    traj = make_trajectory(
        {"loss": values, "q_11": values + 1.0},
        time=TIMES,
        samples=np.arange(3),
        step=None if theory else np.arange(3),
        seeds=None if theory else np.arange(seeds),
        family="aim",
        config=json.loads(config.model_dump_json()),
        overflow=1e30,
    )
    rid = run_id("aim:theory" if theory else "aim", config)
    store.write(traj, rid, wall_s=0.01)
    return rid


def _run_cli(args, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_missing_folder_is_an_error(tmp_path, capsys):
    code, out, err = _run_cli(["report", "--out", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "nowhere" in err and "'out'" in err
    assert not (tmp_path / "nowhere").exists()


def test_empty_folder_says_so(tmp_path, capsys):
    code, out, _ = _run_cli(["report", "--out", str(tmp_path)], capsys)
    index = tmp_path / "report" / "index.html"
    assert code == 0 and out.strip() == f"report: {index}"
    assert "holds no runs, experiments or failures yet" in index.read_text()


def test_theory_of_the_same_config_is_matched(tmp_path):
    store = Store(tmp_path)
    base = dict(d=8, t_max=1.0, records=3, seeds=2)
    sim = _store_run(store, AIMConfig(**base), 2, np.ones((2, 3)))
    other = _store_run(store, AIMConfig(**base | {"d": 16}), 2, np.ones((2, 3)))
    theory = _store_run(store, AIMTheoryConfig(**base), None, np.zeros(3))
    _store_run(store, AIMTheoryConfig(**base | {"d": 12}), None, np.zeros(3))
    data = sitedata.collect(tmp_path)
    assert data.theory_of == {sim: [theory]}
    assert data.simulations_of == {theory: [sim]}
    assert other not in data.theory_of
    # the seed mean, min and max per time, with the diverged (NaN) value left out
    values = np.array([[1.0, 2.0, np.nan], [3.0, 6.0, 5.0]])
    rid = _store_run(store, AIMConfig(**base | {"d": 20}), 2, values)
    series = sitedata.collect(tmp_path).series[rid]["loss"]
    assert series["t"] == TIMES.tolist()
    assert series["mean"] == [2.0, 4.0, 5.0]
    assert series["lo"] == [1.0, 2.0, 5.0] and series["hi"] == [3.0, 6.0, 5.0]


def test_a_plugin_theory_on_the_grid_alone_is_matched():
    """A plug-in's theory Config may be the simulator's grid without seeds, seed and dtype
    (docs/plugins.md): it matches a simulation whose other fields agree; a built-in style theory
    (the simulator's fields plus its own) must agree on the seeds too."""
    grid = {"d": 8, "lr": 0.5, "t_max": 1.0, "records": 3, "grid": "log"}
    sim = {"seed": 0, "seeds": 2, "dtype": "float32"}

    def run(rid, kind, config):
        return {"run_id": rid, "kind": kind, "family": "toy", "config": config}

    runs = [
        run("sim", "simulation", grid | sim),
        run("grid-only", "theory", grid),
        run("other-d", "theory", grid | {"d": 16}),
        run("with-seeds", "theory", grid | sim | {"method": "ode"}),
        run("other-seeds", "theory", grid | sim | {"seeds": 5, "method": "ode"}),
    ]
    assert sitedata.match_theory(runs) == {"sim": ["with-seeds"]}  # the closer match first
    assert sitedata.match_theory(runs[:3]) == {"sim": ["grid-only"]}
    assert sitedata.match_theory([runs[0], runs[4]]) == {}


def test_site_is_replaced_whole_and_not_a_result(tmp_path):
    store = Store(tmp_path)
    rid = _store_run(store, AIMConfig(d=8, t_max=1.0, records=3, seeds=2), 2, np.ones((2, 3)))
    index = write_report(tmp_path)
    site = index.parent
    assert (site / MARKER).is_file() and (site / "runs" / f"{rid}.html").is_file()
    (site / "stale.html").write_text("from before")
    assert write_report(tmp_path) == index
    assert not (site / "stale.html").exists()  # the old site is gone, not merged
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert problems(tmp_path) == []  # attndyn runs --check: the site is not a foreign file


def test_run_pages_label_time_as_the_family_and_a_theory_shows_one_value(tmp_path):
    from attndyn.models import aim

    store = Store(tmp_path)
    base = dict(d=8, t_max=1.0, records=3, seeds=2)
    sim = _store_run(store, AIMConfig(**base), 2, np.ones((2, 3)))
    theory = _store_run(store, AIMTheoryConfig(**base), None, np.zeros(3))
    runs = write_report(tmp_path).parent / "runs"
    for rid, spread in ((sim, True), (theory, False)):
        html = (runs / f"{rid}.html").read_text()
        plot = html.split('id="series">', 1)[1].split("</script>", 1)[0]
        assert json.loads(plot)["time_label"] == aim.TIME_LABEL
        assert f"Horizontal axis: {aim.TIME_LABEL}." in html
        final = html.split("<h2>Final values</h2>", 1)[1].split("</table>", 1)[0]
        assert ("<th>min</th>" in final and "<th>max</th>" in final) == spread, final
        assert ("<th>value</th>" in final) != spread, final


def test_a_theory_on_its_own_grid_and_an_unknown_family_get_a_generic_time_label():
    from attndyn.models import circuits
    from attndyn.report.site import time_label

    assert time_label("circuits", "simulation") == circuits.TIME_LABEL
    assert time_label("circuits", "theory") == "the theory's own time t"  # SAME_GRID = False
    assert time_label("no-such-family", "simulation") == "time t"


def test_refuses_to_replace_a_foreign_folder(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, out, err = _run_cli(["report", "--out", str(tmp_path), "--output", str(mine)], capsys)
    assert code == 2 and out == "" and "'output'" in err
    assert (mine / "notes.txt").read_text() == "keep me"
