"""Triangle setup: perspective divide, viewport and depth range, facing, culling, snapping.

Window coordinates are snapped to a 1/256-pixel grid (``SUBPIXEL_BITS`` = 8, as llvmpipe's
rasterizer), so the edge functions the rasterizer evaluates are exact integers and the fill
rule is decided without rounding error. Triangles are turned to counter-clockwise order here
(y up), remembering which way they faced; zero-area triangles are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import jit, nan_cast, usable

SUBPIXEL_BITS = 8
SUBPIXEL = 1 << SUBPIXEL_BITS


@dataclass
class Triangles:
    """Set-up triangles, SoA over T triangles in submission order.

    x, y: (T, 3) int64 snapped window coordinates in 1/256 pixels (counter-clockwise), for
    coverage; fx, fy: (T, 3) float64 window coordinates before snapping, for interpolation
    (as llvmpipe: attribute planes come from the exact positions);
    z: (T, 3) float64 window depth in [0, 1]; inv_w: (T, 3) float64 1/w_clip;
    vertex: (T, 3) rows into the clipped vertex array (for attributes);
    front: (T,) bool; area2: (T,) int64 twice the area in subpixel units squared;
    source: (T,) index of the assembled primitive.
    """

    x: np.ndarray
    y: np.ndarray
    fx: np.ndarray
    fy: np.ndarray
    z: np.ndarray
    inv_w: np.ndarray
    vertex: np.ndarray
    front: np.ndarray
    area2: np.ndarray
    source: np.ndarray

    def __len__(self) -> int:
        return len(self.source)

    def select(self, keep: np.ndarray) -> Triangles:
        if keep.dtype == bool:
            # Row indices gather (T, 3) arrays faster than a boolean mask.
            keep = array_module(keep).flatnonzero(keep)
        return Triangles(self.x[keep], self.y[keep], self.fx[keep], self.fy[keep],
                         self.z[keep], self.inv_w[keep], self.vertex[keep], self.front[keep],
                         self.area2[keep], self.source[keep])

    def shrunk(self, scale: int) -> Triangles:
        """The same triangles in a window shrunk ``scale`` times (DSR's superfragments),
        snapped again; triangles may become degenerate there (area2 == 0)."""
        xp = array_module(self.x)
        fx, fy = self.fx / scale, self.fy / scale
        x = xp.round(fx * SUBPIXEL).astype(xp.int64)
        y = xp.round(fy * SUBPIXEL).astype(xp.int64)
        return Triangles(x, y, fx, fy, self.z, self.inv_w, self.vertex, self.front,
                         xp.maximum(twice_area(x, y), 0), self.source)


def twice_area(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Twice the signed area of (T, 3) vertex coordinates (> 0: counter-clockwise, y up)."""
    return (x[:, 1] - x[:, 0]) * (y[:, 2] - y[:, 0]) - (x[:, 2] - x[:, 0]) * (y[:, 1] - y[:, 0])


@dataclass
class SetupResult:
    triangles: Triangles
    culled: int       # back/front-face culled
    degenerate: int   # zero area after snapping


def setup(vertices: np.ndarray, triangles: np.ndarray, source: np.ndarray, *,
          viewport: tuple[int, int, int, int], depth_range: tuple[float, float],
          cull: str | None, front_face: str,
          polygon_offset: tuple[float, float] | None = None, depth_bits: int = 24) -> SetupResult:
    """Window-space triangles from clipped ``vertices`` (V, 4+K) and ``triangles`` (T, 3).

    ``cull`` is None (culling off), 'FRONT', 'BACK' or 'FRONT_AND_BACK'.
    """
    xp = array_module(vertices)
    vx, vy, vw, vh = viewport
    near, far = depth_range
    if polygon_offset is None and usable(vertices, triangles, source) \
            and vertices.dtype == np.float64:
        return setup_compiled(vertices, triangles, source, (vx, vy, vw * 0.5, vh * 0.5),
                              ((far - near) * 0.5, (far + near) * 0.5), cull, front_face)
    pos = vertices[:, :4]
    # Vertices no kept triangle uses may have w <= 0 (clipping left them in the array).
    used = xp.zeros(len(pos), dtype=bool)
    used[triangles.ravel()] = True
    w = xp.where(used, pos[:, 3], 1.0)
    inv_w = 1.0 / w
    ndc = xp.where(used[:, None], pos[:, :3] * inv_w[:, None], 0.0)
    wx = (ndc[:, 0] + 1.0) * (vw * 0.5) + vx
    wy = (ndc[:, 1] + 1.0) * (vh * 0.5) + vy
    wz = ndc[:, 2] * ((far - near) * 0.5) + (far + near) * 0.5
    sx = xp.round(wx * SUBPIXEL).astype(xp.int64)
    sy = xp.round(wy * SUBPIXEL).astype(xp.int64)

    x, y = sx[triangles], sy[triangles]
    area2 = twice_area(x, y)
    ccw = area2 > 0
    front = ccw if front_face == "CCW" else ~ccw
    keep = area2 != 0
    degenerate = int((~keep).sum())
    culled_mask = xp.zeros(len(triangles), dtype=bool)
    if cull == "BACK":
        culled_mask = keep & ~front
    elif cull == "FRONT":
        culled_mask = keep & front
    elif cull == "FRONT_AND_BACK":
        culled_mask = keep.copy()
    keep &= ~culled_mask

    order = triangles.copy()
    cw = ~ccw
    order[cw] = order[cw][:, [0, 2, 1]]  # make every triangle counter-clockwise
    z = wz[order]
    if polygon_offset is not None:
        z = z + _polygon_offset(sx[order], sy[order], z, polygon_offset, depth_bits)[:, None]
        z = xp.clip(z, 0.0, 1.0)
    tris = Triangles(sx[order], sy[order], wx[order], wy[order], z, inv_w[order], order,
                     front, xp.abs(area2), source)
    return SetupResult(tris.select(keep), int(culled_mask.sum()), degenerate)


def _polygon_offset(x, y, z, offset, depth_bits):
    """factor * max(|dz/dx|, |dz/dy|) + units * r, per triangle (ES 2.0 §3.5.2)."""
    xp = array_module(x)
    factor, units = offset
    fx = x / SUBPIXEL
    fy = y / SUBPIXEL
    ax, ay = fx[:, 1] - fx[:, 0], fy[:, 1] - fy[:, 0]
    bx, by = fx[:, 2] - fx[:, 0], fy[:, 2] - fy[:, 0]
    az, bz = z[:, 1] - z[:, 0], z[:, 2] - z[:, 0]
    det = ax * by - bx * ay
    det = xp.where(det == 0, 1.0, det)
    dzdx = (az * by - bz * ay) / det
    dzdy = (bz * ax - az * bx) / det
    return factor * xp.maximum(xp.abs(dzdx), xp.abs(dzdy)) + units / float(1 << depth_bits)


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

# NumPy's cast of NaN, infinities and values out of range to int64
_INDEFINITE = nan_cast(np.int64)
_CULL = {None: 0, "BACK": 1, "FRONT": 2, "FRONT_AND_BACK": 3}


@jit(inline=True)
def _subpixels(value, indefinite):  # pragma: no cover - compiled
    # round(value * SUBPIXEL).astype(int64): half to even, NumPy's cast where out of range
    scaled = np.rint(value * SUBPIXEL)
    if not (scaled >= -9.223372036854775808e18 and scaled < 9.223372036854775808e18):
        return np.int64(indefinite)
    return np.int64(scaled)


@jit(numpy_division=True)
def _setup_vertices(pos, used, vx, vy, half_w, half_h, z_scale, z_bias, indefinite, inv_w, wx,
                    wy, wz, sx, sy):  # pragma: no cover - compiled
    for v in range(pos.shape[0]):
        w = pos[v, 3] if used[v] else 1.0
        iw = 1.0 / w
        inv_w[v] = iw
        n0 = pos[v, 0] * iw if used[v] else 0.0
        n1 = pos[v, 1] * iw if used[v] else 0.0
        n2 = pos[v, 2] * iw if used[v] else 0.0
        x = (n0 + 1.0) * half_w + vx
        y = (n1 + 1.0) * half_h + vy
        wx[v] = x
        wy[v] = y
        wz[v] = n2 * z_scale + z_bias
        sx[v] = _subpixels(x, indefinite)
        sy[v] = _subpixels(y, indefinite)


@jit
def _setup_triangles(triangles, sx, sy, ccw_front, cull, keep, front, area,
                     counts):  # pragma: no cover - compiled
    # pass 1: area, facing, culling of every triangle (counts: degenerate, culled, kept)
    for t in range(triangles.shape[0]):
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        area2 = (sx[b] - sx[a]) * (sy[c] - sy[a]) - (sx[c] - sx[a]) * (sy[b] - sy[a])
        ccw = area2 > 0
        faces_front = ccw if ccw_front else not ccw
        kept = area2 != 0
        if not kept:
            counts[0] += 1
        culled = kept and (cull == 3 or (cull == 1 and not faces_front)
                           or (cull == 2 and faces_front))
        if culled:
            counts[1] += 1
            kept = False
        keep[t] = kept
        front[t] = faces_front
        area[t] = area2 if area2 >= 0 else -area2
        if kept:
            counts[2] += 1


@jit
def _gather_triangles(triangles, source, keep, front, area, ccw_front, sx, sy, wx, wy, wz,
                      inv_w, x, y, fx, fy, z, iw, vertex, front_out, area_out,
                      source_out):  # pragma: no cover - compiled
    # pass 2: the kept triangles counter-clockwise (vertices 1 and 2 swapped where not: where
    # the facing pass 1 found differs from the front face's winding)
    k = 0
    for t in range(triangles.shape[0]):
        if not keep[t]:
            continue
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        if front[t] != ccw_front:
            b, c = c, b
        for j in range(3):
            v = a if j == 0 else (b if j == 1 else c)
            vertex[k, j] = v
            x[k, j] = sx[v]
            y[k, j] = sy[v]
            fx[k, j] = wx[v]
            fy[k, j] = wy[v]
            z[k, j] = wz[v]
            iw[k, j] = inv_w[v]
        front_out[k] = front[t]
        area_out[k] = area[t]
        source_out[k] = source[t]
        k += 1


def setup_compiled(vertices, triangles, source, viewport_terms, depth_terms, cull,
                   front_face: str) -> SetupResult:
    """``setup`` without a polygon offset, in compiled passes: the same window coordinates,
    snapping, facing, culling and kept triangles. ``viewport_terms`` (x, y, width / 2,
    height / 2), ``depth_terms`` ((far - near) / 2, (far + near) / 2), as ``setup`` forms
    them."""
    count = vertices.shape[0]
    used = np.zeros(count, dtype=bool)
    used[triangles.ravel()] = True
    inv_w, wx, wy, wz = (np.empty(count, dtype=np.float64) for _ in range(4))
    sx, sy = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
    vx, vy, half_w, half_h = viewport_terms
    _setup_vertices(vertices, used, float(vx), float(vy), float(half_w), float(half_h),
                    float(depth_terms[0]), float(depth_terms[1]), _INDEFINITE, inv_w, wx, wy,
                    wz, sx, sy)
    t = triangles.shape[0]
    keep, front = np.empty(t, dtype=bool), np.empty(t, dtype=bool)
    area, counts = np.empty(t, dtype=np.int64), np.zeros(3, dtype=np.int64)
    ccw_front = front_face == "CCW"
    _setup_triangles(triangles, sx, sy, ccw_front, _CULL.get(cull, 0), keep, front, area,
                     counts)
    kept = int(counts[2])
    out = (np.empty((kept, 3), dtype=np.int64), np.empty((kept, 3), dtype=np.int64),
           *(np.empty((kept, 3), dtype=np.float64) for _ in range(4)),
           np.empty((kept, 3), dtype=triangles.dtype), np.empty(kept, dtype=bool),
           np.empty(kept, dtype=np.int64), np.empty(kept, dtype=source.dtype))
    _gather_triangles(triangles, source, keep, front, area, ccw_front, sx, sy, wx, wy, wz,
                      inv_w, *out)
    x, y, fx, fy, z, iw, vertex, front_out, area_out, source_out = out
    return SetupResult(Triangles(x, y, fx, fy, z, iw, vertex, front_out, area_out, source_out),
                       int(counts[1]), int(counts[0]))
