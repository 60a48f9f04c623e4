"""Clipping in clip space: near and far planes, w > 0, and a guard band for x and y.

GL clips to -w <= x, y, z <= w. The x/y planes are replaced by a guard band (|x|, |y| <=
GUARD_BAND * w): triangles that merely cross the viewport edges are kept whole and the
rasterizer's bounding box does the rest, as hardware rasterizers do; the guard band only keeps
window coordinates within the fixed-point range. Triangles entirely inside pass untouched
(the common case, no copying); triangles entirely outside one plane are rejected; the rest go
through a vectorized Sutherland-Hodgman over the planes, and each clipped polygon becomes a
fan of triangles in the original's place in the submission order. New vertices interpolate
every attribute linearly in clip space, which is what perspective-correct interpolation
after the divide expects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import jit, usable

GUARD_BAND = 8.0
W_EPSILON = 1e-6
# Planes as (a, b, c, d): inside when a*x + b*y + c*z + d*w >= 0.
PLANES = np.array([
    [0, 0, 1, 1],                 # near: z >= -w
    [0, 0, -1, 1],                # far: z <= w
    [0, 0, 0, 1],                 # w > 0 (with an epsilon below)
    [1, 0, 0, GUARD_BAND], [-1, 0, 0, GUARD_BAND],
    [0, 1, 0, GUARD_BAND], [0, -1, 0, GUARD_BAND],
], dtype=np.float64)


@dataclass
class ClippedTriangles:
    """Triangles after clipping.

    vertices: (V, D) float64 rows of [clip x, y, z, w, attributes...], the input rows first,
        then the vertices clipping made;
    triangles: (T, 3) rows into ``vertices``; source: (T,) index of the assembled triangle
        each came from (non-decreasing: submission order is kept);
    rejected: assembled triangles wholly outside; split: triangles that were cut.
    """

    vertices: np.ndarray
    triangles: np.ndarray
    source: np.ndarray
    rejected: int
    split: int


def _distances(positions: np.ndarray) -> np.ndarray:
    """Signed distances (..., P) of clip positions (..., 4) to the planes. Written out term by
    term (every row of PLANES has two non-zero coefficients, ±1 or a power of two, so every
    product is exact and any summation order gives the one rounding of a matrix product),
    without a BLAS call per draw."""
    xp = array_module(positions)
    positions = positions.astype(xp.float64, copy=False)
    x, y, z, w = (positions[..., k] for k in range(4))
    d = xp.empty((*positions.shape[:-1], len(PLANES)), dtype=xp.float64)
    for plane, (a, b, c, e) in enumerate(PLANES.tolist()):
        d[..., plane] = ((a * x + b * y) + c * z) + e * w
    d[..., 2] -= W_EPSILON
    return d


def clip_triangles(vertices: np.ndarray, triangles: np.ndarray) -> ClippedTriangles:
    """Clip (T, 3) triangles over (V, D) vertex rows (clip position in the first 4 columns)."""
    xp = array_module(vertices)
    distances = _distances(vertices[:, :4])                  # (V, P)
    # Outcode of every vertex: bit p set when it is not inside plane p (NaN: outside).
    outcode = xp.zeros(len(vertices), dtype=xp.int64)
    for plane in range(len(PLANES)):
        outcode |= (~(distances[:, plane] >= 0)).astype(xp.int64) << plane
    codes = outcode[triangles]                               # (T, 3)
    all_in = (codes[:, 0] | codes[:, 1] | codes[:, 2]) == 0
    rejected = (codes[:, 0] & codes[:, 1] & codes[:, 2]) != 0   # all 3 outside one plane
    cut = ~all_in & ~rejected
    order = xp.arange(len(triangles))
    if not bool(cut.any()):
        keep = all_in
        return ClippedTriangles(vertices, triangles[keep], order[keep], int(rejected.sum()), 0)

    polygons = vertices[triangles[cut]]                      # (C, 3, D)
    clipped = clip_polygons_compiled(polygons) if usable(polygons) else None
    if clipped is not None:
        polygons, counts = clipped
    else:
        counts = xp.full(len(polygons), 3, dtype=xp.int64)
        for plane in range(len(PLANES)):
            polygons, counts = _clip_polygons(polygons, counts, plane)
    # Fan-triangulate each polygon: (0, k, k+1) for k = 1 .. count-2.
    cut_sources = order[cut]
    fan = xp.maximum(counts - 2, 0)
    poly_index = xp.repeat(xp.arange(len(polygons)), fan)
    k = xp.arange(int(fan.sum())) - xp.repeat(xp.cumsum(fan) - fan, fan) + 1
    base = len(vertices)
    width = polygons.shape[1]
    new_vertices = polygons.reshape(-1, polygons.shape[2])
    flat = poly_index * width
    new_tris = xp.stack([flat, flat + k, flat + k + 1], axis=1) + base
    all_vertices = xp.concatenate([vertices, new_vertices])
    tris = xp.concatenate([triangles[all_in], new_tris])
    source = xp.concatenate([order[all_in], cut_sources[poly_index]])
    sort = xp.argsort(source, kind="stable")
    return ClippedTriangles(all_vertices, tris[sort], source[sort], int(rejected.sum()),
                            int(cut.sum()))


def _clip_polygons(polygons: np.ndarray, counts: np.ndarray, plane: int):
    """One Sutherland-Hodgman pass of (C, M, D) polygons with ``counts`` vertices each."""
    xp = array_module(polygons)
    c, m, dim = polygons.shape
    d = _distances(polygons[:, :, :4])[:, :, plane]          # (C, M)
    out = xp.zeros((c, m + 1, dim), dtype=xp.float64)
    out_counts = xp.zeros(c, dtype=xp.int64)
    rows = xp.arange(c)
    for i in range(m):
        valid = i < counts
        j = xp.where(i + 1 < counts, i + 1, 0)
        cur, nxt = polygons[:, i], polygons[rows, j]
        dc, dn = d[:, i], d[rows, j]
        emit_cur = valid & (dc >= 0)
        out[rows[emit_cur], out_counts[emit_cur]] = cur[emit_cur]
        out_counts += emit_cur
        crosses = valid & ((dc >= 0) != (dn >= 0))
        t = xp.where(crosses, dc / xp.where(crosses, dc - dn, 1.0), 0.0)
        point = cur + t[:, None] * (nxt - cur)
        out[rows[crosses], out_counts[crosses]] = point[crosses]
        out_counts += crosses
    return out, out_counts


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

# The vertices pass p of ``_clip_polygons`` holds: 3 + p, plus one.
PASS_HOLDS = 4


@jit(numpy_division=True)
def _clip_polygons_kernel(polygons, planes, epsilon, held, out, counts):  # pragma: no cover
    c, _, dim = polygons.shape
    width = out.shape[1]
    current = np.empty((width, dim), dtype=np.float64)
    distance = np.empty(width, dtype=np.float64)
    for q in range(c):
        for i in range(3):
            for k in range(dim):
                out[q, i, k] = polygons[q, i, k]
        count = 3
        for plane in range(planes.shape[0]):
            a, b, cz, e = planes[plane, 0], planes[plane, 1], planes[plane, 2], planes[plane, 3]
            for i in range(count):
                for k in range(dim):
                    current[i, k] = out[q, i, k]
                # the term by term sum of _distances, whatever the coefficients (0 * inf is
                # NaN there too)
                d = ((a * current[i, 0] + b * current[i, 1]) + cz * current[i, 2]) \
                    + e * current[i, 3]
                distance[i] = d - epsilon if plane == 2 else d
            emitted = 0
            for i in range(count):
                j = i + 1 if i + 1 < count else 0
                dc, dn = distance[i], distance[j]
                if emitted + (dc >= 0) + ((dc >= 0) != (dn >= 0)) > plane + held:
                    return False  # more than pass ``plane`` of the vectorized path holds
                if dc >= 0:
                    for k in range(dim):
                        out[q, emitted, k] = current[i, k]
                    emitted += 1
                if (dc >= 0) != (dn >= 0):
                    t = dc / (dc - dn)
                    for k in range(dim):
                        out[q, emitted, k] = current[i, k] + t * (current[j, k] - current[i, k])
                    emitted += 1
            count = emitted
        for i in range(count, width):
            for k in range(dim):
                out[q, i, k] = 0.0
        counts[q] = count
    return True


def clip_polygons_compiled(polygons: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``clip_triangles``' Sutherland-Hodgman passes over every plane of PLANES for (C, 3, D)
    triangles, one polygon at a time: (C, 3 + planes, D) float64 polygons (each pass may add a
    vertex; the rows past a polygon's count are 0, as the passes leave them) and (C,) int64
    vertex counts. Each distance, intersection and interpolated value is the vectorized
    passes' expression, in the same order. None where a pass would leave a polygon more
    vertices than that pass of the vectorized path holds (4 + the plane's index: only a
    polygon made non-convex by rounding could need more), so the vectorized path decides."""
    c, _, dim = polygons.shape
    out = np.empty((c, 3 + len(PLANES), dim), dtype=np.float64)
    counts = np.empty(c, dtype=np.int64)
    if not _clip_polygons_kernel(np.ascontiguousarray(polygons, dtype=np.float64), PLANES,
                                 W_EPSILON, PASS_HOLDS, out, counts):
        return None
    return out, counts
