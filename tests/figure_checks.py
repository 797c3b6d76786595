"""Checks on experiment figures shared by the tests: capture the Figure an experiment draws, and
list its axes that show data without an x or a y label."""

from __future__ import annotations

import inspect
import sys

from matplotlib.figure import Figure


def capture_figures(exp, monkeypatch) -> list[Figure]:
    """Make ``exp.figure`` record each Figure it saves (still saved) in the returned list."""
    module = sys.modules[inspect.getmodule(type(exp).figure).__name__]
    original = module.save_figure
    seen: list[Figure] = []

    def recording(fig, path):
        seen.append(fig)
        return original(fig, path)

    monkeypatch.setattr(module, "save_figure", recording)
    return seen


def unlabelled_axes(fig: Figure) -> list[str]:
    """``'title: x=…, y=…'`` for each axes with data whose x or y label is empty (colour bars
    excepted: their label is optional)."""
    bad = []
    for i, ax in enumerate(fig.axes):
        if getattr(ax, "_colorbar", None) is not None or not ax.has_data():
            continue
        if not ax.get_xlabel().strip() or not ax.get_ylabel().strip():
            title = ax.get_title() or f"axes {i}"
            bad.append(f"{title}: x={ax.get_xlabel()!r}, y={ax.get_ylabel()!r}")
    return bad
