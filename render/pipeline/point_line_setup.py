"""Points and lines as triangles, so the one triangle rasterizer draws them.

A line segment becomes a rectangle ``lineWidth`` pixels wide, offset along the minor axis as
GL's non-antialiased wide lines are (§3.4.2 of ES 2.0: x-major lines are widened in y, y-major
lines in x), spanning the segment from end to end; a point becomes a square of
``gl_PointSize`` pixels (1 when the shader does not write it) centered on the vertex, with
gl_PointCoord running from (0, 0) at the upper left to (1, 1) at the lower right. Offsets are
made in clip space (scaled by w), so the shapes then go through clipping, setup and
rasterization like any triangle. Segments are first clipped to the near, far and w > 0 planes
(GL clips a line, not its rectangle). These are close approximations of GL's diamond-exit and
point rules, not exact: lines and points are counted exactly, their pixels may differ at the
ends from a given driver's.
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import array_module
from tilesim.render.pipeline.clipping import W_EPSILON

POINT_COORD = ("PCOORD", 0)


def _clip_segments(p0: np.ndarray, p1: np.ndarray):
    """Clip (L, D) endpoint rows to near, far and w > 0; returns rows and a keep mask."""
    xp = array_module(p0)
    keep = xp.ones(len(p0), dtype=bool)
    p0, p1 = p0.copy(), p1.copy()
    for plane in (xp.array([0, 0, 1, 1.0]), xp.array([0, 0, -1, 1.0]),
                  xp.array([0, 0, 0, 1.0])):
        eps = W_EPSILON if plane[2] == 0 else 0.0
        d0 = p0[:, :4] @ plane - eps
        d1 = p1[:, :4] @ plane - eps
        keep &= ~((d0 < 0) & (d1 < 0))
        t = xp.where(d0 != d1, d0 / xp.where(d0 != d1, d0 - d1, 1.0), 0.0)[:, None]
        cut = p0 + t * (p1 - p0)
        p0 = xp.where((d0 < 0)[:, None], cut, p0)
        p1 = xp.where((d1 < 0)[:, None], cut, p1)
    return p0, p1, keep


def lines_to_triangles(rows: np.ndarray, segments: np.ndarray, viewport, width: float):
    """(vertex rows, (2L, 3) triangles) for (L, 2) segments over (V, D) vertex ``rows``."""
    xp = array_module(rows)
    p0, p1, keep = _clip_segments(rows[segments[:, 0]], rows[segments[:, 1]])
    p0, p1 = p0[keep], p1[keep]
    _, _, vw, vh = viewport
    w0, w1 = p0[:, 3:4], p1[:, 3:4]
    d = (p1[:, :2] / w1 - p0[:, :2] / w0) * xp.array([vw, vh]) / 2
    x_major = xp.abs(d[:, 0]) >= xp.abs(d[:, 1])
    half = width / 2
    offset_px = xp.where(x_major[:, None], xp.asarray([0.0, half]), xp.asarray([half, 0.0]))
    offset_ndc = offset_px * 2 / xp.array([max(vw, 1), max(vh, 1)])
    corners = []
    for point, w in ((p0, w0), (p1, w1)):
        for sign in (-1.0, 1.0):
            c = point.copy()
            c[:, :2] += sign * offset_ndc * w
            corners.append(c)
    n = len(p0)
    out = xp.concatenate(corners)                     # a0, b0, a1, b1 blocks of n rows
    i = xp.arange(n)
    tris = xp.concatenate([xp.stack([i, i + n, i + 2 * n], axis=1),
                           xp.stack([i + n, i + 3 * n, i + 2 * n], axis=1)])
    order = xp.argsort(xp.concatenate([i, i]), kind="stable")  # keep segment order
    return out, tris[order]


def points_to_triangles(rows: np.ndarray, indices: np.ndarray, viewport,
                        point_size: np.ndarray | None, max_size: float):
    """(vertex rows with 4 more columns for gl_PointCoord, (2P, 3) triangles). gl_PointSize
    is clamped to 1..``max_size`` pixels, the aliased point size range (OpenGL ES 2.0 spec
    section 3.3)."""
    xp = array_module(rows)
    p = rows[indices]
    inside = (p[:, 2] >= -p[:, 3]) & (p[:, 2] <= p[:, 3]) & (p[:, 3] > W_EPSILON)
    p = p[inside]
    size = xp.ones(len(p)) if point_size is None else point_size[indices][inside]
    size = xp.clip(size, 1.0, max_size)
    _, _, vw, vh = viewport
    half_ndc = xp.stack([size / max(vw, 1), size / max(vh, 1)], axis=1)
    corners = []
    # (x sign, y sign, s, t): t = 0 at the top (+y) as gl_PointCoord's origin is upper left.
    for sx, sy, s, t in ((-1, -1, 0, 1), (1, -1, 1, 1), (-1, 1, 0, 0), (1, 1, 1, 0)):
        c = xp.concatenate([p, xp.zeros((len(p), 4))], axis=1)
        c[:, :2] += xp.array([sx, sy]) * half_ndc * p[:, 3:4]
        c[:, -4:] = [s, t, 0.0, 1.0]
        corners.append(c)
    n = len(p)
    out = xp.concatenate(corners)
    i = xp.arange(n)
    tris = xp.concatenate([xp.stack([i, i + n, i + 3 * n], axis=1),
                           xp.stack([i, i + 3 * n, i + 2 * n], axis=1)])
    order = xp.argsort(xp.concatenate([i, i]), kind="stable")
    return out, tris[order]
