"""The one array backend used by all numeric code: NumPy by default, CuPy on request.

Pipeline code never branches on the backend. It asks for the module that owns its data
(``array_module(x)``, like ``cupy.get_array_module``) or for the active one (``xp()``), and
moves data to or from the host only at stage boundaries (``to_host`` / ``to_device``).
"""

from __future__ import annotations

import types

import numpy as np

__all__ = [
    "BackendUnavailable",
    "array_module",
    "available_backends",
    "backend_name",
    "set_backend",
    "to_device",
    "to_host",
    "use_backend",
    "xp",
]


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run here (CuPy missing, or no GPU)."""


_active: types.ModuleType = np


def _load_cupy() -> types.ModuleType:
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise BackendUnavailable(
            "backend 'cupy' needs CuPy: pip install 'tilesim[gpu]'"
        ) from exc
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise BackendUnavailable("backend 'cupy': CuPy found no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as exc:  # pragma: no cover
        raise BackendUnavailable(f"backend 'cupy': no usable CUDA device ({exc})") from exc
    return cupy


def available_backends() -> list[str]:
    """Names of the backends that can run on this machine."""
    names = ["numpy"]
    try:
        _load_cupy()
        names.append("cupy")
    except BackendUnavailable:
        pass
    return names


def set_backend(name: str) -> types.ModuleType:
    """Make ``name`` ('numpy' or 'cupy') the active backend and return its module."""
    global _active
    if name == "numpy":
        _active = np
    elif name == "cupy":
        _active = _load_cupy()
    else:
        raise ValueError(f"unknown backend {name!r}: expected 'numpy' or 'cupy'")
    return _active


class use_backend:
    """Context manager: ``with use_backend('cupy'): ...`` restores the previous one after."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> types.ModuleType:
        self._previous = _active
        return set_backend(self.name)

    def __exit__(self, *exc) -> None:
        global _active
        _active = self._previous


class use_module(use_backend):
    """``use_backend`` for an array module given directly (a CuPy stand-in in tests)."""

    def __init__(self, module: types.ModuleType):
        self.module = module

    def __enter__(self) -> types.ModuleType:
        global _active
        self._previous, _active = _active, self.module
        return self.module


# Device array types and their modules: CuPy's, plus any a test registers.
_device_types: dict[type, types.ModuleType] = {}


def register_device_array(array_type: type, module: types.ModuleType) -> None:
    """Make ``array_module``/``to_host`` recognize ``array_type`` as ``module``'s arrays."""
    _device_types[array_type] = module


def xp() -> types.ModuleType:
    """The active array module (numpy or cupy)."""
    return _active


def backend_name() -> str:
    return "cupy" if _active is not np else "numpy"


def array_module(*arrays) -> types.ModuleType:
    """The module that owns ``arrays``: cupy if any is a CuPy array, else numpy."""
    for a in arrays:
        kind = type(a)
        if kind is np.ndarray:
            continue
        if kind in _device_types:
            return _device_types[kind]
        if kind.__module__.startswith("cupy"):
            import cupy

            return cupy
    return np


def to_host(a) -> np.ndarray:
    """A NumPy copy (or view) of ``a``, wherever it lives."""
    if type(a) in _device_types or type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def to_device(a, dtype=None):
    """``a`` as an array of the active backend."""
    return _active.asarray(a, dtype=dtype)


# A quad's four lanes are consecutive: its four bools read as one 32-bit word (bool bytes are
# 0 or 1), ~80x faster than ``mask.reshape(-1, 4).any(axis=1)``'s reduction over a tiny axis.
_QUAD_ALL = 0x01010101


def quad_any(mask):
    """(n // 4,) bool: whether any of each 2x2 quad's four consecutive lanes of the (n,) bool
    ``mask`` is set."""
    xp = array_module(mask)
    return xp.ascontiguousarray(mask).view(xp.uint32) != 0


def quad_all(mask):
    """(n // 4,) bool: whether all four lanes of each quad of the (n,) bool ``mask`` are set."""
    xp = array_module(mask)
    return xp.ascontiguousarray(mask).view(xp.uint32) == _QUAD_ALL
