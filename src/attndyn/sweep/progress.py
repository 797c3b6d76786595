"""The sweep's progress bar: runs done, failed, skipped and the time left; no per-run output."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class SweepProgress:
    """A rich progress bar on stderr over the runs to do (skipped runs are shown, not counted
    in the bar). ``enabled=False`` shows nothing."""

    def __init__(self, total: int, skipped: int, label: str, enabled: bool = True):
        self.total = total
        self.skipped = skipped
        self.done = 0
        self.failed = 0
        self._progress = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("done {task.fields[done]} · [red]failed {task.fields[failed]}[/red]"),
                TextColumn("· skipped {task.fields[skipped]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._task = self._progress.add_task(
                label, total=total, done=0, failed=0, skipped=skipped
            )

    def __enter__(self) -> SweepProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, done: int = 0, failed: int = 0) -> None:
        self.done += done
        self.failed += failed
        if self._progress is not None:
            self._progress.update(
                self._task, advance=done + failed, done=self.done, failed=self.failed
            )
