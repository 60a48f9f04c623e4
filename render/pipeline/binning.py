"""Binning: each triangle into the display list of every tile its bounding box touches.

A tile-based GPU writes every set-up primitive once to the Parameter Buffer and appends a
reference to it to the list of each tile it may cover (the polygon list builder); the raster
phase then reads, per tile, the list and the primitive data it points to. Lists here are
(tile, triangle) pairs sorted by tile, each tile's entries in submission order.

Parameter Buffer bytes (documented model): a primitive record is 3 vertices x (4 position +
the varying components) x 4 bytes, written once; each list entry is ``LIST_ENTRY_BYTES``.
A tile reads its list entries and, for each, the whole primitive record.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import jit, usable
from tilesim.render.pipeline.triangle_setup import SUBPIXEL, Triangles

LIST_ENTRY_BYTES = 4


@dataclass
class Bins:
    """Display lists. tile: (B,) tile numbers, triangle: (B,) rows of the Triangles, sorted by
    tile then submission order; per-tile counts are ``np.bincount(tile, minlength=tiles)``."""

    tile: np.ndarray
    triangle: np.ndarray
    record_bytes: int

    @functools.cached_property
    def touched(self) -> np.ndarray:
        """The tiles with an entry, ascending (asked for by several techniques per draw)."""
        return distinct_tiles(self.tile)


def distinct_tiles(tile: np.ndarray) -> np.ndarray:
    """``np.unique`` of tile numbers sorted ascending (display lists, or entries picked from
    them in order): the first of each run, without unique's sort."""
    xp = array_module(tile)
    if tile.size == 0:
        return tile
    first = xp.empty(tile.shape, dtype=bool)
    first[0] = True
    xp.not_equal(tile[1:], tile[:-1], out=first[1:])
    return tile[first]


def pixel_bounds(tris: Triangles, rect: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
    """Inclusive pixel bounding boxes (x0, y0, x1, y1) of triangles, clamped to ``rect``
    (x0, y0, x1, y1 exclusive). Empty boxes have x1 < x0 or y1 < y0."""
    xp = array_module(tris.x)
    rx0, ry0, rx1, ry1 = rect
    # Pixel centers at +0.5: pixel px can be covered if xmin <= px*S + S/2 <= xmax.
    half = SUBPIXEL // 2
    # (Element-wise over the three vertices: NumPy reduces short axes slowly.)
    x, y = tris.x, tris.y
    xmin = xp.minimum(xp.minimum(x[:, 0], x[:, 1]), x[:, 2])
    xmax = xp.maximum(xp.maximum(x[:, 0], x[:, 1]), x[:, 2])
    ymin = xp.minimum(xp.minimum(y[:, 0], y[:, 1]), y[:, 2])
    ymax = xp.maximum(xp.maximum(y[:, 0], y[:, 1]), y[:, 2])
    x0 = xp.maximum(-((-(xmin - half)) // SUBPIXEL), rx0)
    x1 = xp.minimum((xmax - half) // SUBPIXEL, rx1 - 1)
    y0 = xp.maximum(-((-(ymin - half)) // SUBPIXEL), ry0)
    y1 = xp.minimum((ymax - half) // SUBPIXEL, ry1 - 1)
    return x0, y0, x1, y1


def bin_triangles(tris: Triangles, rect, tile_size: int, tiles_x: int,
                  varying_components: int) -> Bins:
    xp = array_module(tris.x)
    x0, y0, x1, y1 = pixel_bounds(tris, rect)
    record = 3 * (4 + varying_components) * 4
    valid = (x1 >= x0) & (y1 >= y0)
    tx0, tx1 = x0 // tile_size, x1 // tile_size
    ty0, ty1 = y0 // tile_size, y1 // tile_size
    ntx = xp.where(valid, tx1 - tx0 + 1, 0)
    nty = xp.where(valid, ty1 - ty0 + 1, 0)
    per = ntx * nty
    entries = int(per.sum())
    tiles_in_rect = ((rect[3] - 1) // tile_size + 1) * tiles_x
    if usable(x0):
        return Bins(*bin_compiled(x0, y0, x1, y1, tile_size, tiles_x, tiles_in_rect, entries),
                    record)
    tri = xp.repeat(xp.arange(len(tris)), per)
    local = xp.arange(entries) - xp.repeat(xp.cumsum(per) - per, per)
    width = xp.repeat(xp.maximum(ntx, 1), per)
    tile = (xp.repeat(ty0, per) + local // width) * tiles_x + xp.repeat(tx0, per) + local % width
    # Tile numbers fit 16 bits at common sizes: NumPy radix-sorts those in linear time.
    key = tile.astype(xp.uint16) if tiles_in_rect <= (1 << 16) else tile
    order = xp.argsort(key, kind="stable")
    return Bins(tile[order], tri[order], record)


# == the compiled path (Numba, tilesim.jit): the same lists as the code above =============

@jit
def _bin(x0, y0, x1, y1, tile_size, tiles_x, tiles, starts, tile_out,
         triangle_out):  # pragma: no cover - compiled
    # A counting sort by tile of the entries made triangle by triangle, row by row: each
    # tile's entries in submission order, as the stable sort of the vectorized path leaves
    # them. ``starts`` (tiles + 1,) zeros on entry.
    count = x0.shape[0]
    for t in range(count):
        if x1[t] < x0[t] or y1[t] < y0[t]:
            continue
        for ty in range(y0[t] // tile_size, y1[t] // tile_size + 1):
            for tx in range(x0[t] // tile_size, x1[t] // tile_size + 1):
                starts[ty * tiles_x + tx + 1] += 1
    for k in range(tiles):
        starts[k + 1] += starts[k]
    for t in range(count):
        if x1[t] < x0[t] or y1[t] < y0[t]:
            continue
        for ty in range(y0[t] // tile_size, y1[t] // tile_size + 1):
            for tx in range(x0[t] // tile_size, x1[t] // tile_size + 1):
                tile = ty * tiles_x + tx
                at = starts[tile]
                tile_out[at] = tile
                triangle_out[at] = t
                starts[tile] = at + 1


def bin_compiled(x0, y0, x1, y1, tile_size: int, tiles_x: int, tiles: int,
                 entries: int) -> tuple:
    """(tile, triangle) of the ``entries`` display-list entries of the pixel bounding boxes
    (x0, y0, x1, y1) (``pixel_bounds``; empty where x1 < x0 or y1 < y0) in ``tiles`` tiles,
    sorted by tile, each tile's in submission order: ``bin_triangles``' lists."""
    tiles = max(tiles, 1)
    tile = np.empty(entries, dtype=np.int64)
    triangle = np.empty(entries, dtype=np.int64)
    _bin(x0, y0, x1, y1, tile_size, tiles_x, tiles, np.zeros(tiles + 1, dtype=np.int64), tile,
         triangle)
    return tile, triangle
