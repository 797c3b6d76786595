"""Per-run locks and the temporary files of writers (docs/store.md, "Locks and temporary files").

A process about to compute a run holds ``locks/<run_id>.lock`` (an OS file lock through the
``filelock`` library; the kernel releases it when the process dies), checks the store again, and
computes only if the run is still missing; a second process asking for the same run waits on the
lock and then reads the stored run. Lock files are empty and stay (removing a lock file that
another process is about to lock would let two processes hold "the" lock); those older than an
hour that nobody holds are removed when a sweep starts.

A writer writes ``.<key>.<host>-<pid>.<tag>.tmp`` next to the final file and renames it. The first
write of a process into a folder removes the temporaries of dead processes of this host (and any
older than an hour), so a killed writer leaves nothing behind for long.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import filelock

STALE_S = 3600.0
HOST = hashlib.sha1(os.uname().nodename.encode()).hexdigest()[:6]
_cleaned: set[tuple[int, str]] = set()  # (pid, folder) already cleaned by this process


@contextlib.contextmanager
def locked(root: Path, keys: Iterable[str]) -> Iterator[None]:
    """Hold the locks of ``keys`` (in sorted order, so two holders never deadlock); says once on
    stderr when another process holds one and this one waits. When the block fails on bad input
    (InputError: nothing was computed), the lock files and folders this call created are removed,
    so a rejected config leaves nothing behind (only a process with the same bad config could
    race for them)."""
    from attndyn.errors import InputError

    folder = Path(root) / "locks"
    new_folders = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    folder.mkdir(parents=True, exist_ok=True)
    held: list[filelock.BaseFileLock] = []
    created: list[Path] = []
    bad_input = False
    try:
        for key in sorted(set(keys)):
            path = folder / f"{key}.lock"
            new = not path.exists()
            lock: filelock.BaseFileLock = filelock.FileLock(path)
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                print(
                    f"waiting for another process computing run {key} (lock {lock.lock_file})",
                    file=sys.stderr,
                    flush=True,
                )
                lock.acquire()
            held.append(lock)
            if new:
                created.append(path)
        yield
    except InputError:
        bad_input = True
        raise
    finally:
        for lock in reversed(held):
            lock.release()
        if bad_input:
            for path in created:
                with contextlib.suppress(OSError):
                    path.unlink()
            for new_folder in new_folders:
                with contextlib.suppress(OSError):
                    new_folder.rmdir()  # only when empty


def temp_path(folder: Path, key: str) -> Path:
    """A hidden temporary name for ``folder/<key>…``, unique per writer: host, pid and a tag."""
    return folder / f".{key}.{HOST}-{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"


def _owner(name: str) -> tuple[str, int] | None:
    """(host tag, pid) of a temporary file named by :func:`temp_path`, None for other names."""
    parts = name[: -len(".tmp")].rsplit(".", 2)
    if len(parts) != 3 or "-" not in parts[1]:
        return None
    host, _, pid = parts[1].partition("-")
    return (host, int(pid)) if pid.isdigit() else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` of this host exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_temporary(
    folders: Iterable[Path], older_than_s: float = STALE_S, pids: set[int] | None = None
) -> int:
    """Remove hidden ``.*.tmp`` files in ``folders`` (never read as results): those of dead
    processes of this host, those of the processes ``pids`` (just stopped), and any older than
    ``older_than_s``. Returns how many were removed."""
    removed = 0
    now = time.time()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.glob(".*.tmp"):
            owner = _owner(path.name)
            with contextlib.suppress(OSError):
                dead = owner is not None and owner[0] == HOST and not alive(owner[1])
                stopped = any(
                    f".{pid}." in path.name or f"-{pid}." in path.name for pid in pids or ()
                )
                if dead or stopped or now - path.stat().st_mtime > older_than_s:
                    path.unlink()
                    removed += 1
    return removed


def clean_once(folder: Path) -> None:
    """:func:`clean_temporary` of ``folder``, once per process (at its first write there)."""
    key = (os.getpid(), str(folder))
    if key not in _cleaned:
        _cleaned.add(key)
        clean_temporary([folder])


def clean_locks(root: Path, older_than_s: float = STALE_S) -> int:
    """Remove lock files older than ``older_than_s`` that nobody holds; returns how many."""
    folder = Path(root) / "locks"
    removed = 0
    now = time.time()
    for path in folder.glob("*.lock") if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime <= older_than_s:
                continue
            lock = filelock.FileLock(path)
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                continue
            try:
                path.unlink()
                removed += 1
            finally:
                lock.release()
    return removed
