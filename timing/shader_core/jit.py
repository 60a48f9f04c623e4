"""Numba's ``njit`` where compiled kernels may run (``tilesim.kernel_cache.jit_enabled``:
Numba installed, ``TILESIM_JIT`` not 0), else the plain Python function: the cycle loop is
written in the subset both run, arrays and integers only, so the model gives the same cycles
either way (tests/test_shader_core.py checks)."""

from __future__ import annotations

from tilesim.kernel_cache import configure_numba, jit_enabled

try:  # pragma: no cover - depends on the environment
    import numba
except ImportError:  # pragma: no cover
    numba = None

ENABLED = numba is not None and jit_enabled()


def jit(function=None, *, inline: bool = False):
    """``@jit`` or ``@jit(inline=True)``: inlined into its caller at Numba's IR level. The
    stages are inlined into the cycle loop: a call that passes the state (a tuple of ~45
    arrays) costs a reference-count update per array, more than most stages' work."""
    def wrap(f):
        if not ENABLED:
            return f
        configure_numba(numba)   # a cache of this source (tilesim.kernel_cache)
        return numba.njit(cache=True, nogil=True, inline="always" if inline else "never")(f)
    return wrap if function is None else wrap(function)
