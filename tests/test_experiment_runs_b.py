"""Half 2 of 2 of the experiments' end-to-end runs: tiny presets and negative controls
(tests/experiment_runs.py)."""

from __future__ import annotations

import pytest
from experiment_runs import check_control, check_tiny, controls, half

NAMES = half(1)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One results folder for the file: a control reuses the runs its claims share."""
    return tmp_path_factory.mktemp("claims")


@pytest.mark.e2e
@pytest.mark.parametrize("name", NAMES)
def test_tiny_preset_passes_strict(name, store, monkeypatch):
    check_tiny(name, store, monkeypatch)


@pytest.mark.e2e
@pytest.mark.parametrize("name, control", controls(NAMES))
def test_negative_control_fails_its_claims(name, control, store):
    check_control(name, control, store)
