"""Shared test fixtures."""

from __future__ import annotations

import pytest

TINY = dict(d=12, seeds=2, t_max=0.05, records=4, batch=4, test_size=16)


@pytest.fixture
def tiny():
    """A tiny AIM config (a second or two to run)."""
    return dict(TINY)
