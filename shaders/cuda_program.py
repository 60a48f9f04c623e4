"""The compiled TGSI programs of :mod:`tilesim.shaders.compiled_program` as CUDA kernels.

What. The generator of ``compiled_program`` (its ``_Gen``, one generator for both targets)
emits each program's segment kernels for a :class:`CudaTarget`: the same per-warp lockstep
body the CPU kernel loops over becomes the body of one CUDA thread per warp of four lanes
(``w = cuda.grid(1)``), compiled with Numba CUDA (``numba.cuda.jit``). The kernels read and
write the interpreter's own register files ((R, 4, N) uint32: CuPy device arrays on a GPU,
taken through ``__cuda_array_interface__``; NumPy arrays under Numba's CUDA simulator) and the
same counter arrays as the CPU kernels. A thread writes only its own warp's entries (its four
lanes of ``killed`` and of the per-lane counters, its warp's per-warp counters), so threads
never race; the guard array's maxima (loop trip counts, steps) are raised with
``cuda.atomic.max``. Segments work as on the CPU: texture lookups and the opcodes not
generated run between kernel launches through the interpreter's handlers, on the host, on the
same device arrays (``CompiledProgram.run`` with this target).

Why. The renderer's CuPy backend ran every shader through the interpreter: a few hundred
small CuPy launches per program. With ``TILESIM_SHADER_KERNELS=1`` and CuPy arrays on a
machine with a GPU, ``Interpreter.run`` takes these kernels instead (:func:`run_compiled`);
anywhere else the interpreter runs, as before.

What differs from the CPU target, and only that (:class:`CudaTarget`): the thread index
instead of the warp loop; ``cuda.atomic.max`` for the guard; EX2, LG2 and POW are segment
boundaries; and the primitives the shared helpers and templates call (``_fadd``, ``_fmul``,
``_sqrt``, ``_floor``, ``_fabs``, the bit-casts ``_f2u``/``_u2f``, ...), bound here to
:data:`_PRIMITIVES`. The shared helpers themselves (``_add``, ``_half``, ``_fmin``,
``_count``, ...) are compiled_program's functions, their code re-bound to this module's
primitives (:func:`_rebind`) and compiled as CUDA device functions.

Bit identity: the interpreter on NumPy (x86, float32) stays the reference. What a real GPU
could do differently, and what the emitted code does about it:

- **Contraction.** NVVM contracts ``a * b + c`` into one fused multiply-add by default (no
  ``fastmath`` needed: checked, a plain kernel compiles to ``fma.rn.f32``), and ptxas may fuse
  a ``mul.f32`` and an ``add.f32`` without a rounding modifier. Every float add, subtract,
  multiply, divide and square root is libdevice's explicitly rounded one (``fadd_rn``,
  ``fsub_rn``, ``fmul_rn``, ``fdiv_rn``, ``fsqrt_rn``: PTX ``add.rn.f32``, ... which PTX
  does not fuse); floor/ceil/trunc/rint are ``floorf``/``ceilf``/``truncf``/``rintf``
  (``cvt.rmi`` / ``rpi`` / ``rzi`` / ``rni``, exact).
- **Denormals.** Numba CUDA flushes them only with ``fastmath``; the kernels never set it,
  and the ``_rn`` forms used carry no ``.ftz``.
- **NaNs.** A GPU returns a canonical NaN (0x7FFFFFFF) where x86 returns the NaN operand,
  quieted, or for an invalid operation (inf - inf, 0 * inf, sqrt(-1)) its "indefinite"
  0xFFC00000; PTX leaves the NaN of ``abs``/``neg`` unspecified. The primitives here return
  the indefinite NaN for a NaN result, the helpers (``_nan_of``) then give a NaN operand's
  payload as on the CPU; sqrt, floor and the other roundings give a NaN input back quieted;
  ``_fabs``/``_fneg`` are bit operations. MIN/MAX are compares and selects
  (``_fmin``/``_fmax``, NumPy's rules), never ``min.f32``.
- **Transcendentals.** libdevice's ``exp2f``/``log2f``/``powf`` are not glibc's: EX2, LG2 and
  POW (and SIN/COS, as on the CPU) are segment boundaries, computed between kernels by the
  interpreter's handlers.

Checked here without a GPU (``tests/shaders/test_cuda_program.py``): the kernels of the
hand-made test programs and of every 25th corpus program compile to PTX for sm_90 with NVVM
(the CUDA toolkit; no device needed) and that PTX holds no ``fma``, ``.ftz`` or ``.approx``
instruction and no float add/sub/mul/div/sqrt without ``.rn``; under the simulator the
kernels' results equal the interpreter's bit for bit on every corpus program. The simulator
runs the kernels as Python on NumPy scalars, so it proves the generated code's logic (masks,
counters, lanes, segments, the helpers' NaN rules) but not the GPU's arithmetic: that
libdevice's ``_rn`` operations round as NumPy does, that ptxas keeps them apart, and the NaN
bits above, are from the PTX and NVIDIA's documentation, unverified on a device until the
GPU test (``test_cuda_kernels_match_the_interpreter_on_a_gpu``) runs on one.

A note on the reference on a GPU: the handlers between kernels run on CuPy there, and CuPy's
own operations (its ``sin``, its NaNs) are not NumPy's bits; the GPU test therefore compares
the kernels with the NumPy interpreter where the CuPy interpreter does too.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from tilesim import jit
from tilesim.shaders import compiled_program as cp
from tilesim.shaders.interpreter import sample_array

F32, U32 = np.float32, np.uint32

if jit.AVAILABLE:  # pragma: no branch - depends on the environment
    from numba import config as _numba_config
    from numba import cuda

    # Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 before numba.cuda is imported): kernels
    # run as Python on the CPU, on NumPy arrays.
    SIMULATOR = bool(_numba_config.ENABLE_CUDASIM)
else:  # pragma: no cover
    cuda = None
    SIMULATOR = False

# Threads (warps of four lanes) per block.
THREADS_PER_BLOCK = 128
# Kernel launches in this process (the tests check that the kernels ran, not a fallback).
launches = 0


# -- primitives: the innermost operations, per device ---------------------------------------

if SIMULATOR or not jit.AVAILABLE:
    # The simulator runs Python: NumPy float32 scalars round each operation once, as the
    # interpreter's arrays do; libdevice's functions exist there only as stubs.
    def _add_rn(a, b):
        return a + b

    def _sub_rn(a, b):
        return a - b

    def _mul_rn(a, b):
        return a * b

    def _div_rn(a, b):
        return a / b

    def _sqrt_rn(a):
        return np.sqrt(a)

    def _f2u(x):
        return U32(F32(x).view(U32))

    def _u2f(x):
        return U32(x).view(F32)

    _floor_rn, _ceil_rn, _trunc_rn, _rint_rn = np.floor, np.ceil, np.trunc, np.rint
else:
    from numba.cuda import libdevice

    _add_rn, _sub_rn = libdevice.fadd_rn, libdevice.fsub_rn
    _mul_rn, _div_rn, _sqrt_rn = libdevice.fmul_rn, libdevice.fdiv_rn, libdevice.fsqrt_rn
    _floor_rn, _ceil_rn = libdevice.floorf, libdevice.ceilf
    _trunc_rn, _rint_rn = libdevice.truncf, libdevice.rintf
    _f2u, _u2f = cp._f2u, cp._u2f     # LLVM bitcasts: no conversion, NaN payloads kept


# The functions below run with the device namespace of _device_functions as their globals,
# where _quiet is the shared helper compiled for the device (this binding is for readers).
_quiet = cp._quiet


def _indefinite():
    """x86's NaN for an invalid operation (the sign bit set), which NumPy returns."""
    return _u2f(U32(0xFFC00000))


def _fadd(a, b):
    r = _add_rn(a, b)
    return _indefinite() if r != r else r


def _fsub(a, b):
    r = _sub_rn(a, b)
    return _indefinite() if r != r else r


def _fmul(a, b):
    r = _mul_rn(a, b)
    return _indefinite() if r != r else r


def _fdiv(a, b):
    r = _div_rn(a, b)
    return _indefinite() if r != r else r


def _sqrt(a):
    if a != a:
        return _quiet(a)
    r = _sqrt_rn(a)
    return _indefinite() if r != r else r


def _floor(a):
    return _quiet(a) if a != a else _floor_rn(a)


def _ceil(a):
    return _quiet(a) if a != a else _ceil_rn(a)


def _trunc(a):
    return _quiet(a) if a != a else _trunc_rn(a)


def _rint(a):
    return _quiet(a) if a != a else _rint_rn(a)


def _fabs(a):
    return _u2f(_f2u(a) & U32(0x7FFFFFFF))


def _fneg(a):
    return _u2f(_f2u(a) ^ U32(0x80000000))


# The device's rounded operations the primitives call (libdevice's, or NumPy's under the
# simulator); the primitives, not these, are what the generated kernels import.
_ROUNDED = {"_add_rn": _add_rn, "_sub_rn": _sub_rn, "_mul_rn": _mul_rn, "_div_rn": _div_rn,
            "_sqrt_rn": _sqrt_rn, "_floor_rn": _floor_rn, "_ceil_rn": _ceil_rn,
            "_trunc_rn": _trunc_rn, "_rint_rn": _rint_rn}
_PRIMITIVES = (_indefinite, _fadd, _fsub, _fmul, _fdiv, _sqrt, _floor, _ceil, _trunc, _rint,
               _fabs, _fneg)
# compiled_program's helpers the generated code calls (and those they call), shared.
_SHARED = ("_quiet", "_nan_of", "_add", "_mul", "_sub", "_div", "_fmin", "_fmax", "_sat",
           "_ssg", "_b2f", "_b2u", "_b2i", "_f2i", "_f2uint", "_umul_hi", "_udiv", "_umod",
           "_idiv", "_imod", "_imin", "_imax", "_issg", "_half", "_count")


def _rebind(function, namespace: dict):
    """``function``'s code (a Numba dispatcher's Python function) with ``namespace`` as its
    globals: the helper as written in compiled_program, calling this target's primitives."""
    py = getattr(function, "py_func", function)
    return types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__,
                              py.__closure__)


def _device_functions() -> dict:
    """Every name the generated kernels import from here: the primitives and the shared
    helpers as CUDA device functions, resolving each other's names in one namespace."""
    namespace: dict = {"np": np, "F32": F32, "U32": U32, "_f2u": _f2u, "_u2f": _u2f,
                       **_ROUNDED}
    functions = [(f.__name__, _rebind(f, namespace)) for f in _PRIMITIVES]
    functions += [(name, _rebind(getattr(cp, name), namespace)) for name in _SHARED]
    for name, function in functions:
        namespace[name] = cuda.jit(device=True)(function) if cuda is not None else function
    return namespace


if jit.AVAILABLE:  # pragma: no branch
    globals().update({k: v for k, v in _device_functions().items() if k.startswith("_")
                      and k not in _ROUNDED})

_GENERATED_NAMES = sorted(["_f2u", "_u2f", *(f.__name__ for f in _PRIMITIVES), *_SHARED])
_HEADER = ('"""Generated by tilesim.shaders.cuda_program for one TGSI program: do not edit."""\n'
           "import numpy as np\n"
           "from numba import cuda\n"
           "from numpy import float32 as F32, uint32 as U32\n"
           "from tilesim.shaders.cuda_program import (\n"
           + "".join(f"    {name},\n" for name in _GENERATED_NAMES) + ")\n\n")


# -- the target -------------------------------------------------------------------------------


class CudaTarget(cp.Target):
    """One CUDA thread a warp; see the module docstring for what else differs."""

    name = "cuda"
    depth = 1
    prefix = "program_cuda"

    def libm(self) -> bool:
        return False

    def header(self) -> str:
        return _HEADER

    def opening(self, signature: str, loads: list[str]) -> list[str]:
        return ["@cuda.jit(cache=True)", f"def {signature}:", "    w = cuda.grid(1)",
                "    if w >= (n + 3) // 4:", "        return",
                *(f"    {line}" for line in loads)]

    def raise_to(self, index: int, value: str) -> list[str]:
        return [f"cuda.atomic.max(guard, {index}, {value})"]

    def usable(self, *arrays) -> bool:
        present = [a for a in arrays if a is not None]
        if SIMULATOR:
            return all(type(a) is np.ndarray for a in present)
        return all(hasattr(a, "__cuda_array_interface__") for a in present)

    def launch(self, kernel, warps: int, args: tuple) -> None:
        global launches
        if warps == 0:
            return
        threads = min(warps, THREADS_PER_BLOCK)
        kernel[-(-warps // threads), threads](*args)
        launches += 1


CUDA = CudaTarget()
_COMPILED: dict[str, cp.CompiledProgram | None] = {}
_REASONS: dict[str, str] = {}


def compiled_for(interp) -> cp.CompiledProgram | None:
    """The CUDA form of an Interpreter's program (generated once per process; Numba compiles
    a kernel at its first launch); None where it falls back to the interpreter."""
    return cp.compile_cached(interp, CUDA, _COMPILED, _REASONS)


def fallback_reason(interp) -> str | None:
    """Why the interpreter runs ``interp``'s program as a whole on a GPU (None: it does not)."""
    compiled_for(interp)
    return _REASONS.get(cp.program_key(interp))


@functools.cache
def gpu_present() -> bool:
    """A CUDA GPU that Numba can launch on (never under the simulator)."""
    return jit.AVAILABLE and not SIMULATOR and bool(cuda.is_available())


def run_compiled(interp, state: dict, inputs, constants, lanes, sampler, system_values):
    """``compiled_program.run_compiled`` for device arrays: the Execution from the CUDA
    kernels, or None where the interpreter runs (no GPU, not compiled yet, a fallback)."""
    if not gpu_present():
        return None
    compiled = cp.compiled_when_due(
        interp, state, "cuda", cp.lane_count(sample_array(inputs, system_values), lanes),
        _COMPILED, compiled_for)
    if compiled is None:
        return None
    return compiled.run(interp, inputs, constants, lanes, sampler, system_values)
