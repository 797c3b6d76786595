"""Ctrl-C that is never lost.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives; raised inside a
garbage-collector callback (JAX registers one) it is printed as "Exception ignored" and lost, and
a command waiting for worker processes then waited for their runs to end (minutes; issue 48).
The command line therefore installs :func:`on_sigint`, which also sets :data:`REQUESTED`; code
that waits (a sweep's pool, :func:`attndyn.sweep.executors.run_local`) polls it.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

AGAIN_S = 0.05  # a Ctrl-C lost in a gc callback is raised again this much later
REQUESTED = threading.Event()
"""Set by Ctrl-C (SIGINT) while :func:`handling` is active; cleared when it starts and ends."""


def on_sigint(signum, frame) -> None:
    """Remember the interrupt, then raise KeyboardInterrupt as Python's own handler does."""
    REQUESTED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Within: SIGINT goes through :func:`on_sigint` (main thread only, and only where SIGINT
    is not ignored, as for a job started in the background), and a KeyboardInterrupt lost in
    a garbage-collector callback is not printed but raised again in the main thread 50 ms
    later (:func:`_thread.interrupt_main` from a timer thread)."""
    REQUESTED.clear()
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    old = signal.signal(signal.SIGINT, on_sigint)
    old_hook = sys.unraisablehook

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):  # lost in a gc callback:
            again = threading.Timer(AGAIN_S, _thread.interrupt_main)  # raised again, quietly,
            again.daemon = True  # once the collection is over (from here it would be lost too)
            again.start()
        else:
            old_hook(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = old_hook
        signal.signal(signal.SIGINT, old)
        REQUESTED.clear()
