"""The progress hook that long loops report to, and the chunk length that keeps them responsive.

This is the one progress mechanism of attndyn: work reports here, and the one renderer
(:mod:`attndyn.core.progress_bars`) installs itself as the listener with :func:`listening`. The
trainer and the flow integrator call :func:`report_steps` between chunks; :mod:`attndyn.runs`
calls :func:`run_started` and :func:`run_finished` around each run it computes or reads back; a
sweep calls :func:`runs_planned` once and :func:`run_finished` (``failed`` or not) as its workers
return; a benchmark's stages are :func:`note` lines. With no listener a note goes to stderr and
every other call does nothing, so a family's ``simulate(config, seeds)`` keeps its signature: a
plug-in family with its own loop may call :func:`report_steps` (docs/plugins.md).

:class:`Chunker` splits a loop into jitted calls of bounded wall time (``TARGET_S``), so that
Python regains control often enough to report progress and to raise ``KeyboardInterrupt``
(Ctrl-C) within about that time, whatever the record grid.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

TARGET_S = 0.25
"""Wall seconds one chunk of steps aims at."""

GROWTH = 8
"""At most this factor between one chunk's length and the next (the first call compiles, so its
time says little about the steps)."""


class Listener(Protocol):
    """What a display receives: the current run's steps, runs planned, starting and ending, and
    lines of news."""

    def steps(self, done: float, total: float, unit: str) -> None: ...

    def runs_planned(self, total: int, skipped: int) -> None: ...

    def run_started(self, label: str) -> None: ...

    def run_finished(self, reused: bool, failed: bool = False) -> None: ...

    def note(self, message: str) -> None: ...


_listener: ContextVar[Listener | None] = ContextVar("attndyn_progress", default=None)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Send this context's progress reports to ``listener`` (None: to nobody)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def active() -> bool:
    """Whether anyone listens (a loop may skip preparing its reports otherwise)."""
    return _listener.get() is not None


def report_steps(done: float, total: float, unit: str = "steps") -> None:
    """``done`` of ``total`` steps (or another ``unit`` of work, e.g. ``"time"`` for an
    integrator) of the current run are done."""
    listener = _listener.get()
    if listener is not None:
        listener.steps(done, total, unit)


def runs_planned(total: int, skipped: int = 0) -> None:
    """``total`` runs are to be computed (``skipped`` more are stored and will not be)."""
    listener = _listener.get()
    if listener is not None:
        listener.runs_planned(total, skipped)


def run_started(label: str) -> None:
    """A run (or another unit of work, e.g. a benchmark) named ``label`` starts here."""
    listener = _listener.get()
    if listener is not None:
        listener.run_started(label)


def run_finished(reused: bool, failed: bool = False) -> None:
    """The current run ended: read back from the store (``reused``), or ``failed``."""
    listener = _listener.get()
    if listener is not None:
        listener.run_finished(reused, failed)


def note(message: str) -> None:
    """A line of news about the work (e.g. a benchmark's stage): shown above the bars, or on
    stderr when nobody listens (stdout stays clean for JSON)."""
    listener = _listener.get()
    if listener is not None:
        listener.note(message)
    else:
        print(message, file=sys.stderr, flush=True)


def notes(wanted: bool) -> Callable[[str], None]:
    """A ``say(message)`` that sends :func:`note` lines when ``wanted`` and drops them else."""

    def say(message: str) -> None:
        if wanted:
            note(message)

    return say


class Chunker:
    """Chunk lengths (in steps) that take about ``target_s`` each, learnt from the calls so far.

    Usage: ``n = chunker.next(remaining)``, run and wait for n steps, ``chunker.took(n, seconds)``.
    The first chunk is ``first`` steps; each later one is the measured rate × ``target_s``, at
    most ``GROWTH`` times the last, at least one step. A chunk costs about 1 ms of dispatch and
    waiting (measured on the demo's tied aim run, d = 128, 4 seeds, 12,422 steps on 2 busy
    cores: 125 chunks of 100 steps took 5.42 s of CPU, one call 5.27 s), so chunks of
    ``TARGET_S`` add well under 1 %.
    """

    def __init__(self, target_s: float = TARGET_S, first: int = 1) -> None:
        self.target_s = target_s
        self.length = first
        self._grow_from = first

    def next(self, remaining: int) -> int:
        return max(1, min(int(remaining), self.length))

    def took(self, steps: int, seconds: float) -> None:
        if steps < self.length and seconds < self.target_s:
            return  # a short remainder says little; keep the length
        rate = steps / max(seconds, 1e-9)
        self.length = max(1, min(round(rate * self.target_s), GROWTH * max(steps, 1)))

    @staticmethod
    def clock() -> float:
        return time.perf_counter()
