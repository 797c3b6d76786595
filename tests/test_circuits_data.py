"""The distinct/common-token generator (qkov.md §3): layout, labels and token statistics."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from attndyn.core.config import validate
from attndyn.errors import InputError
from attndyn.models.circuits.config import CircuitsConfig
from attndyn.models.circuits.data import (
    class_distribution,
    relevant_mask,
    sample_batch,
    sample_classes,
    uniform_distinct_mass,
)


def test_class_distribution_matches_the_digest():
    p = class_distribution(CircuitsConfig())
    assert p.shape == (4, 50)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # class 2: common ids 0..9 weight 1, distinct ids 30..39 weights 0.1..1.0, total 15.5
    np.testing.assert_allclose(p[2, :10], 1 / 15.5)
    np.testing.assert_allclose(p[2, 30:40], np.arange(1, 11) / 10 / 15.5)
    assert p[2, 10:30].sum() == 0 and p[2, 40:].sum() == 0
    # P(distinct) = 5.5/15.5; uniform attention mass 62·0.355/63 (qkov.md §3)
    assert uniform_distinct_mass(CircuitsConfig()) == pytest.approx(62 * 5.5 / 15.5 / 63)


def test_layout_query_and_labels():
    cfg = CircuitsConfig(seq_len=20)
    tokens, labels, classes = sample_classes(jax.random.PRNGKey(1), cfg, 500)
    tokens, labels, classes = map(np.asarray, (tokens, labels, classes))
    assert tokens.shape == (500, 19) and tokens.dtype == np.int32 and labels.dtype == np.int32
    np.testing.assert_array_equal(tokens[:, -1], 5 + classes)  # query is the last input
    np.testing.assert_array_equal(labels, 1 + classes)
    ctx = tokens[:, :-1]
    distinct = ctx >= 10
    # every distinct token belongs to the sequence's own class block 10(c+1)..10(c+1)+9
    np.testing.assert_array_equal(
        (ctx // 10 - 1)[distinct], np.broadcast_to(classes[:, None], ctx.shape)[distinct]
    )
    np.testing.assert_array_equal(np.asarray(relevant_mask(tokens, cfg)), tokens > 9)
    assert not np.asarray(relevant_mask(tokens, cfg))[:, -1].any()


def test_statistics_within_binomial_tolerance():
    """Class balance and per-class token frequencies: |observed − expected| ≤ 5 binomial σ."""
    cfg = CircuitsConfig()
    n = 8000
    tokens, labels, classes = map(np.asarray, sample_classes(jax.random.PRNGKey(7), cfg, n))
    counts = np.bincount(classes, minlength=4)
    sigma = np.sqrt(n * 0.25 * 0.75)
    assert np.all(np.abs(counts - n / 4) <= 5 * sigma), counts
    p = class_distribution(cfg)
    for c in range(4):
        ctx = tokens[classes == c, :-1].reshape(-1)
        freq = np.bincount(ctx, minlength=50)
        m = ctx.size
        expected = m * p[c]
        sd = np.sqrt(m * p[c] * (1 - p[c]))
        assert np.all(np.abs(freq - expected) <= 5 * sd + 1e-9), (c, freq, expected)


def test_sample_batch_is_jittable_and_deterministic():
    cfg = CircuitsConfig()
    f = jax.jit(lambda k: sample_batch(k, cfg, 8))
    a, b = f(jax.random.PRNGKey(3)), f(jax.random.PRNGKey(3))
    np.testing.assert_array_equal(a[0], b[0])
    c = f(jax.random.PRNGKey(4))
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"vocab": 40}, "vocab"),
        ({"param": "FOFA"}, "param"),
        ({"init_q": "zeros"}, "init_q"),
        ({"param": "CACO", "init_q": "eye"}, "init_q"),
        ({"lr": -1}, "lr"),
    ],
)
def test_bad_config_names_the_field(values, field):
    with pytest.raises(InputError, match=field):
        validate(CircuitsConfig, values)
