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
