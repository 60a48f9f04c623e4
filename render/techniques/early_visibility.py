"""Early Visibility Resolution (Frame Coherence ch. 5): predict occluded primitives from last frame.

Per tile of the default framebuffer the previous frame leaves its farthest visible point (FVP):
``Z_far``, the largest depth in the tile's Z buffer, when the farthest visible layer belongs to
primitives that write depth (WOZ), or ``L_far``, the smallest layer in the tile's Layer Buffer,
when it belongs to primitives that do not (NWOZ); the FVP type says which (§5.1, §5.3.3).

While binning, the Layer Generator Table gives each display-list entry a layer: a draw that is
new to a tile raises the tile's layer when it is NWOZ, or when it is WOZ and the tile's last
draw was NWOZ (a batch of WOZ draws shares a layer, §5.3.1). An entry is predicted occluded in
its tile when the FVP is a layer and the entry's layer is below it, or the FVP is a depth, the
entry is WOZ and its closest vertex is farther than it (§5.1.3).

Entries predicted occluded leave the RE signature (§5.2.2). Opaque WOZ entries predicted occluded
go to the tile's second list (Algorithm 4): they are rasterized after the tile's first list,
and an NWOZ entry first moves the tile's second list to the end of the first, so only opaque
WOZ primitives are reordered among themselves. Only draws whose depth test resolves
visibility whatever the order (LESS or LEQUAL, no blending, depth from the vertices) are
reordered; the pipeline holds their entries back (``Renderer._flush_deferred``).

The oracle of §5.4 (a depth pre-pass per tile, as PowerVR's hidden surface removal): a
fragment tested early is shaded only if it passes against the pass's final depth buffer (the
first of the fragments at the final depth, for depth-writing draws).
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import array_module
from tilesim.backend import xp as active_xp
from tilesim.jit import all_within, jit, usable
from tilesim.render.pipeline.counters import PassCounters
from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.render.pipeline.output_merger import COMPARE
from tilesim.render.techniques.registry import ScreenPass, TechniqueUnit

LAYER_ID_BYTES = 2          # 12-bit layer identifiers, stored with each list entry (§5.3.1)
REORDER_FUNCS = ("LESS", "LEQUAL")


def writes_depth(draw) -> bool:
    f = draw.fragment
    return bool(f.depth_test and f.depth_mask and draw.target.depth is not None)


def reorderable(draw) -> bool:
    """Opaque WOZ draws whose visibility the depth test alone resolves."""
    f = draw.fragment
    return (writes_depth(draw) and f.depth_func in REORDER_FUNCS and not f.blend
            and not draw.program.fragment_writes_depth)


def opaque(draw, color: np.ndarray) -> np.ndarray:
    """Fragments that hide what is behind them (§5.3.2: blending with alpha exactly 1)."""
    xp = array_module(color)
    f = draw.fragment
    if not f.blend:
        return xp.ones(color.shape[0], dtype=bool)
    over = (f.blend_eq_rgb == "FUNC_ADD" and f.blend_src_rgb in ("ONE", "SRC_ALPHA")
            and f.blend_dst_rgb in ("ZERO", "ONE_MINUS_SRC_ALPHA"))
    if not over:
        return xp.zeros(color.shape[0], dtype=bool)
    if f.blend_dst_rgb == "ZERO":
        return xp.ones(color.shape[0], dtype=bool)
    return color[:, 3] >= 1.0


def _maximum_at(table: np.ndarray, index: np.ndarray, values: np.ndarray,
                where: np.ndarray | None = None) -> None:
    """table[index] = max(table[index], values), repeated indices included, for the entries
    ``where`` selects (None: all)."""
    if usable(table, index, values, where) and table.dtype == values.dtype == np.int64:
        maximum_at_compiled(table, index, values, where)
    elif where is None:
        array_module(table).maximum.at(table, index, values)
    else:
        array_module(table).maximum.at(table, index[where], values[where])


class EarlyVisibility:
    def __init__(self, target: RenderTarget):
        self.xp = xp = active_xp()   # the EVR tables live beside the pipeline's arrays
        tiles = target.tile_count
        self.tiles = tiles
        # FVP Table: last frame's farthest visible point per tile, and its type.
        self.fvp = xp.zeros(tiles, dtype=xp.int64)
        self.fvp_is_layer = xp.ones(tiles, dtype=bool)
        self.layer_buffer = xp.zeros(target.width * target.height, dtype=xp.int64)
        # Tiles whose last rendered frame depended on entries left out of the RE signature:
        # their signature cannot vouch for their colors next frame.
        self.tainted = xp.zeros(tiles, dtype=bool)
        self._start_frame()

    def _start_frame(self) -> None:
        # Layer Generator Table: last layer and whether the last draw in the tile was NWOZ;
        # the background (a clear) is layer 0, NWOZ.
        xp = self.xp
        self.lgt_layer = xp.zeros(self.tiles, dtype=xp.int64)
        self.lgt_nwoz = xp.ones(self.tiles, dtype=bool)
        self.zr = xp.full(self.tiles, -1, dtype=xp.int64)
        self.layer_buffer[:] = 0
        self.early_log: list[tuple[np.ndarray, np.ndarray, bool, str]] = []
        self.late_shaded = xp.zeros(self.tiles, dtype=xp.int64)
        self.excluded_depth = xp.zeros(self.tiles, dtype=bool)
        self.excluded_color = xp.zeros(self.layer_buffer.size, dtype=bool)

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        """Algorithm 4: an entry that does not write depth (NWOZ) first moves its tiles'
        second lists to the first: the (tiles,) mask of those tiles, or None."""
        if writes_depth(draw):
            return None
        mask = self.xp.zeros(self.tiles, dtype=bool)
        mask[draw.bins.touched] = True
        return mask

    def binned(self, draw, counters: PassCounters):
        """(occluded, deferred) (B,) bool over the draw's display-list entries (after the
        pipeline flushed :meth:`tiles_to_flush`)."""
        xp = self.xp
        bins = draw.bins
        tiles = bins.tile
        woz = writes_depth(draw)
        touched = bins.touched
        raise_layer = xp.ones(touched.size, dtype=bool) if not woz else self.lgt_nwoz[touched]
        self.lgt_layer[touched] += raise_layer
        self.lgt_nwoz[touched] = not woz
        layer = self.lgt_layer[tiles]
        draw.layers = layer
        counters.add_each(tiles, {"evr_lgt_accesses": 1, "evr_fvp_reads": 1,
                                  "evr_layer_bytes_written": LAYER_ID_BYTES})
        if woz:
            z_near = draw.tris.z.min(axis=1)[bins.triangle]
            z_near = xp.floor(xp.clip(z_near, 0.0, 1.0) * draw.target.depth_max + 0.5)
            occluded = ~self.fvp_is_layer[tiles] & (z_near.astype(xp.int64) > self.fvp[tiles])
        else:
            occluded = self.fvp_is_layer[tiles] & (layer < self.fvp[tiles])
        draw.excluded = occluded
        deferred = occluded & reorderable(draw)
        counters.add("evr_prims_occluded", tiles[occluded])
        counters.add("evr_prims_reordered", tiles[deferred])
        return occluded, deferred

    def written(self, draw, counters: PassCounters, pixel, tile, color, entry) -> None:
        """The Layer Buffer and ZR register see the fragments written (blending stage); and
        whether entries predicted occluded showed: one that wrote depth, or whose color is
        still in a pixel (no opaque predicted-visible fragment covered it since), taints the
        tile for RE (a misprediction the signature, which leaves them out, cannot see)."""
        layers = draw.layers
        if layers is None or entry is None or pixel.size == 0:
            return
        hide = opaque(draw, color)
        woz = writes_depth(draw)
        if usable(pixel, tile, entry, layers, hide, draw.excluded, self.layer_buffer, self.zr,
                  self.excluded_depth, self.excluded_color) and layers.dtype == np.int64:
            written_compiled(self, draw, pixel, tile, entry, hide, woz)
            if hide.any():
                counters.add("evr_layer_buffer_writes", tile, hide)
            return
        layer = layers[entry]
        if draw.excluded is not None:
            excluded = draw.excluded[entry]
            if woz:
                self.excluded_depth[tile[excluded]] = True
            if any(draw.fragment.color_mask):
                # Across draws the last write decides; within one draw the order per pixel is
                # not kept here, so an excluded write wins (the safe side).
                covers = ~excluded & hide & all(draw.fragment.color_mask)
                self.excluded_color[pixel[covers]] = False
                self.excluded_color[pixel[excluded]] = True
        # Layers only grow within a tile, so the last write is the largest.
        if hide.any():
            _maximum_at(self.layer_buffer, pixel, layer, hide)
            counters.add("evr_layer_buffer_writes", tile, hide)
        if woz:
            _maximum_at(self.zr, tile, layer)

    def cleared(self, target: RenderTarget, rect) -> None:
        x0, y0, x1, y1 = rect
        view = self.layer_buffer.reshape(target.height, target.width)
        view[y0:y1, x0:x1] = 0

    def early_z(self, draw, pixel, depth, tile) -> None:
        self.early_log.append((pixel, depth, writes_depth(draw), draw.fragment.depth_func))

    def end_pass(self, target: RenderTarget, counters: PassCounters,
                 skipped: np.ndarray | None = None) -> None:
        """The FVP of every tile for the next frame, the taint of RE's signatures, and the
        depth pre-pass oracle. Tiles RE ``skipped`` were not rendered: they keep their FVP
        and taint (the model renders them anyway, to check RE)."""
        xp = self.xp
        t = target.tile_count
        if usable(target.depth, self.layer_buffer):
            z_far, l_far = tile_extrema_compiled(target, self.layer_buffer)
        else:
            depth = target.tile_blocks(target.depth if target.depth is not None else
                                       xp.zeros((target.height, target.width), xp.uint32))
            # Pixels outside partial edge tiles must not count: pad depth 0 / layer max.
            inside = target.tile_blocks(xp.ones((target.height, target.width), dtype=bool))
            z_far = xp.where(inside, depth, 0).reshape(t, -1).max(axis=1).astype(xp.int64)
            layers = target.tile_blocks(self.layer_buffer.reshape(target.height,
                                                                  target.width))
            big = xp.iinfo(xp.int64).max
            l_far = xp.where(inside, layers, big).reshape(t, -1).min(axis=1)
        woz_type = self.zr == l_far
        fvp, fvp_is_layer = xp.where(woz_type, z_far, l_far), ~woz_type
        rendered = slice(None) if skipped is None else ~skipped
        self.fvp[rendered] = fvp[rendered]
        self.fvp_is_layer[rendered] = fvp_is_layer[rendered]
        counters.add_per_tile("evr_fvp_updates", xp.ones(t, dtype=xp.int64))
        tainted = self.excluded_depth | (target.count_per_tile(self.excluded_color) > 0)
        self.tainted[rendered] = tainted[rendered]
        counters.add_per_tile("oracle_fragments_shaded", self.late_shaded + self._oracle(target))

    def _oracle(self, target: RenderTarget) -> np.ndarray:
        xp = self.xp
        shaded = xp.zeros(target.tile_count, dtype=xp.int64)
        if not self.early_log or target.depth is None:
            return shaded
        final = target.depth.reshape(-1).astype(xp.int64)
        tiles_of = target.pixel_tiles().reshape(-1)
        first_visible = xp.zeros(final.size, dtype=bool)
        for pixel, depth, woz, func in self.early_log:
            if woz and usable(pixel, depth, final, tiles_of):
                first_visible_compiled(pixel, depth, final, first_visible, tiles_of, shaded)
            elif woz:
                # One shaded fragment per pixel: the first at the final depth.
                hit = pixel[(depth == final[pixel]) & ~first_visible[pixel]]
                hit = xp.unique(hit)
                first_visible[hit] = True
                shaded += xp.bincount(tiles_of[hit], minlength=shaded.size)
            else:
                ok = COMPARE[func](depth, final[pixel])
                shaded += xp.bincount(tiles_of[pixel[ok]], minlength=shaded.size)
        return shaded

    def end_frame(self) -> None:
        self._start_frame()


class EarlyVisibilityUnit(TechniqueUnit):
    """EVR behind the pipeline's hooks: classifies the screen's display-list entries as they
    are binned (``board.occluded``, and ``board.deferred``: held back for the second lists),
    tells RE which tiles' signatures left entries out (``board.unsigned``) and, after RE's
    decision, updates the FVP Table of the tiles rendered."""

    wants_entries = True

    def __init__(self, screen, traversal: str, techniques) -> None:
        super().__init__(screen, traversal, techniques)
        self.evr = EarlyVisibility(screen)

    def begin_pass(self, counters, board: ScreenPass) -> None:
        # Updated in place at the pass's end, after RE read it (decide precedes end_pass).
        board.unsigned = self.evr.tainted

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        return self.evr.tiles_to_flush(draw)

    def classify(self, draw, board: ScreenPass) -> None:
        board.occluded, board.deferred = self.evr.binned(draw, draw.counters)

    def cleared(self, counters, rect, color, depth, color_mask) -> None:
        if color is not None:
            self.evr.cleared(self.screen, rect)

    def early_z(self, draw, pixel, depth, tile) -> None:
        self.evr.early_z(draw, pixel, depth, tile)

    def late_shaded(self, draw, tile) -> None:
        xp = array_module(tile)
        self.evr.late_shaded += xp.bincount(tile, minlength=self.evr.tiles)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        self.evr.written(draw, draw.counters, pixel, tile, color, entry)

    def end_pass(self, counters, board: ScreenPass) -> None:
        self.evr.end_pass(self.screen, counters, board.skipped)

    def end_frame(self, result, screen) -> None:
        self.evr.end_frame()


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit
def _maximum_at_kernel(buffer, index, values, where):  # pragma: no cover - compiled
    if not all_within(index, buffer.shape[0]):
        return False
    for i in range(index.shape[0]):
        if where is not None and not where[i]:
            continue
        if values[i] > buffer[index[i]]:
            buffer[index[i]] = values[i]
    return True


def maximum_at_compiled(buffer: np.ndarray, index: np.ndarray, values: np.ndarray,
                        where: np.ndarray | None = None) -> None:
    """``np.maximum.at(buffer, index, values)`` of a flat int64 ``buffer`` and int64
    ``values`` (a maximum does not depend on the order it is taken in), of the entries
    ``where`` selects ((n,) bool; None: all) without gathering them first."""
    if not _maximum_at_kernel(buffer, index, values, where):
        raise IndexError(f"indices outside 0..{buffer.shape[0] - 1}")


@jit
def _first_visible(pixel, depth, final, visible, tile_of_pixel, shaded):  # pragma: no cover
    for i in range(pixel.shape[0]):
        p = pixel[i]
        if depth[i] == final[p] and not visible[p]:
            visible[p] = True
            shaded[tile_of_pixel[p]] += 1


def first_visible_compiled(pixel, depth, final, visible, tile_of_pixel, shaded) -> None:
    """Mark the pixels whose fragment (``pixel``, ``depth``) is at the final depth and not yet
    marked in ``visible``, and count each once in ``shaded`` at its tile (the oracle's
    ``unique`` of such pixels, then ``bincount`` of their tiles)."""
    _first_visible(pixel, depth, final, visible, tile_of_pixel, shaded)


@jit
def _written(pixel, tile, entry, layers, hide, excluded, woz, color_any, color_all,
             layer_buffer, zr, excluded_depth, excluded_color):  # pragma: no cover - compiled
    n = pixel.shape[0]
    if not (all_within(pixel, layer_buffer.shape[0]) and all_within(tile, zr.shape[0])
            and all_within(entry, layers.shape[0])):
        return False
    taints = excluded is not None
    if taints:
        if not all_within(tile, excluded_depth.shape[0]) or \
                not all_within(pixel, excluded_color.shape[0]) or \
                excluded.shape[0] != layers.shape[0]:
            return False
        if color_any and color_all:
            # every covering write clears its pixel before any excluded write marks it (the
            # vectorized assignments' order: an excluded write wins)
            for i in range(n):
                if hide[i] and not excluded[entry[i]]:
                    excluded_color[pixel[i]] = False
    for i in range(n):
        e = entry[i]
        if taints and excluded[e]:
            if woz:
                excluded_depth[tile[i]] = True
            if color_any:
                excluded_color[pixel[i]] = True
        layer = layers[e]
        if hide[i] and layer > layer_buffer[pixel[i]]:
            layer_buffer[pixel[i]] = layer
        if woz and layer > zr[tile[i]]:
            zr[tile[i]] = layer
    return True


def written_compiled(evr: EarlyVisibility, draw, pixel, tile, entry, hide, woz: bool) -> None:
    """``EarlyVisibility.written``'s tables in one pass over a batch's color writes (the
    counter aside): the excluded entries' depth and color taints in the vectorized order,
    the Layer Buffer's and ZR's maxima."""
    mask = draw.fragment.color_mask
    if not _written(pixel, tile, entry, draw.layers, hide, draw.excluded, woz, any(mask),
                    all(mask), evr.layer_buffer, evr.zr, evr.excluded_depth,
                    evr.excluded_color):
        raise IndexError("EVR written: pixel, tile or entry outside its table")


@jit
def _tile_extrema(depth, layers, tile_of_pixel, z_far, l_far):  # pragma: no cover - compiled
    for p in range(layers.shape[0]):
        t = tile_of_pixel[p]
        if depth is not None and np.int64(depth[p]) > z_far[t]:
            z_far[t] = np.int64(depth[p])
        if layers[p] < l_far[t]:
            l_far[t] = layers[p]


def tile_extrema_compiled(target: RenderTarget, layer_buffer: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(z_far, l_far) of every tile: the largest depth (0 where the target has no depth
    buffer) and the smallest layer of its pixels, in one pass over the pixels (the tile
    blocks' padded maximum and minimum, without cutting blocks)."""
    tiles = target.tile_count
    z_far = np.zeros(tiles, dtype=np.int64)
    l_far = np.full(tiles, np.iinfo(np.int64).max, dtype=np.int64)
    depth = None if target.depth is None else np.ascontiguousarray(target.depth).reshape(-1)
    tile_of_pixel = np.ascontiguousarray(target.pixel_tiles()).reshape(-1)
    if not all_within(tile_of_pixel, tiles) or layer_buffer.shape[0] != tile_of_pixel.shape[0]:
        raise IndexError("EVR: the Layer Buffer or the tiles do not match the target")
    _tile_extrema(depth, np.ascontiguousarray(layer_buffer), tile_of_pixel, z_far, l_far)
    return z_far, l_far
