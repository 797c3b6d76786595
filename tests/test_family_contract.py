"""The family contract (attndyn.models.base), checked on every registered family."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.core.config import run_id, validate
from attndyn.errors import InputError
from attndyn.models import family_names, get_family, get_theory
from attndyn.models.base import CONTRACT, Family, Theory
from attndyn.store import Store

FAMILIES = family_names()


def _example(name: str) -> dict:
    return dict(get_family(name).EXAMPLE)


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    return request.param


def test_own_families_are_registered():
    assert {"aim", "circuits", "langevin", "markov", "query"} <= set(FAMILIES)


@pytest.mark.parametrize("name", ["aim", "circuits", "langevin", "markov", "query"])
def test_own_families_re_export_the_whole_contract(name):
    """Each own family package defines every name of the contract itself (no loader default)."""
    import importlib

    package = importlib.import_module(f"attndyn.models.{name}")
    assert set(CONTRACT) <= set(package.__all__)
    assert all(hasattr(package, n) for n in package.__all__)


def test_protocol_and_stable_run_id(family):
    module = get_family(family)
    assert isinstance(module, Family)
    values = _example(family)
    a, b = validate(module.Config, values), validate(module.Config, dict(values))
    assert run_id(family, a) == run_id(family, b)
    moved = validate(module.Config, {**values, "records": a.records + 1})
    assert run_id(family, moved) != run_id(family, a)


def test_bad_config_is_an_input_error(family):
    module = get_family(family)
    with pytest.raises(InputError, match="no_such_field"):
        validate(module.Config, {"no_such_field": 1})
    with pytest.raises(InputError, match="t_max"):
        validate(module.Config, {**_example(family), "t_max": -1.0})


@pytest.fixture(scope="module")
def runs(family):
    """(config, two seeds together, each seed alone)."""
    module = get_family(family)
    values = {**_example(family), "seed": 3, "seeds": 2}
    config = validate(module.Config, values)
    together = module.simulate(config)
    alone = [
        module.simulate(validate(module.Config, {**values, "seed": s, "seeds": 1})) for s in (3, 4)
    ]
    return config, together, alone


def test_seeds_together_equal_seeds_alone(runs):
    """vmap over seeds changes nothing but float rounding (XLA may vectorise differently)."""
    _, together, alone = runs
    assert list(together["seed"].values) == [3, 4]
    for i, single in enumerate(alone):
        for name in together.data_vars:
            np.testing.assert_allclose(
                together[name].values[i], single[name].values[0], rtol=1e-4, atol=1e-5, err_msg=name
            )


def test_explicit_seeds_replace_the_configs(family, runs):
    config, together, _ = runs
    again = get_family(family).simulate(config, seeds=[4])
    np.testing.assert_allclose(
        again[next(iter(again.data_vars))].values[0],
        together[next(iter(together.data_vars))].values[1],
        rtol=1e-4,
        atol=1e-5,
    )


def test_example_stays_finite_and_below_the_overflow_bound(family, runs):
    """The family's EXAMPLE has no diverged seed: its observables are finite and below the
    family's declared OVERFLOW (a legitimate range check of the bound)."""
    _, traj, _ = runs
    bound = get_family(family).OVERFLOW
    assert bound > 0 and not traj["diverged"].values.any()
    for name in traj.data_vars:
        assert np.all(np.abs(traj[name].values) <= bound), name


def test_trajectory_layout_and_store_round_trip(family, runs, tmp_path):
    config, traj, _ = runs
    assert traj.attrs["family"] == family
    assert set(traj.dims) == {"seed", "time"}
    assert {"time", "samples", "step", "diverged", "diverged_step"} <= set(traj.coords)
    assert np.all(np.diff(traj["time"].values) > 0)
    store = Store(tmp_path)
    rid = run_id(family, config)
    store.write(traj, rid)
    back = store.read(rid)
    for name in traj.data_vars:
        np.testing.assert_array_equal(back[name].values, traj[name].values)
    np.testing.assert_array_equal(back["time"].values, traj["time"].values)


def test_theory_names_and_grid(family, runs):
    """predict(config) has the simulator's names on its time grid, without a seed axis; a
    theory of a stylised model of its own (SAME_GRID = False) has its SUMMARY observables. A
    theory of some of the family's models is checked on the family's ``THEORY_EXAMPLE``."""
    module = get_family(family)
    if not module.THEORY:
        pytest.skip(f"family '{family}' declares no theory")
    theory = get_theory(family)
    assert isinstance(theory, Theory)
    config, traj, _ = runs
    if not getattr(theory, "SAME_GRID", True):
        prediction = theory.predict(validate(theory.Config, {"records": 5}))
        assert "seed" not in prediction.dims
        assert set(theory.SUMMARY) <= set(prediction.data_vars)
        return
    if hasattr(module, "THEORY_EXAMPLE"):
        # a theory of part of the family's models: compare on a config it covers
        config = validate(module.Config, {**_example(family), **module.THEORY_EXAMPLE})
        traj = module.simulate(config)
    fields = {k: v for k, v in config.model_dump().items() if k in theory.Config.model_fields}
    prediction = theory.predict(validate(theory.Config, fields))
    assert "seed" not in prediction.dims
    assert set(prediction.data_vars) <= set(traj.data_vars), sorted(
        set(prediction.data_vars) - set(traj.data_vars)
    )
    np.testing.assert_allclose(prediction["time"].values, traj["time"].values, rtol=1e-12)


def test_plot_labels_come_from_labels_and_time_label(family, runs):
    """``LABELS`` and ``TIME_LABEL`` (optional) label :func:`attndyn.plot`'s axes, the raw name
    where a name has none; by default it draws the SUMMARY observables the run has."""
    import attndyn

    module = get_family(family)
    labels = module.LABELS
    _, traj, _ = runs
    names = [n for n in module.SUMMARY if n in traj.data_vars] or list(traj.data_vars)[:4]
    fig = attndyn.plot(traj)
    assert [ax.get_ylabel() for ax in fig.axes] == [labels.get(n, n) for n in names]
    assert {ax.get_xlabel() for ax in fig.axes} == {module.TIME_LABEL}


@pytest.mark.parametrize("name", ["aim", "circuits", "markov", "query", "langevin"])
def test_own_families_label_their_summary_and_time(name):
    module = get_family(name)
    assert set(module.SUMMARY) <= set(module.LABELS), name
    assert module.TIME_LABEL


@pytest.mark.parametrize(
    "attr, value", [("LABELS", {"t_1": ""}), ("LABELS", ["t_1"]), ("TIME_LABEL", 4.0)]
)
def test_bad_labels_break_the_contract(attr, value):
    import types

    from attndyn.models.base import check_family

    aim = get_family("aim")
    fake = types.SimpleNamespace(**{k: getattr(aim, k) for k in ("NAME", "Config", "SUMMARY")})
    fake.simulate = aim.simulate
    check_family(fake, "aim")  # the contract's minimum passes
    setattr(fake, attr, value)
    with pytest.raises(TypeError, match=attr):
        check_family(fake, "aim")
