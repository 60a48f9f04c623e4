"""The pipeline's hook interface: where a technique may watch the pipeline and what it may
decide.

The renderer calls these methods at the points where a tile-based GPU's technique hardware
acts (thesis, "Tile-based rendering", ch. 2; the techniques of ch. 4-6). A hook sees records
(the draw's :class:`~tilesim.render.pipeline.renderer.DrawContext`, a render target, the
pass's counters, arrays of the fragments in flight) and never the renderer itself; where a
technique changes what the pipeline does, the hook *returns* the decision and the pipeline
applies it:

=================  =================================================================
hook               returns (None: nothing to change)
=================  =================================================================
``attach``         the initial sampling rate of every tile of the screen (DSR)
``tiles_to_flush`` tiles whose held-back entries must be drawn before this draw (EVR)
``binned``         display-list entries to hold back for the second lists (EVR)
``end_pass``       tiles whose rendering was eliminated: last frame's colors (RE)
``flushed``        per tile, 1 where the color buffer is written to memory (RE, TE)
``end_frame``      the sampling rate of every tile for the next frame (DSR)
``release``        the frames complete for output (memoization holds frames in pairs)
=================  =================================================================

The other hooks (``command``, ``begin_pass``, ``cleared``, ``early_z``, ``late_shaded``,
``shaded``, ``written``, ``quads``) only observe. This base class is the baseline: it decides
nothing.
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import array_module, to_host


def overrides(instance, base: type, method: str) -> bool:
    """Whether ``instance``'s class defines ``method`` otherwise than ``base`` does (the test
    of :meth:`PipelineHooks.observes` and of the hook sets that forward to others)."""
    return getattr(type(instance), method) is not getattr(base, method)


class PipelineHooks:
    """No technique: every hook observes nothing and decides nothing."""

    name = "baseline"
    # Whether ``written`` needs the display-list entry of every fragment (EVR does).
    wants_entries = False
    # Whether the pipeline builds ``quads``' per-quad record (a cycle-level study does).
    wants_quads = False
    # Whether a frame's decisions depend on the frames before (a render that skips frames,
    # ``Renderer.render``'s ``replay_from``, is then not theirs).
    spans_frames = False

    def observes(self, hook: str) -> bool:
        """Whether the observing hook ``hook`` ("late_shaded", "written", ...) does anything
        here: the pipeline builds that hook's arrays only when it does (gathering a batch's
        written colors alone cost ~6% of a baseline frame). A subclass observes the hooks
        it overrides."""
        return overrides(self, PipelineHooks, hook)

    def attach(self, screen, traversal: str) -> np.ndarray | None:
        """Called once, with the default framebuffer's render target and the traversal order
        of its tiles. Returns the first frame's sampling rates ((tiles,) int, 0 = 1x), or
        None to render every tile at 1x."""
        return None

    def command(self, op: str) -> None:
        """Every command, before the pipeline acts on it."""

    def begin_pass(self, target, counters) -> None:
        """A render pass into ``target`` starts; ``counters`` are its per-tile counters."""

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        """Before ``draw`` is binned: a (tiles,) bool mask of the tiles whose held-back
        entries must be rasterized first, or None."""
        return None

    def binned(self, draw) -> np.ndarray | None:
        """``draw``'s display lists are written: a (B,) bool mask over ``draw.bins`` of the
        entries to hold back (rasterized later, in submission order), or None."""
        return None

    def cleared(self, target, counters, rect, color, depth, color_mask) -> None:
        """``target`` was cleared inside ``rect`` (x0, y0, x1, y1) to ``color`` (None: color
        untouched) and ``depth`` (None: depth untouched)."""

    def early_z(self, draw, pixel, depth, tile) -> None:
        """Fragments about to be depth-tested before shading: their pixel indices, quantized
        depths and tiles."""

    def late_shaded(self, draw, tile) -> None:
        """Fragments shaded without an early depth test, by tile."""

    def shaded(self, draw, inputs, system_values, color, tile, alive) -> None:
        """The fragment program ran: its per-lane inputs and system values, the colors it
        produced, each lane's tile, and which lanes are live fragments (not helpers)."""

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        """Colors written to the color buffer: pixel indices, tiles, colors, display-list
        entries (None unless ``wants_entries``) and their positions among the shaded lanes."""

    def quads(self, draw, batch) -> None:
        """Called only when ``wants_quads``: a batch of ``draw``'s quads left the pipeline;
        ``batch`` (``quad_stages.QuadBatch``) says per quad, in rasterizer order, what each
        stage did to it."""

    def end_pass(self, target, counters) -> np.ndarray | None:
        """The pass into ``target`` ends, its tiles rendered. Returns a (tiles,) bool mask of
        the tiles whose rendering was eliminated (they keep last frame's colors, which the
        technique has put back; their pixels do not count as written), or None."""
        return None

    def flushed(self, target) -> np.ndarray | int:
        """Per tile, 1 where the color buffer is written to memory at the pass's end."""
        return 1

    def finish_pass(self, target, counters, written, depth_flushed: bool) -> None:
        """Not a technique's hook: the pipeline's end of a pass under these hooks' decisions.
        The techniques decide (``end_pass``), then the pass's last counts follow: the color
        flush of every tile (``flushed``), the depth flush where a depth texture keeps the
        depth buffer (``depth_flushed``), and the pixels written (``written``: (pixels,)
        bool, row 0 at the bottom; eliminated tiles count none). A hooks set that runs
        several technique sets on one render (techniques.side_by_side) finishes each set's
        pass through this same method."""
        xp = array_module(target.color)
        skipped = self.end_pass(target, counters)
        caches = counters.texture_caches
        if caches is not None:
            # each tile's texture caches start from what the tile before it on its processor
            # left, eliminated tiles passing it on (render/pipeline/tile_caches.py)
            inherited, owners = caches.inherited_hits(
                counters.traversal, None if skipped is None else ~to_host(skipped))
            if inherited.any():
                counters.add_per_tile("tex_cache_misses", xp.asarray(-inherited))
                self.texture_hits_inherited(target, owners)
        if skipped is not None and skipped.any():
            # Eliminated tiles show last frame's colors: nothing was written there.
            written = written & ~skipped[target.pixel_tiles()].ravel()
        # A tile-based GPU flushes every tile's color buffer at the end of the pass (and the
        # depth buffer where a depth texture keeps it).
        if target.has_color:
            counters.add_per_tile("color_flush_bytes", xp.asarray(target.tile_pixels()) * 4
                                  * self.flushed(target))
        counters.add_per_tile("pixels_written", target.count_per_tile(written))
        if depth_flushed:
            counters.add_per_tile("depth_flush_bytes",
                                  target.tile_pixels() * (2 if target.depth_bits <= 16 else 4))

    def texture_hits_inherited(self, target, owners) -> None:
        """At the end of a pass into ``target``: texture-cache misses the quads' records
        counted (``QuadBatch.tex_misses``) that hit in what the tile before theirs left on
        its processor (render/pipeline/tile_caches.py); ``owners`` (K,) int64, one per such
        access: its batch's ``QuadBatch.tex_owner_base`` plus its shaded lane."""

    def end_frame(self, result, screen) -> np.ndarray | None:
        """Frame ``result`` is complete, ``screen`` holding its colors. Returns the sampling
        rate of every tile for the next frame, or None to keep the current ones."""
        return None

    def release(self, result) -> list:
        """The frames complete for output now that ``result`` is rendered, in order."""
        return [result]

    def finish(self) -> list:
        """The frames still held when the trace ends, in order."""
        return []
