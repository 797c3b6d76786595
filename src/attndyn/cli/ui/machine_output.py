"""Machine-readable stdout: while a command prints JSON or CSV, stdout carries only that.

Native libraries write to file descriptor 1 directly (LAPACK's ``** On entry to SLASCL parameter
number 4 had an illegal value`` when a simulation diverges, XLA's logging), past anything Python
can intercept. :func:`native_stdout_to_stderr` points descriptor 1 at stderr for the whole
command and gives Python's ``sys.stdout`` a descriptor of its own on the real stdout, so what the
command prints still goes there.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def _flush_native() -> None:
    """Flush the C library's stdio buffers (``fflush(NULL)``): a native library's ``printf``
    to a pipe sits in a buffer until then, and must reach the descriptor it was meant for."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass  # no C library to flush (not a POSIX process)


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # e.g. a StringIO that captures output in a test


@contextmanager
def native_stdout_to_stderr() -> Iterator[None]:
    """Send what native code writes to descriptor 1 to stderr until the block ends; Python's
    ``sys.stdout`` keeps writing to the real stdout."""
    sys.stdout.flush()
    _flush_native()
    try:
        saved = os.dup(1)
    except OSError:
        saved = None  # no descriptor 1: nothing native can reach stdout either
    if saved is None:
        yield
        return
    real = sys.stdout
    if _fileno(real) == 1:
        sys.stdout = io.TextIOWrapper(
            io.FileIO(saved, "w", closefd=False),
            encoding=real.encoding,
            errors=real.errors,
            write_through=True,
        )
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        _flush_native()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = real


def print_json(value) -> None:
    """``value`` as one line of JSON on stdout (NaN and infinities as null, arrays as lists)."""
    from attndyn.core.serial import json_safe

    print(json.dumps(json_safe(value)))


def print_frame(frame, as_json: bool, as_csv: bool) -> bool:
    """Print ``frame`` as a JSON list of row objects or as CSV; False if neither was asked."""
    if as_json:
        print(json.dumps(json.loads(frame.to_json(orient="records", date_format="iso"))))
    elif as_csv:
        sys.stdout.write(frame.to_csv(index=False))
    return as_json or as_csv
