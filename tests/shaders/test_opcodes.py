"""Per-opcode semantics against Mesa's docs/gallium/tgsi.rst, corner cases included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tgsi_helpers import run

INF, NAN = float("inf"), float("nan")
INT_MIN = -(2**31)


def f(body, *ins, **kw):
    return run(body, *ins, **kw)[0]


def same(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


# --- float arithmetic ----------------------------------------------------------------------

def test_add_mul_mad_div():
    a, b, c = [1.5, -2.0, 0.0, 3.0], [2.0, 4.0, -1.0, 0.5], [1.0, 1.0, 1.0, -1.0]
    same(f(["ADD OUT[0], IN[0], IN[1]"], a, b)[0], np.float32(a) + np.float32(b))
    same(f(["MUL OUT[0], IN[0], IN[1]"], a, b)[0], np.float32(a) * np.float32(b))
    same(f(["MAD OUT[0], IN[0], IN[1], IN[2]"], a, b, c)[0],
         np.float32(a) * np.float32(b) + np.float32(c))
    same(f(["DIV OUT[0], IN[0], IN[1]"], a, b)[0], np.float32(a) / np.float32(b))


def test_rcp_rsq_sqrt_corner_cases():
    x = [4.0, 0.0, -1.0, -0.0]
    out = f(["RCP OUT[0], IN[0].xxxx"], x)[0]
    same(out, [0.25, INF, -1.0, -INF])
    out = f(["RSQ OUT[0], IN[0].xxxx"], x)[0]
    assert out[0] == 0.5 and out[1] == INF and math.isnan(out[2]) and out[3] == -INF
    out = f(["SQRT OUT[0], IN[0].xxxx"], x)[0]
    assert out[0] == 2.0 and out[1] == 0.0 and math.isnan(out[2])


def test_lg2_ex2_pow_corner_cases():
    out = f(["LG2 OUT[0], IN[0].xxxx"], [8.0, 0.0, -1.0, 1.0])[0]
    assert out[0] == 3.0 and out[1] == -INF and math.isnan(out[2]) and out[3] == 0.0
    same(f(["EX2 OUT[0], IN[0].xxxx"], [3.0, -1.0, -INF, 0.0])[0], [8.0, 0.5, 0.0, 1.0])
    # Undefined cases follow llvmpipe: pow(0, y) = 0 for every y, pow(x < 0, y) = NaN.
    x, y = [2.0, 0.0, 0.0, 0.0, -2.0, -2.0, 4.0], [3.0, 0.0, -0.5, 2.0, 0.5, 2.0, -0.5]
    out = f(["POW OUT[0], IN[0].xxxx, IN[1].xxxx"], x, y)[0]
    same(out, [8.0, 0.0, 0.0, 0.0, NAN, NAN, 0.5])


def test_scalar_ops_replicate_from_x_to_the_write_mask():
    out, _ = run(["MOV OUT[0], IN[1]", "RCP OUT[0].yw, IN[0].zxxx"],
                 [[2.0], [7.0], [4.0], [9.0]], [[5.0], [6.0], [7.0], [8.0]])
    same(out[:, 0], [5.0, 0.25, 7.0, 0.25])


def test_frc_flr_ceil_trunc_round():
    x = [-0.25, -1.0, 2.5, 3.5]
    same(f(["FRC OUT[0], IN[0]"], x)[0], [0.75, 0.0, 0.5, 0.5])
    same(f(["FLR OUT[0], IN[0]"], x)[0], [-1.0, -1.0, 2.0, 3.0])
    same(f(["CEIL OUT[0], IN[0]"], x)[0], [-0.0, -1.0, 3.0, 4.0])
    same(f(["TRUNC OUT[0], IN[0]"], x)[0], [-0.0, -1.0, 2.0, 3.0])
    same(f(["ROUND OUT[0], IN[0]"], x)[0], [-0.0, -1.0, 2.0, 4.0])  # ties to even


def test_min_max_return_the_number_when_one_operand_is_nan():
    same(f(["MIN OUT[0], IN[0], IN[1]"], [NAN, 1.0, -2.0], [3.0, NAN, 5.0])[0], [3.0, 1.0, -2.0])
    same(f(["MAX OUT[0], IN[0], IN[1]"], [NAN, 1.0, -2.0], [3.0, NAN, 5.0])[0], [3.0, 1.0, 5.0])


def test_saturate_clamps_and_sends_nan_to_zero():
    same(f(["MOV_SAT OUT[0], IN[0]"], [-1.0, 0.5, 2.0, NAN, INF])[0], [0.0, 0.5, 1.0, 0.0, 1.0])
    same(f(["ADD_SAT OUT[0], IN[0], IN[1]"], [0.75], [0.5])[0], [1.0])


def test_source_modifiers_negate_and_absolute():
    same(f(["MOV OUT[0], -|IN[0]|"], [-2.0, 3.0])[0], [-2.0, -3.0])
    same(f(["MOV OUT[0], |IN[0]|"], [-2.0, 3.0])[0], [2.0, 3.0])
    same(f(["ADD OUT[0], IN[0], -IN[1]"], [5.0], [2.0])[0], [3.0])


def test_swizzle_and_write_mask_leave_other_channels_alone():
    vec = [[1.0], [2.0], [3.0], [4.0]]
    out, _ = run(["MOV OUT[0], IN[0]", "MOV OUT[0].yw, IN[0].wzyx"], vec)
    same(out[:, 0], [1.0, 3.0, 3.0, 1.0])


def test_dot_products_lrp_cmp_ssg():
    a = [[1.0], [2.0], [3.0], [4.0]]
    b = [[5.0], [6.0], [7.0], [8.0]]
    same(f(["DP2 OUT[0], IN[0], IN[1]"], a, b)[:, 0], [17.0] * 4)
    same(f(["DP3 OUT[0], IN[0], IN[1]"], a, b)[:, 0], [38.0] * 4)
    same(f(["DP4 OUT[0], IN[0], IN[1]"], a, b)[:, 0], [70.0] * 4)
    same(f(["LRP OUT[0], IN[0], IN[1], IN[2]"], [0.25], [4.0], [8.0])[0], [7.0])
    same(f(["CMP OUT[0], IN[0], IN[1], IN[2]"], [-1.0, 0.0, -0.0], [1.0] * 3, [2.0] * 3)[0],
         [1.0, 2.0, 2.0])
    same(f(["SSG OUT[0], IN[0]"], [-3.0, 0.0, 2.0])[0], [-1.0, 0.0, 1.0])


def test_float_set_ops_give_one_or_zero_and_integer_compares_give_all_bits():
    same(f(["SLT OUT[0], IN[0], IN[1]"], [1.0, 2.0], [2.0, 1.0])[0], [1.0, 0.0])
    same(f(["SGE OUT[0], IN[0], IN[1]"], [1.0, 2.0], [2.0, 2.0])[0], [0.0, 1.0])
    x, y = [NAN, 1.0, 1.0], [1.0, 1.0, 2.0]
    same(f(["FSEQ OUT[0], IN[0], IN[1]"], x, y, out_dtype=np.uint32)[0], [0, 0xFFFFFFFF, 0])
    same(f(["FSNE OUT[0], IN[0], IN[1]"], x, y, out_dtype=np.uint32)[0],
         [0xFFFFFFFF, 0, 0xFFFFFFFF])  # unordered: NaN != x is true
    same(f(["FSLT OUT[0], IN[0], IN[1]"], x, y, out_dtype=np.uint32)[0], [0, 0, 0xFFFFFFFF])
    same(f(["FSGE OUT[0], IN[0], IN[1]"], x, y, out_dtype=np.uint32)[0], [0, 0xFFFFFFFF, 0])


def test_sin_cos_lit_exp_log_dst():
    x = [0.0, math.pi / 2]
    np.testing.assert_allclose(f(["SIN OUT[0], IN[0].xxxx"], x)[0], [0.0, 1.0], atol=1e-7)
    np.testing.assert_allclose(f(["COS OUT[0], IN[0].xxxx"], x)[0], [1.0, 0.0], atol=1e-7)
    lit = f(["LIT OUT[0], IN[0]"], [[2.0], [0.5], [0.0], [2.0]])[:, 0]
    same(lit, [1.0, 2.0, 0.25, 1.0])
    same(f(["EXP OUT[0], IN[0].xxxx"], [2.5])[:, 0], [4.0, 0.5, np.exp2(np.float32(2.5)), 1.0])
    same(f(["LOG OUT[0], IN[0].xxxx"], [-8.0])[:, 0], [3.0, 1.0, 3.0, 1.0])
    same(f(["DST OUT[0], IN[0], IN[1]"], [[9.0], [2.0], [3.0], [9.0]],
           [[9.0], [5.0], [9.0], [7.0]])[:, 0], [1.0, 10.0, 3.0, 7.0])


def test_fma_rounds_once():
    a = np.float32(1 + 2**-23)
    b = np.float32(1 - 2**-23)
    c = np.float32(-1.0)
    out = f(["FMA OUT[0], IN[0], IN[1], IN[2]"], [a], [b], [c])[0, 0]
    assert out == np.float32(-(2.0**-46))  # a*b-1 exactly; MAD in float32 gives 0


# --- integers ------------------------------------------------------------------------------

def u(body, *ins):
    return f(body, *ins, dtype=np.uint32, out_dtype=np.uint32)[0]


def i(body, *ins):
    return f(body, *ins, dtype=np.int32, out_dtype=np.int32)[0]


def test_integer_add_mul_wrap_around():
    same(u(["UADD OUT[0], IN[0], IN[1]"], [0xFFFFFFFF, 5], [1, 7]), [0, 12])
    same(u(["UMUL OUT[0], IN[0], IN[1]"], [0x10000, 3], [0x10000, 5]), [0, 15])
    same(u(["UMAD OUT[0], IN[0], IN[1], IN[2]"], [0x10000], [0x10000], [9]), [9])
    same(i(["INEG OUT[0], IN[0]"], [INT_MIN, 5]), [INT_MIN, -5])
    same(i(["IABS OUT[0], IN[0]"], [INT_MIN, -5]), [INT_MIN, 5])
    same(i(["IMUL_HI OUT[0], IN[0], IN[1]"], [-(2**30), 2**30], [4, 8]), [-1, 2])
    same(u(["UMUL_HI OUT[0], IN[0], IN[1]"], [0xFFFFFFFF], [0xFFFFFFFF]), [0xFFFFFFFE])


def test_integer_division_and_modulus_including_zero_divisors():
    # By zero: 0, as llvmpipe (tgsi.rst leaves it "TBD").
    same(i(["IDIV OUT[0], IN[0], IN[1]"], [7, -7, 7, INT_MIN, 3], [2, 2, 0, -1, -2]),
         [3, -3, 0, INT_MIN, -1])
    same(u(["UDIV OUT[0], IN[0], IN[1]"], [7, 7], [2, 0]), [3, 0xFFFFFFFF])
    same(u(["UMOD OUT[0], IN[0], IN[1]"], [7, 7], [4, 0]), [3, 0xFFFFFFFF])
    same(i(["MOD OUT[0], IN[0], IN[1]"], [-7, 7, 7], [3, -3, 0]), [-1, 1, -1])


def test_shifts_mask_their_count():
    same(u(["SHL OUT[0], IN[0], IN[1]"], [1, 1], [33, 31]), [2, 0x80000000])
    same(i(["ISHR OUT[0], IN[0], IN[1]"], [-8, -8], [1, 33]), [-4, -4])
    same(u(["USHR OUT[0], IN[0], IN[1]"], [0x80000000, 0x80000000], [31, 32]), [1, 0x80000000])


def test_bitwise_and_select():
    same(u(["AND OUT[0], IN[0], IN[1]"], [0b1100], [0b1010]), [0b1000])
    same(u(["OR OUT[0], IN[0], IN[1]"], [0b1100], [0b1010]), [0b1110])
    same(u(["XOR OUT[0], IN[0], IN[1]"], [0b1100], [0b1010]), [0b0110])
    same(u(["NOT OUT[0], IN[0]"], [0]), [0xFFFFFFFF])
    same(u(["UCMP OUT[0], IN[0], IN[1], IN[2]"], [0, 1, 0x80000000], [5, 5, 5], [9, 9, 9]),
         [9, 5, 5])


def test_integer_compare_min_max_sign():
    same(u(["ISLT OUT[0], IN[0], IN[1]"], [-1, 1], [0, 0]), [0xFFFFFFFF, 0])
    same(u(["USLT OUT[0], IN[0], IN[1]"], [0xFFFFFFFF, 1], [0, 2]), [0, 0xFFFFFFFF])
    same(u(["ISGE OUT[0], IN[0], IN[1]"], [0, -1], [0, 0]), [0xFFFFFFFF, 0])
    same(u(["USGE OUT[0], IN[0], IN[1]"], [0xFFFFFFFF], [0]), [0xFFFFFFFF])
    same(u(["USEQ OUT[0], IN[0], IN[1]"], [3, 3], [3, 4]), [0xFFFFFFFF, 0])
    same(u(["USNE OUT[0], IN[0], IN[1]"], [3, 3], [3, 4]), [0, 0xFFFFFFFF])
    same(i(["IMIN OUT[0], IN[0], IN[1]"], [-5, 5], [3, 3]), [-5, 3])
    same(i(["IMAX OUT[0], IN[0], IN[1]"], [-5, 5], [3, 3]), [3, 5])
    same(u(["UMIN OUT[0], IN[0], IN[1]"], [0xFFFFFFFF], [3]), [3])
    same(u(["UMAX OUT[0], IN[0], IN[1]"], [0xFFFFFFFF], [3]), [0xFFFFFFFF])
    same(i(["ISSG OUT[0], IN[0]"], [-9, 0, 9]), [-1, 0, 1])


def test_bitfield_ops():
    same(i(["IBFE OUT[0], IN[0], IN[1], IN[2]"], [0xF0, 0xB0, 5], [4, 4, 0], [4, 3, 0]),
         [-1, 3, 0])
    same(u(["UBFE OUT[0], IN[0], IN[1], IN[2]"], [0xF0], [4], [4]), [15])
    same(u(["BFI OUT[0], IN[0], IN[1], IN[2], IN[3]"], [0xFFFF], [0], [4], [8]), [0xF00F])
    same(u(["BREV OUT[0], IN[0]"], [1, 0x80000000]), [0x80000000, 1])
    same(u(["POPC OUT[0], IN[0]"], [0, 0xFFFFFFFF, 0b1011]), [0, 32, 3])
    same(i(["LSB OUT[0], IN[0]"], [0, 8, 0x80000000]), [-1, 3, 31])
    same(i(["UMSB OUT[0], IN[0]"], [0, 8, 0x80000000]), [-1, 3, 31])
    same(i(["IMSB OUT[0], IN[0]"], [0, -1, 8, -9]), [-1, -1, 3, 3])


def test_conversions_truncate_and_handle_out_of_range():
    same(f(["F2I OUT[0], IN[0]"], [3.7, -3.7, NAN, 1e10], out_dtype=np.int32)[0],
         [3, -3, INT_MIN, INT_MIN])
    same(f(["F2U OUT[0], IN[0]"], [3.7, -1.0, NAN, 1e10], out_dtype=np.uint32)[0],
         [3, 0, 0, 0xFFFFFFFF])
    same(f(["I2F OUT[0], IN[0]"], [-3, 16777217], dtype=np.int32)[0], [-3.0, 16777216.0])
    same(f(["U2F OUT[0], IN[0]"], [0xFFFFFFFF], dtype=np.uint32)[0], [4294967296.0])


def test_integer_source_modifiers_are_integer_operations():
    same(i(["IMAX OUT[0], -IN[0], IN[1]"], [5], [-9]), [-5])
    same(i(["IMAX OUT[0], |IN[0]|, IN[1]"], [-5], [-9]), [5])


# --- derivatives ---------------------------------------------------------------------------

def test_ddx_ddy_on_quads():
    # Two quads; value = 3x + 5y + x*y at pixel (x, y) in (TL, TR, BL, BR) order.
    xs = np.array([0, 1, 0, 1, 2, 3, 2, 3], np.float32)
    ys = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.float32)
    v = 3 * xs + 5 * ys + xs * ys
    # DDX/DDY are computed per row/column like their _FINE forms, as llvmpipe does.
    same(f(["DDX OUT[0], IN[0]"], v)[0], [3, 3, 4, 4, 3, 3, 4, 4])
    same(f(["DDY OUT[0], IN[0]"], v)[0], [5, 6, 5, 6, 7, 8, 7, 8])
    same(f(["DDX_FINE OUT[0], IN[0]"], v)[0], [3, 3, 4, 4, 3, 3, 4, 4])
    same(f(["DDY_FINE OUT[0], IN[0]"], v)[0], [5, 6, 5, 6, 7, 8, 7, 8])


def test_derivative_of_a_constant_is_zero():
    out = f(["DDX OUT[0], IMM[0]"], [1.0] * 4, extra=["IMM[0] FLT32 {1.0, 2.0, 3.0, 4.0}"])
    same(out, np.zeros((4, 4)))


# --- constants, immediates, relative addressing --------------------------------------------

def test_constants_and_immediates():
    consts = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    out, _ = run(["ADD OUT[0], CONST[0][1], IMM[0].wzyx"], [0.0, 0.0],
                 extra=["DCL CONST[0][0..1]", "IMM[0] UINT32 {1065353216, 0, 0, 1073741824}"],
                 constants=consts)
    same(out[:, 0], [7.0, 6.0, 7.0, 9.0])


def test_relative_addressing_of_constants_and_temp_arrays():
    consts = np.arange(16, dtype=np.float32).reshape(4, 4)
    body = ["ARL ADDR[0].x, IN[0].xxxx", "MOV OUT[0], CONST[0][ADDR[0].x+1]"]
    out, _ = run(body, [0.0, 1.7, 2.2, 9.0], extra=["DCL CONST[0][0..3]", "DCL ADDR[0]"],
                 constants=consts)
    same(out[0], [4.0, 8.0, 12.0, 0.0])  # out of range reads give 0
    body = ["UARL ADDR[0].x, IN[0].xxxx", "MOV TEMP[ADDR[0].x+1](1), IN[1]",
            "MOV OUT[0], TEMP[2]"]
    lane_index = np.array([0, 1], np.int32).view(np.float32)  # integer bits in IN[0]
    out, _ = run(body, lane_index, [7.0, 9.0], extra=["DCL TEMP[1..3], ARRAY(1)", "DCL ADDR[0]"])
    same(out[0], [0.0, 9.0])  # lane 0 wrote TEMP[1], lane 1 wrote TEMP[2]


# --- texture -------------------------------------------------------------------------------

class RecordingSampler:
    def __init__(self):
        self.requests = []

    def sample(self, request):
        self.requests.append(request)
        c = request.coords
        return np.stack([c[0], c[1], c[2], np.full_like(c[0], request.unit)]).astype(np.float32)

    def fetch(self, unit, target, texel, active):
        return texel.astype(np.float32)

    def size(self, unit, target, level):
        return np.stack([64 >> level, 32 >> level, np.ones_like(level),
                         np.full_like(level, 7)]).astype(np.int32)


def test_texture_ops_pass_coordinates_lod_and_unit_to_the_sampler():
    s = RecordingSampler()
    coords = [[0.5] * 4, [0.25] * 4, [1.0] * 4, [2.0] * 4]
    extra = ["DCL SAMP[0]", "DCL SAMP[3]", "DCL SVIEW[3], 2D, FLOAT"]
    out, _ = run(["TEX OUT[0], IN[0], SAMP[3], 2D"], coords, sampler=s, extra=extra)
    same(out[:, 0], [0.5, 0.25, 1.0, 3.0])
    assert s.requests[-1].lod_mode == "implicit" and s.requests[-1].target == "2D"
    out, _ = run(["TXP OUT[0], IN[0], SAMP[0], 2D"], coords, sampler=s, extra=extra)
    same(out[:, 0], [0.25, 0.125, 0.5, 0.0])
    run(["TXB OUT[0], IN[0], SAMP[0], 2D"], coords, sampler=s, extra=extra)
    assert s.requests[-1].lod_mode == "bias" and s.requests[-1].lod[0] == 2.0
    run(["TXL OUT[0], IN[0], SAMP[0], CUBE"], coords, sampler=s, extra=extra)
    assert s.requests[-1].lod_mode == "explicit" and s.requests[-1].target == "CUBE"
    run(["TXD OUT[0], IN[0], IN[1], IN[2], SAMP[0], 2D"], coords, [1.0] * 4, [2.0] * 4,
        sampler=s, extra=extra)
    assert s.requests[-1].lod_mode == "grad" and s.requests[-1].ddy[0, 0] == 2.0
    out, _ = run(["TXQ OUT[0], IN[0], SAMP[0], 2D"], [1, 1, 1, 1], dtype=np.int32,
                 out_dtype=np.int32, sampler=s, extra=extra)
    same(out[:, 0], [32, 16, 1, 7])


def test_texture_instructions_count_samples_per_active_lane():
    body = ["FSLT TEMP[0].x, IN[0].xxxx, IMM[0].xxxx", "UIF TEMP[0].xxxx",
            "TEX TEMP[1], IN[0], SAMP[0], 2D", "ENDIF", "MOV OUT[0], TEMP[1]"]
    _, ex = run(body, [0.0, 1.0, 0.0, 1.0], extra=["DCL SAMP[0]", "IMM[0] FLT32 {0.5, 0, 0, 0}"])
    same(ex.stats.texture_samples, [1, 0, 1, 0])


@pytest.mark.parametrize("opcode", ["EMIT", "ATOMUADD"])
def test_known_but_unimplemented_opcodes_are_reported(opcode):
    from tilesim.shaders.interpreter import UnsupportedOpcode

    with pytest.raises(UnsupportedOpcode, match=opcode):
        run([opcode], [0.0])
