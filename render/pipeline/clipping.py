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
