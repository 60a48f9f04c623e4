"""The timing model's tile traversal (Frame Coherence §2.3): the same orders as the renderer's
``RenderTarget.traversal``, computed from a pass's geometry, the next active tile of a pass in
that order, and what Z order (``screen.zorder_traversal``) changes: which tile's start hides
which flush, and the Parameter Buffer re-reads' reuse distance in the tile cache and L2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesim.render.pipeline.counters import FrameCounters, PassCounters
from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.timing.config import load_energy_config, load_gpu_config, warp_instruction_floor
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.memory_traffic import tile_memory, vertical_reuse_distances
from tilesim.timing.model import effective_tiles, estimate_batch, traversal_order
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


# --- the timing model in Z order (screen.zorder_traversal) ---

CFG = load_gpu_config()
ECFG = load_energy_config()
ZCFG = CFG.replace(**{"screen.zorder_traversal": 1})
FILL = CFG["memory.latency_max"] + 8


def grid(tx, ty, tiles, scalars=None):
    f = FrameCounters(0)
    f.scalars.update(scalars or {})
    n = tx * ty
    p = PassCounters("default", 16 * tx, 16 * ty, 16, tx, ty, np.arange(n))
    for name, values in tiles.items():
        p.tiles[name] = np.broadcast_to(np.asarray(values, dtype=np.int64), (n,)).copy()
    f.passes.append(p)
    return batch_from_frames([f])


def test_the_default_is_scanline_and_the_switch_takes_z_order():
    assert CFG["screen.zorder_traversal"] == 0 and CFG.ranges["screen.zorder_traversal"] == (0, 1)
    b = grid(4, 4, {})
    assert traversal_order(b, CFG).order.tolist() == [12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7,
                                                      0, 1, 2, 3]
    assert traversal_order(b, ZCFG).order.tolist() == [12, 13, 8, 9, 14, 15, 10, 11, 4, 5, 0,
                                                       1, 6, 7, 2, 3]


def test_z_order_decides_which_tile_hides_which_flush():
    """A 4x4 pass, every tile 150 cycles of work and a 1 KB flush (256 cycles) but tile 14
    (the top row's third tile, 10 cycles of work): the tile visited just before it has fill +
    10 cycles of its flush hidden, every other tile fill + flush_hidden_quads (112 < 150), the
    last one (tile 3, the bottom-right) nothing; no tile ends before its own flush (tile 14's
    own cycles are its flush). In scanline order tile 14's predecessor is its left neighbour
    (tile 13); in Z order tile 9, the last of the first 2x2 block (12, 13, 8, 9)."""
    # warp instructions x 4 cycles each (Frame Coherence §2.2's vector unit) / 4 processors
    work = np.full(16, 150)
    work[14] = 10
    assert warp_instruction_floor(CFG) == 4
    b = grid(4, 4, {"prims_binned": 1, "fs_quad_alu": work, "color_flush_bytes": 1024})
    queued = CFG["buffers.color.flush_hidden_quads"]
    assert queued < 150
    for cfg, before in ((CFG, 13), (ZCFG, 9)):
        cycles = estimate_batch(b, cfg, ECFG).tile_cycles
        hidden = np.full(16, FILL + queued)
        hidden[before] = FILL + 10
        hidden[3] = 0
        assert cycles == pytest.approx(np.maximum(work * 4 / 4 + FILL + 256 - hidden, 256))


def test_z_order_shortens_the_parameter_buffer_reuse_distance():
    """4x2 tiles each reading 100 KB of primitive records (an 8 MB Parameter Buffer):
    vertically adjacent tiles are 4 tiles apart in scanline order, 2 in Z order. The 128 KB
    tile cache keeps 128 KB / (4 x 100 KB) = 33% of the re-reads in scanline order, 66% in Z
    order, and the 256 KB L2 66% and all of the rest: less DRAM traffic, time and energy."""
    b = grid(4, 2, {"prims_binned": 1, "pb_bytes_read": 100_000},
             {"pb_record_bytes_written": 8_000_000})
    for cfg, distance in ((CFG, 4), (ZCFG, 2)):
        lower, apart = vertical_reuse_distances(b, traversal_order(b, cfg))
        assert lower.tolist() == [0, 1, 2, 3] and apart.tolist() == [distance] * 4
    reuse = 0.75 * 100_000
    scan, z = (estimate_batch(b, cfg, ECFG) for cfg in (CFG, ZCFG))
    for cfg, d in ((CFG, 4), (ZCFG, 2)):
        mem = tile_memory(b, effective_tiles(b), cfg)
        tile_cache = 131072 / (d * 100_000)
        l2 = min(1.0, 262144 / (d * 100_000))
        assert mem["pb_tile_cache"] == pytest.approx(np.full(8, reuse * tile_cache))
        assert mem["pb_l2"] == pytest.approx(np.full(
            8, 0.25 * 100_000 * 262144 / 8_000_000 + reuse * (1 - tile_cache) * l2))
    assert z.traffic["pb_reads"][0] < scan.traffic["pb_reads"][0]
    assert z.seconds[0] < scan.seconds[0] and z.frame(0).energy < scan.frame(0).energy


def test_z_order_in_a_single_row_is_scanline():
    b = grid(6, 1, {"prims_binned": 1, "pb_bytes_read": 60_000, "fs_quad_alu": [40, 400] * 3,
                    "color_flush_bytes": 1024}, {"pb_record_bytes_written": 4_000_000})
    assert np.array_equal(traversal_order(b, ZCFG).order, np.arange(6))
    a, z = estimate_batch(b, CFG, ECFG), estimate_batch(b, ZCFG, ECFG)
    assert np.array_equal(a.tile_cycles, z.tile_cycles)


# a 4x4 pass: small counts, and Parameter Buffer reads that overflow the tile cache and the L2
WORK = ("prims_binned", "pb_bytes_read", "pb_list_bytes_written", "fs_quad_alu",
        "color_flush_bytes", "tex_cache_misses")
amount = st.integers(0, 5000) | st.integers(100_000, 3_000_000)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(base=st.lists(amount, min_size=16 * len(WORK), max_size=16 * len(WORK)),
       which=st.integers(0, 16 * len(WORK) - 1), inc=st.integers(1, 3_000_000),
       records=st.integers(0, 10_000_000))
def test_z_order_time_and_energy_never_decrease_with_more_work(base, which, inc, records):
    def estimate(values):
        tiles = {n: values[16 * i:16 * i + 16] for i, n in enumerate(WORK)}
        return estimate_batch(grid(4, 4, tiles, {"pb_record_bytes_written": records}), ZCFG,
                              ECFG).frame(0)

    bumped = list(base)
    bumped[which] += inc
    a, b = estimate(base), estimate(bumped)
    assert b.cycles >= a.cycles * (1 - 1e-12)
    assert b.energy >= a.energy * (1 - 1e-12)
    assert b.traffic_total >= a.traffic_total * (1 - 1e-12)
