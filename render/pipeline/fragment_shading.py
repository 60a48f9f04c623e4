"""Fragment shading: interpolate the inputs of every quad lane and run the fragment program.

Interpolation uses plane equations set up once per triangle (value = c + dx*x + dy*y at the
pixel center, in float64): depth and LINEAR inputs directly, PERSPECTIVE inputs as the ratio
of the planes of value/w and 1/w (perspective-correct), CONSTANT inputs from the provoking
vertex. Lanes of a quad that the triangle does not cover are helper lanes: they are
interpolated (extrapolated) and run, so derivatives are defined, but their results are
dropped. gl_FragCoord and gl_FrontFacing are given as softpipe's TGSI expects them
(FS_COORD_ORIGIN / FS_COORD_PIXEL_CENTER properties, FACE = +1 / -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import in_threads, jit, keep_quads, spans, usable
from tilesim.render.gl.state import Program
from tilesim.render.pipeline.rasterizer import Quads
from tilesim.render.pipeline.triangle_setup import Triangles


@dataclass
class FragmentLanes:
    """Quads and their lanes. Per quad (Q,): triangle row, quad x, y (pixel // 2); per lane
    (N = 4 * Q, quad order): pixel x, y and window depth z (float64)."""

    triangle: np.ndarray
    qx: np.ndarray
    qy: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray

    def span(self, start: int, stop: int) -> FragmentLanes:
        """Quads ``start..stop`` with their lanes (views)."""
        return FragmentLanes(self.triangle[start:stop], self.qx[start:stop],
                             self.qy[start:stop], self.x[4 * start:4 * stop],
                             self.y[4 * start:4 * stop], self.z[4 * start:4 * stop])

    def select(self, quads: np.ndarray, *lane_arrays) -> tuple[FragmentLanes, list]:
        """The quads where ``quads`` (Q,) is true, with their lanes; and the same lanes of
        each of ``lane_arrays`` (each (4 Q,): the batch's other per-lane arrays), in one
        compiled pass where it may (``jit.keep_quads``)."""
        fields = (self.triangle, self.qx, self.qy, self.x, self.y, self.z)
        if usable(quads, *fields, *lane_arrays):
            (triangle, qx, qy), (x, y, z, *kept) = keep_quads(quads, fields[:3],
                                                              (*fields[3:], *lane_arrays))
            return FragmentLanes(triangle, qx, qy, x, y, z), kept
        xp = array_module(self.x)
        lanes = xp.repeat(quads, 4)
        return (FragmentLanes(self.triangle[quads], self.qx[quads], self.qy[quads],
                              self.x[lanes], self.y[lanes], self.z[lanes]),
                [a[lanes] for a in lane_arrays])


def plane_coefficients(tris: Triangles, values: np.ndarray):
    """Planes through per-vertex ``values`` (T, 3, K): (c, a, b), each (T, K), such that the
    value at window position (x, y) is c + a*x + b*y."""
    xp = array_module(tris.x)
    if usable(tris.fx, tris.fy, values) and values.dtype == np.float64:
        return planes_compiled(tris.fx, tris.fy, values)
    x, y = tris.fx, tris.fy
    x10, y10 = x[:, 1] - x[:, 0], y[:, 1] - y[:, 0]
    x20, y20 = x[:, 2] - x[:, 0], y[:, 2] - y[:, 0]
    det = x10 * y20 - x20 * y10
    # A triangle degenerate before snapping but not after: constant planes.
    det = xp.where(det == 0, xp.inf, det)[:, None]
    d1 = values[:, 1] - values[:, 0]
    d2 = values[:, 2] - values[:, 0]
    a = (d1 * y20[:, None] - d2 * y10[:, None]) / det
    b = (d2 * x10[:, None] - d1 * x20[:, None]) / det
    c = values[:, 0] - a * x[:, :1] - b * y[:, :1]
    return c, a, b


def _evaluate(planes, lanes_: FragmentLanes) -> np.ndarray:
    """Plane values at the pixel centers of every lane: (N, K).

    All four lanes of a quad share a triangle, so coefficients are gathered once per quad
    and the lanes are reached by stepping from the quad's first pixel center.
    """
    xp = array_module(planes[0])
    c, a, b = planes
    if usable(c, lanes_.triangle):
        return evaluate_compiled(planes, lanes_.triangle, lanes_.qx, lanes_.qy)
    k = c.shape[1]
    rows = xp.concatenate([c, a, b], axis=1)[lanes_.triangle]      # (Q, 3K)
    a_q, b_q = rows[:, k:2 * k], rows[:, 2 * k:]
    origin = (rows[:, :k] + a_q * (2 * lanes_.qx + 0.5)[:, None]
              + b_q * (2 * lanes_.qy + 0.5)[:, None])
    out = xp.empty((lanes_.qx.size, 4, k), dtype=xp.float64)
    out[:, 0] = origin
    out[:, 1] = origin + a_q
    out[:, 2] = origin + b_q
    out[:, 3] = origin + a_q + b_q
    return out.reshape(-1, k)


def lanes(tris: Triangles, quads: Quads) -> FragmentLanes:
    if usable(quads.qx, quads.qy):
        px, py = lane_xy_compiled(quads.qx, quads.qy)
    else:
        px, py = (p.ravel() for p in quads.pixels())
    partial = FragmentLanes(quads.triangle, quads.qx, quads.qy, px, py, None)
    partial.z = _evaluate(plane_coefficients(tris, tris.z[:, :, None]), partial)[:, 0]
    return partial


def fragment_inputs(program: Program, tris: Triangles, lanes_: FragmentLanes,
                    vertex_rows: np.ndarray, columns: dict,
                    height: int, scale: int = 1) -> tuple[np.ndarray, dict]:
    """(IN registers (R, 4, N) float32, system values) for the fragment program.

    ``scale`` > 1: the lanes are superfragments of scale x scale pixels (DSR), rasterized in
    a space shrunk ``scale`` times; gl_FragCoord is the center of the block they cover."""
    xp = array_module(lanes_.x)
    fs = program.fragment.program
    n = lanes_.x.size
    # Filled below row by row; the channels nothing writes are zeroed at the end (zeroing
    # all of it first cost ~2% of a runner frame).
    inputs = xp.empty((max(fs.register_count("IN"), 1), 4, n), dtype=xp.float32)
    filled: dict[int, int] = {}     # register -> its channels written, from x
    interpolation = {}
    for d in fs.declared("IN"):
        for r in range(d.first, d.last + 1):
            interpolation[r] = d.interpolation or "PERSPECTIVE"
    props = fs.properties
    half = 0.5 if props.get("FS_COORD_PIXEL_CENTER", "HALF_INTEGER") == "HALF_INTEGER" else 0.0
    needs_w = False
    plan: list[tuple[int, int, str]] = []
    for reg, semantic in fs.input_semantics().items():
        if semantic in columns:
            mode = interpolation.get(reg, "PERSPECTIVE")
            plan.append((reg, columns[semantic], mode))
            needs_w |= mode == "PERSPECTIVE"
    inv_w = None
    if needs_w or any(s[0] == "POSITION" for s in fs.input_semantics().values()) or any(
            s[0] == "POSITION" for s in fs.system_value_semantics().values()):
        inv_w = _evaluate(plane_coefficients(tris, tris.inv_w[:, :, None]), lanes_)[:, 0]
    for reg, col, mode in plan:
        columns_ = vertex_rows[:, col:col + 4]
        filled[reg] = columns_.shape[-1]
        if mode == "CONSTANT":
            inputs[reg] = xp.repeat(columns_[tris.vertex[lanes_.triangle, 2]], 4, axis=0).T
            continue
        if usable(vertex_rows, tris.fx, tris.fy) and vertex_rows.dtype == np.float64:
            # the vertices' values gathered, divided by w and set up in one pass
            planes = attribute_planes_compiled(tris, vertex_rows, col, columns_.shape[-1],
                                               mode == "PERSPECTIVE")
        else:
            values = columns_[tris.vertex]                      # (T, 3, K)
            if mode == "PERSPECTIVE":
                values = values * tris.inv_w[:, :, None]
            planes = plane_coefficients(tris, values)
        if usable(inputs, lanes_.triangle):
            # Interpolated, divided and rounded to float32 in one pass, into the registers.
            evaluate_into_compiled(planes, lanes_.triangle, lanes_.qx, lanes_.qy,
                                   inv_w if mode == "PERSPECTIVE" else None, inputs[reg])
            continue
        result = _evaluate(planes, lanes_)
        if mode == "PERSPECTIVE":
            result = result / inv_w[:, None]
        inputs[reg] = result.T
    system_values = {}
    for reg, semantic in fs.input_semantics().items():
        if semantic[0] == "POSITION":
            inputs[reg] = _frag_coord(lanes_, inv_w, props, half, height, scale)
            filled[reg] = 4
        elif semantic[0] == "FACE":
            inputs[reg] = _face(tris, lanes_)
            filled[reg] = 4
    # Inputs the vertex shader does not write read as zero (GL: undefined).
    for reg in range(inputs.shape[0]):
        written = filled.get(reg, 0)
        if written < 4:
            inputs[reg, written:] = 0
    for semantic in fs.system_value_semantics().values():
        if semantic[0] == "FACE":
            system_values["FACE"] = _face(tris, lanes_)
        elif semantic[0] == "POSITION":
            system_values["POSITION"] = _frag_coord(lanes_, inv_w, props, half, height,
                                                    scale)
    return inputs, system_values


def _frag_coord(lanes_: FragmentLanes, inv_w, props: dict, half: float,
                height: int, scale: int = 1) -> np.ndarray:
    # The sample position in window pixels (y up): the pixel center, or the center of a
    # superfragment's block; ``half`` moves it to the integer corner when asked.
    xp = array_module(lanes_.x)
    x = (lanes_.x + 0.5) * scale - 0.5 + half
    y_up = (lanes_.y + 0.5) * scale
    if props.get("FS_COORD_ORIGIN") == "LOWER_LEFT":
        # softpipe's rasterizer counts rows from the top; the TGSI flips back with the
        # gl_FbWposYTransform constant.
        y = height - y_up - 0.5 + half
    else:
        y = y_up - 0.5 + half
    return xp.stack([x, y, lanes_.z, inv_w]).astype(xp.float32)


def _face(tris: Triangles, lanes_: FragmentLanes) -> np.ndarray:
    xp = array_module(tris.x)
    front = xp.repeat(tris.front[lanes_.triangle], 4)
    return xp.repeat(xp.where(front, 1.0, -1.0).astype(xp.float32)[None], 4, axis=0)


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit(inline=True)
def _triangle_frame(fx, fy, t):  # pragma: no cover - compiled
    # plane_coefficients' per-triangle terms: vertex 0 and the edges from it, the
    # determinant (infinite where zero: constant planes)
    x0, y0 = fx[t, 0], fy[t, 0]
    x10, y10 = fx[t, 1] - x0, fy[t, 1] - y0
    x20, y20 = fx[t, 2] - x0, fy[t, 2] - y0
    det = x10 * y20 - x20 * y10
    if det == 0:
        det = np.inf
    return x0, y0, x10, y10, x20, y20, det


@jit(inline=True)
def _plane(v0, v1, v2, x0, y0, x10, y10, x20, y20, det):  # pragma: no cover - compiled
    # plane_coefficients' expressions, in its order: (c, a, b)
    d1 = v1 - v0
    d2 = v2 - v0
    a = (d1 * y20 - d2 * y10) / det
    b = (d2 * x10 - d1 * x20) / det
    return v0 - a * x0 - b * y0, a, b


@jit(numpy_division=True)
def _planes_kernel(fx, fy, values, c, a, b):  # pragma: no cover - compiled
    for t in range(values.shape[0]):
        x0, y0, x10, y10, x20, y20, det = _triangle_frame(fx, fy, t)
        for j in range(values.shape[2]):
            c[t, j], a[t, j], b[t, j] = _plane(values[t, 0, j], values[t, 1, j],
                                               values[t, 2, j], x0, y0, x10, y10, x20, y20,
                                               det)


@jit(numpy_division=True)
def _attribute_planes_kernel(fx, fy, rows, vertex, col, inv_w, perspective, c, a,
                             b):  # pragma: no cover - compiled
    for t in range(vertex.shape[0]):
        x0, y0, x10, y10, x20, y20, det = _triangle_frame(fx, fy, t)
        r0, r1, r2 = vertex[t, 0], vertex[t, 1], vertex[t, 2]
        for j in range(c.shape[1]):
            v0, v1, v2 = rows[r0, col + j], rows[r1, col + j], rows[r2, col + j]
            if perspective:
                v0, v1, v2 = v0 * inv_w[t, 0], v1 * inv_w[t, 1], v2 * inv_w[t, 2]
            c[t, j], a[t, j], b[t, j] = _plane(v0, v1, v2, x0, y0, x10, y10, x20, y20, det)


def planes_compiled(fx, fy, values):
    """``plane_coefficients`` of float64 ``values`` (T, 3, K), in one pass."""
    shape = values.shape[0], values.shape[2]
    c, a, b = (np.empty(shape, dtype=np.float64) for _ in range(3))
    _planes_kernel(fx, fy, values, c, a, b)
    return c, a, b


def attribute_planes_compiled(tris: Triangles, rows, col: int, k: int, perspective: bool):
    """The planes of columns ``col..col + k`` of the float64 vertex ``rows`` over ``tris``
    (divided by w first where ``perspective``): ``plane_coefficients`` of
    ``rows[:, col:col + k][tris.vertex]`` (times ``tris.inv_w``), without the (T, 3, K)
    gathers."""
    shape = len(tris.vertex), k
    c, a, b = (np.empty(shape, dtype=np.float64) for _ in range(3))
    vertex = tris.vertex if tris.vertex.dtype == np.int64 else tris.vertex.astype(np.int64)
    _attribute_planes_kernel(tris.fx, tris.fy, rows, vertex, col, tris.inv_w, perspective,
                             c, a, b)
    return c, a, b


@jit
def _evaluate_kernel(c, a, b, triangle, qx, qy, out):  # pragma: no cover - compiled
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[4 * q, j] = origin
            out[4 * q + 1, j] = right
            out[4 * q + 2, j] = origin + bj
            out[4 * q + 3, j] = right + bj


def evaluate_compiled(planes, triangle, qx, qy) -> np.ndarray:
    """Plane values at every lane's pixel center, (4 * Q, K) float64, as
    ``fragment_shading._evaluate``."""
    c, a, b = (np.ascontiguousarray(p) for p in planes)
    out = np.empty((4 * triangle.size, c.shape[1]), dtype=np.float64)
    in_threads(lambda span: _evaluate_kernel(c, a, b, triangle[span[0]:span[1]],
                                             qx[span[0]:span[1]], qy[span[0]:span[1]],
                                             out[4 * span[0]:4 * span[1]]),
               spans(triangle.size, lanes_each=4))
    return out


@jit(numpy_division=True)
def _evaluate_perspective(c, a, b, triangle, qx, qy, inv_w, out):  # pragma: no cover
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[j, 4 * q] = origin / inv_w[4 * q]
            out[j, 4 * q + 1] = right / inv_w[4 * q + 1]
            out[j, 4 * q + 2] = (origin + bj) / inv_w[4 * q + 2]
            out[j, 4 * q + 3] = (right + bj) / inv_w[4 * q + 3]


@jit
def _evaluate_linear(c, a, b, triangle, qx, qy, out):  # pragma: no cover - compiled
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[j, 4 * q] = origin
            out[j, 4 * q + 1] = right
            out[j, 4 * q + 2] = origin + bj
            out[j, 4 * q + 3] = right + bj


def evaluate_into_compiled(planes, triangle, qx, qy, inv_w, out) -> None:
    """Write the plane values at every lane (divided by the lane's ``inv_w`` when it is not
    None: perspective-correct) into ``out`` (K, 4 * Q) (float32: rounded once, as NumPy's
    assignment of the float64 result rounds)."""
    c, a, b = (np.ascontiguousarray(p) for p in planes)

    # Each quad's lanes are its own: the quads split over threads (tilesim.jit.in_threads).
    def part(span):
        lo, hi = span
        if inv_w is None:
            _evaluate_linear(c, a, b, triangle[lo:hi], qx[lo:hi], qy[lo:hi],
                             out[:, 4 * lo:4 * hi])
        else:
            _evaluate_perspective(c, a, b, triangle[lo:hi], qx[lo:hi], qy[lo:hi],
                                  inv_w[4 * lo:4 * hi], out[:, 4 * lo:4 * hi])

    in_threads(part, spans(triangle.shape[0], lanes_each=4))


@jit
def _lane_xy(qx, qy, x, y):  # pragma: no cover - compiled
    for q in range(qx.shape[0]):
        for lane in range(4):
            x[4 * q + lane] = 2 * qx[q] + (lane & 1)
            y[4 * q + lane] = 2 * qy[q] + (lane >> 1)


def lane_xy_compiled(qx, qy) -> tuple[np.ndarray, np.ndarray]:
    """(4 * Q,) pixel x and y of every lane of the quads, as ``Quads.pixels`` (raveled)."""
    x = np.empty(4 * qx.size, dtype=np.int64)
    y = np.empty(4 * qx.size, dtype=np.int64)
    in_threads(lambda span: _lane_xy(qx[span[0]:span[1]], qy[span[0]:span[1]],
                                     x[4 * span[0]:4 * span[1]], y[4 * span[0]:4 * span[1]]),
               spans(qx.size, lanes_each=4))
    return x, y
