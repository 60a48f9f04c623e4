"""The timing model's tile traversal (Frame Coherence §2.3): the same orders as the renderer's
``RenderTarget.traversal``, computed from a pass's geometry, and the next active tile of a
pass in that order."""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.timing.traversal import traversal

SIZES = [(16, 16), (48, 16), (16, 48), (1196, 768), (100, 37), (320, 240), (1920, 1080)]


@pytest.mark.parametrize("zorder", [False, True])
def test_orders_equal_the_renderers(zorder):
    """Several passes of different sizes in one batch: each pass's visiting order is the
    renderer's, offset by the pass's first tile."""
    targets = [RenderTarget(w, h) for w, h in SIZES]
    sizes = np.array([t.tiles_x * t.tiles_y for t in targets])
    tile_pass = np.repeat(np.arange(len(targets)), sizes)
    order = traversal(tile_pass, np.array([t.tiles_x for t in targets]), sizes, zorder).order
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    expected = np.concatenate([np.asarray(t.traversal("zorder" if zorder else "scanline"))
                               + s for t, s in zip(targets, starts, strict=True)])
    assert np.array_equal(order, expected)


def test_scanline_starts_at_the_top_left_and_ends_at_the_bottom_right():
    # 3x2 tiles, stored from the bottom-left: the top row (tiles 3, 4, 5) comes first
    assert traversal(np.zeros(6, dtype=np.int64), [3], [6]).order.tolist() == [3, 4, 5, 0, 1, 2]
    # 4x4 in Z-order: 2x2 blocks from the top left, each block top-left, top-right, ...
    z = traversal(np.zeros(16, dtype=np.int64), [4], [16], zorder=True).order
    assert z.tolist() == [12, 13, 8, 9, 14, 15, 10, 11, 4, 5, 0, 1, 6, 7, 2, 3]


def test_next_active_stays_in_the_pass():
    # two passes of 4x1 tiles: active tiles 1, 3 (pass 0) and 4, 6 (pass 1)
    order = traversal(np.repeat([0, 1], 4), [4, 4], [4, 4])
    active = np.array([0, 1, 0, 1, 1, 0, 1, 0], dtype=bool)
    assert order.next_active(active).tolist() == [1, 3, 3, -1, 6, 6, -1, -1]
    assert order.rank().tolist() == list(range(8))
    assert traversal(np.zeros(0, dtype=np.int64), [], []).next_active(
        np.zeros(0, dtype=bool)).size == 0
