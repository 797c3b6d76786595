"""``attndyn.plot`` and the ``traj.attndyn`` accessor: panels, labels from the family's
LABELS/TIME_LABEL, the seed band named in the legend, theory on the same x data, one-line errors;
and that nothing here touches pyplot."""

from __future__ import annotations

import json

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

import attndyn
from attndyn.core.trajectory import make_trajectory
from attndyn.errors import InputError
from attndyn.models import get_family

SEEDS, RECORDS = 3, 6


def _sim():
    """An aim-named simulation: 3 seeds, seed 2 diverged from record 4 (NaN, as stored)."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 1.0, RECORDS)
    obs = {n: rng.normal(size=(SEEDS, RECORDS)) for n in ("p_12", "t_1", "loss", "mu_111")}
    obs["p_12"][2, 4:] = np.nan
    traj = make_trajectory(
        obs,
        time=t,
        samples=(t * 1000).astype(np.int64),
        step=np.arange(RECORDS) * 10,
        seeds=np.arange(SEEDS),
        family="aim",
        config={"d": 12, "param": "tied", "seeds": SEEDS},
    )
    traj.attrs["run_id"] = "abc123"
    return traj


def _theory(names=("p_12", "t_1", "loss")):
    t = np.linspace(0.0, 1.0, 11)  # its own, finer grid on the same coordinate
    return make_trajectory({n: np.sin(t) for n in names}, time=t, samples=(t * 1000).astype(int),
                           family="aim", config={"d": 12})  # fmt: skip


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_panels_labels_band_and_theory():
    sim, theory = _sim(), _theory()
    aim = get_family("aim")
    fig = attndyn.plot(sim, theory, ["p_12", "t_1"])
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    for ax, name in zip(fig.axes, ["p_12", "t_1"], strict=True):
        assert ax.get_xlabel() == aim.TIME_LABEL
        assert ax.get_ylabel() == aim.LABELS[name]
        lines = {line.get_label(): line for line in ax.get_lines()}
        np.testing.assert_array_equal(lines["theory"].get_xdata(), theory["time"].values)
        np.testing.assert_array_equal(lines["theory"].get_ydata(), theory[name].values)
        assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the band
        thin = [ln for ln in ax.get_lines() if ln.get_lw() < 1.0]
        assert len(thin) == SEEDS  # one per seed
    assert fig.axes[0].get_ylabel() == "structural overlap p₁₂ = q₁₂ − t₁t₂"
    texts = _legend_texts(fig.axes[0])
    assert "min–max over finite seeds" in texts and "single seeds" in texts and "theory" in texts
    assert any("1 of 3 diverged" in t for t in texts)  # seed 2's NaN is dropped, and said
    mean = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("mean"))
    arr = sim["p_12"].values
    expected = [arr[np.isfinite(arr[:, r]), r].mean() for r in range(RECORDS)]
    np.testing.assert_allclose(mean.get_ydata(), expected)


def test_defaults_std_band_other_coordinate_and_given_axes():
    sim = _sim()
    fig = attndyn.plot(sim, band="std", seeds=False)
    # default names: aim's SUMMARY observables that the run has, in SUMMARY's order
    wanted = [n for n in get_family("aim").SUMMARY if n in sim.data_vars]
    assert [ax.get_ylabel() for ax in fig.axes] == [get_family("aim").LABELS[n] for n in wanted]
    assert "mean ± 1 std over finite seeds" in _legend_texts(fig.axes[0])
    assert all(ln.get_lw() >= 1.0 for ln in fig.axes[0].get_lines())  # no per-seed lines
    by_samples = attndyn.plot(sim, names="loss", x="samples")
    assert by_samples.axes[0].get_xlabel() == "samples n"
    from attndyn.figures.draw import new_figure

    host, ax = new_figure()
    assert attndyn.plot(sim, names="t_1", ax=ax) is host and ax.get_ylabel()


def test_an_unlabelled_family_falls_back_to_raw_names():
    sim = _sim()
    sim.attrs["family"] = "no-such-family"
    fig = attndyn.plot(sim)
    # no SUMMARY known: the first observables, labelled by their names, x by "time"
    assert [ax.get_ylabel() for ax in fig.axes] == list(sim.data_vars)[:4]
    assert fig.axes[0].get_xlabel() == "time"


@pytest.mark.parametrize(
    "kwargs, theory, message",
    [
        ({"names": ["p_12", "nope"]}, None, "unknown observable 'nope'"),
        ({"names": "loss", "x": "ode_time"}, None, "no time coordinate 'ode_time'"),
        ({"names": ["p_12", "mu_111"]}, _theory(), "no observable 'mu_111'"),
        ({"names": "loss", "x": "step"}, _theory(), "theory has no time coordinate 'step'"),
        ({"band": "iqr"}, None, "'band'"),
    ],
)
def test_bad_input_is_one_line_naming_it(kwargs, theory, message):
    with pytest.raises(InputError, match=message) as err:
        attndyn.plot(_sim(), theory, **kwargs)
    assert "\n" not in str(err.value)


def test_theory_with_seeds_is_refused():
    with pytest.raises(InputError, match="seed axis"):
        attndyn.plot(_sim(), _sim(), "loss")


def test_plot_leaves_pyplot_alone():
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    before = plt.get_fignums()
    attndyn.plot(_sim(), _theory())
    assert plt.get_fignums() == before and matplotlib.get_backend() == backend


def test_accessor_summary_text_html_and_plot():
    sim = _sim()
    text = repr(sim.attndyn)
    for part in ("aim (simulation)", "abc123", "0, 1, 2", "diverged seeds", "time range",
                 "samples range", "p_12 = ", "    d     = 12", "    param = tied"):  # fmt: skip
        assert part in text, part
    summary = sim.attndyn.summary()
    assert summary["config"] == json.loads(sim.attrs["config"]) and summary["seeds"] == [0, 1, 2]
    assert summary["diverged_seeds"] == [2] and summary["time_coordinates"]["time"] == (0.0, 1.0)
    assert np.isclose(summary["observables"]["p_12"], np.nanmean(sim["p_12"].values[:2, -1]))
    html = sim.attndyn._repr_html_()
    assert "<table>" in html and "abc123" in html and "<td>tied</td>" in html
    theory = _theory()
    assert "none (theory)" in repr(theory.attndyn)
    assert len(sim.attndyn.plot(theory, ["loss"]).axes) == 1


def test_the_figure_check_flags_an_unlabelled_axis():
    from figure_checks import unlabelled_axes

    from attndyn.figures.draw import new_figure

    fig, (a, b, empty) = new_figure(1, 3)
    a.plot([0, 1], [0, 1])
    a.set(xlabel="t", ylabel="p")
    b.plot([0, 1], [1, 0])
    b.set(xlabel="t", title="no y label")
    assert unlabelled_axes(fig) == ["no y label: x='t', y=''"]  # the empty axes has no data


NOTEBOOK = """
import sys
import matplotlib
matplotlib.use("svg")
import matplotlib.pyplot as plt
import attndyn
outcome = attndyn.run("circuits-ode", preset="tiny", out=sys.argv[1])
print(matplotlib.get_backend(), plt.get_fignums(), outcome.figure.stat().st_size > 0)
"""


@pytest.mark.slow  # 7 CPU s
def test_run_leaves_a_notebooks_backend_and_pyplot_alone(tmp_path):
    """A caller on the svg backend (as a notebook on its inline one) keeps it, and pyplot holds
    no figure after an experiment drew its own (circuits-ode: the fastest tiny preset)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", NOTEBOOK, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["svg", "[]", "True"]


def test_simulate_and_predict_store_to_the_default_folder_and_reuse(results_folder, tiny):
    """Without ``out`` both store to ``$ATTNDYN_RESULTS`` (here the test's own folder, set by
    conftest), as ``run`` and the CLI do, and a second call reads the stored run back."""
    sim = attndyn.simulate("aim", **tiny)
    theory = attndyn.predict("aim", **tiny)
    stored = {p.stem for p in (results_folder / "runs").glob("*.parquet")}
    assert stored == {sim.attrs["run_id"], theory.attrs["run_id"]}
    mtimes = {p: p.stat().st_mtime_ns for p in (results_folder / "runs").glob("*.parquet")}
    again = attndyn.simulate("aim", **tiny)
    np.testing.assert_array_equal(again["p_12"].values, sim["p_12"].values)
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # read back, not rewritten


def test_plot_observable_keeps_a_mean_visible_on_its_theory(tmp_path, monkeypatch):
    """The demo's direct S: the seed mean lies on its theory (p₁₂ ≈ 0). The mean is drawn
    above the theory, and the theory wider, so both show."""
    from attndyn.figures import draw

    figures = []
    monkeypatch.setattr(draw, "save_figure", lambda fig, path: figures.append(fig) or path)
    time = np.linspace(0.0, 1.0, 5)
    sim = make_trajectory({"p_12": np.zeros((3, 5))}, time=time, seeds=np.arange(3))
    theory = make_trajectory({"p_12": np.zeros(5)}, time=time)
    draw.plot_observable({"direct S": sim}, "p_12", tmp_path / "p.png", theory={"direct S": theory})
    lines = {line.get_label(): line for line in figures[0].axes[0].get_lines()}
    mean, th = lines["direct S"], lines["direct S: theory"]
    assert mean.get_zorder() > th.get_zorder() and th.get_linewidth() > mean.get_linewidth()
