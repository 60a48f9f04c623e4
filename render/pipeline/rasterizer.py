"""Rasterization: triangles into 2x2 quads of covered pixels, with exact edge functions.

Pixel centers sit at (x + 0.5, y + 0.5). Edge functions are evaluated on the 1/256-pixel
grid in 64-bit integers, so coverage is exact; a center exactly on an edge belongs to the
triangle only if that edge is a left or a bottom edge (GL window coordinates, y up): Mesa's
rule (top-left with y pointing down), measured on llvmpipe and softpipe. Either tie rule
makes shared edges cover every pixel exactly once. Candidate quads are the quads of each
triangle's bounding box (clamped to the render rectangle), generated for many triangles at
once and processed in chunks that bound memory (or, for NumPy arrays where Numba is
installed, walked quad by quad in a compiled loop: ``rasterize_compiled``, the same quads).
The raster phase walks a draw's display lists instead where it can (``rasterize_entries``:
each entry's triangle inside its tile, tile by tile), which gives the same quads already in
tile order, each with its entry.

Lanes of a quad are ordered top-left, top-right, bottom-left, bottom-right in the
interpreter's terms: lane k is pixel (2*qx + (k & 1), 2*qy + (k >> 1)), "bottom" being +1 in
window y.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import in_threads, jit, spans, usable
from tilesim.render.pipeline.binning import pixel_bounds
from tilesim.render.pipeline.options import FILL_RULES
from tilesim.render.pipeline.triangle_setup import SUBPIXEL, Triangles

CHUNK_QUADS = 1 << 16
LANE_DX = np.array([0, 1, 0, 1], dtype=np.int64)
LANE_DY = np.array([0, 0, 1, 1], dtype=np.int64)


@dataclass
class Quads:
    """Covered quads, SoA, in submission order of their triangles.

    triangle: (Q,) rows of the Triangles; qx, qy: (Q,) quad coordinates (pixel // 2);
    coverage: (Q, 4) bool per lane; candidates: quads tested (for counters).
    """

    triangle: np.ndarray
    qx: np.ndarray
    qy: np.ndarray
    coverage: np.ndarray
    candidates: int

    def __len__(self) -> int:
        return len(self.triangle)

    def pixels(self) -> tuple[np.ndarray, np.ndarray]:
        """(Q, 4) pixel x and y of every lane."""
        xp = array_module(self.qx)
        return (2 * self.qx[:, None] + xp.asarray(LANE_DX)[None, :],
                2 * self.qy[:, None] + xp.asarray(LANE_DY)[None, :])


def edge_setup(tris: Triangles, fill_rule: str = "bottom_left"):
    """Per triangle and edge i (v_i -> v_i+1): (A, B, C) with E(cx, cy) = A*cx + B*cy + C in
    subpixel units, and the tie bias (0: a center on the edge is covered, 1: it is not)."""
    xp = array_module(tris.x)
    x, y = tris.x, tris.y
    # v_i+1 - v_i for i = 0, 1, 2 (what np.roll(x, -1, axis=1) - x gives, without its
    # per-call overhead: a draw rasterizes once per batch).
    dx = xp.concatenate([x[:, 1:], x[:, :1]], axis=1) - x
    dy = xp.concatenate([y[:, 1:], y[:, :1]], axis=1) - y
    if fill_rule == "top_left":
        # Counter-clockwise, y up: left edges go down, top edges go right-to-left.
        include = (dy < 0) | ((dy == 0) & (dx < 0))
    elif fill_rule == "bottom_left":
        include = (dy < 0) | ((dy == 0) & (dx > 0))
    else:
        raise ValueError(f"unknown fill rule {fill_rule!r}: expected one of {FILL_RULES}")
    return -dy, dx, dy * x - dx * y, xp.where(include, 0, 1).astype(xp.int64)


def rasterize(tris: Triangles, rect: tuple[int, int, int, int],
              fill_rule: str = "bottom_left") -> Quads:
    """Covered quads of ``tris`` inside ``rect`` (x0, y0, x1, y1), x1/y1 exclusive."""
    xp = array_module(tris.x)
    x0, y0, x1, y1 = pixel_bounds(tris, rect)
    valid = (x1 >= x0) & (y1 >= y0)
    qx0, qy0 = x0 // 2, y0 // 2
    nqx = xp.where(valid, x1 // 2 - qx0 + 1, 0)
    nqy = xp.where(valid, y1 // 2 - qy0 + 1, 0)
    per = nqx * nqy
    a, b, c, bias = edge_setup(tris, fill_rule)
    if usable(a):
        # The same quads, walked triangle by triangle in a compiled loop.
        triangle, qx, qy, covered = rasterize_compiled(a, b, c, bias, x0, y0, x1, y1, rect,
                                                       SUBPIXEL)
        return Quads(triangle, qx, qy, covered, int(per.sum()))
    # One stacked table so that a single row gather per candidate fetches all of it.
    # The largest increase of each edge function over a quad's four pixel centers: a quad
    # whose best lane fails an edge is rejected before its lanes are evaluated.
    reach = xp.maximum(a, 0) * SUBPIXEL + xp.maximum(b, 0) * SUBPIXEL
    # float64 holds every edge value exactly (|E| < 2^47 within the guard band, 53-bit
    # mantissa) and multiplies far faster than int64 on SIMD hardware.
    table = xp.concatenate([a, b, c, bias - reach, bias], axis=1).astype(xp.float64)
    rx0, ry0, rx1, ry1 = rect
    parts = []
    candidates = int(per.sum())
    ends = xp.cumsum(per)
    start = 0
    while start < len(tris):
        # Take triangles until the chunk holds CHUNK_QUADS candidates (at least one triangle).
        base = int(ends[start - 1]) if start else 0
        stop = max(int(xp.searchsorted(ends, base + CHUNK_QUADS, side="right")), start + 1)
        counts = per[start:stop]
        total = int(counts.sum())
        start_of = xp.repeat(xp.cumsum(counts) - counts, counts)
        tri = xp.repeat(xp.arange(start, stop), counts)
        local = xp.arange(total) - start_of
        width = xp.repeat(xp.maximum(nqx[start:stop], 1), counts)
        qy_local, qx_local = xp.divmod(local, width)
        qx = xp.repeat(qx0[start:stop], counts) + qx_local
        qy = xp.repeat(qy0[start:stop], counts) + qy_local
        row = table[tri]                                       # (n, 15)
        cx = (2 * qx * SUBPIXEL + SUBPIXEL // 2).astype(xp.float64)[:, None]
        cy = (2 * qy * SUBPIXEL + SUBPIXEL // 2).astype(xp.float64)[:, None]
        origin = row[:, 0:3] * cx + row[:, 3:6] * cy + row[:, 6:9]   # (n, 3)
        # (Explicit per-edge comparisons: NumPy reduces short axes slowly.)
        maybe = ((origin[:, 0] >= row[:, 9]) & (origin[:, 1] >= row[:, 10])
                 & (origin[:, 2] >= row[:, 11]))
        tri, qx, qy, row, origin = tri[maybe], qx[maybe], qy[maybe], row[maybe], origin[maybe]
        ea, eb, bias_edge = row[:, 0:3], row[:, 3:6], row[:, 12:15]
        covered = xp.empty((tri.size, 4), dtype=bool)
        step_x, step_y = ea * SUBPIXEL, eb * SUBPIXEL
        for lane, value in enumerate((origin, origin + step_x, origin + step_y,
                                      origin + step_x + step_y)):
            inside = value >= bias_edge
            covered[:, lane] = inside[:, 0] & inside[:, 1] & inside[:, 2]
        # Quads straddling the render rectangle's border lose their outside lanes.
        x, y = 2 * qx, 2 * qy
        if x.size and (x.min() < rx0 or x.max() + 1 >= rx1 or y.min() < ry0
                       or y.max() + 1 >= ry1):
            px = x[:, None] + xp.asarray(LANE_DX)
            py = y[:, None] + xp.asarray(LANE_DY)
            covered &= (px >= rx0) & (px < rx1) & (py >= ry0) & (py < ry1)
        keep = covered[:, 0] | covered[:, 1] | covered[:, 2] | covered[:, 3]
        parts.append((tri[keep], qx[keep], qy[keep], covered[keep]))
        start = stop
    if not parts:
        empty = xp.zeros(0, dtype=xp.int64)
        return Quads(empty, empty, empty, xp.zeros((0, 4), dtype=bool), 0)
    return Quads(*(xp.concatenate(p) for p in zip(*parts, strict=True)), candidates)


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit(inline=True)
def _cover_quads(t, e, a0, a1, a2, b0, b1, b2, c0, c1, c2, k0, k1, k2, qx0, qx1, qy0, qy1, rect,
                 subpixel, tri_out, qx_out, qy_out, cov_out, entry_out, n):  # pragma: no cover
    """Triangle ``t``'s covered quads among quads qx0..qx1 x qy0..qy1, row by row, written
    from ``n`` on (with ``e`` in ``entry_out`` where it has room: the list walk's); returns
    the new count. Edge values step from each row's first quad center: exact in int64."""
    rx0, ry0, rx1, ry1 = rect[0], rect[1], rect[2], rect[3]
    half = subpixel // 2
    sx0, sx1, sx2 = a0 * subpixel, a1 * subpixel, a2 * subpixel
    sy0, sy1, sy2 = b0 * subpixel, b1 * subpixel, b2 * subpixel
    for qy in range(qy0, qy1 + 1):
        cy = 2 * qy * subpixel + half
        py = 2 * qy
        top_ok = py >= ry0 and py < ry1
        bottom_ok = py + 1 >= ry0 and py + 1 < ry1
        cx = 2 * qx0 * subpixel + half
        e0 = a0 * cx + b0 * cy + c0
        e1 = a1 * cx + b1 * cy + c1
        e2 = a2 * cx + b2 * cy + c2
        for qx in range(qx0, qx1 + 1):
            px = 2 * qx
            left_ok = px >= rx0 and px < rx1
            right_ok = px + 1 >= rx0 and px + 1 < rx1
            l0 = (e0 >= k0 and e1 >= k1 and e2 >= k2) and top_ok and left_ok
            l1 = (e0 + sx0 >= k0 and e1 + sx1 >= k1 and e2 + sx2 >= k2
                  ) and top_ok and right_ok
            l2 = (e0 + sy0 >= k0 and e1 + sy1 >= k1 and e2 + sy2 >= k2
                  ) and bottom_ok and left_ok
            l3 = (e0 + sx0 + sy0 >= k0 and e1 + sx1 + sy1 >= k1
                  and e2 + sx2 + sy2 >= k2) and bottom_ok and right_ok
            if l0 or l1 or l2 or l3:
                tri_out[n] = t
                qx_out[n] = qx
                qy_out[n] = qy
                cov_out[n, 0] = l0
                cov_out[n, 1] = l1
                cov_out[n, 2] = l2
                cov_out[n, 3] = l3
                if entry_out.shape[0] > n:
                    entry_out[n] = e
                n += 1
            e0 += 2 * sx0
            e1 += 2 * sx1
            e2 += 2 * sx2
    return n


@jit
def _rasterize(a, b, c, bias, x0, y0, x1, y1, rect, subpixel, start, tri_out, qx_out,
               qy_out, cov_out):  # pragma: no cover - compiled
    """Covered quads of triangles ``start``.. (rasterizer.rasterize's contract) into the
    output arrays, triangle by triangle while they fit; returns (next triangle, quads)."""
    capacity = tri_out.shape[0]
    no_entries = np.empty(0, dtype=np.int64)
    n = 0
    t = start
    count = a.shape[0]
    while t < count:
        if x1[t] < x0[t] or y1[t] < y0[t]:
            t += 1
            continue
        qx0, qx1 = x0[t] // 2, x1[t] // 2
        qy0, qy1 = y0[t] // 2, y1[t] // 2
        if n + (qx1 - qx0 + 1) * (qy1 - qy0 + 1) > capacity:
            break
        n = _cover_quads(t, 0, a[t, 0], a[t, 1], a[t, 2], b[t, 0], b[t, 1], b[t, 2], c[t, 0],
                         c[t, 1], c[t, 2], bias[t, 0], bias[t, 1], bias[t, 2], qx0, qx1, qy0,
                         qy1, rect, subpixel, tri_out, qx_out, qy_out, cov_out, no_entries, n)
        t += 1
    return t, n


def _quad_buffers(capacity: int, with_entry: bool) -> tuple:
    """Output buffers of a rasterizing kernel: triangle, qx, qy, (capacity, 4) coverage, and
    the entry of each quad where ``with_entry``."""
    buffers = (np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64),
               np.empty(capacity, dtype=np.int64), np.empty((capacity, 4), dtype=bool))
    return (*buffers, np.empty(capacity, dtype=np.int64)) if with_entry else buffers


def _run_in_parts(kernel, start: int, stop: int, capacity: int, with_entry: bool) -> list:
    """``kernel(start, *buffers) -> (next, quads)`` called from ``start`` until it reaches
    ``stop``, into fresh buffers of ``capacity`` quads each time: the parts filled."""
    parts = []
    while True:
        buffers = _quad_buffers(capacity, with_entry)
        start, n = kernel(start, *buffers)
        parts.append(tuple(b[:n] for b in buffers))
        if start >= stop:
            return parts


def _joined(parts: list) -> tuple:
    """The parts' arrays joined in order (one part copied, so its unused capacity is
    freed)."""
    if len(parts) == 1:
        return tuple(p.copy() for p in parts[0])
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))


def rasterize_compiled(a, b, c, bias, x0, y0, x1, y1, rect, subpixel: int):
    """(triangle, qx, qy, coverage) of the covered quads, as ``rasterizer.rasterize``."""
    per = np.where((x1 >= x0) & (y1 >= y0),
                   (x1 // 2 - x0 // 2 + 1) * (y1 // 2 - y0 // 2 + 1), 0)
    capacity = int(max(min(int(per.sum()), 1 << 20), int(per.max(initial=0)), 1))
    rect = np.asarray(rect, dtype=np.int64)

    def kernel(start, *buffers):
        return _rasterize(a, b, c, bias, x0, y0, x1, y1, rect, subpixel, start, *buffers)

    return _joined(_run_in_parts(kernel, 0, len(a), capacity, False))


# == display lists in order: the quads tile by tile (compiled) ==============================

# A triangle's row for the list walk: A (3), B (3), C (3) and tie bias (3) of its edges
# (edge_setup), its pixel bounding box x0, y0, x1, y1 (pixel_bounds), twice its area.
_ROW = 17


def walks_display_lists(scale: int, tile_size: int) -> bool:
    """Whether :func:`rasterize_entries` can give a batch's quads: every quad (a superquad of
    2 * ``scale`` pixels a side, DSR) lies in one tile, so its tile is its top-left lane's."""
    return tile_size % (2 * scale) == 0


@jit
def _rasterize_entries(rows, skip_degenerate, bins_tile, bins_triangle, chosen, rect,
                       subpixel, scale, tile_size, tiles_x, start, tri_out, qx_out, qy_out,
                       cov_out, entry_out):  # pragma: no cover - compiled
    """The covered quads of the display-list entries ``start``.. that ``chosen`` keeps, entry
    by entry (tile by tile, each tile's triangles in submission order), each triangle's
    quads in its tile row by row: ``_rasterize``'s quads and coverage, in ``tile_major``'s
    order. ``rows``: per triangle (:data:`_ROW`) its edges' A, B, C, tie biases, pixel
    bounding box and twice its area, one row read per entry (the entries of a tile name
    triangles all over the arrays). Returns (next entry, quads) once the next entry may not
    fit."""
    capacity = tri_out.shape[0]
    per_tile = (tile_size // (2 * scale)) ** 2
    step = 2 * scale            # pixels a quad steps in the target
    n = 0
    e = start
    last_tile = -1
    lo_x = hi_x = lo_y = hi_y = 0
    while e < bins_tile.shape[0]:
        if not chosen[e]:
            e += 1
            continue
        t = bins_triangle[e]
        bx0, by0, bx1, by1 = rows[t, 12], rows[t, 13], rows[t, 14], rows[t, 15]
        if (skip_degenerate and rows[t, 16] <= 0) or bx1 < bx0 or by1 < by0:
            e += 1
            continue
        if n + per_tile > capacity:
            break
        tile = bins_tile[e]
        if tile != last_tile:
            # The quads whose top-left lane falls in the tile, once a tile: -(-v // step) is
            # the ceiling. (A top-left lane lies inside the target, its pixel a block of
            # ``scale`` that the shrunk rectangle holds, so the clamp _pixel_tile makes for
            # helper lanes never moves it.)
            last_tile = tile
            ty = tile // tiles_x
            tx = tile - ty * tiles_x
            lo_x = -(-(tx * tile_size) // step)
            hi_x = -(-((tx + 1) * tile_size) // step) - 1
            lo_y = -(-(ty * tile_size) // step)
            hi_y = -(-((ty + 1) * tile_size) // step) - 1
        qx0, qx1 = max(bx0 >> 1, lo_x), min(bx1 >> 1, hi_x)
        qy0, qy1 = max(by0 >> 1, lo_y), min(by1 >> 1, hi_y)
        n = _cover_quads(t, e, rows[t, 0], rows[t, 1], rows[t, 2], rows[t, 3], rows[t, 4],
                         rows[t, 5], rows[t, 6], rows[t, 7], rows[t, 8], rows[t, 9],
                         rows[t, 10], rows[t, 11], qx0, qx1, qy0, qy1, rect, subpixel, tri_out,
                         qx_out, qy_out, cov_out, entry_out, n)
        e += 1
    return e, n


def rasterize_entries(tris: Triangles, rect, fill_rule: str, bins, chosen, *, scale: int,
                      tile_size: int, tiles_x: int,
                      skip_degenerate: bool) -> tuple[Quads, np.ndarray]:
    """The covered quads of the display-list entries ``chosen`` ((B,) bool over ``bins``;
    None: all), walked as the raster phase walks the lists: tile by tile, each tile's
    triangles in submission order (Frame Coherence §2.3), so the quads come out in
    ``quad_stages.tile_major``'s order and each knows its entry. ``tris`` are in the
    rasterized space (shrunk ``scale`` times for DSR; ``rect`` too), ``bins`` the draw's lists
    in the target's tiles (``tile_size``, ``tiles_x`` a row); the same quads
    and coverage as :func:`rasterize` of the triangles of the chosen entries (those of
    positive area where ``skip_degenerate``), each kept where its tile's entry is chosen.
    Needs :func:`walks_display_lists`. Returns (quads, (Q,) entry index of each)."""
    a, b, c, bias = edge_setup(tris, fill_rule)
    rows = np.empty((len(tris), _ROW), dtype=np.int64)
    rows[:, 0:3], rows[:, 3:6], rows[:, 6:9], rows[:, 9:12] = a, b, c, bias
    rows[:, 12], rows[:, 13], rows[:, 14], rows[:, 15] = pixel_bounds(tris, rect)
    rows[:, 16] = tris.area2
    chosen = np.ones(bins.tile.shape[0], dtype=bool) if chosen is None else chosen
    per_tile = (tile_size // (2 * scale)) ** 2
    rect = np.asarray(rect, dtype=np.int64)

    def walk(span):
        # Entries are independent: each span into buffers of its own, joined in order.
        first, stop = span
        capacity = max(min(int(np.count_nonzero(chosen[first:stop])) * per_tile, 1 << 20),
                       per_tile)

        def kernel(start, *buffers):
            return _rasterize_entries(rows, skip_degenerate, bins.tile[:stop], bins.triangle,
                                      chosen, rect, SUBPIXEL, scale, tile_size, tiles_x, start,
                                      *buffers)

        return _run_in_parts(kernel, first, stop, capacity, True)

    # the spans side by side, joined in their order: the lists' (an entry holds up to a
    # tile's quads)
    parts = [p for span in in_threads(walk, spans(bins.tile.shape[0], lanes_each=per_tile,
                                                  per_thread=2))
             for p in span]
    tri, qx, qy, cov, entry = _joined(parts)
    return Quads(tri, qx, qy, cov, 0), entry
