"""The one switch and decorator of tilesim's compiled CPU kernels (Numba).

Each kernel lives beside the stage or technique it speeds up (the rasterizer's quad walk in
``render/pipeline/rasterizer.py``, the memoization LUT in
``render/techniques/fragment_memoization.py``, the shader core's cycle loop in
``timing/shader_core/``), as softpipe keeps a stage's fast and general variants in one file.
A kernel gives bit-identical results to the NumPy or Python code it replaces: integer
arithmetic where that code is exact, and float operations in that code's order (Numba,
without ``fastmath``, neither reorders nor fuses them), so frames, counters and cycles do not
depend on which path ran (``tests/render/test_compiled_path.py``,
``tests/timing/test_shader_core.py``).

``TILESIM_JIT=0`` (or a machine without Numba) runs the plain code everywhere. Kernels release
the GIL, so :func:`in_threads` runs one kernel on parts of a stage's work on ``TILESIM_THREADS``
threads (``tilesim --threads``; default every core, :func:`default_threads`) where the results
do not depend on the split: lanes that write only their own outputs, and the texture caches'
lookups of spans whose tiles (one cache each) are their own. Frames and counters are the
same for any thread count (``tests/render/test_threads.py``). (Numba's own ``parallel=True`` is
not used: its loop fusion dropped the writes of an inlined helper that unpacks a tuple of
arrays, a silent loss of results, in Numba 0.60.) A stage calls
its kernel only where :func:`usable` says so: NumPy arrays (CuPy arrays take the
backend-agnostic code) and the kernels not turned off by :func:`disabled` (the tests compare
both paths in one process).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tilesim.errors import InputError
from tilesim.kernel_cache import configure_numba

JIT_ENV = "TILESIM_JIT"
THREADS_ENV = "TILESIM_THREADS"


def _threads_wanted() -> int | None:
    """``TILESIM_THREADS`` as a positive int (None: unset)."""
    text = os.environ.get(THREADS_ENV)
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"{THREADS_ENV}: expected a positive integer, got {text!r}")
    return value


try:  # pragma: no cover - depends on the environment
    import numba
except ImportError:  # pragma: no cover
    numba = None

# Whether :func:`jit` compiles: Numba installed and ``TILESIM_JIT`` not 0. Fixed for the
# process (the shader core's cycle loop is compiled, or not, as its modules load).
AVAILABLE = numba is not None and os.environ.get(JIT_ENV, "1") != "0"
_enabled = AVAILABLE


def jit(function=None, *, inline: bool = False, numpy_division: bool = False):
    """``@jit`` or ``@jit(inline=True)``: compiled with Numba, cached on disk in a cache of
    this source (:mod:`tilesim.kernel_cache`: a kernel whose inlined helpers changed must not
    load its old code); the plain function where Numba is off. ``inline``: inlined into its
    callers at Numba's IR level, for a scalar helper of a hot loop that LLVM would leave a
    call (too large, or taking an array), and for the shader core's stages (a call passing its
    state of ~45 arrays costs a reference count per array, more than most stages' work).
    ``numpy_division``: a kernel that divides floats by values of its input divides as the
    vectorized path does (an infinity or NaN where the divisor is zero; Numba's default,
    Python's, raises ZeroDivisionError: a helper lane whose 1/w interpolated to exactly 0
    stopped a render). Not the default: under NumPy's error model the texture caches' LRU
    lookups ran 2.5x slower (docs/notes/issue-34-speed.md)."""
    def wrap(f):
        if not AVAILABLE:
            return f
        configure_numba(numba)
        return numba.njit(cache=True, nogil=True,
                          error_model="numpy" if numpy_division else "python",
                          inline="always" if inline else "never")(f)
    return wrap if function is None else wrap(function)


_pinned: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def default_threads() -> int:
    """Threads when the user asks for none: every core this process may run on. Texture
    sampling, the largest stage, splits by tiles (one texture cache each) into several spans
    a thread, so that a thread slowed by another process takes fewer of them (measured in
    docs/notes/issue-34-speed.md). A study's worker processes share the cores
    (``studies/dask_cluster.worker_environment``)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def threads() -> int:
    """Threads :func:`in_threads` uses: :func:`threads_pinned`'s count, else
    ``TILESIM_THREADS``, else :func:`default_threads`."""
    if _pinned is not None:
        return _pinned
    wanted = _threads_wanted()
    return wanted if wanted is not None else default_threads()


@contextlib.contextmanager
def threads_pinned(count: int):
    """Run the block on ``count`` threads, then restore (tests compare thread counts)."""
    global _pinned
    previous, _pinned = _pinned, max(1, int(count))
    try:
        yield
    finally:
        _pinned = previous


# Items below which a stage runs its kernel in one call (a thread's hand-off costs ~50 us,
# about what a kernel does on this many lanes).
SPLIT_MIN = 8192


def _parts(work: int, per_thread: int) -> int:
    """Parts to cut ``work`` lanes (or accesses) into: ``per_thread`` a thread on several
    threads, none under :data:`SPLIT_MIN`; at least one."""
    return max(1, min(threads() * per_thread if threads() > 1 else 1, work // SPLIT_MIN))


def spans(n: int, lanes_each: int = 1, per_thread: int = 1) -> list[tuple[int, int]]:
    """``range(n)`` cut into ``per_thread`` contiguous (start, stop) per thread, for a kernel
    whose items (of ``lanes_each`` lanes) are independent; one span below :data:`SPLIT_MIN`
    lanes. Several a thread where items' costs vary: :func:`in_threads` hands the next span
    to whichever thread is free."""
    n = int(n)
    parts = _parts(n * lanes_each, per_thread)
    if parts == 1:
        return [(0, n)]
    bounds = [n * k // parts for k in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def spans_of_runs(keys, per_thread: int = 1) -> list[tuple[int, int]]:
    """:func:`spans` of ``range(len(keys))`` with each inner bound moved back to the start of
    its key's run, so no key's items are in two spans: parts for a kernel whose items share
    state within a key (a tile's texture cache) and none across keys. ``keys``
    non-decreasing (:func:`nondecreasing`)."""
    keys = np.asarray(keys)
    bounds = [start for start, _ in spans(keys.shape[0], per_thread=per_thread)]
    starts = np.searchsorted(keys, keys[bounds[1:]], side="left").tolist()
    bounds = sorted(set([0, *starts]))
    return list(zip(bounds, [*bounds[1:], int(keys.shape[0])], strict=True))


def weighted_spans(weights, per_thread: int = 1) -> list[tuple[int, int]]:
    """``range(len(weights))`` cut into contiguous spans of about equal total weight (the
    work of each item, e.g. its accesses), ``per_thread`` a thread; one span where the total
    is below :data:`SPLIT_MIN` or one thread runs."""
    weights = np.asarray(weights, dtype=np.int64)
    total = int(weights.sum())
    parts = _parts(total, per_thread)
    if parts == 1:
        return [(0, int(weights.shape[0]))]
    cuts = np.searchsorted(np.cumsum(weights), total * np.arange(1, parts) / parts, side="left")
    bounds = sorted(set([0, *(cuts + 1).tolist(), int(weights.shape[0])]))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


_in_pool = threading.local()     # .yes in the pool's threads


def in_threads(function, parts) -> list:
    """``[function(part) for part in parts]``, the parts on :func:`threads` threads at once
    (``function`` a compiled kernel's call, which runs without the GIL); results in the
    parts' order. One thread, or one part: in this thread. Called from a part (a stage whose
    span calls another stage that splits), in that part's thread: parts waiting on parts
    queued behind them in the one pool would wait for ever."""
    global _pool, _pool_size
    parts = list(parts)
    workers = min(threads(), len(parts))
    if workers < 2 or getattr(_in_pool, "yes", False):
        return [function(part) for part in parts]
    if _pool is None or _pool_size < workers:
        _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tilesim-kernel",
                                   initializer=_mark_pool_thread)
        _pool_size = workers
    return list(_pool.map(function, parts))


def _mark_pool_thread() -> None:
    _in_pool.yes = True


# A compiled loop does not see Ctrl-C (Python runs signal handlers between bytecodes, not
# inside a Numba call), so the long ones (the shader core's cycles, the cycle-level raster
# reference's) run through :func:`run_in_slices`: slices of about SLICE_SECONDS each.
SLICE_SECONDS = 0.1
FIRST_SLICE = 4096           # steps of the first slice; then sized from the steps per second
UNSLICED = 1 << 62           # one call to the end


def run_in_slices(advance, slice_steps: int | None = None) -> None:
    """Call ``advance(size)`` until it returns True: a compiled loop that runs at most
    ``size`` more steps (cycles), leaves its state where the next call resumes it, and says
    whether it finished. ``slice_steps`` steps a call, or (None) as many as take about
    :data:`SLICE_SECONDS`, measured as it runs; Python hears a signal between calls, and the
    slices change nothing of the result."""
    size = FIRST_SLICE if slice_steps is None else max(int(slice_steps), 1)
    while True:
        began = time.perf_counter()
        if advance(size):
            return
        if slice_steps is None:
            spent = time.perf_counter() - began
            # toward SLICE_SECONDS: at most 4 times the last size, at least 64 steps
            size = max(64, min(size * 4, int(size * SLICE_SECONDS / max(spent, 1e-6))))


def enabled() -> bool:
    """Whether the stages call their compiled kernels (for NumPy arrays)."""
    return _enabled


def usable(*arrays) -> bool:
    """Whether a stage may run its compiled kernel on ``arrays`` (all NumPy or None, the
    kernels enabled)."""
    return _enabled and all(a is None or type(a) is np.ndarray for a in arrays)


@contextlib.contextmanager
def disabled():
    """Run the block on the plain path (the stages' kernels off), then restore."""
    global _enabled
    previous, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = previous


@jit(inline=True)
def all_within(index, size):  # pragma: no cover - compiled
    """Every entry of ``index`` in 0..size-1: the check a kernel makes before it writes."""
    for k in index:
        if k < 0 or k >= size:
            return False
    return True


def nan_cast(dtype) -> int:
    """What NumPy's cast of a float NaN to the integer ``dtype`` gives on this machine (x86:
    the "integer indefinite", also for infinities and values out of range, for int64; 0 for
    uint8), which a compiled kernel must give too: LLVM leaves the cast undefined."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return int(np.array([np.nan]).astype(dtype)[0])


def power_of_two_shift(n: int) -> int:
    """log2 of ``n`` where it is a power of two, else -1: a kernel then shifts and masks
    instead of dividing by a run-time value (a division costs most of a short loop)."""
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else -1


@jit
def _nondecreasing(keys):  # pragma: no cover - compiled
    for i in range(1, keys.shape[0]):
        if keys[i] < keys[i - 1]:
            return False
    return True


def nondecreasing(keys) -> bool:
    """Whether ``keys`` (a 1-D NumPy array) never decreases."""
    return bool(_nondecreasing(keys)) if usable(keys) else bool((keys[1:] >= keys[:-1]).all())


@jit
def _stable_order(keys, bins, order):  # pragma: no cover - compiled
    start = np.zeros(bins + 1, dtype=np.int64)
    for i in range(keys.shape[0]):
        start[keys[i] + 1] += 1
    for b in range(bins):
        start[b + 1] += start[b]
    for i in range(keys.shape[0]):
        k = keys[i]
        order[start[k]] = i
        start[k] += 1


def stable_order_compiled(keys, bins: int) -> np.ndarray:
    """``argsort(keys, kind="stable")`` of (n,) integer ``keys`` in [0, bins), by counting
    (one pass to count, one to place: O(n + bins) where the merge sort is O(n log n))."""
    order = np.empty(keys.shape[0], dtype=np.int64)
    _stable_order(keys, bins, order)
    return order


@jit
def _keep_quad_rows(keep, src, dst, start, stop, first):  # pragma: no cover - compiled
    out = first
    for q in range(start, stop):
        if keep[q]:
            dst[out] = src[q]
            out += 1


@jit
def _keep_lane_rows(keep, src, dst, start, stop, first):  # pragma: no cover - compiled
    # a quad's four lanes written out (a loop of a run-time length copied at half the speed)
    out = 4 * first
    for q in range(start, stop):
        if keep[q]:
            lane = 4 * q
            dst[out] = src[lane]
            dst[out + 1] = src[lane + 1]
            dst[out + 2] = src[lane + 2]
            dst[out + 3] = src[lane + 3]
            out += 4


def keep_quads(keep: np.ndarray, quad_arrays, lane_arrays) -> tuple[list, list]:
    """The quads where ``keep`` (Q,) bool is true: ``quad_arrays`` (each (Q,)) and
    ``lane_arrays`` (each (4 Q,), quad q's lanes 4q..4q+3) selected, in order (``a[keep]`` and
    ``a[repeat(keep, 4)]``), in one pass a span of quads on the kernel threads (each span
    writes its own rows, after the kept quads of the spans before it)."""
    n = int(keep.shape[0])
    for arrays, length in (((keep, *quad_arrays), n), (lane_arrays, 4 * n)):
        for a in arrays:
            if a.shape != (length,):     # the kernels index without checks
                raise ValueError(f"keep_quads: an array of shape {a.shape} for {n} quads")
    parts = spans(n, lanes_each=4)
    firsts = [0]
    for start, stop in parts[:-1]:
        firsts.append(firsts[-1] + int(np.count_nonzero(keep[start:stop])))
    kept = firsts[-1] + int(np.count_nonzero(keep[parts[-1][0]:parts[-1][1]]))
    jobs = [(a, np.empty(kept, dtype=a.dtype), _keep_quad_rows) for a in quad_arrays]
    jobs += [(a, np.empty(4 * kept, dtype=a.dtype), _keep_lane_rows) for a in lane_arrays]

    def part(k):
        start, stop = parts[k]
        for src, dst, kernel in jobs:
            kernel(keep, src, dst, start, stop, firsts[k])

    in_threads(part, range(len(parts)))
    outs = [dst for _, dst, _ in jobs]
    return outs[:len(quad_arrays)], outs[len(quad_arrays):]
