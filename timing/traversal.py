"""The order in which the raster pipeline visits the tiles of a render pass (Frame Coherence §2.3).

The counters store a pass's tiles row-major from the bottom-left tile: tile
``ty * tiles_x + tx``, tile row 0 at window y = 0 (the bottom, as in GL), and a
:class:`~tilesim.timing.counter_batch.Batch` keeps them so, pass after pass. The GPU visits
them in one of two orders:

* scanline: the top tile row first, left to right in each row (as a display scans out; the
  renderer's default, ``tilesim render --traversal scanline``);
* Z-order: the Morton (z order curve) key of ``(tx, tiles_y - 1 - ty)`` (column and row counted
  from the top left), lowest first, the traversal Frame Coherence §2.3 (Figure 2.10) names for
  Tile Cache locality; on a grid that is not a power of two the curve skips the missing tiles.
  Both are the renderer's ``RenderTarget.traversal`` orders, computed here from the pass's
  geometry alone (timing reads counters, never the pipeline).

Everything is vectorized over every tile of a batch: :func:`traversal` gives the visiting order
of all passes at once and :meth:`Traversal.next_active` the next tile of a kind in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def morton_keys(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Interleaved bits of ``x`` (even bits) and ``y`` (odd bits), 16 bits each: (n,) int64."""
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    key = np.zeros(np.broadcast(x, y).shape, dtype=np.int64)
    for bit in range(16):
        key |= ((x >> bit) & 1) << (2 * bit)
        key |= ((y >> bit) & 1) << (2 * bit + 1)
    return key


@dataclass(frozen=True)
class Traversal:
    """The visiting order of the tiles of a batch: ``order`` (N,) int64 tile indices, pass after
    pass, each pass's tiles in the order the GPU renders them; ``tile_pass`` (N,) the pass of
    each tile (as the batch stores it)."""

    order: np.ndarray
    tile_pass: np.ndarray

    def rank(self) -> np.ndarray:
        """Position of each tile in the batch's visiting order: (N,) int64."""
        rank = np.empty(self.order.size, dtype=np.int64)
        rank[self.order] = np.arange(self.order.size)
        return rank

    def next_active(self, active: np.ndarray) -> np.ndarray:
        """For each tile, the index of the first tile after it in visiting order, in the same
        pass, where ``active`` (N,) bool is True; -1 where there is none (the pass's last active
        tile and any tile after it): (N,) int64."""
        n = self.order.size
        if n == 0:
            return np.empty(0, dtype=np.int64)
        steps = np.arange(n, dtype=np.int64)
        # nearest active step at or after each step (n where none), then the one strictly after
        at_or_after = np.where(np.asarray(active, dtype=bool)[self.order], steps, n)
        at_or_after = np.minimum.accumulate(at_or_after[::-1])[::-1]
        after = np.append(at_or_after[1:], n)
        candidate = self.order[np.minimum(after, n - 1)]
        found = (after < n) & (self.tile_pass[candidate] == self.tile_pass[self.order])
        out = np.empty(n, dtype=np.int64)
        out[self.order] = np.where(found, candidate, -1)
        return out


def traversal(tile_pass: np.ndarray, pass_tiles_x: np.ndarray, pass_tiles: np.ndarray,
              zorder: bool = False) -> Traversal:
    """The visiting order of every pass's tiles (scanline, or Z-order when ``zorder``), from the
    batch's tile-to-pass map (N,) and each pass's tiles per row and tile count (P,)."""
    tile_pass = np.asarray(tile_pass, dtype=np.int64)
    n = tile_pass.size
    if n == 0:
        return Traversal(np.empty(0, dtype=np.int64), tile_pass)
    sizes = np.asarray(pass_tiles, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tiles_x = np.maximum(np.asarray(pass_tiles_x, dtype=np.int64), 1)
    tiles_y = sizes // tiles_x
    local = np.arange(n, dtype=np.int64) - starts[tile_pass]
    tx = local % tiles_x[tile_pass]
    from_top = tiles_y[tile_pass] - 1 - local // tiles_x[tile_pass]
    if zorder:
        key = (tile_pass << 32) | morton_keys(tx, from_top)
        order = np.argsort(key, kind="stable")
    else:  # scanline: the step of each tile is known, no sort
        step = starts[tile_pass] + from_top * tiles_x[tile_pass] + tx
        order = np.empty(n, dtype=np.int64)
        order[step] = np.arange(n)
    return Traversal(order, tile_pass)
