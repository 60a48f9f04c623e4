"""Allocator tuning for array-heavy work.

Each draw allocates and frees NumPy temporaries of tens of megabytes. glibc serves such
sizes with mmap and returns them to the system on free, so the next draw page-faults the
same amount in again: at 1920x1080 that was about half a second of system time per frame,
as much as the rendering itself. Raising glibc's mmap and trim thresholds keeps freed memory
in the process for reuse. Elsewhere (not glibc) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks for reuse; True when it took effect."""
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
