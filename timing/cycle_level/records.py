"""The records the cycle-level reference reads: a render pass's quads, tile by tile.

The renderer's recording hook (``tilesim.studies.quad_stream``) fills them from a real
render; tests build them by hand. Timing reads records, never the pipeline (the layering
contract), so this module names the fields and their meaning and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Per quad (one row per 2x2 quad the rasterizer emitted), name -> dtype. Lane counts are of
# the quad's 4 lanes.
QUAD_FIELDS = {
    "tile": np.int64,            # tile of the pass (row-major from the bottom-left tile)
    "primitive": np.int64,       # the primitive it belongs to (unique within the pass)
    "program": np.int64,         # index into QuadStream.programs (the fragment program)
    "covered": np.int64,         # lanes covering a pixel (fragments rasterized)
    "early_tested": np.int64,    # lanes depth-tested before shading
    "early_passed": np.int64,    # lanes that passed it
    "shaded": np.bool_,          # the fragment program ran on the quad
    "instructions": np.int64,    # warp instructions the quad issued
    "tex_accesses": np.int64,    # texture cache line accesses
    "tex_misses": np.int64,      # texture cache line misses
    "texels": np.int64,          # texels fetched
    "late_tested": np.int64,     # lanes depth-tested after shading
    "written": np.int64,         # lanes written to the color buffer
    "blended": np.bool_,         # the writes blend with the color buffer
    "memo_hit": np.bool_,        # fragment memoization: every lane that looked the LUT up hit,
    #                              so the program does not run for the quad (colors from the LUT)
}


@dataclass
class QuadStream:
    """The quads of a pass grouped by tile: ``quads`` name -> (Q,) arrays (``QUAD_FIELDS``),
    the quads of tile ``t`` at ``offsets[t]:offsets[t + 1]`` in the order the pipeline
    processed them; ``programs`` the fragment programs' digests (``quads["program"]`` indexes
    it)."""

    quads: dict[str, np.ndarray]
    offsets: np.ndarray          # (tiles + 1,) int64
    programs: list[str]

    @classmethod
    def from_quads(cls, quads: dict[str, np.ndarray], tiles: int,
                   programs: list[str]) -> QuadStream:
        """From per-quad arrays already sorted by tile (stable)."""
        tile = np.asarray(quads["tile"], dtype=np.int64)
        if tile.size and np.any(np.diff(tile) < 0):
            raise ValueError("quads must be grouped by tile in increasing tile order")
        counts = np.bincount(tile, minlength=tiles)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        quads = {"memo_hit": np.zeros(tile.size, dtype=bool), **quads}   # memoization off
        return cls({k: np.asarray(quads[k], dtype=d) for k, d in QUAD_FIELDS.items()},
                   offsets, list(programs))

    @property
    def tiles(self) -> int:
        return self.offsets.size - 1

    def quads_per_tile(self) -> np.ndarray:
        return np.diff(self.offsets)

    def select_tiles(self, keep: np.ndarray) -> QuadStream:
        """The stream with the quads of the tiles where ``keep`` (tiles,) is False removed
        (their tiles stay, empty): RE's skipped tiles, whose work the hardware never does."""
        keep_quad = np.repeat(np.asarray(keep, dtype=bool), self.quads_per_tile())
        quads = {k: v[keep_quad] for k, v in self.quads.items()}
        return QuadStream.from_quads(quads, self.tiles, self.programs)


# Per draw of a frame (one row per draw command, in submission order), name -> dtype: the
# frame counters' share of the draw (``FRAME_COUNTERS`` of render/pipeline/counters.py) and
# what the binner and RE's Signature Unit did with it.
DRAW_FIELDS = {
    "vertices_shaded": np.int64,        # vertex shader invocations
    "vertex_cache_accesses": np.int64,  # one per fetched vertex and attribute
    "vertex_cache_misses": np.int64,    # 64-byte lines
    "index_bytes": np.int64,
    "vs_instructions": np.int64,        # vertex lane instructions (ALU + TEX + flow)
    "vs_program": np.int64,             # index into DrawStream.programs, -1 without one
    "prims_assembled": np.int64,
    "record_bytes": np.int64,           # Parameter Buffer bytes of one primitive record
    "re_subblocks": np.int64,           # sub-blocks the Compute CRC unit signed for the draw
    "re_folds": np.int64,               # display-list entries folded (Signature Buffer / 2)
}


@dataclass
class DrawStream:
    """A frame's draws: ``draws`` name -> (D,) arrays (``DRAW_FIELDS``) and, per primitive
    sent to binning (P rows, draw after draw), ``entries`` (P,) the display-list entries (tiles)
    it was binned into; ``prim_start`` (D + 1,) each draw's primitives; ``programs`` the vertex
    programs' digests."""

    draws: dict[str, np.ndarray]
    entries: np.ndarray
    prim_start: np.ndarray
    programs: list[str]
