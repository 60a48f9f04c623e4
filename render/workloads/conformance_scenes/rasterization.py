"""Conformance scenes: the fill rule and rasterization (shared edges, tile boundaries,
tiny and sliver triangles, overlap order)."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import _draw, _pixel_program
from tilesim.render.workloads.conformance_scenes.registry import scene


def _additive(gl: Recorder) -> None:
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("BLEND")
    gl.blendFunc("ONE", "ONE")


@scene("fill_fan")
def scene_fill_fan(gl: Recorder) -> None:
    """Triangle fans sharing edges (additive blending: a pixel drawn twice or missed shows)."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    # Fan 1: centre on a pixel centre, rim points on a circle rounded to half pixels.
    cx, cy = w // 4 + 0.5, h // 2 + 0.5
    angles = np.linspace(0, 2 * np.pi, 33)
    radius = min(w, h) * 0.22
    rim = np.stack([np.round((cx + radius * np.cos(angles)) * 2) / 2,
                    np.round((cy + radius * np.sin(angles)) * 2) / 2], axis=1)
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], rim]), (0.35, 0.25, 0.15, 1.0))
    # Fan 2: centre on a pixel corner, rim on a square with axis-aligned and diagonal spokes
    # through pixel centres.
    cx, cy = 3 * w // 4, h // 2
    r = int(min(w, h) * 0.2)
    square = []
    for k in range(17):
        t = k / 16 * 4
        side, f = int(t) % 4, t - int(t)
        x, y = [(r, -r + 2 * r * f), (r - 2 * r * f, r), (-r, r - 2 * r * f),
                (-r + 2 * r * f, -r)][side]
        square.append([cx + x + 0.5 * (k % 2), cy + y])
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], square]), (0.2, 0.3, 0.4, 1.0))
    # Fan 3 (small, top): many thin wedges meeting at one point.
    cx, cy = w // 2 + 0.25, h - h // 6 + 0.75
    angles = np.linspace(0, np.pi, 25)
    rim = np.stack([cx + 0.18 * w * np.cos(angles), cy - 0.1 * h * np.sin(angles)], axis=1)
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], rim]), (0.15, 0.4, 0.2, 1.0))
    gl.endFrame()


def _grid_mesh(x0, y0, nx, ny, step_x, step_y, jitter, rng, diagonal_flip=True):
    """Vertices (on a grid, optionally jittered) and triangle indices of an nx x ny grid."""
    gx, gy = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1))
    pts = np.stack([x0 + gx * step_x, y0 + gy * step_y], axis=-1).astype(np.float64)
    if jitter:
        inner = (gx > 0) & (gx < nx) & (gy > 0) & (gy < ny)
        offsets = np.round(rng.uniform(-jitter, jitter, pts.shape) * 256) / 256
        pts[inner] += offsets[inner]
    pts = pts.reshape(-1, 2)
    tris = []
    for j in range(ny):
        for i in range(nx):
            a = j * (nx + 1) + i
            b, c, d = a + 1, a + nx + 1, a + nx + 2
            if diagonal_flip and (i + j) % 2:
                tris += [[a, b, c], [b, d, c]]
            else:
                tris += [[a, b, d], [a, d, c]]
    return pts, np.asarray(tris)


@scene("fill_shared_edges")
def scene_fill_shared_edges(gl: Recorder) -> None:
    """Meshes whose vertices lie on pixel centres, on pixel corners and at jittered
    sub-pixel positions; additive blending shows double-covered or missed pixels."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(11)
    # Vertices on pixel centres: edges through centres in every direction (ties).
    pts, tris = _grid_mesh(2.5, 2.5, 6, 6, 3.0, 5.0, 0, rng)
    _draw(gl, "TRIANGLES", pts, (0.3, 0.2, 0.1, 1.0), indices=tris)
    # Vertices on pixel corners: diagonals with slope 1 go through centres.
    pts, tris = _grid_mesh(w // 2, 2, 7, 5, 8.0, 8.0, 0, rng)
    _draw(gl, "TRIANGLES", pts, (0.1, 0.3, 0.2, 1.0), indices=tris)
    # Jittered vertices (multiples of 1/256 px).
    pts, tris = _grid_mesh(3, h // 2 + 2, 9, 7, 6.5, 7.5, 2.5, rng)
    _draw(gl, "TRIANGLES", pts, (0.2, 0.1, 0.35, 1.0), indices=tris)
    # Half-pixel spacing: vertices alternate between centres and corners.
    pts, tris = _grid_mesh(w // 2 + 1, h // 2 + 3, 11, 11, 4.5, 4.5, 0, rng, False)
    _draw(gl, "TRIANGLES", pts, (0.25, 0.25, 0.05, 1.0), indices=tris)
    gl.endFrame()


@scene("fill_tile_boundaries")
def scene_fill_tile_boundaries(gl: Recorder) -> None:
    """Triangles with vertices and edges exactly on the 16-pixel tile grid (and half a pixel
    off it), large ones spanning tiles and small ones around tile corners."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    t = 16
    # Each tile of a band split by its diagonal, vertices on tile corners.
    pts, tris = _grid_mesh(0, 0, w // t, 2, t, t, 0, None)
    _draw(gl, "TRIANGLES", pts, (0.3, 0.15, 0.1, 1.0), indices=tris)
    # Edges on x = 16k + 0.5 / y = 16k + 0.5 (through pixel centres).
    pts, tris = _grid_mesh(0.5, 2 * t + 0.5, w // t - 1, 2, t, t, 0, None, False)
    _draw(gl, "TRIANGLES", pts, (0.1, 0.3, 0.15, 1.0), indices=tris)
    # Large triangles with vertices on tile corners spanning many tiles.
    big = np.array([[0, 4 * t], [w, 4 * t], [w // 2, h], [t, 5 * t], [3 * t, h - t],
                    [w - t, 5 * t]], dtype=np.float64)
    _draw(gl, "TRIANGLES", big, (0.12, 0.12, 0.3, 1.0))
    # Tiny triangles around tile corners.
    corners = [(x, y) for x in range(t, w, 2 * t) for y in range(5 * t, h, 2 * t)]
    small = []
    for k, (x, y) in enumerate(corners):
        d = 0.5 + 0.25 * (k % 4)
        small += [[x - d, y - d], [x + d, y - d], [x, y + d],
                  [x, y], [x + 2 * d, y], [x, y + 2 * d]]
    _draw(gl, "TRIANGLES", small, (0.35, 0.35, 0.0, 1.0))
    gl.endFrame()


@scene("tiny_triangles")
def scene_tiny_triangles(gl: Recorder) -> None:
    """Hundreds of sub-pixel and one-pixel triangles, some covering no pixel centre, some
    degenerate after snapping to 1/256 pixel."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(5)
    n = 600
    centre = rng.uniform([2, 2], [w - 2, h - 2], (n, 2))
    scale = rng.choice([0.002, 0.2, 0.5, 0.9, 1.6], n)
    offsets = rng.uniform(-1, 1, (n, 3, 2)) * scale[:, None, None]
    pts = (centre[:, None, :] + offsets).reshape(-1, 2)
    colors = np.repeat(rng.uniform(0.1, 0.5, (n, 4)).astype(np.float32), 3, axis=0)
    colors[:, 3] = 1.0
    _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()


@scene("sliver_triangles")
def scene_sliver_triangles(gl: Recorder) -> None:
    """Long thin triangles (0.02 to 0.7 pixel wide) at many angles, vertices on the
    1/256-pixel grid."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(9)
    n = 90
    # Wholly inside the viewport: llvmpipe clips triangles at the viewport edges (no guard
    # band), and the vertices clipping makes are rounded, which moves a sliver's edges.
    a = rng.uniform([1, 1], [w - 1, h - 1], (n, 2))
    b = rng.uniform([1, 1], [w - 1, h - 1], (n, 2))
    width = rng.choice([0.02, 0.1, 0.3, 0.5, 0.7], n)
    direction = (b - a) / np.linalg.norm(b - a, axis=1, keepdims=True)
    normal = np.stack([-direction[:, 1], direction[:, 0]], axis=1)
    c = (a + b) / 2 + normal * width[:, None]
    # Vertices on the 1/256-pixel grid both rasterizers snap to: with a power-of-two size
    # the vertex transform is exact, so coverage is decided by the same integer edge
    # functions on both sides (at other positions, last-bit differences of the transform
    # move a vertex by 1/256 pixel now and then, which a 0.02-pixel sliver feels).
    pts = np.round(np.stack([a, b, c], axis=1).reshape(-1, 2) * 256) / 256
    colors = np.repeat(rng.uniform(0.15, 0.45, (n, 4)).astype(np.float32), 3, axis=0)
    colors[:, 3] = 1.0
    _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()


@scene("overlap_order")
def scene_overlap_order(gl: Recorder) -> None:
    """Many overlapping triangles in one draw: the last one wins without blending, and the
    submission order shows with alpha blending."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(3)
    for half, blend in ((0, False), (1, True)):
        n = 120
        x0 = half * w / 2
        pts = rng.uniform([x0 + 2, 2], [x0 + w / 2 - 2, h - 2], (n * 3, 2))
        colors = rng.uniform(0.0, 1.0, (n * 3, 4)).astype(np.float32)
        colors[:, 3] = 0.55
        if blend:
            gl.enable("BLEND")
            gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()
