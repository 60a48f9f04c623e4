"""TGSI opcodes: what each one reads and writes, its statistics class, and its semantics.

Semantics follow Mesa's ``docs/gallium/tgsi.rst``; where that document leaves a result
undefined, we choose what Mesa's llvmpipe produces on x86 (the reference the differential
tests compare against) and say so next to the function.

Every function here takes and returns arrays of shape (channels, lanes) (lanes may be 1 for
values that are uniform across invocations: constants and immediates broadcast) and works
for NumPy and CuPy alike: the module is taken from the data (``array_module``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module

F32 = np.float32
I32 = np.int32
U32 = np.uint32

ALU, TEX, FLOW = "alu", "tex", "flow"
CATEGORIES = (ALU, TEX, FLOW)

# Result shapes: "component" computes each written channel from the same channel of every
# source; "replicate" computes one scalar from the .x of every source and writes it to every
# channel of the write mask; "dot" reduces over N channels and replicates; "special" is
# handled by the interpreter itself (texture, derivatives across lanes, flow, LIT, ...).
COMPONENT, REPLICATE, DOT, SPECIAL = "component", "replicate", "dot", "special"


@dataclass(frozen=True)
class OpInfo:
    name: str
    num_dst: int
    num_src: int
    category: str
    shape: str
    src_type: str = "float"  # how sources (and their modifiers) are read: float/int/uint
    dst_type: str = "float"  # what the result is: float (saturate applies) or int/uint
    fn: Callable | None = None
    dot_width: int = 0


def _xp(*arrays):
    return array_module(*arrays)


# --- float arithmetic --------------------------------------------------------------------

def _frc(a):
    return a - _xp(a).floor(a)


def _ssg(a):
    xp = _xp(a)
    return xp.where(a > 0, F32(1), xp.where(a < 0, F32(-1), F32(0))).astype(F32)


def _cmp(a, b, c):
    return _xp(a, b, c).where(a < 0, b, c)


def _lrp(a, b, c):
    return a * b + (F32(1) - a) * c


def _fma(a, b, c):
    # Single rounding, as FMA requires: float64 holds the exact product of two float32s.
    return (a.astype(np.float64) * b + c).astype(F32)


def _round_even(a):
    return _xp(a).rint(a)


def _float_set(compare):
    return lambda a, b: compare(a, b).astype(F32)


def _ldexp(a, b):
    xp = _xp(a, b)
    return xp.ldexp(a, xp.clip(b, -300, 300).astype(I32)).astype(F32)


# --- integer arithmetic ------------------------------------------------------------------

def _all_bits(cond):
    """~0 where true, 0 where false: TGSI's integer booleans."""
    return _xp(cond).where(cond, U32(0xFFFFFFFF), U32(0)).astype(U32)


def _int_set(compare):
    return lambda a, b: _all_bits(compare(a, b))


def _f2i(a):
    # Out-of-range and NaN are undefined in TGSI; x86 (llvmpipe, softpipe) gives INT_MIN.
    xp = _xp(a)
    ok = (a >= F32(-2147483648.0)) & (a < F32(2147483648.0))
    t = xp.trunc(xp.where(ok, a, F32(0)))
    return xp.where(ok, t.astype(I32), I32(-2147483648)).astype(I32)


def _f2u(a):
    # Undefined outside [0, 2^32) in TGSI; we clamp (NaN -> 0), as most hardware does.
    xp = _xp(a)
    t = xp.trunc(xp.where(xp.isnan(a), F32(0), a)).astype(np.float64)
    return xp.clip(t, 0, 4294967295.0).astype(np.uint64).astype(U32)


def _imul_hi(a, b):
    return ((a.astype(np.int64) * b.astype(np.int64)) >> 32).astype(I32)


def _umul_hi(a, b):
    return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(U32)


def _umul(a, b):
    return (a.astype(np.uint64) * b.astype(np.uint64)).astype(U32)


def _umad(a, b, c):
    return (a.astype(np.uint64) * b.astype(np.uint64) + c.astype(np.uint64)).astype(U32)


def _uadd(a, b):
    return (a.astype(np.uint64) + b.astype(np.uint64)).astype(U32)


def _udiv(a, b):
    # tgsi.rst: division by zero gives 0xffffffff.
    xp = _xp(a, b)
    safe = xp.where(b == 0, U32(1), b)
    return xp.where(b == 0, U32(0xFFFFFFFF), a // safe).astype(U32)


def _umod(a, b):
    xp = _xp(a, b)
    safe = xp.where(b == 0, U32(1), b)
    return xp.where(b == 0, U32(0xFFFFFFFF), a % safe).astype(U32)


def _idiv(a, b):
    # Truncating division as in C. By zero the result is "TBD" in tgsi.rst; llvmpipe (the
    # reference) returns 0, and so do we. INT_MIN / -1 wraps to INT_MIN.
    xp = _xp(a, b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = xp.where(b64 == 0, 1, b64)
    q = xp.abs(a64) // xp.abs(safe)
    q = xp.where((a64 < 0) != (safe < 0), -q, q)
    return xp.where(b64 == 0, 0, q).astype(np.uint64).astype(U32).view(I32)


def _imod(a, b):
    # C remainder: the sign follows the dividend. By zero: all bits set, as _idiv.
    xp = _xp(a, b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = xp.where(b64 == 0, 1, b64)
    r = xp.abs(a64) % xp.abs(safe)
    r = xp.where(a64 < 0, -r, r)
    return xp.where(b64 == 0, -1, r).astype(np.uint64).astype(U32).view(I32)


def _ineg(a):
    return (U32(0) - a.view(U32)).view(I32) if a.dtype == I32 else -a


def _iabs(a):
    xp = _xp(a)
    return xp.where(a < 0, _ineg(a), a).astype(I32)


def _issg(a):
    xp = _xp(a)
    return xp.where(a > 0, I32(1), xp.where(a < 0, I32(-1), I32(0))).astype(I32)


def _shl(a, b):
    return (a << (b & U32(31))).astype(U32)


def _ishr(a, b):
    return (a >> (b.view(U32) & U32(31)).astype(I32)).astype(I32)


def _ushr(a, b):
    return (a >> (b & U32(31))).astype(U32)


def _ucmp(a, b, c):
    return _xp(a, b, c).where(a != 0, b, c).astype(U32)


def _bfe(a, offset, bits, signed):
    xp = _xp(a, offset, bits)
    offset = offset.astype(np.int64) & 31
    bits = bits.astype(np.int64) & 31
    width_ok = bits != 0
    up = xp.clip(32 - offset - bits, 0, 31)
    down = xp.clip(32 - bits, 0, 31)
    if signed:
        v = (a.view(U32).astype(np.uint64) << up.astype(np.uint64)).astype(U32).view(I32)
        out = (v.astype(np.int64) >> down).astype(I32)
    else:
        v = (a.view(U32).astype(np.uint64) << up.astype(np.uint64)).astype(U32)
        out = (v.astype(np.uint64) >> down.astype(np.uint64)).astype(U32).view(I32)
    return xp.where(width_ok, out, I32(0)).astype(I32)


def _ibfe(a, offset, bits):
    return _bfe(a, offset, bits, True)


def _ubfe(a, offset, bits):
    return _bfe(a, offset, bits, False).view(U32)


def _bfi(base, insert, offset, bits):
    xp = _xp(base, insert, offset, bits)
    offset = offset.astype(np.uint64) & np.uint64(31)
    bits = bits.astype(np.uint64)
    bits = xp.minimum(bits, np.uint64(32))
    mask = (((np.uint64(1) << bits) - np.uint64(1)) << offset) & np.uint64(0xFFFFFFFF)
    ins = (insert.astype(np.uint64) << offset) & mask
    return (ins | (base.astype(np.uint64) & ~mask & np.uint64(0xFFFFFFFF))).astype(U32)


def _popc(a):
    v = a.astype(U32)
    v = v - ((v >> U32(1)) & U32(0x55555555))
    v = (v & U32(0x33333333)) + ((v >> U32(2)) & U32(0x33333333))
    v = (v + (v >> U32(4))) & U32(0x0F0F0F0F)
    return ((v * U32(0x01010101)) >> U32(24)).astype(U32)


def _brev(a):
    v = a.astype(U32)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        v = ((v >> U32(shift)) & U32(mask)) | ((v & U32(mask)) << U32(shift))
    return ((v >> U32(16)) | (v << U32(16))).astype(U32)


def _umsb(a):
    xp = _xp(a)
    v = a.astype(U32)
    out = xp.full(v.shape, -1, dtype=I32)
    for bit in range(32):
        out = xp.where((v >> U32(bit)) & U32(1), I32(bit), out)
    return out.astype(I32)


def _imsb(a):
    v = a.astype(I32)
    flipped = _xp(v).where(v < 0, ~v, v)
    return _umsb(flipped.view(U32))


def _lsb(a):
    v = a.astype(U32)
    low = v & (U32(0) - v)  # isolate the lowest set bit
    return _umsb(low)


def _u2f(a):
    return a.astype(F32)


def _i2f(a):
    return a.astype(F32)


def _pow(a, b):
    # Undefined in GLSL for x < 0, and for x == 0 with y <= 0. llvmpipe (the reference) gives
    # 0 whenever x == 0 and NaN whenever x < 0; so do we.
    xp = _xp(a, b)
    positive = xp.where(a > 0, a, F32(1))
    out = xp.power(positive, b).astype(F32)
    return xp.where(a > 0, out, xp.where(a == 0, F32(0), F32(np.nan))).astype(F32)


def _rsq(a):
    # Modern tgsi.rst: 1/sqrt(x), undefined for x <= 0; llvmpipe gives +inf at 0, NaN below.
    return (F32(1) / _xp(a).sqrt(a)).astype(F32)


_INFOS: list[OpInfo] = []


def _op(name, num_dst, num_src, category, shape, fn=None, src_type="float", dst_type="float",
        dot_width=0):
    _INFOS.append(OpInfo(name, num_dst, num_src, category, shape, src_type, dst_type, fn,
                         dot_width))


# Float ALU, component-wise.
_op("MOV", 1, 1, ALU, COMPONENT, lambda a: a, src_type="any", dst_type="any")
_op("ADD", 1, 2, ALU, COMPONENT, lambda a, b: a + b)
_op("MUL", 1, 2, ALU, COMPONENT, lambda a, b: a * b)
_op("MAD", 1, 3, ALU, COMPONENT, lambda a, b, c: a * b + c)
_op("FMA", 1, 3, ALU, COMPONENT, _fma)
_op("DIV", 1, 2, ALU, COMPONENT, lambda a, b: a / b)
_op("MIN", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).fmin(a, b))  # NaN: the other operand
_op("MAX", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).fmax(a, b))
_op("FRC", 1, 1, ALU, COMPONENT, _frc)
_op("FLR", 1, 1, ALU, COMPONENT, lambda a: _xp(a).floor(a))
_op("CEIL", 1, 1, ALU, COMPONENT, lambda a: _xp(a).ceil(a))
_op("TRUNC", 1, 1, ALU, COMPONENT, lambda a: _xp(a).trunc(a))
_op("ROUND", 1, 1, ALU, COMPONENT, _round_even)
_op("SSG", 1, 1, ALU, COMPONENT, _ssg)
_op("CMP", 1, 3, ALU, COMPONENT, _cmp)
_op("LRP", 1, 3, ALU, COMPONENT, _lrp)
_op("LDEXP", 1, 2, ALU, COMPONENT, _ldexp)
_op("SLT", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a < b))
_op("SGE", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a >= b))
_op("SEQ", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a == b))
_op("SNE", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a != b))
_op("SGT", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a > b))
_op("SLE", 1, 2, ALU, COMPONENT, _float_set(lambda a, b: a <= b))
# Float ALU, scalar (replicated).
_op("RCP", 1, 1, ALU, REPLICATE, lambda a: F32(1) / a)
_op("RSQ", 1, 1, ALU, REPLICATE, _rsq)
_op("SQRT", 1, 1, ALU, REPLICATE, lambda a: _xp(a).sqrt(a))
_op("EX2", 1, 1, ALU, REPLICATE, lambda a: _xp(a).exp2(a))
_op("LG2", 1, 1, ALU, REPLICATE, lambda a: _xp(a).log2(a))
_op("POW", 1, 2, ALU, REPLICATE, _pow)
_op("SIN", 1, 1, ALU, REPLICATE, lambda a: _xp(a).sin(a))
_op("COS", 1, 1, ALU, REPLICATE, lambda a: _xp(a).cos(a))
_op("DP2", 1, 2, ALU, DOT, dot_width=2)
_op("DP3", 1, 2, ALU, DOT, dot_width=3)
_op("DP4", 1, 2, ALU, DOT, dot_width=4)
# Float ALU with per-channel formulas of their own.
_op("LIT", 1, 1, ALU, SPECIAL)
_op("EXP", 1, 1, ALU, SPECIAL)
_op("LOG", 1, 1, ALU, SPECIAL)
_op("DST", 1, 2, ALU, SPECIAL)
_op("DDX", 1, 1, ALU, SPECIAL)
_op("DDY", 1, 1, ALU, SPECIAL)
_op("DDX_FINE", 1, 1, ALU, SPECIAL)
_op("DDY_FINE", 1, 1, ALU, SPECIAL)
# Address register loads.
_op("ARL", 1, 1, ALU, COMPONENT, lambda a: _f2i(_xp(a).floor(a)), dst_type="int")
_op("ARR", 1, 1, ALU, COMPONENT, lambda a: _f2i(_xp(a).rint(a)), dst_type="int")
_op("UARL", 1, 1, ALU, COMPONENT, lambda a: a, src_type="int", dst_type="int")
# Float comparisons with integer results.
_op("FSEQ", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a == b), dst_type="uint")
_op("FSNE", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a != b), dst_type="uint")  # unordered
_op("FSLT", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a < b), dst_type="uint")
_op("FSGE", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a >= b), dst_type="uint")
# Conversions.
_op("I2F", 1, 1, ALU, COMPONENT, _i2f, src_type="int")
_op("U2F", 1, 1, ALU, COMPONENT, _u2f, src_type="uint")
_op("F2I", 1, 1, ALU, COMPONENT, _f2i, dst_type="int")
_op("F2U", 1, 1, ALU, COMPONENT, _f2u, dst_type="uint")
# Integer and bitwise.
_op("UADD", 1, 2, ALU, COMPONENT, _uadd, src_type="uint", dst_type="uint")
_op("UMUL", 1, 2, ALU, COMPONENT, _umul, src_type="uint", dst_type="uint")
_op("UMAD", 1, 3, ALU, COMPONENT, _umad, src_type="uint", dst_type="uint")
_op("IMUL_HI", 1, 2, ALU, COMPONENT, _imul_hi, src_type="int", dst_type="int")
_op("UMUL_HI", 1, 2, ALU, COMPONENT, _umul_hi, src_type="uint", dst_type="uint")
_op("IDIV", 1, 2, ALU, COMPONENT, _idiv, src_type="int", dst_type="int")
_op("UDIV", 1, 2, ALU, COMPONENT, _udiv, src_type="uint", dst_type="uint")
_op("MOD", 1, 2, ALU, COMPONENT, _imod, src_type="int", dst_type="int")
_op("UMOD", 1, 2, ALU, COMPONENT, _umod, src_type="uint", dst_type="uint")
_op("INEG", 1, 1, ALU, COMPONENT, _ineg, src_type="int", dst_type="int")
_op("IABS", 1, 1, ALU, COMPONENT, _iabs, src_type="int", dst_type="int")
_op("ISSG", 1, 1, ALU, COMPONENT, _issg, src_type="int", dst_type="int")
_op("IMIN", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).minimum(a, b), src_type="int",
    dst_type="int")
_op("IMAX", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).maximum(a, b), src_type="int",
    dst_type="int")
_op("UMIN", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).minimum(a, b), src_type="uint",
    dst_type="uint")
_op("UMAX", 1, 2, ALU, COMPONENT, lambda a, b: _xp(a, b).maximum(a, b), src_type="uint",
    dst_type="uint")
_op("ISLT", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a < b), src_type="int",
    dst_type="uint")
_op("ISGE", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a >= b), src_type="int",
    dst_type="uint")
_op("USLT", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a < b), src_type="uint",
    dst_type="uint")
_op("USGE", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a >= b), src_type="uint",
    dst_type="uint")
_op("USEQ", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a == b), src_type="uint",
    dst_type="uint")
_op("USNE", 1, 2, ALU, COMPONENT, _int_set(lambda a, b: a != b), src_type="uint",
    dst_type="uint")
_op("AND", 1, 2, ALU, COMPONENT, lambda a, b: a & b, src_type="uint", dst_type="uint")
_op("OR", 1, 2, ALU, COMPONENT, lambda a, b: a | b, src_type="uint", dst_type="uint")
_op("XOR", 1, 2, ALU, COMPONENT, lambda a, b: a ^ b, src_type="uint", dst_type="uint")
_op("NOT", 1, 1, ALU, COMPONENT, lambda a: ~a, src_type="uint", dst_type="uint")
_op("SHL", 1, 2, ALU, COMPONENT, _shl, src_type="uint", dst_type="uint")
_op("ISHR", 1, 2, ALU, COMPONENT, _ishr, src_type="int", dst_type="int")
_op("USHR", 1, 2, ALU, COMPONENT, _ushr, src_type="uint", dst_type="uint")
_op("UCMP", 1, 3, ALU, COMPONENT, _ucmp, src_type="uint", dst_type="uint")
_op("IBFE", 1, 3, ALU, COMPONENT, _ibfe, src_type="int", dst_type="int")
_op("UBFE", 1, 3, ALU, COMPONENT, _ubfe, src_type="uint", dst_type="uint")
_op("BFI", 1, 4, ALU, COMPONENT, _bfi, src_type="uint", dst_type="uint")
_op("BREV", 1, 1, ALU, COMPONENT, _brev, src_type="uint", dst_type="uint")
_op("POPC", 1, 1, ALU, COMPONENT, _popc, src_type="uint", dst_type="uint")
_op("LSB", 1, 1, ALU, COMPONENT, _lsb, src_type="uint", dst_type="int")
_op("IMSB", 1, 1, ALU, COMPONENT, _imsb, src_type="int", dst_type="int")
_op("UMSB", 1, 1, ALU, COMPONENT, _umsb, src_type="uint", dst_type="int")
# Texture. Sources: coordinates, then (TXD) derivatives, then the sampler.
_op("TEX", 1, 2, TEX, SPECIAL)
_op("TEX_LZ", 1, 2, TEX, SPECIAL)
_op("TXB", 1, 2, TEX, SPECIAL)
_op("TXL", 1, 2, TEX, SPECIAL)
_op("TXP", 1, 2, TEX, SPECIAL)
_op("TXD", 1, 4, TEX, SPECIAL)
_op("TXB2", 1, 3, TEX, SPECIAL)
_op("TXL2", 1, 3, TEX, SPECIAL)
_op("TEX2", 1, 3, TEX, SPECIAL)
_op("TXQ", 1, 2, TEX, SPECIAL)
_op("TXF", 1, 2, TEX, SPECIAL)
_op("TXF_LZ", 1, 2, TEX, SPECIAL)
# Flow control and fragment kill.
for _name, _nsrc in (("IF", 1), ("UIF", 1), ("ELSE", 0), ("ENDIF", 0), ("BGNLOOP", 0),
                     ("ENDLOOP", 0), ("BRK", 0), ("CONT", 0), ("CAL", 0), ("RET", 0),
                     ("BGNSUB", 0), ("ENDSUB", 0), ("END", 0), ("NOP", 0), ("KILL", 0),
                     ("KILL_IF", 1)):
    _op(_name, 0, _nsrc, FLOW, SPECIAL)

OPCODES: dict[str, OpInfo] = {info.name: info for info in _INFOS}

# The instructions that read texels (and so the texture caches): every texture instruction but
# TXQ, which reads only the texture's size.
TEXEL_READS = frozenset(name for name, info in OPCODES.items()
                        if info.category == TEX and name != "TXQ")


def to_half(value):
    """float32 values rounded to the nearest fp16 (ties to even; beyond +-65504 to +-inf; fp16
    subnormals kept, as x86 F16C conversions give them), returned as float32: one array round
    trip, the same on NumPy and CuPy."""
    with np.errstate(over="ignore"):  # overflow to infinity is the intended result
        return value.astype(np.float16).astype(F32)




def _rsq_fp16(a):
    # llvmpipe's 16-bit inversesqrt is a square root and a reciprocal, each rounded to fp16
    # (gallivm's lp_build_rsqrt without the fast-rsqrt path; measured against Mesa 22.3).
    return to_half(F32(1) / to_half(_xp(a).sqrt(a)))


def _mad_fp16(a, b, c):
    # llvmpipe does not fuse 16-bit multiply-adds (its NIR keeps fmul and fadd apart: Mesa
    # 22.3, MESA_GLSL=dump): the product is rounded to fp16 before the add.
    return to_half(to_half(a * b) + c)


def dot_fp16(a, b):
    """A 16-bit dot product of (width, N) operands as llvmpipe computes it: NIR's
    lower_alu_to_scalar turns fdot into multiplies and adds from the last component to the
    first, each rounded to fp16 (``z*z' + y*y'``, then ``+ x*x'``)."""
    width = a.shape[0]
    value = to_half(a[width - 1] * b[width - 1])
    for c in range(width - 2, -1, -1):
        value = to_half(value + to_half(a[c] * b[c]))
    return value


def _lrp_fp16(a, b, c):
    # mix(c, b, a) in 16 bits is c * (1 - a) + b * a in llvmpipe (NIR's flrp lowering when
    # multiply-adds are not fused), every operation rounded to fp16.
    return to_half(to_half(b * a) + to_half(c * to_half(F32(1) - a)))


def _pow_fp16(a, b):
    # 16-bit pow is exp2(y * log2(x)) with each step rounded to fp16 in llvmpipe; at x <= 0
    # the same results as _pow (0 at x == 0, NaN below).
    xp = _xp(a, b)
    positive = xp.where(a > 0, a, F32(1))
    out = to_half(xp.exp2(to_half(to_half(xp.log2(positive)) * b)))
    return xp.where(a > 0, out, xp.where(a == 0, F32(0), F32(np.nan))).astype(F32)


# Opcodes whose 16-bit form (the interpreter's fp16 mediump mode) rounds an intermediate
# result, where computing in float32 and rounding once would differ from llvmpipe. Measured
# against Mesa 22.3 llvmpipe's NIR (MESA_GLSL=dump) and images
# (tests/shaders/test_differential_mesa).
FP16_FORMS: dict[str, Callable] = {"RSQ": _rsq_fp16, "MAD": _mad_fp16, "LRP": _lrp_fp16,
                                   "POW": _pow_fp16}

# Every opcode name Mesa's TGSI knows (tgsi_info_opcodes.h); the parser accepts these, and the
# interpreter reports the ones it does not implement (geometry, compute, 64-bit, atomics)
# instead of skipping them.
KNOWN_OPCODES: frozenset[str] = frozenset(OPCODES) | frozenset("""
    EMIT ENDPRIM TXQS RESQ FENCE MEMBAR BARRIER LOAD STORE ATOMUADD ATOMXCHG ATOMCAS ATOMAND
    ATOMOR ATOMXOR ATOMUMIN ATOMUMAX ATOMIMIN ATOMIMAX ATOMFADD ATOMINC_WRAP ATOMDEC_WRAP
    TG4 LODQ INTERP_CENTROID INTERP_SAMPLE INTERP_OFFSET SWITCH CASE DEFAULT ENDSWITCH
    SAMPLE SAMPLE_I SAMPLE_I_MS SAMPLE_B SAMPLE_C SAMPLE_C_LZ SAMPLE_D SAMPLE_L GATHER4
    SVIEWINFO SAMPLE_POS SAMPLE_INFO DEMOTE READ_HELPER CLOCK PK2H PK2US PK4B PK4UB UP2H UP2US
    UP4B UP4UB DABS DNEG DADD DMUL DMAX DMIN DSLT DSGE DSEQ DSNE DRCP DSQRT DMAD DFMA DFRAC
    DLDEXP DFRACEXP D2F F2D D2I I2D D2U U2D DRSQ DTRUNC DCEIL DFLR DROUND DSSG DDIV
    I64ABS I64NEG I64SSG I64MIN I64MAX U64MIN U64MAX U64ADD U64MUL U64SEQ U64SNE I64SLT U64SLT
    I64SGE U64SGE I64SHR U64SHR U64SHL I64DIV U64DIV I64MOD U64MOD F2U64 F2I64 U2I64 I2I64
    D2U64 D2I64 U642D I642D U642F I642F VOTE_ANY VOTE_ALL VOTE_EQ BALLOT READ_FIRST
    READ_INVOC IMG2HND SAMP2HND
""".split())


def category_of(opcode: str) -> str:
    """ALU, TEX or FLOW for statistics (unknown-to-the-interpreter opcodes count as ALU)."""
    info = OPCODES.get(opcode)
    return info.category if info else ALU
