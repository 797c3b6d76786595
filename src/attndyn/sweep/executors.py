"""Executors: where a sweep's tasks run.

- ``local``: a pool of worker processes on this machine, started with the ``spawn`` method (a
  fresh interpreter, never a fork of a process in which JAX may already run threads), each with
  one BLAS/XLA thread (set in the environment the workers inherit, before they import JAX). A
  worker that watches its parent exits when the sweep process dies, so a killed sweep leaves no
  orphans behind. If a worker process dies (killed, out of memory), the pool is restarted and the
  unfinished tasks are submitted again (at most ``MAX_RESTARTS`` times).
- ``dask``: tasks submitted to a Dask distributed scheduler (``address``), or to a local Dask
  cluster started for the sweep. Tasks are submitted with ``pure=False`` (never merged). Dask
  reschedules the tasks of a worker that dies; a task that kills workers repeatedly fails with
  ``KilledWorker`` and is recorded as a failure.

An executor calls ``on_result(task, result)`` for each finished task and ``on_error(task, exc)``
for a task that could not finish; a :class:`~attndyn.store.StoreError` (the results folder cannot
be written) stops the sweep.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

from attndyn.errors import ExecutorError
from attndyn.sweep.tasks import Task, TaskResult, run_task, single_thread_env

MAX_RESTARTS = 3


EXECUTORS = ("local", "dask")

OnResult = Callable[[Task, TaskResult], None]
OnError = Callable[[Task, BaseException], None]


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def worker_environment() -> Iterator[None]:
    """Within: the process environment that spawned workers inherit (one BLAS/XLA thread).
    This process's own JAX, if already started, is unaffected."""
    with _environment(single_thread_env()):
        yield


STOP_S = 1.0  # how long an interrupted sweep lets its workers unwind before it kills them
POLL_S = 0.1  # how often a sweep waiting for its workers looks for a Ctrl-C


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Within: ``values`` set in the process environment (restored after)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds: a write in progress removes its temporary file


def _init_worker(parent: int) -> None:
    """Pool worker start-up: SIGTERM unwinds cleanly; exit as soon as the sweep process is
    gone."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


@contextlib.contextmanager
def _ctrl_c_flag() -> Iterator[threading.Event]:
    """Within: SIGINT sets the returned event (:data:`attndyn.core.interrupt.REQUESTED`, also
    set by a Ctrl-C before, under the command line's handler) instead of raising
    KeyboardInterrupt wherever the main thread happens to be: raised inside a
    garbage-collector callback (JAX's) it is printed as "ignored" and lost, and the sweep then
    waited for its workers' runs to end (minutes). The caller polls the event; KeyboardInterrupt
    is raised on the way out when it is set (main thread only: elsewhere nothing changes)."""
    from attndyn.core.interrupt import REQUESTED

    if threading.current_thread() is not threading.main_thread():
        yield REQUESTED
        return
    old = signal.signal(signal.SIGINT, lambda *_: REQUESTED.set())
    try:
        yield REQUESTED
    finally:
        signal.signal(signal.SIGINT, old)
        asked = REQUESTED.is_set()
        REQUESTED.clear()  # answered here: the next sweep of this process starts afresh
    if asked:
        raise KeyboardInterrupt


def run_local(
    tasks: list[Task], root: str, workers: int, on_result: OnResult, on_error: OnError
) -> None:
    """Run ``tasks`` in a spawn-started process pool of ``workers`` processes. Ctrl-C stops
    the workers (SIGTERM, then SIGKILL after ``STOP_S``) and raises KeyboardInterrupt."""
    with _ctrl_c_flag() as interrupted:
        _run_local(tasks, root, workers, on_result, on_error, interrupted)


def _run_local(tasks, root, workers, on_result, on_error, interrupted: threading.Event) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from attndyn.store import Store, StoreError

    pending = list(tasks)
    restarts = 0
    ctx = mp.get_context("spawn")
    # the semaphores of workers killed on an interrupt are reported at exit by multiprocessing's
    # resource tracker (started with the pool, so it inherits this): the kernel frees them anyway
    quiet = {"PYTHONWARNINGS": "ignore::UserWarning:multiprocessing.resource_tracker"}
    with worker_environment(), _environment(quiet):
        while pending:
            pool = ProcessPoolExecutor(
                max_workers=max(1, min(workers, len(pending))),
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(os.getpid(),),
            )
            broken: list[Task] = []
            try:
                if interrupted.is_set():  # a Ctrl-C before the pool started
                    raise KeyboardInterrupt
                futures = {pool.submit(run_task, t, root): t for t in pending}
                waiting = set(futures)
                while waiting:
                    done, waiting = wait(waiting, timeout=POLL_S, return_when=FIRST_COMPLETED)
                    if interrupted.is_set():  # before a broken pool (its workers got the
                        raise KeyboardInterrupt  # SIGINT too) is taken for a crash
                    for fut in done:
                        task = futures[fut]
                        try:
                            result = fut.result()
                        except BrokenProcessPool:
                            broken.append(task)
                        except StoreError:
                            raise
                        except Exception as exc:
                            on_error(task, exc)
                        else:
                            on_result(task, result)
            except StoreError:
                # nothing more can be stored: drop queued tasks, let running ones end (their
                # writes fail and clean up after themselves)
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            except BaseException:  # interrupted: stop the workers now, remove their temporaries
                procs = list((getattr(pool, "_processes", None) or {}).values())
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in procs:
                    with contextlib.suppress(Exception):
                        proc.terminate()
                # SIGTERM unwinds a worker once it is back in Python; one inside a long XLA
                # call would hold the exit for its duration (10–14 s measured): kill it
                deadline = time.monotonic() + STOP_S
                for proc in procs:
                    with contextlib.suppress(Exception):
                        proc.join(timeout=max(0.0, deadline - time.monotonic()))
                        if proc.is_alive():
                            proc.kill()
                            proc.join(timeout=1)
                Store(root).clean_temporary(pids={p.pid for p in procs if p.pid})
                raise
            pool.shutdown(wait=True)
            pending = sorted(broken, key=lambda t: t.index)
            if pending:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    for task in pending:
                        on_error(
                            task,
                            RuntimeError(
                                f"worker process died; gave up after {MAX_RESTARTS} restarts"
                            ),
                        )
                    return


def run_dask(
    tasks: list[Task],
    root: str,
    address: str | None,
    workers: int,
    on_result: OnResult,
    on_error: OnError,
) -> None:
    """Run ``tasks`` on a Dask scheduler at ``address``, or on a local Dask cluster."""
    import dask
    from distributed import Client, LocalCluster, as_completed

    from attndyn.store import StoreError

    cluster = None
    if address:
        try:
            # default 30 s; DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT sets it
            timeout = dask.config.get("distributed.comm.timeouts.connect")
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    else:
        with worker_environment():
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        client = Client(cluster)
    try:
        futures = [client.submit(run_task, t, root, pure=False) for t in tasks]
        owner = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for fut in as_completed(futures):
            task = owner[fut.key]
            try:
                result = fut.result()
            except StoreError:
                client.cancel(futures)
                raise
            except Exception as exc:  # KilledWorker, or an error outside the task's own guard
                on_error(task, exc)
            else:
                on_result(task, result)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
