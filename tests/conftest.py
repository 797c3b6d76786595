"""Shared test fixtures."""

from __future__ import annotations

import itertools

import pytest

_COUNTER = itertools.count()

TINY = dict(d=12, seeds=2, t_max=0.05, records=4, batch=4, test_size=16)


@pytest.fixture
def tiny():
    """A tiny AIM config (a second or two to run)."""
    return dict(TINY)


@pytest.fixture(scope="session", autouse=True)
def session_results_folder(tmp_path_factory):
    """``$ATTNDYN_RESULTS`` while module- and session-scoped fixtures run (each test then gets
    its own, :func:`results_folder`)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("ATTNDYN_RESULTS", str(tmp_path_factory.getbasetemp() / "attndyn-results" / "s"))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def results_folder(tmp_path_factory, monkeypatch):
    """``$ATTNDYN_RESULTS`` of every test: a fresh folder outside the working directory (made on
    first write), so ``attndyn.simulate``/``predict``/``run`` and the CLI without ``--out``
    store there and never into the repository."""
    folder = tmp_path_factory.getbasetemp() / "attndyn-results" / f"t{next(_COUNTER)}"
    monkeypatch.setenv("ATTNDYN_RESULTS", str(folder))
    return folder
