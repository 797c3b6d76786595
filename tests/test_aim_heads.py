"""aim-heads' own pieces: the specialisation statistic, the seed-paired population flow against
the family's ``population-flow`` theory, and its config's one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from attndyn.experiments.aim.heads import HeadsConfig, order_names, specialisation
from attndyn.experiments.aim.heads_flow import paired_flows
from attndyn.models.aim import AIMConfig
from attndyn.models.aim.theory import AIMTheoryConfig, predict


def test_specialisation_is_zero_without_a_preferred_teacher():
    p = np.full((3, 3), 0.2)
    assert specialisation(p) == pytest.approx(0.0)


def test_specialisation_of_two_heads_is_the_matching_contrast():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(5, 2, 2))
    s = p[:, 0, 0] + p[:, 1, 1] - p[:, 0, 1] - p[:, 1, 0]
    np.testing.assert_allclose(specialisation(p), np.abs(s) / 4)


def test_specialisation_finds_the_best_permutation():
    p = np.zeros((3, 3))
    p[0, 2] = p[1, 0] = p[2, 1] = 0.9  # each student head on its own teacher head
    assert specialisation(p) == pytest.approx(0.9 - 2.7 / 9)
    assert specialisation(p[[2, 0, 1]]) == pytest.approx(specialisation(p))


@pytest.mark.slow  # 11–18 s each beside other jobs
@pytest.mark.parametrize(
    ("param", "activation"), [("tied", "h1"), ("tied", "h2"), ("untied", "h1")]
)
def test_paired_flows_are_the_family_population_flow(param, activation):
    """Seed by seed, the stacked flow is the family theory's population-flow of that seed."""
    common = dict(
        d=10, heads=2, L=1, batch=4, t_max=0.2, records=3, test_size=0, activation=activation
    )
    common["param"] = param
    names = order_names(2, param)
    theory = dict(method="population-flow", quad_log2=12, rtol=1e-8)
    ones = [predict(AIMTheoryConfig(seed=s, seeds=1, **theory, **common)) for s in (0, 1)]
    times = ones[0]["time"].values
    stacked = paired_flows(
        AIMConfig(seeds=2, **common), [0, 1], times, names, quad_log2=12, rtol=1e-8
    )
    for i, one in enumerate(ones):
        for n in names:
            np.testing.assert_allclose(stacked[n][i], one[n].values, rtol=1e-6, atol=1e-9)


def test_bad_case_is_refused_with_the_allowed_values():
    with pytest.raises(ValidationError, match="allowed: PARAM-ACT-H with PARAM tied or untied"):
        HeadsConfig(cases=["tied-h3-2"])
    with pytest.raises(ValidationError, match="same, swapped"):
        HeadsConfig(flow_activation="other")
