"""Tasks in parallel on Dask, one way for every study (``render`` of several traces,
``coherence``, ``dsr-search``).

:func:`dask_client` is a client for the length of a ``with`` block: of a local Dask cluster
of single-threaded worker processes (its dashboard on a free port), or of an existing
scheduler (``scheduler="tcp://host:8786"``). :func:`map_in_order` runs a module-level
function on every argument tuple on the client's workers and returns the results in order,
with a progress bar; :func:`task_result` is one task's result.

    with dask_client(4) as client:
        results = map_in_order(client, render_one, [(trace,) for trace in traces],
                               desc="render", unit="trace")

Failures reach the user as tilesim's one-line errors, never as Dask's logs or tracebacks: a
task's own error is re-raised by the client (tilesim's errors and OSError pickle whole), a
worker process that died is a :class:`TilesimError`, and an address that is not a Dask
scheduler an :class:`InputError`. Ctrl-C (and SIGTERM, which ``tilesim`` turns into
KeyboardInterrupt) ends a local cluster within a second or two: the worker processes never
see the terminal's Ctrl-C and are killed when the block ends with an error; what they wrote
is whole (every file is written atomically) and a run resumes from it.

Dask is imported when a cluster starts (an optional heavy dependency at import time).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress

from tilesim.errors import InputError, TilesimError
from tilesim.jit import THREADS_ENV, threads

# The local workers' own bookkeeping, set for a few long CPU-bound tasks: Dask's statistical
# profiler samples each worker's stack every 10 ms and its event loop ticks every 20 ms, each
# time taking the GIL from the task. A 30-frame DSR render of runner-1196x768 on one worker:
# 44.0-44.1 s with Dask's defaults, 38.1-39.4 s with these (39.3 s in a plain process).
LOCAL_WORKER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}

# Above every level Dask logs at: a local cluster's logs are silent. A task's error is the
# user's one-line error (re-raised by the client), so Dask's "Compute Failed" log and
# traceback of it, or its warnings as a loaded machine closes the cluster ("still alive after
# 4.0 seconds, killing"), would only repeat it or bury it.
SILENT = logging.CRITICAL + 10

# Seconds to reach a scheduler and hear it answer: a silent server (any TCP port that
# accepts and says nothing) would otherwise hold Dask's handshake forever.
CONNECT_S = 10
# Seconds the client and a local cluster may take to close.
CLOSE_S = 5


@contextmanager
def dask_client(workers: int, scheduler: str | None = None, *,
                memory_limit: int | str | None = None) -> Iterator:
    """A Dask client of ``scheduler``'s workers or, without one, of a local cluster of
    ``workers`` single-threaded processes (``memory_limit`` each: Dask's default when None,
    0 for none); closed, with its cluster, when the block ends. An address that is malformed
    or not a Dask scheduler's is an :class:`InputError` naming it."""
    from dask.distributed import Client

    if scheduler:
        check_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout=CONNECT_S)
        except Exception as exc:
            raise _not_a_scheduler(scheduler, exc) from None
        try:
            yield client
        finally:
            with _signals_held():
                with suppress(Exception):
                    client.close(timeout=CLOSE_S)
        return
    cluster = client = None
    try:
        # Ctrl-C or SIGTERM while the cluster starts is raised once it has started (a
        # cluster half started could not be closed).
        with _signals_held():
            cluster = _local_cluster(workers, memory_limit)
            client = Client(cluster)
        yield client
    except BaseException:
        # Ctrl-C, SIGTERM or an error: the run ends now, not when the workers' tasks end.
        if cluster is not None:
            _kill_workers(cluster)
        raise
    finally:
        # Closed whole even if Ctrl-C is pressed again meanwhile (raised after).
        with _signals_held():
            with suppress(Exception):
                if client is not None:
                    client.close(timeout=CLOSE_S)
            with suppress(Exception):
                if cluster is not None:
                    cluster.close(timeout=CLOSE_S)


def _local_cluster(workers: int, memory_limit: int | str | None):
    """A LocalCluster of ``workers`` single-threaded processes, its logs silent, whose
    worker processes never receive SIGINT: the terminal sends Ctrl-C to every process of
    the foreground group, and each worker would print its traceback of the KeyboardInterrupt
    (13-106 lines) while this process closes the cluster anyway. SIGINT is blocked while
    Dask starts its event loop thread, which starts the worker processes: they inherit the
    thread's mask, as the thread keeps it (this thread's is restored). multiprocessing's
    resource tracker is started first: starting it unblocks SIGINT in the thread that does."""
    from multiprocessing import resource_tracker

    import dask
    from dask.distributed import LocalCluster

    limit = {} if memory_limit is None else {"memory_limit": memory_limit}
    _silence_dask_logs()
    masks = hasattr(signal, "pthread_sigmask")     # POSIX
    if masks:
        resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masks else None
    try:
        with dask.config.set(LOCAL_WORKER_CONFIG):  # the workers take the configuration at start
            return LocalCluster(n_workers=max(1, int(workers)), threads_per_worker=1,
                                processes=True, dashboard_address=":0", silence_logs=SILENT,
                                env=worker_environment(workers), **limit)
    except Exception as exc:
        # Its logs are silent: what failed is said here (--debug: the traceback).
        raise TilesimError(f"the local Dask cluster of {workers} worker processes did not "
                           f"start: {exc}") from exc
    finally:
        if masks:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def worker_environment(workers: int) -> dict[str, str]:
    """What a local worker process adds to its environment: its share of the cores for the
    compiled kernels' threads (``TILESIM_THREADS``, :func:`tilesim.jit.in_threads`), so that
    ``workers`` processes do not each start a thread per core; the user's own setting,
    where there is one, is inherited unchanged."""
    if os.environ.get(THREADS_ENV):
        return {}
    return {THREADS_ENV: str(max(1, threads() // max(1, int(workers))))}


def _silence_dask_logs() -> None:
    """This process's Dask logs silent from now on, before a local cluster starts. The
    cluster's own silencing lowers the handlers' levels only while it runs and restores them
    as it closes, while its event loop may still report the connections a kill cut ("Batched
    Comm Closed" and a traceback, seen on a SIGTERM in CI): a race that silencing after the
    close lost. Handlers already at the cluster's level are neither changed nor restored by
    it. The handler is Dask's one ``StreamHandler``, shared by the loggers Dask configures
    (``distributed.client``, ``tornado``...), which keep levels of their own."""
    logger = logging.getLogger("distributed")
    logger.setLevel(SILENT)
    for handler in logger.handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setLevel(SILENT)


def _kill_workers(cluster) -> None:
    """SIGKILL to the cluster's worker processes: closing the cluster then takes a moment,
    where Dask would wait for their running tasks (a long frame, a test's hang) and then
    for its timeouts."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held for the block (recorded, not acted on) and raised again after
    it, to this process's handlers as they were; in the main thread only, where Python runs
    signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {number: signal.signal(number, lambda n, _frame: caught.append(n))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
        if caught:
            signal.raise_signal(caught[0])


def check_scheduler(address: str) -> None:
    """Refuse ``address`` unless it is a Dask scheduler's that answers within CONNECT_S:
    asks it who it is (Dask's ``identity``) over a connection of its own, bounded in time
    (Dask's client would wait forever on a server that accepts and says nothing, and read
    another protocol's reply as a frame length of exabytes: "out of memory")."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{address!r} is not a scheduler address (expected e.g. "
                         f"tcp://host:8786): {exc}", source="--scheduler") from None
    try:
        identity = asyncio.run(asyncio.wait_for(_identity(address), CONNECT_S))
    except TimeoutError:
        raise InputError(f"{address}: no answer from a Dask scheduler within {CONNECT_S} s",
                         source="--scheduler") from None
    except Exception as exc:
        raise _not_a_scheduler(address, exc) from None
    kind = identity.get("type") if isinstance(identity, dict) else None
    if kind != "Scheduler":
        raise InputError(f"{address}: not a Dask scheduler (it answers as "
                         f"{kind or 'something else'})", source="--scheduler")


async def _identity(address: str):
    from distributed.comm import connect

    comm = await connect(address, timeout=CONNECT_S)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def _not_a_scheduler(address: str, exc: BaseException) -> InputError:
    """The error for ``address`` that failed with ``exc``: a connection's own error as it
    is; anything else (a reply read as a frame of exabytes, a message that does not decode)
    is a server of another protocol."""
    reason = (str(exc) or type(exc).__name__ if isinstance(exc, OSError)
              else "it does not answer in Dask's protocol (another kind of server?)")
    return InputError(f"{address}: cannot connect to a Dask scheduler there: {reason}",
                      source="--scheduler")


def task_result(future):
    """``future``'s result; its task's error raised again as it was raised (tilesim's errors
    and OSError reach the user as their one line), a worker process that died running it as
    a :class:`TilesimError` (Dask's KilledWorker, a traceback otherwise)."""
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker:
        raise TilesimError("a worker process died (killed by the system, out of memory, or "
                           "by a signal); run the command again to resume") from None


def map_in_order(client, function: Callable, argument_lists: Sequence[tuple], *, desc: str,
                 unit: str = "task", progress: bool = True, leave: bool = True) -> list:
    """``function(*arguments)`` for every tuple of ``argument_lists`` on ``client``'s
    workers, the results in the same order; a progress bar of ``desc`` counting ``unit``
    (``progress`` False: none; ``leave`` False: erased when done)."""
    from dask.distributed import as_completed
    from tqdm import tqdm

    results: list = [None] * len(argument_lists)
    futures = {client.submit(function, *arguments, pure=False): index
               for index, arguments in enumerate(argument_lists)}
    with tqdm(total=len(futures), desc=desc, unit=unit,
              disable=None if progress else True, leave=leave) as bar:
        for future in as_completed(futures):
            results[futures[future]] = task_result(future)
            bar.update(1)
    return results
