"""Rendering Elimination (Frame Coherence ch. 4): skip tiles whose inputs equal last frame's.

While the binner writes the display lists, the Signature Unit (``signature_unit``) folds into
each tile of the default framebuffer, in submission order, the inputs that decide its colors:

* per draw, its constants block, once per tile (the constant bitmap, §4.2.1): the uniform
  values of both stages and the draw state the raster phase reads (``draw_state_bytes``);
* then the Parameter Buffer record of every primitive that overlaps the tile (its three
  clipped vertices, position and varyings as float32);
* a clear is an input too: its color, depth, mask and rectangle, folded into the tiles it
  touches.

With EVR (``re+evr``), entries predicted occluded are left out of the signature (§5.2.2).
When the default framebuffer's pass ends, a tile whose signature equals its signature of the
previous frame is not rendered and keeps last frame's colors. The functional model renders it
anyway, in a checking mode, to give the oracle (tiles whose colors did not change, Fig. 4.12)
and to prove that no skipped tile would have changed (false positives); the skipped tile's
raster work is then removed from the counters.

RE is off for a frame (``re_disabled``) when programs or textures change during it, and when the
frame renders to more than one target (§4.1.5). A tile is only skippable when last frame's
contents cannot show in it, since otherwise they are an input the signature does not hold:
every pixel of the tile is overwritten during the frame without reading the color buffer
(a color clear with every channel's mask on, or a draw's fragment written with every channel
on and blending off or reading no destination factor: ``overwrites_color``), and no draw
tests depth there before the frame clears the tile's depth. A pixel's color after such a
write depends on that write and what follows it, all of which the signature holds; so a
tile whose signature equals last frame's shows last frame's colors whatever came before in
either frame. Frame Coherence §4.1 starts each frame from a clear; programs that cover the
window with an opaque copy instead (SDL-style 2D programs, compositors) never clear.

The constants block. Frame Coherence §4.1.5 signs, per drawcall, "the set of constants
associated to those primitives" (the scene constants: uniform values) and leaves out the
shader program and the textures, which the driver sees change (RE is then off for the frame).
It says nothing of the rest of the draw state or of clears, yet they decide colors too: with
the same uniforms and primitives, a draw that blends differently, tests depth with another
function, writes another color mask or lands in another viewport, or a clear to another color,
gives other colors under an equal signature. tilesim therefore also signs (the default,
``constants_block="state"``) the draw state the raster phase reads (:func:`draw_state_bytes`:
96 bytes plus 12 per bound texture, 12 + 1.5 per texture 64-bit sub-blocks more per block) and
every clear; a block is signed again whenever any of it changes, which restarts the constant
bitmap (§4.2.1) and folds the new block into the tiles once more. ``constants_block=
"uniforms"`` (the ``re/uniforms`` variant) signs what §4.1.5 describes, the uniform values only
and no clears, so a user can measure what the extra state costs and what it prevents: the
checking mode counts the tiles it would skip wrongly (``re_false_positives``).
"""

from __future__ import annotations

import zlib

import numpy as np

from tilesim.backend import array_module
from tilesim.jit import jit, usable
from tilesim.render.gl.commands import PROGRAM_TEXTURE_CHANGES
from tilesim.render.pipeline.binning import distinct_tiles
from tilesim.render.pipeline.counters import TILE_COUNTERS, PassCounters
from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.render.pipeline.gpu_config import GPU_CONFIG, counted_entry
from tilesim.render.techniques.registry import ScreenPass, TechniqueUnit
from tilesim.render.techniques.signature_unit import (
    SIGN_LUTS,
    SUBBLOCK_ADVANCE_LADDER,
    TileSignatures,
    crc_of,
    folded,
    xor_of,
)

# Counters of the geometry phase (binning): a skipped tile still has them.
GEOMETRY_TILE_COUNTERS = ("prims_binned", "pb_list_bytes_written")
RASTER_TILE_COUNTERS = tuple(n for n in TILE_COUNTERS if n not in GEOMETRY_TILE_COUNTERS)


def _code(name) -> int:
    """A 16-bit code of an enum name (the state registers hold enums, not strings)."""
    return zlib.crc32(str(name).encode()) & 0xFFFF


def draw_state_bytes(draw) -> bytes:
    """The constants block of a draw, as the Command Processor would hand it to the Signature
    Unit: the uniform values of both stages, then the draw state the raster phase reads packed
    into 32-bit registers (program, bound textures and their versions, depth/blend/mask/
    scissor state, viewport and render rectangle). Everything besides its primitives that
    decides the colors the draw writes is here, so equal blocks mean equal results.

    State of a disabled unit is left out (written as zeros): blend equations, functions and
    color without blending, the depth function and mask without the depth test (the GL ES 2.0
    specification, Depth Buffer Test: no test, no depth write), the cull mode without
    culling, the polygon offset without offset fill. Programs leave such state behind from
    earlier draws; signed, it made equal frames sign differently (match3's frame 1: every
    tile rendered again)."""
    f = draw.fragment
    words = [draw.program.ident]
    for samp, texture in sorted(draw.texture_units.items()):
        words += [samp, -1 if texture is None else texture.name,
                  -1 if texture is None else texture.version]
    depth_on = bool(f.depth_test)
    flags = (f.depth_test | (f.depth_mask and depth_on) << 1 | f.blend << 2
             | f.scissor_test << 3 | f.cull_face << 4 | f.polygon_offset_fill << 5
             | sum(int(m) << (6 + k) for k, m in enumerate(f.color_mask)))
    blend = [_code(f.blend_eq_rgb), _code(f.blend_eq_alpha), _code(f.blend_src_rgb),
             _code(f.blend_dst_rgb), _code(f.blend_src_alpha), _code(f.blend_dst_alpha)] \
        if f.blend else [0] * 6
    depth_func = _code(f.depth_func) if depth_on else 0
    cull_mode = _code(f.cull_mode) if f.cull_face else 0
    words += [flags, depth_func << 16 | _code(f.front_face), cull_mode << 16 | blend[0],
              blend[1] << 16 | blend[2], blend[3] << 16 | blend[4], blend[5],
              *draw.viewport, *draw.rect]
    blend_color = list(f.blend_color) if f.blend else [0.0] * 4
    offset = list(f.polygon_offset) if f.polygon_offset_fill else [0.0, 0.0]
    floats = [*f.depth_range, *blend_color, *offset, f.line_width]
    registers = (np.asarray(words, dtype=np.int64).astype(np.uint32).tobytes()
                 + np.asarray(floats, dtype=np.float32).tobytes())
    return uniform_bytes(draw) + registers


def uniform_bytes(draw) -> bytes:
    """The constants block as Frame Coherence §4.1.5 describes it: the drawcall's constants,
    the uniform values of both stages."""
    return (np.ascontiguousarray(draw.vs_constants).tobytes()
            + np.ascontiguousarray(draw.fs_constants).tobytes())


def ot_queue_entries(path: str = str(GPU_CONFIG)) -> int:
    """Entries of the Overlapped Tiles Queue (Frame Coherence Table 4.1: 128): ``[techniques.
    signature] ot_queue_entries`` of the GPU configuration file, the one source the timing
    model reads too (a data file, not an import of tilesim.timing; within
    ``gpu_config.renderer_config``, its value)."""
    return counted_entry(path, "techniques.signature.ot_queue_entries")


# Blend factors that read the destination color (OpenGL ES 2.0 §4.1.6, Table 4.2).
DESTINATION_FACTORS = frozenset({"DST_COLOR", "ONE_MINUS_DST_COLOR", "DST_ALPHA",
                                 "ONE_MINUS_DST_ALPHA", "SRC_ALPHA_SATURATE"})


def overwrites_color(fragment) -> bool:
    """Whether a draw's color writes replace the pixel whatever it held: every channel
    written, and blending off or blending whose result reads no destination color (both
    destination factors ZERO, no source factor reading the destination, and no MIN/MAX
    equation, which compare with it)."""
    if not all(fragment.color_mask):
        return False
    if not fragment.blend:
        return True
    return (fragment.blend_dst_rgb == fragment.blend_dst_alpha == "ZERO"
            and fragment.blend_src_rgb not in DESTINATION_FACTORS
            and fragment.blend_src_alpha not in DESTINATION_FACTORS
            and fragment.blend_eq_rgb.startswith("FUNC_")
            and fragment.blend_eq_alpha.startswith("FUNC_"))


def _as_rows(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)[None, :]


class RenderingElimination:
    def __init__(self, target: RenderTarget, kind: str = "crc32",
                 constants_block: str = "state"):
        self.tiles = target.tile_count
        # "state": uniforms, draw state and clears are signed; "uniforms": §4.1.5's block only.
        self.block_of = draw_state_bytes if constants_block == "state" else uniform_bytes
        self.signs_clears = constants_block == "state"
        self.otq_entries = ot_queue_entries()
        self.signatures = TileSignatures(self.tiles, kind=kind)
        self.xp = self.signatures.xp
        self.previous_image: np.ndarray | None = None
        self._start_frame()

    def _start_frame(self) -> None:
        xp = self.xp
        self.disabled_reason: str | None = None
        self.bitmap = xp.zeros(self.tiles, dtype=bool)
        self.constants: bytes | None = None
        self.constants_crc = None
        # A tile does not depend on last frame's contents when every pixel of it was
        # overwritten (module docstring) and no draw depth-tested it before its depth was
        # cleared.
        self.overwritten = None                               # (H, W) bool, made on first use
        self.fresh_depth = xp.zeros(self.tiles, dtype=bool)
        self.old_depth_read = xp.zeros(self.tiles, dtype=bool)
        self.skip = xp.zeros(self.tiles, dtype=bool)

    # -- the signature, while binning -------------------------------------------------------

    def command(self, op: str) -> None:
        if op in PROGRAM_TEXTURE_CHANGES and self.disabled_reason is None:
            self.disabled_reason = "programs or textures changed"

    def offscreen_pass(self) -> None:
        if self.disabled_reason is None:
            self.disabled_reason = "several render targets"

    def _fold(self, counters: PassCounters, tiles: np.ndarray, crc: np.ndarray,
              subblocks: np.ndarray) -> None:
        shifts, accesses = self.signatures.shifts.copy(), self.signatures.accesses.copy()
        self.signatures.fold(tiles, crc, subblocks)
        counters.add_per_tile("re_shifts", self.signatures.shifts - shifts)
        counters.add_per_tile("re_signature_accesses", self.signatures.accesses - accesses)

    @staticmethod
    def _signed(counters: PassCounters, tile: np.ndarray, subblocks: np.ndarray) -> None:
        """Charge the Compute CRC unit's work (each block is signed once) to a tile."""
        xp = array_module(tile)
        # Whole sub-block counts: summed as integers (what float64 weights sum to, faster).
        counters.add("re_subblocks_signed", xp.asarray(tile).ravel(),
                     xp.asarray(subblocks, dtype=xp.int64).ravel())

    def binned(self, draw, counters: PassCounters, included: np.ndarray | None) -> None:
        """Fold a draw's constants and primitives into the tiles of its display-list entries
        (``included``: the entries that count, None: all)."""
        xp = self.xp
        bins = draw.bins
        if usable(bins.tile, bins.triangle, included, self.bitmap, draw.clipped.vertices,
                  draw.tris.vertex):
            self._binned_compiled(draw, counters, included)
            return
        tiles, rows = bins.tile, bins.triangle
        if included is not None:
            tiles, rows = tiles[included], rows[included]
        touched = bins.touched
        if draw.fragment.depth_test and draw.target.depth is not None:
            self.old_depth_read[touched] |= ~self.fresh_depth[touched]
        if tiles.size == 0:
            return
        constants = self.block_of(draw)
        if constants != self.constants:
            # New constants: signed once; the bitmap restarts (§4.2.1).
            self.constants = constants
            self.constants_crc = tuple(xp.asarray(a) for a in
                                       self.signatures.sign_bytes(_as_rows(constants)))
            self.bitmap[:] = False
            self._signed(counters, tiles[:1], self.constants_crc[1])
        first = touched if included is None else distinct_tiles(tiles)
        first = first[~self.bitmap[first]]
        counters.add("re_bitmap_accesses", tiles)
        counters.add("re_bitmap_accesses", first)     # the write setting the bit
        self.bitmap[first] = True
        # A primitive is signed once, however many tiles it overlaps. Its record: the three
        # clipped vertices (position and varyings) as float32.
        primitives, once, entry_primitive, covered = xp.unique(
            rows, return_index=True, return_inverse=True, return_counts=True)
        vertices = draw.clipped.vertices[draw.tris.vertex[primitives]].astype(xp.float32)
        records = vertices.reshape(primitives.size, -1).view(xp.uint8)
        signed_crc, signed_blocks = self.signatures.sign_bytes(records)
        self._signed(counters, tiles[once], signed_blocks)
        prim_crc, prim_blocks = signed_crc[entry_primitive], signed_blocks[entry_primitive]
        # The binner queues the tiles each primitive folds into in the Overlapped Tiles Queue
        # and moves on; a primitive covering more tiles than the queue holds keeps it waiting
        # for the excess entries to be folded (§4.2.1, §4.3): counted per primitive, charged
        # to its first tile.
        counters.add("re_otq_overflow_entries", tiles[once],
                     xp.maximum(covered - self.otq_entries, 0))
        c_crc, c_blocks = self.constants_crc
        # Per tile: the constants first (where not yet folded), then the primitives in order.
        all_tiles = xp.concatenate([first, tiles])
        order = xp.argsort(all_tiles, kind="stable")
        crc = xp.concatenate([xp.repeat(c_crc, first.size), prim_crc])[order]
        blocks = xp.concatenate([xp.repeat(c_blocks, first.size), prim_blocks])[order]
        self._fold(counters, all_tiles[order], crc, blocks)

    def _binned_compiled(self, draw, counters: PassCounters, included) -> None:
        """:meth:`binned` in one compiled pass over the entries (``_binned``): the same
        signatures, counters and bitmap, the primitives found by a table over the draw's
        triangles instead of a sort."""
        bins = draw.bins
        entries = bins.tile.shape[0] if included is None else int(np.count_nonzero(included))
        new = False
        if entries:
            constants = self.block_of(draw)
            new = constants != self.constants
            if new:
                self.constants = constants
                self.constants_crc = (np.zeros(1, np.uint32), np.zeros(1, np.int64))
        c_crc, c_blocks = self.constants_crc if entries else _UNSIGNED
        # Without entries nothing is signed or counted (and no counter made).
        counted = ([counters.tile_array(name, bins.tile) for name in BINNED_COUNTERS] if entries
                   else [_UNCOUNTED] * len(BINNED_COUNTERS))
        signatures = self.signatures
        signed = _binned(
            bins.tile, bins.triangle, _EVERY if included is None else included,
            included is None, bool(draw.fragment.depth_test and draw.target.depth is not None),
            self.fresh_depth, self.old_depth_read, entries > 0,
            np.frombuffer(self.constants, np.uint8) if new else _NO_MESSAGE, new, c_crc,
            c_blocks, draw.clipped.vertices, draw.tris.vertex, self.otq_entries,
            signatures.kind == "crc32", SIGN_LUTS, SUBBLOCK_ADVANCE_LADDER,
            self.bitmap, signatures.current, signatures.shifts, signatures.accesses, *counted)
        if signed < 0:
            raise ValueError("binned: a tile, triangle or vertex number out of range")
        signatures.signed_subblocks += int(signed)

    def cleared(self, target: RenderTarget, counters: PassCounters, rect, color, depth,
                color_mask) -> None:
        xp = self.xp
        x0, y0, x1, y1 = rect
        if x1 <= x0 or y1 <= y0:
            return
        t = target.tile_size
        ty, tx = xp.mgrid[y0 // t:(y1 - 1) // t + 1, x0 // t:(x1 - 1) // t + 1]
        tiles = (ty * target.tiles_x + tx).ravel()
        if self.signs_clears:
            block = repr(("clear", color, depth, color_mask, rect)).encode()
            crc, blocks = self.signatures.sign_bytes(_as_rows(block))
            self._signed(counters, tiles[:1], blocks)
            self._fold(counters, tiles, xp.full(tiles.size, crc[0]),
                       xp.full(tiles.size, blocks[0]))
        # Tiles wholly inside the rectangle have their depth cleared; the pixels inside it
        # are overwritten with the clear color.
        full_x = (tx * t >= x0) & (xp.minimum((tx + 1) * t, target.width) <= x1)
        full_y = (ty * t >= y0) & (xp.minimum((ty + 1) * t, target.height) <= y1)
        whole = tiles[(full_x & full_y).ravel()]
        if depth is not None:
            self.fresh_depth[whole] = True
        if color is not None and all(color_mask):
            self._overwritten(target)[y0:y1, x0:x1] = True

    def written(self, draw, pixel: np.ndarray) -> None:
        """Color writes of a draw's batch (flat pixel indices): the pixels a write that reads
        no destination color overwrites."""
        if pixel.shape[0] and overwrites_color(draw.fragment):
            self._overwritten(draw.target).reshape(-1)[pixel] = True

    def _overwritten(self, target: RenderTarget) -> np.ndarray:
        if self.overwritten is None:
            self.overwritten = self.xp.zeros((target.height, target.width), dtype=bool)
        return self.overwritten

    def fresh_color(self, target: RenderTarget) -> np.ndarray:
        """(tiles,) bool: every pixel of the tile overwritten this frame."""
        xp = self.xp
        if self.overwritten is None:
            return xp.zeros(self.tiles, dtype=bool)
        return target.count_per_tile(self.overwritten) == xp.asarray(target.tile_pixels())

    # -- the decision, when the pass ends ---------------------------------------------------

    def end_pass(self, target: RenderTarget, counters: PassCounters,
                 untrusted: np.ndarray | None = None) -> np.ndarray:
        """Skip the tiles whose signature matches (keeping last frame's colors), after
        checking them against the colors rendered anyway. ``untrusted`` tiles (EVR: last
        frame's colors depended on entries the signature left out) are rendered. Returns the
        (tiles,) bool mask of the skipped tiles."""
        xp = self.xp
        previous = self.previous_image
        equal_color = xp.zeros(self.tiles, dtype=bool)
        if previous is not None:
            equal_color = target.tiles_equal(target.color, previous)
        enabled = self.disabled_reason is None and previous is not None
        fresh = self.fresh_color(target) & ~self.old_depth_read
        if untrusted is not None:
            fresh &= ~untrusted
        skip = (self.signatures.equal_to_previous() & fresh) if enabled else \
            xp.zeros(self.tiles, dtype=bool)
        false_positive = skip & ~equal_color
        counters.add_per_tile("re_tiles_equal_color", equal_color)
        counters.add_per_tile("re_tiles_skipped", skip)
        counters.add_per_tile("re_false_positives", false_positive)
        if skip.any():
            target.restore_tiles(previous, skip)      # the tile keeps last frame's colors
            counters.clear_tiles(RASTER_TILE_COUNTERS, skip)
        self.skip = skip
        self.previous_image = target.color.copy()
        return skip

    def end_frame(self, frame_counters) -> None:
        frame_counters.scalars["re_disabled"] = int(self.disabled_reason is not None)
        self.signatures.end_frame()
        self._start_frame()


class RenderingEliminationUnit(TechniqueUnit):
    """RE behind the pipeline's hooks: signs the screen's display-list entries as they are
    binned (those EVR classified occluded left out, chapter 5) and skips, at the pass's end,
    the tiles whose signature equals last frame's (``board.skipped``)."""

    def __init__(self, screen, traversal: str, techniques) -> None:
        super().__init__(screen, traversal, techniques)
        self.re = RenderingElimination(screen, kind=techniques.signature,
                                       constants_block=techniques.constants_block)

    def command(self, op: str) -> None:
        self.re.command(op)

    def offscreen_pass(self) -> None:
        self.re.offscreen_pass()

    def binned(self, draw, board: ScreenPass) -> None:
        self.re.binned(draw, draw.counters,
                       None if board.occluded is None else ~board.occluded)

    def cleared(self, counters, rect, color, depth, color_mask) -> None:
        self.re.cleared(self.screen, counters, rect, color, depth, color_mask)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        self.re.written(draw, pixel)

    def decide(self, counters, board: ScreenPass) -> None:
        # With EVR, a tile whose last rendered frame showed an entry left out of its
        # signature cannot be skipped on the signature alone.
        board.skipped = self.re.end_pass(self.screen, counters, board.unsigned)

    def flushed(self, flush):
        return flush & ~self.re.skip

    def end_frame(self, result, screen) -> None:
        self.re.end_frame(result.counters)


# == the compiled path (Numba, tilesim.jit): bit-identical to ``binned`` above ===============

# The tile counters ``binned`` adds to, in ``_binned``'s order.
BINNED_COUNTERS = ("re_subblocks_signed", "re_bitmap_accesses", "re_otq_overflow_entries",
                   "re_shifts", "re_signature_accesses")
_EVERY = np.zeros(0, dtype=bool)                    # ``included`` when every entry counts
_NO_MESSAGE = np.frombuffer(b"", dtype=np.uint8)    # the constants when not signed again
_UNSIGNED = (np.zeros(1, np.uint32), np.zeros(1, np.int64))
_UNCOUNTED = np.zeros(0, dtype=np.int64)


@jit(inline=True)
def _signed(subblocks, count, crc32, sign_luts, ladder):  # pragma: no cover - compiled
    return crc_of(subblocks, count, sign_luts, ladder) if crc32 else xor_of(subblocks, count)


@jit
def _binned(tile, row, included, every, depth_read, fresh_depth, old_depth_read, sign,
            message, new, constants_crc, constants_blocks, vertices, triangle_vertex,
            otq_entries, crc32, sign_luts, ladder, bitmap, current, shifts,
            accesses, subblocks_signed, bitmap_accesses, otq_overflow, shift_counts,
            signature_accesses):  # pragma: no cover - compiled
    # ``RenderingElimination.binned`` entry by entry; returns the sub-blocks signed (-1: an
    # entry's tile or triangle, or a triangle's vertex, out of range; nothing written).
    n = tile.shape[0]
    triangles = triangle_vertex.shape[0]
    for i in range(n):
        if tile[i] < 0 or tile[i] >= bitmap.shape[0]:
            return -1
        if (every or included[i]) and (row[i] < 0 or row[i] >= triangles):
            return -1
    for r in range(triangles):
        for v in range(3):
            if triangle_vertex[r, v] < 0 or triangle_vertex[r, v] >= vertices.shape[0]:
                return -1
    if depth_read:                      # a depth test reads what no clear reset
        for i in range(n):
            if not fresh_depth[tile[i]]:
                old_depth_read[tile[i]] = True
    if not sign:
        return 0
    signed = 0
    first = 0
    while not (every or included[first]):
        first += 1
    if new:        # the constants block: signed once, the bitmap restarts (§4.2.1)
        blocks = (message.shape[0] + 7) // 8
        padded = np.zeros(8 * blocks, dtype=np.uint8)
        padded[:message.shape[0]] = message
        constants_crc[0] = _signed(padded.view(np.uint64), blocks, crc32, sign_luts, ladder)
        constants_blocks[0] = blocks
        bitmap[:] = False
        subblocks_signed[tile[first]] += blocks
        signed += blocks
    # A primitive's record, its three clipped vertices as float32, in whole sub-blocks.
    components = vertices.shape[1]
    record_blocks = (3 * components + 1) // 2
    record = np.zeros(2 * record_blocks, dtype=np.float32)
    record_subblocks = record.view(np.uint64)
    # Primitives in the order first met: their slot, signature, first tile and entries.
    slot = np.full(triangles, -1, dtype=np.int64)
    most = min(triangles, n)
    primitive_crc = np.empty(most, dtype=np.uint32)
    primitive_tile = np.empty(most, dtype=np.int64)
    covered = np.zeros(most, dtype=np.int64)
    primitives = 0
    for i in range(n):
        if not (every or included[i]):
            continue
        t = tile[i]
        bitmap_accesses[t] += 1
        if not bitmap[t]:           # the constants first, where not yet folded into t
            bitmap[t] = True
            bitmap_accesses[t] += 1
            current[t] = folded(current[t], constants_crc[0], constants_blocks[0], crc32,
                                ladder)
            shift = constants_blocks[0] if crc32 else 0
            shifts[t] += shift
            shift_counts[t] += shift
            accesses[t] += 2        # the Signature Buffer read and written
            signature_accesses[t] += 2
        r = row[i]
        s = slot[r]
        if s < 0:                   # signed once, charged to its first entry's tile
            s = slot[r] = primitives
            primitives += 1
            for v in range(3):
                for c in range(components):
                    record[v * components + c] = np.float32(vertices[triangle_vertex[r, v], c])
            primitive_crc[s] = _signed(record_subblocks, record_blocks, crc32, sign_luts,
                                       ladder)
            primitive_tile[s] = t
            subblocks_signed[t] += record_blocks
        covered[s] += 1
        current[t] = folded(current[t], primitive_crc[s], record_blocks, crc32, ladder)
        shift = record_blocks if crc32 else 0
        shifts[t] += shift
        shift_counts[t] += shift
        accesses[t] += 2
        signature_accesses[t] += 2
    for s in range(primitives):     # the Overlapped Tiles Queue's overflow
        otq_overflow[primitive_tile[s]] += max(covered[s] - otq_entries, 0)
    return signed + primitives * record_blocks
