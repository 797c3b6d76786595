import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.grids import record_steps
from attndyn.core.schedules import constant, inverse_power, linear_ramp
from attndyn.errors import InputError


@pytest.mark.parametrize("kind", ["log", "linear"])
def test_record_steps_start_at_zero_end_at_total_and_increase(kind):
    steps = record_steps(10_000, 50, kind)
    assert steps[0] == 0 and steps[-1] == 10_000
    assert np.all(np.diff(steps) > 0)
    assert 40 <= len(steps) <= 50


def test_log_grid_is_dense_at_small_steps():
    steps = record_steps(1_000_000, 30, "log")
    assert steps[1] == 1 and steps[len(steps) // 2] < 10_000


def test_bad_grid_inputs():
    with pytest.raises(InputError, match="grid"):
        record_steps(10, 5, "cubic")
    with pytest.raises(InputError, match="records"):
        record_steps(10, 1)


def test_schedules():
    k = jnp.arange(5)
    assert np.allclose(constant()(k), 1.0)
    assert np.allclose(inverse_power(k0=2.0, gamma=1.0)(k), 2.0 / (k + 2.0))
    assert np.allclose(linear_ramp(1.0, 3.0, 4)(jnp.array([0, 2, 4, 8])), [1.0, 2.0, 3.0, 3.0])
    with pytest.raises(InputError, match="gamma"):
        inverse_power(gamma=1.5)
