"""Memory: allocator tuning for array-heavy work, and the budget inputs are checked against.

Each draw allocates and frees NumPy temporaries of tens of megabytes. glibc serves such
sizes with mmap and returns them to the system on free, so the next draw page-faults the
same amount in again: at 1920x1080 that was about half a second of system time per frame,
as much as the rendering itself. Raising glibc's mmap and trim thresholds keeps freed memory
in the process for reuse. Elsewhere (not glibc) this does nothing.

NumPy also asks the kernel for transparent huge pages on every array of 4 MiB or more
(``madvise(MADV_HUGEPAGE)``, where the system's policy is "madvise"). With freed memory kept
for reuse, that advice bought nothing and cost stalls: the kernel compacts memory to find
2 MiB pages on a fault, and its khugepaged thread collapses reused blocks on the same cores.
A frame's time became bimodal (the bunny 97-134 ms, the runner at 1080p 459-481 ms, one
thread) and is steady without it (99-100 and 435 ms; docs/notes/issue-34-speed.md, eighth
session). So the advice is switched off, unless the user chose it with NumPy's own
``NUMPY_MADVISE_HUGEPAGE`` variable.

The budget: a tiny trace can declare a 16384x16384 framebuffer or gigabytes of zero-filled
blobs. What an input asks for (render targets, textures, decompressed blobs) is checked
against one budget before it is allocated, so such an input gets a clear error instead of
exhausting the machine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

from tilesim.errors import InputError
from tilesim.options import byte_size

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks for reuse, and NumPy not to advise huge pages on them
    (see the module's docstring); True when glibc took it."""
    _no_huge_page_advice()
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    # 1 GiB: larger blocks still come from mmap; the heap is never trimmed below 2 GiB.
    ok = mallopt(_M_MMAP_THRESHOLD, 1 << 30) == 1
    ok &= mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1) == 1
    return bool(ok)


NUMPY_HUGE_PAGES_ENV = "NUMPY_MADVISE_HUGEPAGE"


def _no_huge_page_advice() -> None:
    """Switch NumPy's huge-page advice off where the user has not set it
    (:data:`NUMPY_HUGE_PAGES_ENV`, which NumPy reads once at import)."""
    if os.environ.get(NUMPY_HUGE_PAGES_ENV) is not None:
        return
    import numpy as np

    # NumPy's switch for that variable after import: numpy._core (2.x), numpy.core (1.x).
    module = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(module, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is not None:
        switch(False)


# --- the memory budget -----------------------------------------------------------------------

BUDGET_ENV = "TILESIM_MEMORY_BUDGET"
# Peak memory of rendering, per pixel of a render target: full-screen draws keep a few hundred
# bytes of per-fragment arrays. Measured with the conformance scenes at 2048x2048: fill_fan 87,
# perspective_varyings 307, blend_factors 381 bytes per pixel above the process's base.
RENDER_BYTES_PER_PIXEL = 400
def physical_memory() -> int | None:
    """Bytes of physical memory, where the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_budget() -> int:
    """The memory one input may ask for, in bytes: ``TILESIM_MEMORY_BUDGET`` (set by
    ``tilesim --memory-budget``), else half of physical memory (8 GiB where unknown)."""
    given = os.environ.get(BUDGET_ENV)
    if given:
        try:
            return byte_size(given)
        except ValueError as exc:
            raise InputError(f"{BUDGET_ENV}: {exc}") from None
    physical = physical_memory()
    return physical // 2 if physical else 8 << 30


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def check_memory(what: str, nbytes: int, where: str | None = None) -> None:
    """Refuse, before anything is allocated, an input whose ``what`` needs more memory than
    the budget: InputError naming ``where``, the memory asked for and how to raise it."""
    budget = memory_budget()
    if nbytes > budget:
        raise InputError(f"{what} needs about {format_bytes(nbytes)}, more than the memory "
                         f"budget of {format_bytes(budget)} (raise it with tilesim "
                         f"--memory-budget SIZE or {BUDGET_ENV})", source=where)
