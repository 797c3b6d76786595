"""What `attndyn demo` says before it starts (attndyn.runs.estimate.expected_time)."""

from __future__ import annotations

import re

import pytest

from attndyn import runs
from attndyn.runs.estimate import expected_time
from attndyn.store import Store


@pytest.mark.slow  # 7 CPU s
def test_expected_time_calibrates_runs_to_compute_and_reuses_stored_ones(tmp_path):
    store = Store(tmp_path)
    small = dict(d=8, records=4, batch=4, test_size=16, seeds=2)
    a = runs.family_config("aim", dict(small, t_max=0.1))
    b = runs.family_config("aim", dict(small, t_max=0.2))
    seconds, line = expected_time([("aim", a), ("aim", b)], store)
    assert seconds > 0
    assert re.fullmatch(
        r"about \S+ s \(2 runs to compute, estimated from a short calibration\)", line
    )
    runs.simulation("aim", a, store)
    seconds, line = expected_time([("aim", a), ("aim", b)], store)
    assert line.endswith(
        "(1 run to compute, estimated from a short calibration; 1 stored run reused)"
    )
    runs.simulation("aim", b, store)
    assert expected_time([("aim", a), ("aim", b)], store) == (
        0.0,
        "a few seconds (stored runs are reused)",
    )
    assert expected_time([("aim", a)], store, force=True)[1].startswith("about ")
