"""Tasks in parallel on Dask, one way for every study (``render`` of several traces,
``coherence``, ``dsr-search``).

:func:`dask_client` is a client for the length of a ``with`` block: of a local Dask cluster
of single-threaded worker processes (its dashboard on a free port), or of an existing
scheduler (``scheduler="tcp://host:8786"``). :func:`map_in_order` runs a module-level
function on every argument tuple on the client's workers and returns the results in order,
with a progress bar.

    with dask_client(4) as client:
        results = map_in_order(client, render_one, [(trace,) for trace in traces],
                               desc="render", unit="trace")

Dask is imported when a cluster starts (an optional heavy dependency at import time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

# The local workers' own bookkeeping, set for a few long CPU-bound tasks: Dask's statistical
# profiler samples each worker's stack every 10 ms and its event loop ticks every 20 ms, each
# time taking the GIL from the task. A 30-frame DSR render of runner-1196x768 on one worker:
# 44.0-44.1 s with Dask's defaults, 38.1-39.4 s with these (39.3 s in a plain process).
LOCAL_WORKER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


@contextmanager
def dask_client(workers: int, scheduler: str | None = None, *,
                memory_limit: int | str | None = None) -> Iterator:
    """A Dask client of ``scheduler``'s workers or, without one, of a local cluster of
    ``workers`` single-threaded processes (``memory_limit`` each: Dask's default when None,
    0 for none); closed, with its cluster, when the block ends."""
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler)
        try:
            yield client
        finally:
            client.close()
        return
    limit = {} if memory_limit is None else {"memory_limit": memory_limit}
    # silence_logs: Dask's own warnings (a worker "still alive after 4.0 seconds, killing" as
    # a loaded machine closes the cluster) are not the user's business; errors still show.
    with dask.config.set(LOCAL_WORKER_CONFIG):     # the workers take the configuration at start
        cluster = LocalCluster(n_workers=max(1, int(workers)), threads_per_worker=1,
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR, **limit)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


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
            results[futures[future]] = future.result()
            bar.update(1)
    return results
