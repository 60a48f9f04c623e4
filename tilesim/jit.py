"""The one switch and decorator of tilesim's compiled CPU kernels (Numba).

Each kernel lives beside the stage or technique it speeds up (the rasterizer's quad walk in
``render/pipeline/rasterizer.py``, the memoization LUT in
``render/techniques/fragment_memoization.py``, the shader core's cycle loop in
``timing/shader_core/``), as softpipe keeps a stage's fast and general variants in one file.
A kernel gives bit-identical results to the NumPy or Python code it replaces: integer
arithmetic where that code is exact, and float operations in that code's order (Numba,
without ``fastmath``, neither reorders nor fuses them), so frames, counters and cycles do not
depend on which path ran (``tests/test_compiled_path.py``, ``tests/test_shader_core.py``).

``TILESIM_JIT=0`` (or a machine without Numba) runs the plain code everywhere. A stage calls
its kernel only where :func:`usable` says so: NumPy arrays (CuPy arrays take the
backend-agnostic code) and the kernels not turned off by :func:`disabled` (the tests compare
both paths in one process).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from tilesim.kernel_cache import configure_numba

JIT_ENV = "TILESIM_JIT"

try:  # pragma: no cover - depends on the environment
    import numba
except ImportError:  # pragma: no cover
    numba = None

# Whether :func:`jit` compiles: Numba installed and ``TILESIM_JIT`` not 0. Fixed for the
# process (the shader core's cycle loop is compiled, or not, as its modules load).
AVAILABLE = numba is not None and os.environ.get(JIT_ENV, "1") != "0"
_enabled = AVAILABLE


def jit(function=None, *, inline: bool = False):
    """``@jit`` or ``@jit(inline=True)``: compiled with Numba, cached on disk in a cache of
    this source (:mod:`tilesim.kernel_cache`: a kernel whose inlined helpers changed must not
    load its old code); the plain function where Numba is off. ``inline``: inlined into its
    callers at Numba's IR level, for a scalar helper of a hot loop that LLVM would leave a
    call (too large, or taking an array), and for the shader core's stages (a call passing its
    state of ~45 arrays costs a reference count per array, more than most stages' work)."""
    def wrap(f):
        if not AVAILABLE:
            return f
        configure_numba(numba)
        return numba.njit(cache=True, nogil=True, inline="always" if inline else "never")(f)
    return wrap if function is None else wrap(function)


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
