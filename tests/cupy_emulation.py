"""A NumPy-backed stand-in for CuPy that enforces CuPy's rules, for machines without a GPU.

Code written for one NumPy/CuPy path usually breaks on CuPy in a few predictable ways, all of
which NumPy forgives. Arrays of this backend ("device arrays") forbid them, so a CPU-only test
run finds them:

- implicit host conversion: ``np.asarray(dev)``, ``np.*`` functions on device arrays, mixing
  host ``np.ndarray`` operands (or index arrays, or assigned values) with device arrays;
- NumPy scalars out of reductions and indexing: CuPy returns 0-d arrays, which are unhashable
  and have no ``__index__`` (``range(a.max())`` fails);
- names and keyword arguments CuPy lacks (checked against the installed ``cupy`` package
  when it is importable: it imports without a GPU);
- scatters with repeated indices (``a[idx] = v``): NumPy keeps the last write, CuPy's order
  is undefined, so differing values written to one element are an error here;
- ``view`` to a dtype of another size on an array that is not C-contiguous.

Results are computed by NumPy, so a pipeline run here must be bit-identical to the NumPy run.
``use_emulated_cupy()`` makes it the active backend; ``transfers`` counts host<->device copies.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from tilesim import backend

try:  # the real namespace, to refuse names CuPy does not have
    import cupy as _cupy
except ImportError:  # CuPy is the gpu extra, not a test dependency
    _cupy = None

transfers = {"to_device": 0, "to_host": 0}


def cupy_namespace():
    """The real ``cupy`` module the names are checked against (None: not installed)."""
    return _cupy

# Functions that take host data on purpose (an explicit host-to-device copy).
_HOST_INPUT = {"asarray", "array", "asanyarray"}
_UFUNC_KEYWORDS = {"out", "dtype", "casting"}
# The ufunc methods CuPy implements, and for which ufuncs (CuPy's ufunc reference; ``at`` needs
# an atomic scatter operation).
_UFUNC_METHODS = {
    "reduce": {"add", "multiply"},
    "accumulate": {"add", "multiply"},
    "reduceat": {"add"},
    "at": {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"},
}
# Functions whose sizes and ranges must be host integers (CuPy sizes its output on the host).
_HOST_SIZES = {"arange", "zeros", "ones", "empty", "full", "eye", "identity", "linspace",
               "tri", "indices", "mgrid", "ogrid"}


class HostDeviceMixError(TypeError):
    pass


class DeviceArray(NDArrayOperatorsMixin):
    """An array 'on the device': its data is a NumPy array no NumPy code may see."""

    __slots__ = ("_data",)
    __hash__ = None

    def __init__(self, data: np.ndarray):
        self._data = data

    # -- CuPy's explicit transfer and its refusals ------------------------------------------
    def get(self) -> np.ndarray:
        transfers["to_host"] += 1
        return self._data.copy()

    def __array__(self, dtype=None, copy=None):
        raise HostDeviceMixError("Implicit conversion to a NumPy array is not allowed "
                                 "(device array): use to_host()")

    def __array_function__(self, func, types_, args, kwargs):
        raise HostDeviceMixError(f"np.{func.__name__} called on a device array: use xp")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__":
            _check_ufunc_keywords(ufunc.__name__, kwargs)
        else:
            _check_ufunc_method(ufunc.__name__, method)
        out = kwargs.get("out")
        result = getattr(ufunc, method)(*_unwrap_all(inputs), **_unwrap_all(kwargs))
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrap(result)

    # -- python protocol ---------------------------------------------------------------------
    def __getitem__(self, key):
        return _wrap(self._data[_unwrap_key(key)])

    def __setitem__(self, key, value):
        key = _unwrap_key(key)
        if isinstance(value, np.ndarray) and value.ndim:
            raise HostDeviceMixError("assigning a host array into a device array")
        value = _unwrap(value)
        _check_scatter(self._data, key, value)
        self._data[key] = value

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        for i in range(len(self._data)):
            yield self[i]

    def __bool__(self):
        return bool(self._data)

    def __int__(self):
        return int(self._data)

    def __float__(self):
        return float(self._data)

    def __complex__(self):
        return complex(self._data)

    def __repr__(self):
        return f"device({self._data!r})"

    def view(self, dtype=None):
        if (dtype is not None and np.dtype(dtype).itemsize != self._data.itemsize
                and not self._data.flags.c_contiguous):
            raise ValueError("CuPy: to change to a dtype of a different size, the array must "
                             "be C-contiguous")
        return DeviceArray(self._data.view() if dtype is None else self._data.view(dtype))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if _cupy is not None and not hasattr(_cupy.ndarray, name):
            raise AttributeError(f"cupy.ndarray has no attribute {name!r}")
        value = getattr(self._data, name)
        if callable(value):
            return _wrapped_call(value, f"ndarray.{name}")
        return _wrap(value)

    # Attributes NDArrayOperatorsMixin or numpy look up directly.
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    itemsize = property(lambda self: self._data.itemsize)
    T = property(lambda self: DeviceArray(self._data.T))


def _wrap(value):
    if isinstance(value, np.ndarray):
        return DeviceArray(value)
    if isinstance(value, np.generic):   # CuPy returns 0-d arrays where NumPy gives scalars
        return DeviceArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value):
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, np.ndarray) and value.ndim:
        raise HostDeviceMixError(f"host array (shape {value.shape}) mixed with device arrays")
    return value


def _unwrap_all(values):
    if isinstance(values, dict):
        return {k: _unwrap_all(v) for k, v in values.items()}
    if isinstance(values, (tuple, list)):
        return type(values)(_unwrap_all(v) for v in values)
    return _unwrap(values)


def _unwrap_key(key):
    if isinstance(key, tuple):
        return tuple(_unwrap_key(k) for k in key)
    if isinstance(key, np.ndarray):
        raise HostDeviceMixError("indexing a device array with a host index array")
    return _unwrap(key)


def _check_ufunc_keywords(name: str, kwargs: dict) -> None:
    extra = set(kwargs) - _UFUNC_KEYWORDS
    if extra:
        raise TypeError(f"cupy.{name}: unsupported keyword(s) {sorted(extra)}")


def _check_ufunc_method(name: str, method: str) -> None:
    if method in _UFUNC_METHODS and name not in _UFUNC_METHODS[method]:
        raise NotImplementedError(f"CuPy has no {name}.{method}")


def _check_scatter(data: np.ndarray, key, value) -> None:
    """Refuse writes of differing values to one element through repeated integer indices."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [k for k in parts if isinstance(k, np.ndarray) and k.dtype != bool]
    if not arrays or np.ndim(value) == 0:
        return
    if any(not isinstance(k, (np.ndarray, int, np.integer)) for k in parts):
        return  # slices or ellipsis mixed in: not checked
    index = np.broadcast_arrays(*[np.asarray(k) for k in parts])
    dims = data.shape[:len(parts)]
    flat = np.ravel_multi_index(tuple(i.ravel() % s for i, s in
                                      zip(index, dims, strict=True)), dims)
    if np.unique(flat).size == flat.size:
        return
    shape = data[key].shape
    written = np.broadcast_to(value, shape).reshape(flat.size, -1)
    order = np.argsort(flat, kind="stable")
    same = flat[order][1:] == flat[order][:-1]
    differ = (written[order][1:] != written[order][:-1]).any(axis=1)
    if (same & differ).any():
        raise HostDeviceMixError("scatter writes differing values through repeated indices "
                                 "(the winner is undefined on CuPy)")


def _check_signature(name: str, args, kwargs) -> None:
    if _cupy is None:
        return
    target = _cupy
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise AttributeError(f"cupy has no {name}")
    if name.startswith("ndarray."):
        return
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"cupy.{name}{signature}: {exc}") from None


def _wrapped_call(function, name: str):
    @functools.wraps(function)
    def call(*args, **kwargs):
        if name.split(".")[-1] in _HOST_INPUT and args and not isinstance(args[0],
                                                                          DeviceArray):
            transfers["to_device"] += 1
            plain = [np.asarray(args[0]), *_unwrap_all(args[1:])]
            return DeviceArray(np.array(function(*plain, **_unwrap_all(kwargs))))
        if not name.startswith("ndarray."):
            _check_signature(name, args, kwargs)
        sizes = args[:1] if name == "full" else (*args, *kwargs.values())
        if name in _HOST_SIZES and any(isinstance(a, DeviceArray) for a in sizes):
            raise HostDeviceMixError(f"cupy.{name}: sizes must be host integers, not "
                                     "device arrays (use int(...))")
        return _wrap(function(*_unwrap_all(args), **_unwrap_all(kwargs)))
    return call


class _Ufunc:
    """A NumPy ufunc seen through CuPy's rules (call keywords; at/reduce/accumulate)."""

    def __init__(self, ufunc: np.ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        _check_ufunc_keywords(self.__name__, kwargs)
        out = kwargs.get("out")
        result = self._ufunc(*_unwrap_all(args), **_unwrap_all(kwargs))
        return out if out is not None else _wrap(result)

    def __getattr__(self, name):
        _check_ufunc_method(self.__name__, name)
        method = getattr(self._ufunc, name)
        if name == "at":
            def at(a, indices, b=None):
                args = (_unwrap(a), _unwrap_key(indices)) + (() if b is None else (_unwrap(b),))
                method(*args)
            return at
        return lambda *args, **kwargs: _wrap(method(*_unwrap_all(args), **_unwrap_all(kwargs)))


class _Grid:
    """``mgrid`` / ``ogrid``: index tricks whose results are device arrays."""

    def __init__(self, grid):
        self._grid = grid

    def __getitem__(self, key):
        return _wrap(self._grid[key])


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if _cupy is not None and not hasattr(_cupy, name):
            raise AttributeError(f"cupy has no attribute {name!r}")
        value = getattr(np, name)
        if isinstance(value, np.ufunc):
            value = _Ufunc(value)
        elif name in ("mgrid", "ogrid"):
            value = _Grid(value)
        elif callable(value) and not isinstance(value, type):
            value = _wrapped_call(value, name)
        setattr(self, name, value)
        return value


emulated = _Module("cupy_emulated")
emulated.ndarray = DeviceArray
emulated.asnumpy = lambda a: a.get() if isinstance(a, DeviceArray) else np.asarray(a)
emulated.get_array_module = lambda *arrays: backend.array_module(*arrays)


@contextlib.contextmanager
def use_emulated_cupy():
    """Make the emulated CuPy the active backend for the duration of the block."""
    backend.register_device_array(DeviceArray, emulated)
    with backend.use_module(emulated):
        yield emulated
