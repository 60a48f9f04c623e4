"""Transaction Elimination (Frame Coherence §4.2.3): skip the flush of tiles whose colors did not
change.

When a tile of the default framebuffer is finished, the Compute CRC unit signs its colors (the
color buffer, 4 bytes per pixel, in 64-bit sub-blocks) and the signature is compared with the
tile's signature of the previous frame; when they are equal the flush to main memory is
skipped. The thesis charges energy for the Signature Buffer and CRC unit and, ideally, no time.
The image does not change: the frame buffer already holds those colors.
"""

from __future__ import annotations

import numpy as np

from tilesim.render.pipeline.counters import PassCounters
from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.render.techniques.registry import ScreenPass, TechniqueUnit
from tilesim.render.techniques.signature_unit import SUBBLOCK_BYTES, TileSignatures


class TransactionElimination:
    def __init__(self, target: RenderTarget):
        self.signatures = TileSignatures(target.tile_count, kind="crc32")
        self.flush = self.signatures.xp.ones(target.tile_count, dtype=np.int64)

    def end_pass(self, target: RenderTarget, counters: PassCounters) -> None:
        xp = self.signatures.xp
        colors = target.tile_blocks(target.color).reshape(target.tile_count, -1)
        crc, _ = self.signatures.sign_bytes(colors)
        self.signatures.current[:] = crc
        equal = self.signatures.equal_to_previous()
        pixels = xp.asarray(target.tile_pixels())
        counters.add_per_tile("te_subblocks_signed", pixels * 4 // SUBBLOCK_BYTES)
        counters.add_per_tile("te_signature_accesses",
                              xp.full(target.tile_count, 2, dtype=np.int64))
        counters.add_per_tile("te_flushes_skipped", equal)
        counters.add_per_tile("te_flush_bytes_saved", equal * pixels * 4)
        self.flush = (~equal).astype(xp.int64)

    def end_frame(self) -> None:
        self.signatures.end_frame()


class TransactionEliminationUnit(TechniqueUnit):
    """TE behind the pipeline's hooks: signs each finished screen tile's colors and keeps
    the flush of the tiles whose colors equal last frame's."""

    def __init__(self, screen, traversal: str, techniques) -> None:
        super().__init__(screen, traversal, techniques)
        self.te = TransactionElimination(screen)

    def end_pass(self, counters, board: ScreenPass) -> None:
        # After RE's decision: a skipped tile shows last frame's colors, signed equal.
        self.te.end_pass(self.screen, counters)

    def flushed(self, flush):
        return flush & self.te.flush

    def end_frame(self, result, screen) -> None:
        self.te.end_frame()
