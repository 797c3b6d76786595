"""Progress bars on stderr for long commands: the current run's steps with an ETA, and for
commands of several runs (experiments, benchmarks, sweeps) how many are done, reused, failed
and skipped.

The one renderer of the progress hook: :func:`shown` installs a :class:`Bars` display as the
listener of :mod:`attndyn.core.progress`, which the trainer, the flow integrator,
:mod:`attndyn.runs`, a sweep and the benchmarks report to; outside it nothing is shown (but
notes, on stderr). The CLI shows bars only on a terminal (stderr a tty) and never with
``--json`` or ``--csv`` (:func:`on_terminal`); the Python API shows them when asked
(``progress=True``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from attndyn.core.progress import listening, run_finished, run_started

REFRESH_S = 0.1
"""At most one redraw per this many seconds on a step report (rich also redraws 10 times a
second on its own)."""


def on_terminal(wanted: bool = True, machine_output: bool = False) -> bool:
    """Show bars? Only when ``wanted``, without machine-readable output, with stderr a terminal."""
    return wanted and not machine_output and sys.stderr.isatty()


def interrupted_message() -> str:
    """The one line a command prints when Ctrl-C stops it."""
    return "interrupted: stored runs are kept; run the same command to finish"


class Bars:
    """A rich display on stderr: one line for the current run (its steps, or a spinner for work
    that reports none) and, with ``count`` (a label such as ``"runs"``), one line counting the
    finished ones out of ``total`` (None: not known ahead, the count and the elapsed time)."""

    def __init__(
        self,
        count: str | None = None,
        total: int | None = None,
        console: Console | None = None,
        transient: bool = True,
    ) -> None:
        self.done = self.reused = self.failed = self.skipped = 0
        self.count = count
        self.total = total
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[amount]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=transient,
            # printing above the bar sends stdout to the bar's stream: only when both are the
            # terminal, never when stdout is a file or a pipe
            redirect_stdout=sys.stdout.isatty(),
        )
        self._runs: TaskID | None = None
        if count is not None:
            self._runs = self.progress.add_task(count, total=total, amount="", eta="")
            self._update_count()
        self._run: TaskID | None = None
        self._refreshed = -REFRESH_S

    def __enter__(self) -> Bars:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _update_count(self) -> None:
        assert self._runs is not None, "the runs bar exists (count given or runs_planned called)"
        reused = f" ({self.reused} stored, reused)" if self.reused else ""
        failed = f", {self.failed} failed" if self.failed else ""
        skipped = f", {self.skipped} skipped (stored)" if self.skipped else ""
        of = f"/{self.total}" if self.total else f" {self.count or 'runs'}"  # "3/8", "3 runs"
        self.progress.update(
            self._runs,
            completed=self.done + self.failed,
            amount=f"{self.done}{of} done{reused}{failed}{skipped}",
            eta="ETA" if self.total else "",
        )

    def runs_planned(self, total: int, skipped: int) -> None:
        self.skipped, self.total = skipped, total
        if self._runs is None:
            self._runs = self.progress.add_task(
                self.count or "runs", total=total, amount="", eta=""
            )
        else:
            self.progress.update(self._runs, total=total)
        self._update_count()

    def run_started(self, label: str) -> None:
        if self._run is not None:
            self.progress.remove_task(self._run)
        self._run = self.progress.add_task(label, total=None, amount="", eta="")
        self.progress.refresh()

    def steps(self, done: float, total: float, unit: str) -> None:
        if self._run is None:
            self.run_started("run")
        assert self._run is not None  # run_started added it
        amount = (
            f"{int(done):,}/{int(total):,} steps"
            if unit == "steps"
            else f"{unit} {done:.4g}/{total:.4g}"
        )
        self.progress.update(self._run, completed=done, total=total, amount=amount, eta="ETA")
        now = time.monotonic()
        if now - self._refreshed >= REFRESH_S:  # a run of many short segments reports often
            self._refreshed = now
            self.progress.refresh()

    def run_finished(self, reused: bool, failed: bool = False) -> None:
        if self._run is not None:
            self.progress.remove_task(self._run)
            self._run = None
        self.failed += int(failed)
        self.done += int(not failed)
        self.reused += int(reused)
        if self._runs is not None:
            self._update_count()

    def note(self, message: str) -> None:
        self.progress.console.print(message, markup=False, highlight=False)


@contextmanager
def shown(
    enabled: bool, count: str | None = None, total: int | None = None, transient: bool = True
) -> Iterator[Bars | None]:
    """Within the block, progress goes to a :class:`Bars` display when ``enabled`` (else
    nowhere; notes to stderr); yields the display or None. ``transient=False`` leaves the last
    state of the bars on the terminal."""
    if not enabled:
        yield None
        return
    bars = Bars(count, total, transient=transient)
    with bars, listening(bars):
        yield bars


def counted(items: Iterable[str], count: str, enabled: bool) -> Iterator[str]:
    """``items``, each shown as the current run while the loop's body runs, with the number of
    ``count`` (e.g. ``"benchmarks"``) done out of all when ``enabled``."""
    items = list(items)
    with shown(enabled, count, len(items)):
        for item in items:
            run_started(f"{count[:-1] if count.endswith('s') else count} {item}")
            yield item
            run_finished(False)
