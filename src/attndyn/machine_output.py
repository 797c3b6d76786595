"""Machine-readable stdout: while a command prints JSON or CSV, stdout carries only that.

Native libraries write to file descriptor 1 directly (LAPACK's ``** On entry to SLASCL parameter
number 4 had an illegal value`` when a simulation diverges, XLA's logging), past anything Python
can intercept. :func:`stdout_to_stderr` therefore points descriptor 1 and ``sys.stdout`` at
stderr for the whole command, and :func:`emit` points them back only to write the result.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_active: tuple[int, TextIO] | None = None
"""While redirected: a duplicate of the real descriptor 1 and the real ``sys.stdout``."""


def _flush_native() -> None:
    """Flush the C library's stdio buffers (``fflush(NULL)``): a native library's ``printf``
    to a pipe sits in a buffer until then, and must reach the descriptor it was meant for."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass  # no C library to flush (not a POSIX process)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (by Python or by native code) to stderr until the block
    ends, except what :func:`emit` writes."""
    global _active
    if _active is not None:
        yield
        return
    sys.stdout.flush()
    _flush_native()
    try:
        saved = os.dup(1)
    except OSError:
        saved = None  # no descriptor 1: nothing native can reach stdout either
    if saved is None:
        yield
        return
    os.dup2(2, 1)
    _active = (saved, sys.stdout)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        _flush_native()
        sys.stdout = _active[1]
        os.dup2(saved, 1)
        os.close(saved)
        _active = None


def emit(text: str) -> None:
    """Write ``text`` to the real stdout (also while :func:`stdout_to_stderr` is active)."""
    if _active is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    saved, real = _active
    sys.stderr.flush()
    _flush_native()
    os.dup2(saved, 1)
    try:
        real.write(text)
        real.flush()
    finally:
        os.dup2(2, 1)
