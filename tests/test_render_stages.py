"""Pipeline stages on their own: assembly, clipping, setup, rasterization, depth and blending."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from render import clipping, output_merger, primitive_assembly, rasterizer, triangle_setup
from render.gl_state import FragmentState


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


@pytest.mark.parametrize("func", list(output_merger.COMPARE))
@pytest.mark.parametrize("write", [True, False])
def test_ranked_depth_test_equals_sequential_processing(func, write):
    rng = np.random.default_rng(7)
    pixel = rng.integers(0, 20, 400)
    depth = rng.integers(0, 50, 400)
    buffer = rng.integers(0, 50, 20)
    expected_buffer = buffer.copy()
    expected = np.zeros(400, dtype=bool)
    for i in range(400):
        ok = output_merger.COMPARE[func](np.array(depth[i]), np.array(expected_buffer[pixel[i]]))
        expected[i] = ok
        if ok and write:
            expected_buffer[pixel[i]] = depth[i]
    passed = output_merger.depth_test(pixel, depth, buffer, func, write)
    np.testing.assert_array_equal(passed, expected)
    np.testing.assert_array_equal(buffer, expected_buffer)


@pytest.mark.parametrize("factors", [("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "FUNC_ADD"),
                                     ("DST_COLOR", "ONE", "FUNC_SUBTRACT"),
                                     ("SRC_ALPHA_SATURATE", "CONSTANT_COLOR",
                                      "FUNC_REVERSE_SUBTRACT")])
def test_ranked_blending_equals_sequential_processing(factors):
    rng = np.random.default_rng(3)
    state = FragmentState(blend=True, blend_src_rgb=factors[0], blend_dst_rgb=factors[1],
                          blend_src_alpha=factors[0], blend_dst_alpha=factors[1],
                          blend_eq_rgb=factors[2], blend_eq_alpha=factors[2],
                          blend_color=(0.25, 0.5, 0.75, 0.5), color_mask=(True, True, False, True))
    pixel = rng.integers(0, 10, 100)
    color = rng.random((100, 4))
    buffer = rng.integers(0, 256, (10, 4)).astype(np.uint8)
    expected = buffer.copy()
    for i in range(100):
        dst = expected[pixel[i]].astype(np.float64)[None] / 255
        out = output_merger.to_unorm8(output_merger.blend(color[i:i + 1], dst, state))[0]
        expected[pixel[i], [0, 1, 3]] = out[[0, 1, 3]]
    output_merger.write_colors(pixel, color, buffer, state)
    np.testing.assert_array_equal(buffer, expected)


def test_last_fragment_wins_without_blending():
    state = FragmentState()
    buffer = np.zeros((4, 4), dtype=np.uint8)
    pixel = np.array([1, 2, 1, 1])
    color = np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1]], dtype=float)
    output_merger.write_colors(pixel, color, buffer, state)
    np.testing.assert_array_equal(buffer[1], [255, 255, 255, 255])
    np.testing.assert_array_equal(buffer[2], [0, 255, 0, 255])
