"""TGSI programs compiled to native kernels (Numba), bit-identical to the interpreter.

Each program is compiled once per program text and precision mode into
generated Python source, then into machine code by Numba; :mod:`tilesim.shaders.interpreter`
stays the reference and the fallback (``Interpreter.run`` takes this path only for NumPy
arrays, ``tilesim.jit.usable``, and never when a trace is recorded). The generator has two
targets (:class:`Target`): this CPU one, whose kernels loop over the warps, and CUDA
(:mod:`tilesim.shaders.cuda_program`, a thread a warp, for CuPy arrays on a GPU); the body of
a warp is the same text for both, its float operations and bit-casts named primitives
(``_fadd``, ``_sqrt``, ``_floor``, ``_fneg``, ``_f2u``, ...) that each target binds.

What a kernel is. One generated function per *segment* (below) loops over warps of four lanes
(a 2x2 quad for fragments, ``tilesim.shaders.stats.WARP_SIZE``). Inside a warp the program
runs in lockstep with four-bit execution masks (condition, loop, continue, and the lanes not
in a dead quad), the program's IF/ELSE and loops become Python ``if`` / ``while`` on those
masks, exactly as the interpreter narrows its (N,) masks (Gallium's tgsi_exec scheme). A run of
instructions under one mask is a loop over the warp's lanes with the registers' channels in
scalar locals (raw 32-bit patterns, bit-cast to float32 where an opcode reads floats); the
register files stay the interpreter's (R, 4, N) uint32 arrays, so segments, and the opcodes
the interpreter runs between them, share them. Why per warp and not per lane: the counters
(``DynamicStats.warp_instructions``, ``warp_active_lanes``) count an instruction for a warp
when any of its lanes is active, which only lockstep execution of the warp knows; and a quad
whose four lanes are all killed stops (``_Run._kill``), and DDX/DDY read the quad's other
lanes: both are local to the warp. Lanes of different warps never interact, so running warps
one after another equals the interpreter's walk over all N lanes at once (a warp's walk is
the global walk with the steps where the warp has no active lane left out; such steps change
nothing of the warp, and the counters the interpreter takes under masks that are not the
execution mask, ELSE / ENDIF / ENDLOOP, count no lane of such a warp: see the exceptions).

Segments. Texture instructions call the Sampler (Python, over all lanes) and the
transcendentals whose NumPy results differ from Numba's libm (``_LIBM``: SIN and COS always,
EX2 / LG2 / POW where a probe finds a difference on this machine) must be computed by NumPy
itself. Where such an instruction sits at the top level of the program (outside IF and
loops) the program is split there: the kernels before and after run over all lanes, and the
instruction runs in between through the interpreter's own handler (``_Plan.handler``) on the
same registers, counted by its counter. The same goes for every other opcode this module does
not generate code for (FMA, LIT, EXP, LOG, DST, LDEXP, ARL/ARR/UARL, the bit-field opcodes)
and for indirectly addressed operands.

What falls back to the interpreter as a whole (:func:`fallback_reason`): such an instruction
inside flow control; subroutines (CAL, RET, BGNSUB); a loop with a CONT and a loop nested in
it (the interpreter counts ENDLOOP of the inner loop for lanes that continued the outer one
on every global iteration, a count that depends on other warps). And per run: CuPy arrays
(the CUDA target's where a GPU is present, else the interpreter), ``record_trace``, fewer
lanes than whole quads for a program with derivatives, a kernel that hits a loop bound
(``MAX_LOOP_ITERATIONS``) or the instruction budget, or where the budget cannot be shown to
hold (:meth:`CompiledProgram.run` returns None and the interpreter runs
from the start, so its errors are the interpreter's).

Bit identity (each point checked in ``tests/shaders/test_compiled_program.py``):

- float operations as NumPy does them in float32, one rounding each, in the interpreter's
  order (Numba without ``fastmath`` neither reorders nor fuses); ``error_model="numpy"``;
  a NaN result carries the NaN operand NumPy's loop returns (``_nan_order``: LLVM may
  commute an add or a multiply, and NumPy computes lanes + uniform as uniform + lanes);
  MIN/MAX as NumPy's SIMD ``fmin``/``fmax`` loops (a NaN operand gives the other one, equal
  values give the second operand, two NaNs the first);
- fp16 rounding (:func:`_half`) bit for bit as NumPy's ``astype(float16).astype(float32)``,
  checked over all 2^32 float32 patterns when it was written (NaNs keep their top payload
  bits and are not quieted, as NumPy's software conversion does);
- EX2, LG2 and POW call the same libm functions as NumPy's float32 loops on x86-64 without
  AVX-512 (glibc ``exp2f``/``log2f``/``powf``); :func:`libm_agrees` probes it once per
  process and makes them segment boundaries where it does not hold;
- the counters follow ``_Run._count``: every instruction counted before its effect, under
  the execution mask; ELSE and ENDIF under the mask at their IF (continue and loop masks of
  now), ENDLOOP under condition and loop masks.

An Interpreter compiles its program once it has run ``COMPILE_AFTER_LANES`` lanes (Numba
takes 0.5 to 3 s a program): one-off programs of a few lanes stay interpreted.
Compiled programs are cached in the process by program text, immediates and per-instruction
fp16 channels; the generated source is written once under ``kernel_cache.cache_root()`` in a
folder named by the source digest and imported from there, so Numba's ``cache=True`` keeps
the machine code on disk across processes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from tilesim import jit
from tilesim.backend import quad_all, to_host
from tilesim.kernel_cache import cache_root, configure_numba, source_digest
from tilesim.shaders import opcodes as ops
from tilesim.shaders.interpreter import sample_array
from tilesim.shaders.stats import WARP_SIZE

F32, U32 = np.float32, np.uint32

# Opcodes generated here. Everything else non-flow is a segment boundary at top level.
# Float arithmetic goes through _add/_sub/_mul/_div: which NaN a NaN result carries (x86
# returns the first operand's, quieted) must follow NumPy's operand order, which LLVM may
# commute. {sAB}: True where NumPy's loop puts operand B first (it does so for add and
# multiply of a lane array and a uniform CONST/IMM column: ``_nan_order``).
_FLOAT_COMPONENT = {
    "ADD": "_add({0}, {1}, {s01})", "MUL": "_mul({0}, {1}, {s01})",
    "MAD": "_add(_mul({0}, {1}, {s01}), {2}, {sMAD})",
    "DIV": "_div({0}, {1})", "MIN": "_fmin({0}, {1})", "MAX": "_fmax({0}, {1})",
    "FRC": "_sub({0}, _floor({0}))", "FLR": "_floor({0})", "CEIL": "_ceil({0})",
    "TRUNC": "_trunc({0})", "ROUND": "_rint({0})", "SSG": "_ssg({0})",
    "CMP": "({1} if {0} < F32(0) else {2})",
    "LRP": "_add(_mul({0}, {1}, {s01}), _mul(_sub(F32(1), {0}), {2}, {s02}), {sLRP})",
    "SLT": "_b2f({0} < {1})", "SGE": "_b2f({0} >= {1})", "SEQ": "_b2f({0} == {1})",
    "SNE": "_b2f({0} != {1})", "SGT": "_b2f({0} > {1})", "SLE": "_b2f({0} <= {1})",
}
_FLOAT_TO_BITS = {  # float sources, integer (all-bits boolean or converted) results
    "FSEQ": "_b2u({0} == {1})", "FSNE": "_b2u({0} != {1})", "FSLT": "_b2u({0} < {1})",
    "FSGE": "_b2u({0} >= {1})", "F2I": "_f2i({0})", "F2U": "_f2uint({0})",
}
_INT_COMPONENT = {  # int64 holding the 32-bit value (wrapped when stored)
    "I2F": "F32({0})", "U2F": "F32({0})",
    "UADD": "({0} + {1})", "UMUL": "({0} * {1})", "UMAD": "({0} * {1} + {2})",
    "IMUL_HI": "(({0} * {1}) >> 32)", "UMUL_HI": "_umul_hi({0}, {1})",
    "IDIV": "_idiv({0}, {1})", "UDIV": "_udiv({0}, {1})", "MOD": "_imod({0}, {1})",
    "UMOD": "_umod({0}, {1})", "INEG": "(-{0})", "IABS": "abs({0})", "ISSG": "_issg({0})",
    "IMIN": "_imin({0}, {1})", "IMAX": "_imax({0}, {1})", "UMIN": "_imin({0}, {1})",
    "UMAX": "_imax({0}, {1})",
    "ISLT": "_b2i({0} < {1})", "ISGE": "_b2i({0} >= {1})", "USLT": "_b2i({0} < {1})",
    "USGE": "_b2i({0} >= {1})", "USEQ": "_b2i({0} == {1})", "USNE": "_b2i({0} != {1})",
    "AND": "({0} & {1})", "OR": "({0} | {1})", "XOR": "({0} ^ {1})", "NOT": "(~{0})",
    "SHL": "({0} << ({1} & 31))", "ISHR": "({0} >> ({1} & 31))",
    "USHR": "({0} >> ({1} & 31))", "UCMP": "({1} if {0} != 0 else {2})",
}
_REPLICATE = {"RCP": "_div(F32(1), {0})", "RSQ": "_div(F32(1), _sqrt({0}))",
              "SQRT": "_sqrt({0})", "EX2": "np.exp2({0})", "LG2": "np.log2({0})",
              "POW": "_pow({0}, {1})"}
# fp16 forms (opcodes.FP16_FORMS), per channel.
_FP16_FORMS = {"RSQ": "_half(_div(F32(1), _half(_sqrt({0}))))",
               "MAD": "_half(_add(_half(_mul({0}, {1}, {s01})), {2}, {sMAD}))",
               "LRP": "_half(_add(_half(_mul({1}, {0}, {s10})), "
                      "_half(_mul({2}, _half(_sub(F32(1), {0})), {s20})), {sLRP}))",
               "POW": "_pow_fp16({0}, {1}, {s01})"}
# A mediump product inside a highp MAD (``_Run._component``).
_PRODUCT = "_add(_half(_mul(_half({0}), _half({1}), {s01})), {2}, {sMAD})"


def _nan_order(uniform: list[bool]) -> dict[str, bool]:
    """The {sAB} flags of the templates from which sources are uniform (a (k, 1) CONST/IMM
    column in the interpreter): NumPy's add and multiply loops for (lanes, uniform) operands
    compute uniform op lanes, so two NaNs give the uniform one's; (uniform, lanes), two lane
    arrays and two columns keep the first's (measured on NumPy 2.4, AVX2)."""
    u = list(uniform) + [False] * (3 - len(uniform))

    def second(first: bool, other: bool) -> bool:
        return other and not first

    return {"s01": second(u[0], u[1]), "s10": second(u[1], u[0]), "s02": second(u[0], u[2]),
            "s20": second(u[2], u[0]), "sMAD": second(u[0] and u[1], u[2]),
            "sLRP": second(u[0] and u[1], u[0] and u[2])}


_DERIVATIVES = ("DDX", "DDY", "DDX_FINE", "DDY_FINE")
_LIBM = ("EX2", "LG2", "POW")   # native only where libm_agrees()
_FILES = ("TEMP", "OUT", "IN", "ADDR", "SV")
_ARG = {"TEMP": "T", "OUT": "O", "IN": "I", "ADDR": "A", "SV": "S"}
_FLOW = frozenset({"IF", "UIF", "ELSE", "ENDIF", "BGNLOOP", "BRK", "CONT", "ENDLOOP",
                   "CAL", "RET", "ENDSUB", "BGNSUB", "NOP", "END"})
_CATEGORY = {c: i for i, c in enumerate(ops.CATEGORIES)}
ALU, FLOW = _CATEGORY[ops.ALU], _CATEGORY[ops.FLOW]


# -- scalar helpers the generated kernels inline --------------------------------------------

if jit.AVAILABLE:  # pragma: no branch - depends on the environment
    import numba
    from llvmlite import ir as _llvm_ir
    from numba import types as _nt
    from numba.extending import intrinsic as _intrinsic

    configure_numba(numba)

    @_intrinsic
    def _f2u(typingctx, x):
        """The bits of a float32 (an LLVM bitcast: no conversion, NaN payloads kept)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], _llvm_ir.IntType(32))
        return _nt.uint32(_nt.float32), codegen

    @_intrinsic
    def _u2f(typingctx, x):
        """The float32 of 32 bits (an LLVM bitcast)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], _llvm_ir.FloatType())
        return _nt.float32(_nt.uint32), codegen

    def _inline(f):
        return numba.njit(error_model="numpy")(f)
else:  # pragma: no cover
    def _inline(f):
        return f

    def _f2u(x):
        return U32(np.float32(x).view(U32))

    def _u2f(x):
        return F32(np.uint32(x).view(F32))


# The float operations of the helpers and templates, one rounding each: NumPy's here; the
# CUDA target binds the same names to libdevice's explicitly rounded operations
# (tilesim.shaders.cuda_program: NVVM would contract a product and a sum into one FMA).


@_inline
def _fadd(a, b):  # pragma: no cover - compiled
    return a + b


@_inline
def _fsub(a, b):  # pragma: no cover - compiled
    return a - b


@_inline
def _fmul(a, b):  # pragma: no cover - compiled
    return a * b


@_inline
def _fdiv(a, b):  # pragma: no cover - compiled
    return a / b


@_inline
def _sqrt(a):  # pragma: no cover - compiled
    return np.sqrt(a)


@_inline
def _fabs(a):  # pragma: no cover - compiled
    return abs(a)


@_inline
def _fneg(a):  # pragma: no cover - compiled
    return -a


@_inline
def _floor(a):  # pragma: no cover - compiled
    return np.floor(a)


@_inline
def _ceil(a):  # pragma: no cover - compiled
    return np.ceil(a)


@_inline
def _trunc(a):  # pragma: no cover - compiled
    return np.trunc(a)


@_inline
def _rint(a):  # pragma: no cover - compiled
    return np.rint(a)


@_inline
def _half(x):  # pragma: no cover - compiled
    """``opcodes.to_half`` for one float32: round to the nearest fp16 (ties to even, beyond
    65504 to inf, fp16 subnormals kept), as float32; NaNs as NumPy's software conversion
    (top ten payload bits kept, a payload that would vanish becomes 1, not quieted)."""
    b = _f2u(x)
    s = b & U32(0x80000000)
    a = b & U32(0x7FFFFFFF)
    if a > U32(0x7F800000):
        m = (a & U32(0x007FFFFF)) >> U32(13)
        if m == U32(0):
            m = U32(1)
        return _u2f(s | U32(0x7F800000) | (m << U32(13)))
    if a >= U32(0x477FF000):
        return _u2f(s | U32(0x7F800000))
    if a >= U32(0x38800000):
        return _u2f(s | ((a + U32(0xFFF) + ((a >> U32(13)) & U32(1))) & U32(0xFFFFE000)))
    v = _fmul(_rint(_fmul(_u2f(a), F32(16777216.0))), F32(5.9604645e-08))
    return _u2f(s | _f2u(v))


@_inline
def _quiet(a):  # pragma: no cover - compiled
    return _u2f(_f2u(a) | U32(0x00400000))


@_inline
def _nan_of(a, b, result, second):  # pragma: no cover - compiled
    """The NaN x86 SSE/AVX gives for ``a op b``: a NaN operand's payload, quieted; of two,
    the first operand's (``second``: NumPy put b first)."""
    if a != a and (b == b or not second):
        return _quiet(a)
    if b != b:
        return _quiet(b)
    return result


@_inline
def _add(a, b, second):  # pragma: no cover - compiled
    r = _fadd(a, b)
    return _nan_of(a, b, r, second) if r != r else r


@_inline
def _mul(a, b, second):  # pragma: no cover - compiled
    r = _fmul(a, b)
    return _nan_of(a, b, r, second) if r != r else r


@_inline
def _sub(a, b):  # pragma: no cover - compiled
    r = _fsub(a, b)
    return _nan_of(a, b, r, False) if r != r else r


@_inline
def _div(a, b):  # pragma: no cover - compiled
    r = _fdiv(a, b)
    return _nan_of(a, b, r, False) if r != r else r


@_inline
def _fmin(a, b):  # pragma: no cover - compiled
    """np.fmin's float32 SIMD loop: a NaN gives the other operand, ties the second."""
    if b != b:
        return a
    if a != a:
        return b
    return a if a < b else b


@_inline
def _fmax(a, b):  # pragma: no cover - compiled
    """np.fmax's float32 SIMD loop (as :func:`_fmin`)."""
    if b != b:
        return a
    if a != a:
        return b
    return a if a > b else b


@_inline
def _sat(a):  # pragma: no cover - compiled
    """``interpreter._saturated``: clamped to [0, 1], NaN to 0."""
    return (a if a < F32(1) else F32(1)) if a > F32(0) else F32(0)


@_inline
def _ssg(a):  # pragma: no cover - compiled
    return F32(1) if a > F32(0) else (F32(-1) if a < F32(0) else F32(0))


@_inline
def _b2f(c):  # pragma: no cover - compiled
    return F32(1) if c else F32(0)


@_inline
def _b2u(c):  # pragma: no cover - compiled
    return U32(0xFFFFFFFF) if c else U32(0)


@_inline
def _b2i(c):  # pragma: no cover - compiled
    return np.int64(0xFFFFFFFF) if c else np.int64(0)


@_inline
def _f2i(a):  # pragma: no cover - compiled
    """``opcodes._f2i``: truncated; out of range and NaN give INT_MIN."""
    if a >= F32(-2147483648.0) and a < F32(2147483648.0):
        return np.int64(_trunc(a))
    return np.int64(-2147483648)


@_inline
def _f2uint(a):  # pragma: no cover - compiled
    """``opcodes._f2u``: truncated, clamped to [0, 2^32 - 1], NaN to 0."""
    if a != a:
        return np.int64(0)
    t = np.float64(_trunc(a))
    if t < 0.0:
        t = 0.0
    if t > 4294967295.0:
        t = 4294967295.0
    return np.int64(t)


@_inline
def _umul_hi(a, b):  # pragma: no cover - compiled
    return np.int64((np.uint64(a) * np.uint64(b)) >> np.uint64(32))


@_inline
def _udiv(a, b):  # pragma: no cover - compiled
    return np.int64(0xFFFFFFFF) if b == 0 else a // b


@_inline
def _umod(a, b):  # pragma: no cover - compiled
    return np.int64(0xFFFFFFFF) if b == 0 else a % b


@_inline
def _idiv(a, b):  # pragma: no cover - compiled
    """``opcodes._idiv``: truncating, 0 by zero, INT_MIN / -1 wraps."""
    if b == 0:
        return np.int64(0)
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


@_inline
def _imod(a, b):  # pragma: no cover - compiled
    """``opcodes._imod``: the sign of the dividend, -1 by zero."""
    if b == 0:
        return np.int64(-1)
    r = abs(a) % abs(b)
    return -r if a < 0 else r


@_inline
def _imin(a, b):  # pragma: no cover - compiled
    """min of two int64 (the builtin does not compile for CUDA in Numba 0.68)."""
    return a if a < b else b


@_inline
def _imax(a, b):  # pragma: no cover - compiled
    return a if a > b else b


@_inline
def _issg(a):  # pragma: no cover - compiled
    return np.int64(1) if a > 0 else (np.int64(-1) if a < 0 else np.int64(0))


@_inline
def _pow(a, b):  # pragma: no cover - compiled
    """``opcodes._pow``: 0 at a == 0, NaN below."""
    if a > F32(0):
        return np.power(a, b)
    return F32(0) if a == F32(0) else F32(np.nan)


@_inline
def _pow_fp16(a, b, second):  # pragma: no cover - compiled
    """``opcodes._pow_fp16``."""
    if a > F32(0):
        return _half(np.exp2(_half(_mul(_half(np.log2(a)), b, second))))
    return F32(0) if a == F32(0) else F32(np.nan)


@_inline
def _count(lc, wc, wa, w, base, mask, category, k):  # pragma: no cover - compiled
    """``DynamicCounter.step`` for ``k`` instructions of one category under a warp's mask."""
    active = 0
    for lane in range(4):
        if (mask >> lane) & 1:
            lc[category, base + lane] += k
            active += 1
    wc[category, w] += k
    wa[w] += active * k


# -- libm probe ---------------------------------------------------------------------------


@functools.cache
def libm_agrees() -> bool:
    """Whether Numba's float32 exp2, log2 and power give NumPy's bits on this machine, over a
    fixed sample (special values, random bit patterns, values of every exponent): NumPy may
    use its own SIMD code (AVX-512 builds) where Numba calls libm. Run once per process."""
    if not jit.AVAILABLE:
        return False
    rng = np.random.default_rng(34)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 0.5, 2, 1e-45, 1e-40,
                        1e-38, 3.4e38, 88.7, -87.3, 127.99, -149.5, 128, -126, -150],
                       dtype=F32)
    sample = np.concatenate([
        special, rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(U32).view(F32),
        rng.uniform(-150, 130, 1 << 16).astype(F32), rng.uniform(0, 4, 1 << 16).astype(F32)])
    other = np.roll(sample, 1)
    got = _probe(sample, other)
    with np.errstate(all="ignore"):
        want = np.stack([np.exp2(sample), np.log2(sample), np.power(sample, other)])
    return bool((got.view(U32) == want.view(U32)).all())


if jit.AVAILABLE:
    @numba.njit(cache=True, error_model="numpy")
    def _probe(a, b):  # pragma: no cover - compiled
        out = np.empty((3, a.shape[0]), dtype=np.float32)
        for i in range(a.shape[0]):
            out[0, i] = np.exp2(a[i])
            out[1, i] = np.log2(a[i])
            out[2, i] = np.power(a[i], b[i])
        return out


# -- program structure --------------------------------------------------------------------


class _Unsupported(Exception):
    """Why a program cannot be compiled (the interpreter runs it)."""


@dataclass
class _Item:
    """A top-level piece of the program: one instruction, or a whole IF / loop construct
    (``first``..``last`` inclusive)."""

    first: int
    last: int
    native: bool


def _native(interp, pc: int, libm: bool) -> str | None:
    """None where instruction ``pc`` is generated here, else why not (``libm``: EX2, LG2 and
    POW are generated, :meth:`Target.libm`)."""
    inst = interp.program.instructions[pc]
    op = inst.opcode
    if op in ("CAL", "RET", "BGNSUB", "ENDSUB"):
        return f"subroutines ({op})"
    if op in _FLOW or op in ("KILL", "KILL_IF"):
        pass
    elif op in _LIBM and not libm:
        return f"{op}: NumPy's float32 {op} differs from the target's here"
    elif not (op in _FLOAT_COMPONENT or op in _FLOAT_TO_BITS or op in _INT_COMPONENT
              or op in _REPLICATE or op in ("MOV", "DP2", "DP3", "DP4") or op in _DERIVATIVES):
        return f"{op} runs through the interpreter"
    for operand in list(inst.src) + [d.register for d in inst.dst]:
        reg = getattr(operand, "register", operand)
        if reg.indirect is not None or reg.dimension_indirect is not None:
            return f"{op}: indirect addressing"
        if reg.file not in _FILES and reg.file not in ("CONST", "IMM"):
            return f"{op}: register file {reg.file}"
        if reg.file == "IMM" and reg.index >= len(interp.program.immediates):
            return f"{op}: IMM[{reg.index}] beyond the immediates"
    if len(inst.dst) > 1:
        return f"{op}: two destinations"
    return None


def _items(interp, libm: bool) -> list[_Item]:
    """The top-level items up to END; raises _Unsupported for a construct that cannot be
    compiled."""
    program, links = interp.program, interp.links
    items: list[_Item] = []
    pc, count = 0, len(program.instructions)
    while pc < count:
        op = program.instructions[pc].opcode
        if op == "END":
            break
        if op in ("IF", "UIF", "BGNLOOP"):
            last = links[pc]["end"]
            for inner in range(pc, last + 1):
                why = _native(interp, inner, libm)
                if why is not None:
                    raise _Unsupported(f"{why} inside flow control")
            _check_continue(program, links, pc, last)
            items.append(_Item(pc, last, True))
            pc = last + 1
            continue
        why = _native(interp, pc, libm)
        if why is not None and why.startswith("subroutines"):
            raise _Unsupported(why)
        items.append(_Item(pc, pc, why is None))
        pc += 1
    return items


def _check_continue(program, links, first: int, last: int) -> None:
    for pc in range(first, last + 1):
        if program.instructions[pc].opcode != "CONT":
            continue
        loop = links[pc]["loop"]
        end = links[loop]["end"]
        if any(program.instructions[p].opcode == "BGNLOOP" for p in range(loop + 1, end)):
            raise _Unsupported("a loop with CONT around another loop")


# -- code generation ----------------------------------------------------------------------


class _Gen:
    """Python source of one program's segment kernels for a :class:`Target`."""

    def __init__(self, interp, target: Target):
        self.interp = interp
        self.target = target
        self.program = interp.program
        self.lines: list[str] = []
        self.uniforms: dict[str, str] = {}   # local name -> load expression
        self.loops: dict[int, int] = {}      # BGNLOOP pc -> guard slot
        self.tmp = 0

    # values: (expression, kind) with kind "f" float32, "n" int64 of a 32-bit value, "b" bits

    def fresh(self, stem: str) -> str:
        self.tmp += 1
        return f"{stem}{self.tmp}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def uniform(self, reg, channel: int) -> str:
        if reg.file == "IMM":
            name = f"im_{reg.index}_{channel}"
            self.uniforms[name] = f"IMM[{reg.index}, {channel}]"
        else:
            buffer = reg.dimension or 0
            name = f"c{buffer}_{reg.index}_{channel}"
            self.uniforms[name] = (f"C{buffer}[{reg.index}, {channel}] if {reg.index} < "
                                   f"C{buffer}.shape[0] else U32(0)")
        return name

    def entry(self, reg, channel: int, lane: str, cache: dict) -> list:
        """A register channel's locals in a block: [bits name, float name, written]; a
        channel first read in the block is loaded at its start."""
        key = (reg.file, reg.index, channel)
        if key not in cache:
            name = f"r_{reg.file}{reg.index}_{channel}"
            cache[key] = [name, None, False]
            self.body_loads.append((name, f"{_ARG[reg.file]}[{reg.index}, {channel}, {lane}]"))
        return cache[key]

    def bits(self, reg, channel: int, lane: str, cache: dict | None) -> str:
        """Raw bits (uint32 expression) of a register channel for one lane."""
        if reg.file in ("IMM", "CONST"):
            return self.uniform(reg, channel)
        if cache is None:
            return f"{_ARG[reg.file]}[{reg.index}, {channel}, {lane}]"
        entry = self.entry(reg, channel, lane, cache)
        if entry[0] is None:
            entry[0] = self.fresh("b")
            self.body.append(f"{entry[0]} = _f2u({entry[1]})")
        return entry[0]

    def float_of(self, reg, channel: int, lane: str, cache: dict | None) -> str:
        """A register channel read as float32 (one bit-cast per block and channel)."""
        if reg.file in ("IMM", "CONST"):
            name = self.uniform(reg, channel)
            self.uniforms["f" + name] = f"_u2f({name})"
            return "f" + name
        if cache is None:
            return f"_u2f({_ARG[reg.file]}[{reg.index}, {channel}, {lane}])"
        entry = self.entry(reg, channel, lane, cache)
        if entry[1] is None:
            entry[1] = self.fresh("f")
            self.body.append(f"{entry[1]} = _u2f({entry[0]})")
        return entry[1]

    def source(self, src, channel: int, kind: str, half: bool, lane: str, cache) -> tuple:
        """``_Run.fetch`` of one channel (after swizzle): typed by ``kind``, modifiers,
        fp16 rounding of float sources where ``half``."""
        reg, c = src.register, src.swizzle[channel]
        if kind == "any" and not (src.negate or src.absolute):
            return self.bits(reg, c, lane, cache), "b"
        if kind in ("float", "any"):
            v = self.float_of(reg, c, lane, cache)
            if src.absolute:
                v = f"_fabs({v})"
            if src.negate:
                v = f"_fneg({v})"
            if kind == "float" and half:
                v = f"_half({v})"
            return v, "f"
        b = self.bits(reg, c, lane, cache)
        if kind == "int":
            v = f"np.int64(np.int32({b}))"
            if src.absolute:
                v = f"abs({v})"
            if src.negate:
                v = f"(-{v})"
            return v, "n"
        v = f"np.int64({b})"
        if src.negate:
            v = f"((-{v}) & 0xFFFFFFFF)"
        return v, "n"

    # -- one instruction's per-lane code: returns [(channel, value expr, kind)] -------------

    def values(self, pc: int, lane: str, cache) -> list[tuple[int, str, str]]:
        interp = self.interp
        inst = self.program.instructions[pc]
        plan = interp.plans[pc]
        info = ops.OPCODES[inst.opcode]
        op = inst.opcode
        written = list(inst.dst[0].writemask)
        half_rows = plan.half_rows
        out = []

        def half_at(i: int) -> bool:
            if half_rows is None:
                return False
            return half_rows[i] if len(half_rows) == len(written) else half_rows[0]

        if info.shape == ops.COMPONENT:
            for i, c in enumerate(written):
                h = half_at(i)
                args = [self.source(s, c, info.src_type, h, lane, cache) for s in inst.src]
                names = []
                for expr, _kind in args:
                    name = self.fresh("v")
                    self.body.append(f"{name} = {expr}")
                    names.append(name)
                order = _nan_order([s.register.file in ("CONST", "IMM") for s in inst.src])
                if op == "MOV":
                    expr, kind = names[0], args[0][1]
                elif op in _FLOAT_COMPONENT:
                    expr, kind = _FLOAT_COMPONENT[op].format(*names, **order), "f"
                    if h and op in _FP16_FORMS:
                        expr = _FP16_FORMS[op].format(*names, **order)
                    if c in plan.products:
                        expr = _PRODUCT.format(*names, **order)
                elif op in _FLOAT_TO_BITS:
                    expr = _FLOAT_TO_BITS[op].format(*names)
                    kind = "b" if op.startswith("FS") else "n"
                else:
                    expr = _INT_COMPONENT[op].format(*names)
                    kind = "f" if op in ("I2F", "U2F") else "n"
                out.append((c, expr, kind))
            return out
        if info.shape == ops.REPLICATE:
            h = half_rows is not None
            names = []
            for s in inst.src:
                expr, _ = self.source(s, 0, "float", h, lane, cache)
                name = self.fresh("v")
                self.body.append(f"{name} = {expr}")
                names.append(name)
            form = _FP16_FORMS.get(op) if h else None
            order = _nan_order([s.register.file in ("CONST", "IMM") for s in inst.src])
            expr = (form or _REPLICATE[op]).format(*names, **order)
            name = self.fresh("v")
            self.body.append(f"{name} = {expr}")
            return [(c, name, "f") for c in written]
        # DOT
        width = info.dot_width
        h = half_rows is not None
        a = [self.source(inst.src[0], c, "float", h, lane, cache)[0] for c in range(width)]
        b = [self.source(inst.src[1], c, "float", h, lane, cache)[0] for c in range(width)]
        name = self.fresh("v")
        s01 = _nan_order([s.register.file in ("CONST", "IMM") for s in inst.src[:2]])["s01"]
        if h:
            self.body.append(f"{name} = _half(_mul({a[width - 1]}, {b[width - 1]}, {s01}))")
            for c in range(width - 2, -1, -1):
                self.body.append(
                    f"{name} = _half(_add({name}, _half(_mul({a[c]}, {b[c]}, {s01})), False))")
        else:
            self.body.append(f"{name} = _mul({a[0]}, {b[0]}, {s01})")
            for c in range(1, width):
                self.body.append(f"{name} = _add({name}, _mul({a[c]}, {b[c]}, {s01}), False)")
        return [(c, name, "f") for c in written]

    def stored(self, pc: int, channel: int, expr: str, kind: str) -> tuple[str, bool]:
        """``_Run.store`` of one channel: fp16 rounding of lowered float results (not MOV),
        saturation; returns (expression, whether it is a float32, else uint32 bits)."""
        inst = self.program.instructions[pc]
        info = ops.OPCODES[inst.opcode]
        dst_kind = info.dst_type
        lowered = self.interp.lowered[pc] if pc < len(self.interp.lowered) else ()
        saturate = inst.saturate and dst_kind in ("float", "any")
        if kind == "f":
            if channel in lowered and dst_kind == "float" and inst.opcode != "MOV":
                expr = f"_half({expr})"
            if saturate:
                expr = f"_sat({expr})"
            return expr, True
        if kind == "b":
            return (f"_sat(_u2f({expr}))", True) if saturate else (expr, False)
        return f"U32({expr} & 0xFFFFFFFF)", False

    # -- blocks -------------------------------------------------------------------------

    def block(self, pcs: list[int], depth: int) -> None:
        """Straight-line native instructions (no KILL, no derivative) under one mask."""
        self.emit(depth, "if ex:")
        self.emit(depth + 1, f"_count(lc, wc, wa, w, base, ex, {ALU}, {len(pcs)})")
        self.emit(depth + 1, "for l in range(4):")
        self.emit(depth + 2, "if (ex >> l) & 1:")
        self.emit(depth + 3, "ln = base + l")
        cache: dict = {}
        self.body, self.body_loads = [], []
        for pc in pcs:
            results = self.values(pc, "ln", cache)
            reg = self.program.instructions[pc].dst[0].register
            # every channel computed before any is written (MOV T0.yw, T0.xxyy)
            finals = []
            for c, expr, kind in results:
                value, is_float = self.stored(pc, c, expr, kind)
                name = self.fresh("s")
                self.body.append(f"{name} = {value}")
                finals.append((c, name, is_float))
            for c, name, is_float in finals:
                cache[(reg.file, reg.index, c)] = ([None, name, True] if is_float
                                                   else [name, None, True])
        for name, load in self.body_loads:
            self.emit(depth + 3, f"{name} = {load}")
        for line in self.body:
            self.emit(depth + 3, line)
        for (file, index, c), (bits, value, written) in cache.items():
            if written:
                stored = bits if bits is not None else f"_f2u({value})"
                self.emit(depth + 3, f"{_ARG[file]}[{index}, {c}, ln] = {stored}")
        self.emit(depth, f"steps += {len(pcs)}")

    def derivative(self, pc: int, depth: int) -> None:
        """DDX/DDY: each lane's difference over its quad (``_Run._derivative``)."""
        inst = self.program.instructions[pc]
        op = inst.opcode
        written = list(inst.dst[0].writemask)
        src = inst.src[0]
        h = self.interp.plans[pc].half_rows is not None
        self.emit(depth, "if ex:")
        self.emit(depth + 1, f"_count(lc, wc, wa, w, base, ex, {ALU}, 1)")
        finals = []
        for c in written:
            self.body, self.body_loads = [], []
            if src.register.file in ("CONST", "IMM"):
                lanes = ["F32(0)"] * 4
            else:
                q = []
                for lane in range(4):
                    expr, _ = self.source(src, c, "float", h, f"base + {lane}", None)
                    name = self.fresh("q")
                    self.emit(depth + 1, f"{name} = {expr}")
                    q.append(name)
                if op in ("DDX", "DDX_FINE"):
                    lanes = [f"_sub({q[1]}, {q[0]})"] * 2 + [f"_sub({q[3]}, {q[2]})"] * 2
                else:
                    lanes = [f"_sub({q[2]}, {q[0]})", f"_sub({q[3]}, {q[1]})"] * 2
            for lane in range(4):
                name = self.fresh("d")
                self.emit(depth + 1, f"{name} = _f2u({self.stored(pc, c, lanes[lane], 'f')[0]})")
                finals.append((c, lane, name))
        reg = inst.dst[0].register
        for c, lane, name in finals:
            self.emit(depth + 1, f"if (ex >> {lane}) & 1:")
            self.emit(depth + 2, f"{_ARG[reg.file]}[{reg.index}, {c}, base + {lane}] = {name}")
        self.emit(depth, "steps += 1")

    def kill(self, pc: int, depth: int) -> None:
        """KILL / KILL_IF (``_Run._kill``): a quad whose four lanes are killed stops."""
        inst = self.program.instructions[pc]
        self.emit(depth, "if ex:")
        self.emit(depth + 1, f"_count(lc, wc, wa, w, base, ex, {FLOW}, 1)")
        if inst.opcode == "KILL":
            self.emit(depth + 1, "kk |= ex")
        else:
            h = self.interp.plans[pc].half_rows is not None
            self.emit(depth + 1, "for l in range(4):")
            self.emit(depth + 2, "if (ex >> l) & 1:")
            self.body, self.body_loads = [], []
            tests = []
            for c in range(4):
                expr, _ = self.source(inst.src[0], c, "float", h, "base + l", None)
                tests.append(f"{expr} < F32(0)")
            self.emit(depth + 3, f"if {' or '.join(tests)}:")
            self.emit(depth + 4, "kk |= 1 << l")
        self.emit(depth + 1, "if quads and kk == 15:")
        self.emit(depth + 2, "live = 0")
        self.emit(depth + 1, "ex = cond & lp & ct & live")
        self.emit(depth, "steps += 1")

    def flow_count(self, depth: int, mask: str) -> None:
        self.emit(depth, f"if {mask}:")
        self.emit(depth + 1, f"_count(lc, wc, wa, w, base, {mask}, {FLOW}, 1)")

    def region(self, first: int, last: int, depth: int, level: int) -> None:
        """Instructions first..last (inclusive), whole constructs, at nesting ``level``."""
        instructions = self.program.instructions
        links = self.interp.links
        pc = first
        run: list[int] = []

        def flush():
            if run:
                self.block(list(run), depth)
                run.clear()

        while pc <= last:
            inst = instructions[pc]
            op = inst.opcode
            if op in ("IF", "UIF"):
                flush()
                end = links[pc]["end"]
                middle = links[pc].get("else")
                saved = f"cs{level}"
                self.flow_count(depth, "ex")
                self.emit(depth, "taken = 0")
                self.emit(depth, "if ex:")
                self.emit(depth + 1, "for l in range(4):")
                self.emit(depth + 2, "if (ex >> l) & 1:")
                h = self.interp.plans[pc].half_rows is not None
                expr, kind = self.source(inst.src[0], 0, "float" if op == "IF" else "uint", h,
                                         "base + l", None)
                zero = "F32(0)" if kind == "f" else "0"
                self.emit(depth + 3, f"if {expr} != {zero}:")
                self.emit(depth + 4, "taken |= 1 << l")
                self.emit(depth, f"{saved} = cond")
                self.emit(depth, "cond = cond & taken")
                self.emit(depth, "ex = cond & lp & ct & live")
                self.emit(depth, "steps += 1")
                then_last = (middle if middle is not None else end) - 1
                if then_last >= pc + 1:
                    self.emit(depth, "if ex:")
                    self.emit(depth + 1, "pass")
                    self.region(pc + 1, then_last, depth + 1, level + 1)
                if middle is not None:
                    self.flow_count(depth, f"{saved} & lp & ct & live")
                    self.emit(depth, f"cond = {saved} & ~cond")
                    self.emit(depth, "ex = cond & lp & ct & live")
                    self.emit(depth, "steps += 1")
                    if end - 1 >= middle + 1:
                        self.emit(depth, "if ex:")
                        self.emit(depth + 1, "pass")
                        self.region(middle + 1, end - 1, depth + 1, level + 1)
                self.flow_count(depth, f"{saved} & lp & ct & live")
                self.emit(depth, f"cond = {saved}")
                self.emit(depth, "ex = cond & lp & ct & live")
                self.emit(depth, "steps += 1")
                pc = end + 1
                continue
            if op == "BGNLOOP":
                flush()
                end = links[pc]["end"]
                slot = self.loops.setdefault(pc, len(self.loops))
                self.flow_count(depth, "ex")
                self.emit(depth, f"sl{level} = lp")
                self.emit(depth, f"sc{level} = ct")
                self.emit(depth, f"it{level} = 0")
                self.emit(depth, "steps += 1")
                self.emit(depth, "while True:")
                self.emit(depth + 1, "pass")
                self.region(pc + 1, end - 1, depth + 1, level + 1)
                self.flow_count(depth + 1, "cond & lp & live")
                self.emit(depth + 1, f"ct = sc{level}")
                self.emit(depth + 1, "ex = cond & lp & ct & live")
                self.emit(depth + 1, "steps += 1")
                self.emit(depth + 1, "if ex == 0:")
                self.emit(depth + 2, "break")
                self.emit(depth + 1, f"if it{level} + 1 >= max_iterations or steps > budget:")
                self.emit(depth + 2, "guard[0] = 1")
                self.emit(depth + 2, "return")
                self.emit(depth + 1, f"it{level} += 1")
                for line in self.target.raise_to(2 + slot, f"it{level}"):
                    self.emit(depth + 1, line)
                self.emit(depth, f"lp = sl{level}")
                self.emit(depth, "ex = cond & lp & ct & live")
                pc = end + 1
                continue
            if op in ("BRK", "CONT", "NOP"):
                flush()
                self.flow_count(depth, "ex")
                if op == "BRK":
                    self.emit(depth, "lp = lp & ~ex")
                elif op == "CONT":
                    self.emit(depth, "ct = ct & ~ex")
                self.emit(depth, "ex = cond & lp & ct & live")
                self.emit(depth, "steps += 1")
                pc += 1
                continue
            if op in ("KILL", "KILL_IF"):
                flush()
                self.kill(pc, depth)
            elif op in _DERIVATIVES:
                flush()
                self.derivative(pc, depth)
            else:
                run.append(pc)
            pc += 1
        flush()

    def kernel(self, name: str, first: int, last: int, buffers: list[int]) -> str:
        """One segment's kernel: the target's opening (which gives the warp ``w``), then warp
        ``w``'s lockstep walk of instructions first..last."""
        depth = self.target.depth
        self.lines, self.uniforms = [], {}
        self.region(first, last, depth, 0)
        body = self.lines
        consts = "".join(f", C{b}" for b in buffers)
        signature = (f"{name}(n, quads, budget, max_iterations, T, O, I, A, S, IMM{consts}, "
                     "killed, lc, wc, wa, guard)")
        head = self.target.opening(signature, [f"{k} = {v}" for k, v in self.uniforms.items()])
        indent = "    " * depth
        head += [indent + line for line in (
            "base = w * 4",
            "valid = 15 if base + 4 <= n else (1 << (n - base)) - 1",
            "kk = 0",
            "for l in range(4):",
            "    if (valid >> l) & 1 and killed[base + l]:",
            "        kk |= 1 << l",
            "live = 0 if (quads and kk == 15) else valid",
            "cond = lp = ct = 15",
            "ex = live",
            "steps = 0",
            "taken = 0",
        )]
        tail = [indent + line for line in (
            "for l in range(4):",
            "    if (kk >> l) & 1:",
            "        killed[base + l] = True",
            *self.target.raise_to(1, "steps"),
        )]
        return "\n".join(head + body + tail) + "\n"


# -- targets --------------------------------------------------------------------------------


class Target:
    """Where the generated kernels run, and what that changes in them; the body of a warp is
    the same for every target. This class is the CPU: a kernel loops over the warps in one
    call (``tilesim.shaders.cuda_program.CudaTarget`` runs a CUDA thread a warp)."""

    name = "cpu"
    depth = 2                # indentation of the warp's body: in the function and its loop
    prefix = "program"       # generated modules: <prefix>_<key>.py

    def libm(self) -> bool:
        """Whether EX2, LG2 and POW are generated (else they are segment boundaries)."""
        return libm_agrees()

    def header(self) -> str:
        return _HEADER

    def opening(self, signature: str, loads: list[str]) -> list[str]:
        """A kernel's first lines, up to where warp ``w``'s body starts."""
        return ["@numba.njit(cache=True, nogil=True, error_model='numpy')",
                f"def {signature}:", *(f"    {line}" for line in loads),
                "    for w in range((n + 3) // 4):"]

    def raise_to(self, index: int, value: str) -> list[str]:
        """Lines that raise ``guard[index]`` to at least ``value`` (the kernel's warps one
        after another: a compare and a store)."""
        return [f"if {value} > guard[{index}]:", f"    guard[{index}] = {value}"]

    def usable(self, *arrays) -> bool:
        """Whether the kernels take these arrays (None entries aside)."""
        return jit.usable(*arrays)

    def launch(self, kernel, warps: int, args: tuple) -> None:
        kernel(*args)


CPU = Target()


# -- the compiled program -----------------------------------------------------------------


@dataclass
class CompiledProgram:
    """A program's segment kernels and the top-level instructions the interpreter runs
    between them. ``steps``: ("kernel", function, first pc, last pc) or ("op", pc)."""

    key: str
    steps: list[tuple]
    loops: dict[int, int]            # BGNLOOP pc -> guard slot
    buffers: list[int]               # CONST buffers the kernels read
    derivatives: bool
    kills: bool
    native: int                      # instructions generated (of the program's)
    total: int
    enclosing: list[list[int]] = field(default_factory=list)   # per pc, its loops' slots
    target: Target = CPU

    def run(self, interp, inputs, constants, lanes, sampler, system_values):
        """The interpreter's ``run`` on the compiled path; None where the interpreter must
        run instead (module docstring)."""
        from tilesim.shaders.interpreter import MAX_LOOP_ITERATIONS, Execution, _Run

        run = _Run(interp, inputs, constants, lanes, sampler, system_values, False)
        files = (run.temps, run.outputs, run.inputs, run.addrs, run.system)
        tables = [run.constants.get(b) for b in self.buffers]
        target = self.target
        if not target.usable(*files, run.immediates, run.killed, *tables):
            return None
        n = run.n
        quads = n % 4 == 0
        if (self.derivatives and not quads) or self.total > interp.instruction_budget:
            return None
        xp = run.xp
        tables = [xp.zeros((1, 4), dtype=U32) if t is None else t for t in tables]
        warps = -(-n // WARP_SIZE)
        lc = xp.zeros((3, n), dtype=np.int32)
        wc = xp.zeros((3, warps), dtype=np.int32)
        wa = xp.zeros(warps, dtype=np.int64)
        guard = xp.zeros(2 + len(self.loops), dtype=np.int64)
        budget = interp.instruction_budget
        with np.errstate(all="ignore"):
            for step in self.steps:
                if step[0] == "kernel":
                    target.launch(step[1], warps, (n, quads, budget, MAX_LOOP_ITERATIONS,
                                                   *files, run.immediates, *tables,
                                                   run.killed, lc, wc, wa, guard))
                    if guard[0]:
                        return None
                    if self.kills and quads:  # the kernel may have killed lanes
                        run.dead_warps = xp.repeat(quad_all(run.killed), 4)
                        run._update_exec()
                    continue
                plan = interp.plans[step[1]]
                run.half_rows = plan.half_rows
                if run.exec_any:
                    run._count(step[1], plan)
                    plan.handler(run, plan)
        # The interpreter's walk issues at most this many instructions (each loop body at
        # most its warps' largest iteration count + 1 times per entry): within the budget,
        # the interpreter would not have stopped.
        if self.loops:
            visits = 0
            bounds = to_host(guard)
            for slots in self.enclosing:
                product = 1
                for slot in slots:
                    product *= int(bounds[2 + slot]) + 1
                visits += product
            if visits > budget:
                return None
        counted = run.counter.result()
        counted.lane_instructions = counted.lane_instructions + lc
        counted.warp_instructions = counted.warp_instructions + wc
        counted.warp_active_lanes = counted.warp_active_lanes + wa
        return Execution(outputs=run.outputs.view(F32), killed=run.killed, stats=counted)


_COMPILED: dict[str, CompiledProgram | None] = {}
_REASONS: dict[str, str] = {}
# An Interpreter compiles its program once it has run this many lanes in all (or at once):
# a one-off program of a few lanes (most unit tests, the fuzzers) runs faster interpreted than
# compiled (Numba takes 0.5 to 3 s a program; later processes load it from the disk cache),
# while a renderer's fragment programs reach it within their first frame.
COMPILE_AFTER_LANES = 1 << 16
# The renderer's programs take this path only where TILESIM_SHADER_KERNELS=1: measured on the
# runner trace at 1080p it saves nothing yet (texture sampling, which stays outside the
# kernels, is most of a textured program's time), while each program costs a compile of 0.5
# to 3 s in every fresh cache (docs/notes/compiled-programs.md). Off, the interpreter runs.
SHADER_KERNELS_ENV = "TILESIM_SHADER_KERNELS"
SHADER_KERNELS = os.environ.get(SHADER_KERNELS_ENV, "0") == "1"
# Top-level instructions per kernel at most (a longer run of them is split into several
# kernels; a loop or IF is never split): Numba's compile time grows faster than linearly with
# a function's size (a 4,000-line fp16 kernel of a 300-instruction corpus program took over
# 7 minutes; kernels of this size take about a second each).
KERNEL_INSTRUCTIONS = 40
# Fewer straight-line top-level instructions than this run through the interpreter's handlers
# instead of a kernel of their own (a kernel costs ~50-100 ns a warp whatever it does: the
# glmark2 effect2d program, 26 kernels of 2-3 instructions between its TEX, ran 1.3x slower
# compiled than interpreted at 65,536 lanes).
KERNEL_MINIMUM = 4


def lane_count(sample, lanes) -> int:
    """N as ``_Run`` takes it: ``lanes``, else the last axis of the inputs or system values."""
    if lanes is not None:
        return int(lanes)
    return int(sample.shape[-1]) if sample is not None else 0


def run_compiled(interp, inputs, constants, lanes, sampler, system_values):
    """``Interpreter.run`` (no trace, JIT enabled) on the compiled path: the Execution, or None
    where the interpreter runs (switched off, not compiled yet, a fallback, a bound hit).
    Device arrays (CuPy) take the CUDA kernels where a GPU is present
    (:func:`tilesim.shaders.cuda_program.run_compiled`), else the interpreter."""
    if not SHADER_KERNELS:
        return None
    state = interp.__dict__.get("_compiled_state")
    if state is None:
        state = interp._compiled_state = {"key": program_key(interp)}
    sample = sample_array(inputs, system_values)
    if sample is not None and type(sample) is not np.ndarray:
        if not hasattr(type(sample), "__cuda_array_interface__"):
            return None
        # Imported here: numba.cuda loads only where device arrays come.
        from tilesim.shaders import cuda_program

        return cuda_program.run_compiled(interp, state, inputs, constants, lanes, sampler,
                                         system_values)
    compiled = compiled_when_due(interp, state, "cpu", lane_count(sample, lanes), _COMPILED,
                                 compiled_for)
    if compiled is None:
        return None
    return compiled.run(interp, inputs, constants, lanes, sampler, system_values)


def compiled_when_due(interp, state: dict, target: str, lanes: int, cache: dict, compile_):
    """The program of ``interp`` compiled for ``target`` ("cpu", "cuda"), once it has run
    ``COMPILE_AFTER_LANES`` lanes there in all (``lanes`` more now; ``state``: the
    interpreter's record of both) or was compiled in this process already (``cache``, by
    program key); None until then, or where it falls back to the interpreter
    (``compile_(interp)`` gave None)."""
    if target not in state:
        compiled = cache.get(state["key"], cache)
        if compiled is cache:  # not compiled in this process yet
            counted = state[f"{target}_lanes"] = state.get(f"{target}_lanes", 0) + lanes
            if counted < COMPILE_AFTER_LANES:
                return None
            compiled = compile_(interp)
        state[target] = compiled
    return state[target]


def program_key(interp) -> str:
    """What a compiled program depends on: its text, immediates and fp16 channels."""
    cached = interp.__dict__.get("_compiled_state")
    if cached is not None:
        return cached["key"]
    program = interp.program
    text = [program.to_text(), repr([im.bits for im in program.immediates]),
            repr(interp.lowered), repr(interp.lowered_products),
            repr(sorted((f, interp.register_counts[f]) for f in _FILES))]
    return hashlib.sha256("\n".join(text).encode()).hexdigest()[:24]


def fallback_reason(interp) -> str | None:
    """Why the interpreter ``interp`` runs its program as a whole (None: it is compiled)."""
    compiled_for(interp)
    return _REASONS.get(program_key(interp))


def compiled_for(interp) -> CompiledProgram | None:
    """The compiled form of an Interpreter's program in its precision mode (compiled on the
    first call, then cached in the process and on disk); None where it falls back."""
    return compile_cached(interp, CPU, _COMPILED, _REASONS)


def compile_cached(interp, target: Target, compiled: dict, reasons: dict):
    """A program compiled for ``target`` once per process (``compiled``: program key ->
    CompiledProgram or None, ``reasons``: key -> why it falls back)."""
    if not jit.AVAILABLE:
        return None
    key = program_key(interp)
    if key in compiled:
        return compiled[key]
    try:
        program = _compile(interp, key, target)
    except _Unsupported as why:
        program = None
        reasons[key] = str(why)
    compiled[key] = program
    return program


def _compile(interp, key: str, target: Target) -> CompiledProgram:
    program = interp.program
    items = _items(interp, target.libm())
    gen = _Gen(interp, target)
    buffers = sorted({(s.register.dimension or 0) for inst in program.instructions
                      for s in inst.src if s.register.file == "CONST"})
    kernels: list[tuple[str, int, int]] = []
    steps: list[tuple] = []
    sources = []
    i = 0
    while i < len(items):
        if not items[i].native:
            steps.append(("op", items[i].first))
            i += 1
            continue
        j, size = i, items[i].last - items[i].first + 1
        while (j + 1 < len(items) and items[j + 1].native
               and size + items[j + 1].last - items[j + 1].first + 1 <= KERNEL_INSTRUCTIONS):
            j += 1
            size += items[j].last - items[j].first + 1
        if (size < KERNEL_MINIMUM and all(items[k].first == items[k].last
                                          for k in range(i, j + 1))):
            # A few straight-line instructions between texture lookups: the interpreter's
            # vectorized opcodes beat a kernel's per-warp overhead (measured on the corpus).
            steps += [("op", items[k].first) for k in range(i, j + 1)]
            i = j + 1
            continue
        name = f"segment{len(kernels)}"
        sources.append(gen.kernel(name, items[i].first, items[j].last, buffers))
        kernels.append((name, items[i].first, items[j].last))
        steps.append(("kernel", name, items[i].first, items[j].last))
        i = j + 1
    module = _load(key, sources, target) if sources else None
    steps = [(s[0], getattr(module, s[1]), s[2], s[3]) if s[0] == "kernel" else s
             for s in steps]
    end = next((pc for pc, inst in enumerate(program.instructions) if inst.opcode == "END"),
               len(program.instructions))
    enclosing: list[list[int]] = []
    open_loops: list[int] = []
    for pc in range(end):
        op = program.instructions[pc].opcode
        if op == "BGNLOOP":
            enclosing.append(list(open_loops))
            open_loops.append(gen.loops.get(pc, -1))
            continue
        if op == "ENDLOOP":
            enclosing.append(list(open_loops))
            open_loops.pop()
            continue
        enclosing.append(list(open_loops))
    native = sum(it.last - it.first + 1 for it in items if it.native)
    ops_in = {inst.opcode for inst in program.instructions}
    return CompiledProgram(
        key=key, steps=steps, loops=dict(gen.loops), buffers=buffers,
        derivatives=bool(ops_in & set(_DERIVATIVES)), kills=bool(ops_in & {"KILL", "KILL_IF"}),
        native=native, total=end, enclosing=enclosing, target=target)


_HEADER = '''"""Generated by tilesim.shaders.compiled_program for one TGSI program: do not edit."""
import numba
import numpy as np
from numpy import float32 as F32, uint32 as U32
from tilesim.shaders.compiled_program import (
    _add, _b2f, _b2i, _b2u, _ceil, _count, _div, _f2i, _f2u, _f2uint, _fabs, _fneg, _floor,
    _fmax, _fmin, _half, _idiv, _imax, _imin, _imod, _issg, _mul, _pow, _pow_fp16, _rint,
    _sat, _sqrt, _ssg, _sub, _trunc, _u2f, _udiv, _umod, _umul_hi)

'''


def generated_folder():
    """Where generated program modules are written: a folder per tilesim source digest."""
    return cache_root() / f"programs-{source_digest()}"


def _load(key: str, sources: list[str], target: Target):
    """Write (once) and import the generated module of a program."""
    folder = generated_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{target.prefix}_{key}.py"
    text = target.header() + "\n\n".join(sources)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    name = f"tilesim_{target.prefix}_{key}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module


def generated_source(interp, compiled: CompiledProgram | None = None) -> str | None:
    """The generated Python source of an Interpreter's program, for the CPU or the program
    ``compiled`` (None where it falls back)."""
    compiled = compiled_for(interp) if compiled is None else compiled
    if compiled is None:
        return None
    path = generated_folder() / f"{compiled.target.prefix}_{compiled.key}.py"
    return path.read_text(encoding="utf-8")
