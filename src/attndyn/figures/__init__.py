"""Figures: the matplotlib helpers the experiments and the demo draw with (:mod:`.draw`),
:func:`attndyn.plot` (:mod:`.plot`) and the ``traj.attndyn`` accessor (:mod:`.accessor`).

An experiment's ``figure`` step draws with what this package exports (docs/plugins.md,
"Experiments"): :func:`new_figure` (``(Figure, axes)`` on a private Agg canvas, pyplot left
alone), :func:`save_figure` (written under a temporary name and renamed), :func:`plot_observable`
(one observable: thin lines per seed, the mean, dashed theory), :func:`colour_cycle`,
:func:`dropped_note`, and the legend notes :data:`PER_SEED_NOTE` and :data:`THEORY_NOTE`.

Nothing here is imported with ``attndyn`` itself but :mod:`.plot` and :mod:`.accessor`, which load
matplotlib only when they draw: the names above are loaded from :mod:`.draw` (and matplotlib with
it) when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attndyn.figures.draw import (
        PER_SEED_NOTE,
        THEORY_NOTE,
        colour_cycle,
        dropped_note,
        new_figure,
        plot_observable,
        save_figure,
    )

__all__ = [
    "PER_SEED_NOTE",
    "THEORY_NOTE",
    "colour_cycle",
    "dropped_note",
    "new_figure",
    "plot_observable",
    "save_figure",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from attndyn.figures import draw

        return getattr(draw, name)
    raise AttributeError(f"module 'attndyn.figures' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
