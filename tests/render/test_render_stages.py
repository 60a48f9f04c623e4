"""Pipeline stages on their own: assembly, clipping, setup, rasterization, depth and blending."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import require_mesa
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesim.render.gl.commands import BLEND_EQUATIONS, BLEND_FACTORS
from tilesim.render.gl.state import FragmentState
from tilesim.render.pipeline import (
    binning,
    clipping,
    output_merger,
    primitive_assembly,
    rasterizer,
    triangle_setup,
)


def setup_tris(positions, tris, w=None, viewport=(0, 0, 64, 64), cull=None):
    """Window-space triangles from NDC x, y (and z = 0, w = 1 unless given)."""
    positions = np.asarray(positions, dtype=np.float64)
    n = len(positions)
    clip = np.zeros((n, 4))
    clip[:, :2] = positions[:, :2]
    clip[:, 3] = 1.0 if w is None else w
    clip[:, :2] *= clip[:, 3:4]
    tris = np.asarray(tris, dtype=np.int64)
    return triangle_setup.setup(clip, tris, np.arange(len(tris)), viewport=viewport,
                                depth_range=(0.0, 1.0), cull=cull, front_face="CCW").triangles


def coverage(tris, size=64, rule="top_left"):
    quads = rasterizer.rasterize(tris, (0, 0, size, size), rule)
    px, py = quads.pixels()
    count = np.zeros((size, size), dtype=np.int64)
    np.add.at(count, (py[quads.coverage], px[quads.coverage]), 1)
    return count


def test_strip_and_fan_orders_keep_winding():
    np.testing.assert_array_equal(primitive_assembly.triangles("TRIANGLE_STRIP", 5),
                                  [[0, 1, 2], [2, 1, 3], [2, 3, 4]])
    np.testing.assert_array_equal(primitive_assembly.triangles("TRIANGLE_FAN", 5),
                                  [[0, 1, 2], [0, 2, 3], [0, 3, 4]])
    assert primitive_assembly.triangles("TRIANGLES", 7).shape == (2, 3)
    np.testing.assert_array_equal(primitive_assembly.lines("LINE_LOOP", 3),
                                  [[0, 1], [1, 2], [2, 0]])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40)), min_size=9, max_size=9),
       st.sampled_from(["top_left", "bottom_left"]))
def test_shared_edges_cover_every_pixel_exactly_once(jitter, rule):
    # A 3x3 grid of vertices over the viewport, inner ones jittered (in 1/64 NDC steps so that
    # many land exactly on pixel centers and edges): its 8 triangles tile the square.
    grid = np.array([[x, y] for y in (-1.0, 0.0, 1.0) for x in (-1.0, 0.0, 1.0)])
    offsets = np.array(jitter, dtype=np.float64) / 128.0
    # The center moves freely, edge midpoints only along their edge: the square stays whole.
    movable = np.array([[0, 0], [1, 0], [0, 0], [0, 1], [1, 1], [0, 1], [0, 0], [1, 0], [0, 0]])
    grid += offsets * movable * 0.9
    tris = []
    for row in range(2):
        for col in range(2):
            a, b = row * 3 + col, row * 3 + col + 1
            c, d = a + 3, b + 3
            tris += [[a, b, d], [a, d, c]]
    count = coverage(setup_tris(grid, tris), rule=rule)
    assert count.max() == 1 and count.min() == 1


@pytest.mark.parametrize("rule", ["top_left", "bottom_left"])
def test_fill_rule_on_exact_pixel_centers(rule):
    # A right triangle with its legs on pixel centers (x = 2.5 and y = 2.5) and its
    # hypotenuse through centers too (x + y = 13): left edges always count, the horizontal
    # edge (the bottom here) only under bottom_left, the hypotenuse (a top-right edge) never.
    s = 1 / 32  # one pixel in NDC for a 64 px viewport
    pts = [[-1 + 2.5 * s, -1 + 2.5 * s], [-1 + 10.5 * s, -1 + 2.5 * s],
           [-1 + 2.5 * s, -1 + 10.5 * s]]
    count = coverage(setup_tris(pts, [[0, 1, 2]]), rule=rule)
    ys, xs = np.nonzero(count)
    assert xs.min() == 2
    assert ys.min() == (2 if rule == "bottom_left" else 3)
    assert ((xs + ys) < 12).all()


def test_culling_and_facing():
    pts = [[-0.5, -0.5], [0.5, -0.5], [0.0, 0.5]]
    ccw = setup_tris(pts, [[0, 1, 2]])
    cw = setup_tris(pts, [[0, 2, 1]])
    assert ccw.front.all() and not cw.front.any()
    assert len(setup_tris(pts, [[0, 2, 1]], cull="BACK")) == 0
    assert len(setup_tris(pts, [[0, 1, 2]], cull="BACK")) == 1
    assert len(setup_tris(pts, [[0, 1, 2]], cull="FRONT_AND_BACK")) == 0
    # Degenerate triangles vanish.
    assert len(setup_tris([[0, 0], [0.5, 0.5], [1, 1]], [[0, 1, 2]])) == 0


def test_near_plane_clipping_splits_and_keeps_inside_parts():
    # One vertex behind the eye (w < 0): the triangle is cut by the near plane into a quad.
    vertices = np.array([[0, 0, 0.5, 1.0, 1.0], [1, 0, 0.5, 1.0, 2.0], [0, 1, -3.0, -1.0, 3.0]])
    tris = np.array([[0, 1, 2]])
    out = clipping.clip_triangles(vertices, tris)
    assert out.split == 1 and len(out.triangles) == 2
    pos = out.vertices[out.triangles.ravel()]
    assert (pos[:, 2] >= -pos[:, 3] - 1e-9).all() and (pos[:, 3] > 0).all()
    # Attributes are interpolated along with the position.
    assert ((pos[:, 4] >= 1.0) & (pos[:, 4] <= 3.0)).all()
    # Wholly outside (beyond far) is rejected; wholly inside untouched.
    far = np.array([[0, 0, 2.0, 1.0], [1, 0, 3.0, 1.0], [0, 1, 2.5, 1.0]])
    assert clipping.clip_triangles(far, tris).rejected == 1
    inside = clipping.clip_triangles(np.array([[0, 0, 0, 1.0], [1, 0, 0, 1.0],
                                               [0, 1, 0, 1.0]]), tris)
    assert inside.split == 0 and len(inside.triangles) == 1


# --- per-fragment operations against the OpenGL ES 2.0 specification -------------------------
#
# The expected values below come from the specification's text, written out here, never from
# tilesim.render.pipeline.output_merger: section 4.1.5 (Depth Buffer Test) for the comparisons,
# section 4.1.6 (Blending, Table 4.2) for the equations and factors, section 2.1.2 for the
# conversions between unorm8 and [0, 1]. Fragments at one pixel are processed in submission order.

DEPTH_BITS = 24
DEPTH_MAX = (1 << DEPTH_BITS) - 1

# 4.1.5: "the incoming fragment's z value is compared with the depth value stored at its
# (x, y) location" -- passes for  z < stored, z == stored, z > stored:
SPEC_DEPTH_FUNCS = {
    "NEVER": (False, False, False),
    "LESS": (True, False, False),
    "EQUAL": (False, True, False),
    "LEQUAL": (True, True, False),
    "GREATER": (False, False, True),
    "NOTEQUAL": (True, False, True),
    "GEQUAL": (False, True, True),
    "ALWAYS": (True, True, True),
}


def spec_depth_passes(func: str, z: int, stored: int) -> bool:
    return SPEC_DEPTH_FUNCS[func][0 if z < stored else 1 if z == stored else 2]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-1.2, 1.2), st.floats(-1.2, 1.2)), min_size=3, max_size=30))
def test_display_lists_are_sorted_by_tile_and_name_their_tiles(points):
    """Binning's lists: sorted by tile, each tile's entries in submission order; the tiles
    touched (``Bins.touched``, ``distinct_tiles`` of any in-order pick) are np.unique's."""
    n = len(points) // 3 * 3
    tris = setup_tris(points[:n], np.arange(n).reshape(-1, 3), viewport=(0, 0, 64, 48))
    bins = binning.bin_triangles(tris, (0, 0, 64, 48), 16, 4, 0)
    order = np.lexsort((bins.triangle, bins.tile))
    np.testing.assert_array_equal(order, np.arange(bins.tile.size))
    np.testing.assert_array_equal(bins.touched, np.unique(bins.tile))
    picked = bins.tile[::2]
    np.testing.assert_array_equal(binning.distinct_tiles(picked), np.unique(picked))


def test_every_depth_function_is_implemented():
    assert set(output_merger.COMPARE) == set(SPEC_DEPTH_FUNCS)


@pytest.mark.parametrize("func", list(SPEC_DEPTH_FUNCS))
@pytest.mark.parametrize("write", [True, False])
def test_depth_test_follows_the_spec_in_submission_order(func, write):
    rng = np.random.default_rng(7)
    # 24-bit fixed-point depths (the pipeline's: uint32 buffer, int64 fragment values) with
    # the extremes and many exact ties: fragments take stored values, each other's or fresh ones
    buffer = rng.integers(0, DEPTH_MAX + 1, 20).astype(np.uint32)
    buffer[:2] = (0, DEPTH_MAX)
    pool = np.concatenate([buffer.astype(np.int64), rng.integers(0, DEPTH_MAX + 1, 12),
                           [0, 1, DEPTH_MAX - 1, DEPTH_MAX]])
    pixel = rng.integers(0, 20, 400)
    depth = rng.choice(pool, 400).astype(np.int64)
    stored = [int(v) for v in buffer]
    expected = []
    for p, z in zip(pixel.tolist(), depth.tolist(), strict=True):
        ok = spec_depth_passes(func, z, stored[p])
        expected.append(ok)
        if ok and write:
            stored[p] = z
    # the data reach all three outcomes of the comparison, so each row of the table is tried
    stored_before = [int(v) for v in buffer]
    relations = set()
    for p, z in zip(pixel.tolist(), depth.tolist(), strict=True):
        relations.add((z > stored_before[p]) - (z < stored_before[p]))
        stored_before[p] = z
    assert relations == {-1, 0, 1}
    passed = output_merger.depth_test(pixel, depth, buffer, func, write)
    np.testing.assert_array_equal(passed, expected)
    np.testing.assert_array_equal(buffer, stored)
    if func not in ("NEVER", "ALWAYS"):
        assert 0 < sum(expected) < len(expected)


def test_depth_test_at_the_24_bit_extremes():
    pixel = np.arange(6)
    depth = np.array([0, 0, DEPTH_MAX, DEPTH_MAX, DEPTH_MAX - 1, 1], dtype=np.int64)
    stored = np.array([0, DEPTH_MAX, DEPTH_MAX, 0, DEPTH_MAX, 0], dtype=np.uint32)
    for func in SPEC_DEPTH_FUNCS:
        buffer = stored.copy()
        passed = output_merger.depth_test(pixel, depth, buffer, func, True)
        want = [spec_depth_passes(func, int(z), int(b)) for z, b in zip(depth, stored, strict=True)]
        np.testing.assert_array_equal(passed, want, err_msg=func)
        np.testing.assert_array_equal(buffer, np.where(want, depth, stored), err_msg=func)


# 4.1.6: FUNC_ADD  C = Cs * S + Cd * D, FUNC_SUBTRACT  C = Cs * S - Cd * D,
# FUNC_REVERSE_SUBTRACT  C = Cd * D - Cs * S, per channel, the result clamped to [0, 1].
SPEC_EQUATIONS = {
    "FUNC_ADD": lambda s, d: s + d,
    "FUNC_SUBTRACT": lambda s, d: s - d,
    "FUNC_REVERSE_SUBTRACT": lambda s, d: d - s,
}
# EXT_blend_minmax: min / max of the source and destination components, factors ignored.
SPEC_MINMAX = {"MIN_EXT": min, "MAX_EXT": max}
SPEC_EQUATIONS.update(SPEC_MINMAX)
# Table 4.2: the factor of channel ``c`` (0..2 RGB, 3 alpha) from the source color S, the
# destination color D and the constant color C; SRC_ALPHA_SATURATE is min(As, 1 - Ad) for
# RGB and 1 for alpha, and GLES2 allows it as a source factor only.
SPEC_FACTORS = {
    "ZERO": lambda S, D, C, c: 0,
    "ONE": lambda S, D, C, c: 1,
    "SRC_COLOR": lambda S, D, C, c: S[c],
    "ONE_MINUS_SRC_COLOR": lambda S, D, C, c: 1 - S[c],
    "DST_COLOR": lambda S, D, C, c: D[c],
    "ONE_MINUS_DST_COLOR": lambda S, D, C, c: 1 - D[c],
    "SRC_ALPHA": lambda S, D, C, c: S[3],
    "ONE_MINUS_SRC_ALPHA": lambda S, D, C, c: 1 - S[3],
    "DST_ALPHA": lambda S, D, C, c: D[3],
    "ONE_MINUS_DST_ALPHA": lambda S, D, C, c: 1 - D[3],
    "CONSTANT_COLOR": lambda S, D, C, c: C[c],
    "ONE_MINUS_CONSTANT_COLOR": lambda S, D, C, c: 1 - C[c],
    "CONSTANT_ALPHA": lambda S, D, C, c: C[3],
    "ONE_MINUS_CONSTANT_ALPHA": lambda S, D, C, c: 1 - C[3],
    "SRC_ALPHA_SATURATE": lambda S, D, C, c: 1 if c == 3 else min(S[3], 1 - D[3]),
}
DST_FACTORS = [f for f in SPEC_FACTORS if f != "SRC_ALPHA_SATURATE"]
# Not 0.5 (0.5 x 255 = 127.5 is a tie for the conversion); see spec_unorm8.
BLEND_COLOR = (0.2718, 0.6180, 0.4142, 0.5772)


def spec_unorm8(value: Fraction) -> int:
    """2.1.2: f in [0, 1] -> round(f x 255), computed exactly.
    tilesim.render.pipeline.output_merger rounds half
    up in float64; the spec leaves ties open, and float64 can land on either side of a value
    within ~1e-13 of a tie, so the test data must keep away from ties (checked here). With
    non-dyadic constants ties cannot happen: anything computed from unorm8 values alone is
    N / 255, and N / 255 x 255 = N is never a half-integer."""
    x = min(max(value, Fraction(0)), Fraction(1)) * 255
    rounded = math.floor(x + Fraction(1, 2))
    assert abs(x - math.floor(x) - Fraction(1, 2)) > Fraction(1, 10**9), (
        f"test data hit a rounding tie: {float(x)} / 255")
    return rounded


def spec_write_colors(pixel, color, buffer, state, has_alpha=True) -> np.ndarray:
    """The buffer after blending ``color`` (N, 4 floats) into ``buffer`` (P, 4 unorm8) one
    fragment after another, by the spec, in exact arithmetic; masked channels (and alpha
    without an alpha channel, where Ad reads as 1) keep their values."""
    out = [[int(v) for v in row] for row in buffer]
    const = [Fraction(float(v)) for v in state.blend_color]
    write = list(state.color_mask[:3]) + [state.color_mask[3] and has_alpha]
    for p, rgba in zip(pixel.tolist(), np.asarray(color, dtype=np.float64).tolist(),
                       strict=True):
        src = [Fraction(min(max(v, 0.0), 1.0)) for v in rgba]   # 4.1.6: sources clamped
        dst = [Fraction(v, 255) for v in out[p]]
        if not has_alpha:
            dst[3] = Fraction(1)
        for c in range(4):
            if not write[c]:
                continue
            if c < 3:
                names = state.blend_src_rgb, state.blend_dst_rgb, state.blend_eq_rgb
            else:
                names = state.blend_src_alpha, state.blend_dst_alpha, state.blend_eq_alpha
            if names[2] in SPEC_MINMAX:
                out[p][c] = spec_unorm8(SPEC_MINMAX[names[2]](src[c], dst[c]))
                continue
            sf = SPEC_FACTORS[names[0]](src, dst, const, c)
            df = SPEC_FACTORS[names[1]](src, dst, const, c)
            out[p][c] = spec_unorm8(SPEC_EQUATIONS[names[2]](src[c] * sf, dst[c] * df))
    return np.array(out, dtype=np.uint8)


def blend_state(src_rgb, dst_rgb, eq_rgb, src_alpha, dst_alpha, eq_alpha,
                mask=(True, True, True, True)) -> FragmentState:
    return FragmentState(blend=True, blend_src_rgb=src_rgb, blend_dst_rgb=dst_rgb,
                         blend_src_alpha=src_alpha, blend_dst_alpha=dst_alpha,
                         blend_eq_rgb=eq_rgb, blend_eq_alpha=eq_alpha,
                         blend_color=BLEND_COLOR, color_mask=mask)


def blend_inputs(rng, fragments: int, pixels: int):
    """Fragments over few pixels (several per pixel), colors mostly in [0, 1] with some
    beyond on either side (clamped), a random unorm8 buffer with 0 and 255 in it."""
    pixel = rng.integers(0, pixels, fragments)
    color = rng.random((fragments, 4))
    wide = rng.random((fragments, 4)) < 0.1
    color[wide] = rng.uniform(-0.5, 1.5, int(wide.sum()))
    buffer = rng.integers(0, 256, (pixels, 4)).astype(np.uint8)
    buffer[0] = (0, 255, 0, 255)
    buffer[1] = (255, 0, 255, 0)
    return pixel, color, buffer


def test_every_blend_factor_and_equation_is_implemented():
    assert set(SPEC_FACTORS) == set(BLEND_FACTORS)
    assert set(SPEC_EQUATIONS) == set(BLEND_EQUATIONS)


@pytest.mark.parametrize("eq_rgb", list(SPEC_EQUATIONS))
@pytest.mark.parametrize("src_rgb", list(SPEC_FACTORS))
def test_blending_follows_the_spec_in_submission_order(eq_rgb, src_rgb):
    # every (source, destination, equation) of RGB; alpha gets other factors and another
    # equation each time (glBlendFuncSeparate / glBlendEquationSeparate), so that every
    # alpha factor and equation is tried too and RGB and alpha state cannot be mixed up
    i = list(SPEC_FACTORS).index(src_rgb)
    k = list(SPEC_EQUATIONS).index(eq_rgb)
    rng = np.random.default_rng([3, i, k])
    for j, dst_rgb in enumerate(DST_FACTORS):
        src_alpha = list(SPEC_FACTORS)[(i + j + 1) % len(SPEC_FACTORS)]
        dst_alpha = DST_FACTORS[(j + 2 * i + 3) % len(DST_FACTORS)]
        eq_alpha = list(SPEC_EQUATIONS)[(k + j + 1) % len(SPEC_EQUATIONS)]
        state = blend_state(src_rgb, dst_rgb, eq_rgb, src_alpha, dst_alpha, eq_alpha)
        pixel, color, buffer = blend_inputs(rng, 24, 6)
        expected = spec_write_colors(pixel, color, buffer, state)
        blended = output_merger.write_colors(pixel, color, buffer, state)
        np.testing.assert_array_equal(buffer, expected, err_msg=str(
            (src_rgb, dst_rgb, eq_rgb, src_alpha, dst_alpha, eq_alpha)))
        assert blended == len(pixel)


@pytest.mark.parametrize("has_alpha", [True, False])
def test_blending_under_color_masks_and_without_an_alpha_channel(has_alpha):
    rng = np.random.default_rng(5)
    combos = [("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "FUNC_ADD", "ONE", "ONE", "FUNC_ADD"),
              ("DST_ALPHA", "ONE_MINUS_DST_ALPHA", "FUNC_SUBTRACT",
               "ONE_MINUS_DST_ALPHA", "DST_ALPHA", "FUNC_REVERSE_SUBTRACT"),
              ("SRC_ALPHA_SATURATE", "DST_COLOR", "FUNC_REVERSE_SUBTRACT",
               "SRC_ALPHA_SATURATE", "CONSTANT_ALPHA", "FUNC_ADD")]
    for m in range(16):
        mask = tuple(bool(m >> b & 1) for b in range(4))
        for combo in combos:
            state = blend_state(*combo, mask=mask)
            pixel, color, buffer = blend_inputs(rng, 16, 5)
            before = buffer.copy()
            expected = spec_write_colors(pixel, color, buffer, state, has_alpha)
            output_merger.write_colors(pixel, color, buffer, state, has_alpha=has_alpha)
            np.testing.assert_array_equal(buffer, expected, err_msg=str((mask, combo)))
            kept = [not mask[c] or (c == 3 and not has_alpha) for c in range(4)]
            np.testing.assert_array_equal(buffer[:, kept], before[:, kept])


def test_unorm8_conversion_rounds_to_nearest():
    # 2.1.2: f -> round(f x 255); without blending a fragment's clamped color is converted
    k = np.arange(256)
    for offset, shift in ((0.0, 0), (0.49, 0), (-0.49, 0), (0.51, 1), (-0.51, -1)):
        values = np.clip(k + offset, 0, 255) / 255
        color = np.repeat(values[:, None], 4, axis=1)
        buffer = np.zeros((256, 4), dtype=np.uint8)
        output_merger.write_colors(np.arange(256), color, buffer, FragmentState())
        want = np.clip(k + shift, 0, 255)
        np.testing.assert_array_equal(buffer, np.repeat(want[:, None], 4, axis=1),
                                      err_msg=str(offset))
    buffer = np.zeros((2, 4), dtype=np.uint8)
    output_merger.write_colors(np.arange(2), np.array([[-3.0, 1.5, 0.0, 1.0],
                                                        [2.0, -0.1, 1.0, 0.0]]),
                               buffer, FragmentState())
    np.testing.assert_array_equal(buffer, [[0, 255, 0, 255], [255, 0, 255, 0]])


def test_last_fragment_wins_without_blending():
    state = FragmentState()
    buffer = np.zeros((4, 4), dtype=np.uint8)
    pixel = np.array([1, 2, 1, 1])
    color = np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1]], dtype=float)
    output_merger.write_colors(pixel, color, buffer, state)
    np.testing.assert_array_equal(buffer[1], [255, 255, 255, 255])
    np.testing.assert_array_equal(buffer[2], [0, 255, 0, 255])


class _Compiled:
    """What the Mesa replayer needs of a compiled program: attribute locations."""

    vertex_tgsi = fragment_tgsi = ""
    interface = {"attributes": [{"name": "pos", "location": 0}]}


@pytest.mark.slow
@pytest.mark.mesa
def test_spec_blending_formulas_agree_with_mesa():
    """The formulas above checked against Mesa llvmpipe (what the conformance scenes compare
    tilesim with): every source factor with every equation and every destination factor with
    every equation (the other RGB factor and the alpha factors and equation rotating), each
    state blending 8 random colors onto 8 cleared pixels. llvmpipe blends in 8-bit fixed point
    after converting the source color to unorm8, so it may differ from the exact formula by a
    rounding step or two; a wrong factor or equation is off by far more. (llvmpipe compiles
    each blend state: a few dozen keep this test short.)"""
    require_mesa()
    from tilesim.render.gl.commands import Recorder, Uniform
    from tilesim.render.reference.replay_gl import reference_frames

    rng = np.random.default_rng(11)
    factors, equations = list(SPEC_FACTORS), list(SPEC_EQUATIONS)
    states = set()
    for k, eq_rgb in enumerate(equations):
        for i, src_rgb in enumerate(factors):
            j = (i + k) % len(DST_FACTORS)
            states.add((src_rgb, DST_FACTORS[j], eq_rgb, factors[(i + j + 1) % len(factors)],
                        DST_FACTORS[(j + 2 * i + 3) % len(DST_FACTORS)],
                        equations[(k + j + 1) % 3]))
        for j, dst_rgb in enumerate(DST_FACTORS):
            i = (j + 2 * k + 1) % len(factors)
            states.add((factors[i], dst_rgb, eq_rgb, factors[(i + j + 1) % len(factors)],
                        DST_FACTORS[(j + 2 * i + 3) % len(DST_FACTORS)],
                        equations[(k + j + 1) % 3]))
    states = sorted(states)
    per_state = 8
    cells = [(state, n) for state in states for n in range(per_state)]
    width = 32
    height = -(-len(cells) // width)
    src = rng.random((len(cells), 4))
    dst = rng.integers(0, 256, (len(cells), 4)).astype(np.uint8)
    gl = Recorder(width, height)
    program = gl.createProgram(
        "attribute vec4 pos;\nvoid main() { gl_Position = pos; }\n",
        "precision highp float;\nuniform vec4 color;\nvoid main() { gl_FragColor = color; }\n",
        compiled=_Compiled())
    gl.useProgram(program)
    quad = np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], dtype=np.float32)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 0, quad)
    gl.enableVertexAttribArray(0)
    gl.blendColor(*BLEND_COLOR)
    gl.enable("SCISSOR_TEST")
    gl.enable("BLEND")
    for n, (state, _) in enumerate(cells):
        x, y = n % width, n // width
        gl.scissor(x, y, 1, 1)
        gl.viewport(x, y, 1, 1)
        gl.clearColor(*(dst[n] / 255))
        gl.clear(gl.COLOR_BUFFER_BIT)           # clears ignore blending
        gl.blendFuncSeparate(state[0], state[1], state[3], state[4])
        gl.blendEquationSeparate(state[2], state[5])
        gl.uniform4f(Uniform(program, "color"), *src[n])
        gl.drawArrays(gl.TRIANGLES, 0, 6)
    gl.endFrame()
    (image,) = reference_frames(gl)
    used = {name for state in states for name in state}
    assert used == set(SPEC_FACTORS) | set(SPEC_EQUATIONS)
    worst = 0
    for n, (state, _) in enumerate(cells):
        x, y = n % width, n // width
        mesa = image[height - 1 - y, x].astype(int)
        color = src[n:n + 1].astype(np.float32).astype(np.float64)  # the uniform is float32
        spec = spec_write_colors(np.zeros(1, dtype=np.int64), color, dst[n:n + 1],
                                 blend_state(*state))[0].astype(int)
        worst = max(worst, int(np.abs(mesa - spec).max()))
        assert np.abs(mesa - spec).max() <= 2, (state, src[n], dst[n], mesa, spec)
    print(f"{len(states)} blend states, {len(cells)} pixels: largest difference from llvmpipe "
          f"{worst}/255")


@pytest.mark.parametrize("channels", [4, 3])
def test_tiles_equal_compares_every_pixel_of_each_tile(channels):
    """RenderTarget.tiles_equal: a tile differs where any channel of any of its pixels does,
    partial edge tiles included; equal to comparing the tiles' blocks."""
    from tilesim.render.pipeline.framebuffer import RenderTarget

    target = RenderTarget(70, 37, tile_size=16)
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (37, 70, channels), dtype=np.uint8)
    b = a.copy()
    for y, x, c in [(0, 0, 0), (36, 69, channels - 1), (20, 40, 1), (21, 41, 2)]:
        b[y, x, c] ^= 1
    blocks = (target.tile_blocks(a).reshape(target.tile_count, -1)
              == target.tile_blocks(b).reshape(target.tile_count, -1)).all(axis=1)
    got = target.tiles_equal(a, b)
    np.testing.assert_array_equal(got, blocks)
    assert (~got).sum() == 3 and target.tiles_equal(a, a.copy()).all()


@given(st.lists(st.integers(-(1 << 40), 1 << 40), max_size=300),
       st.sampled_from([1, 7, 1 << 20]))
@settings(max_examples=60, deadline=None)
def test_distinct_vertex_indices_and_lines_are_numpys_unique(values, divisor):
    """Vertex fetch's distinct indices (with each element's rank) and its count of distinct
    cache lines, through a dense table where the range allows: np.unique's, for narrow and
    wide ranges alike."""
    from tilesim.render.pipeline.vertex_fetch import count_distinct, unique_inverse

    array = np.asarray(values, dtype=np.int64) // divisor
    ids, rank = unique_inverse(array)
    expected_ids, expected_rank = np.unique(array, return_inverse=True)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(rank, expected_rank)
    assert count_distinct(array) == expected_ids.size


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(0, 40),
                          st.sampled_from([0, 8, 12, 20, 32, 100])), min_size=1, max_size=5),
       st.integers(1, 400), st.sampled_from([16, 32, 64]))
def test_vertex_cache_lines_are_counted_per_address_range_as_over_all(layouts, vertices, line):
    """The vertex fetch counts each address range's distinct lines on its own: the same as
    the distinct lines of every attribute at once (ranges never share a line), for
    attributes interleaved in one buffer, in buffers of their own and in client arrays."""
    from tilesim.render.gl.state import AttribArray
    from tilesim.render.pipeline.vertex_fetch import _cache_lines, count_distinct

    rng = np.random.default_rng(vertices)
    ids = np.unique(rng.integers(0, 3 * vertices, vertices))
    by_range, every = {}, []
    for location, (buffer, size, offset, stride) in enumerate(layouts):
        attrib = AttribArray(enabled=True, size=size, stride=stride, offset=offset,
                             buffer=buffer if buffer < 3 else 0,
                             client_data=None if buffer < 3 else np.zeros(4))
        base, lines = _cache_lines(attrib, location, ids, line)
        by_range.setdefault(base, []).append(lines)
        every.append(lines)
    per_range = sum(count_distinct(np.concatenate(p)) for p in by_range.values())
    assert per_range == np.unique(np.concatenate(every)).size
