"""The cycle-level reference of the raster pipeline (``tilesim.timing.reference``, issue 15
item 2): hand-derived cycles on synthetic tiles, the recorded quad stream against the
renderer's counters, and the analytic model's error against the reference on real frames.

Cycle conventions of the loop (``timing/reference/raster.py``): in every cycle the stages act
back to front (ROP, bus, processors' issue then dispatch, early Z, rasterizer, fetcher), so a
quad moves one stage per cycle; a display-list entry from the tile cache is ready 1 cycle after
its issue.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.reference.raster import PassInput, RasterParameters, run_pass, tile_cycles_of

CFG = load_gpu_config()
ECFG = load_energy_config()


def params(**changes) -> RasterParameters:
    """Table 3.1's raster pipeline (baseline_gpu.toml, 32 warp slots per processor)."""
    base = RasterParameters.from_config(CFG, warp_slots=32)
    for name, value in changes.items():
        setattr(base, name, value)
    return base


def full_quads(quads_per_tile, issue=8.0, latency=8.0, flush=0.0, dct=0.0) -> PassInput:
    """Tiles of full quads (4 lanes covered, early Z, all pass, shaded, 4 lanes written, no
    texture work), each tile one display-list entry from the tile cache."""
    n, tiles = int(sum(quads_per_tile)), len(quads_per_tile)
    full = lambda v: np.full(n, v, dtype=np.float64)  # noqa: E731
    ints = lambda v: np.full(n, v, dtype=np.int64)  # noqa: E731
    return PassInput(
        quad_start=np.concatenate([[0], np.cumsum(quads_per_tile)]).astype(np.int64),
        entry_start=np.arange(tiles + 1, dtype=np.int64),
        flush_bytes=np.full(tiles, float(flush)), dct_cycles=np.full(tiles, float(dct)),
        serial_cycles=np.zeros(tiles), entry_latency=np.ones(tiles),
        entry_bus_bytes=np.zeros(tiles),
        entry=np.repeat(np.arange(tiles), quads_per_tile).astype(np.int64),
        raster_cost=full(16.0), early=ints(1), survives=ints(1), issue=full(issue),
        texture=full(0.0), latency=full(latency), l2_misses=ints(0), dram_misses=ints(0),
        rop_lanes=full(4.0), late=ints(0))


@pytest.mark.parametrize("compiled", [True, False])
def test_a_tile_of_identical_shaded_quads_is_shading_bound(compiled):
    """64 full quads of 8 issue cycles each (and 8 cycles of latency) on 4 processors.
    Entry issued at cycle 0, ready at 1; quad k is rasterized into early Z at cycle 1 + k (one
    quad per cycle), leaves it at 3 + k, is dispatched at 4 + k to processor (4 + k) mod 4 = k
    mod 4 (the dispatcher's round robin turns every cycle). Each processor gets a quad every 4
    cycles but needs 8 for it, so it issues without a break from cycle 5 + p: its 16 quads x 8 =
    128 cycles end in cycle 132 + p, and its last quad is written the cycle after. The last,
    processor 3's, at cycle 136: the tile (no flush) ends there."""
    finish = run_pass(full_quads([64]), params(), compiled)
    assert finish.tolist() == [136.0]
    # the analytic bottleneck of the same tile: 64 quads x 8 cycles / 4 processors
    assert 64 * 8 / 4 == 128


@pytest.mark.parametrize("compiled", [True, False])
def test_a_flush_bound_tile_overlaps_the_next_tiles_start(compiled):
    """Two tiles of one quad (2 issue cycles, 2 of latency) and a 1 KB flush (256 cycles at 4
    B/cycle). Tile 0's quad: entry ready at 1, early Z 1-3, dispatched at 4, issued in 5-6,
    written at 7; its flush runs in cycles 7-262, the color buffer is free at 263. With
    ``flush_overlap`` tile 1 is fetched, rasterized, depth-tested and shaded meanwhile and
    waits with its quad finished; it writes at 263 and flushes in 263-518: it ends at 519, its
    share 256 cycles, the flush alone. Serialized, tile 1's fetch waits for cycle 263 and its
    quad takes the same 7 cycles to reach the ROP (263 + 7 = 270): it ends at 526."""
    data = full_quads([1, 1], issue=2.0, latency=2.0, flush=1024.0)
    overlapped = run_pass(data, params(), compiled)
    assert overlapped.tolist() == [263.0, 519.0]
    assert tile_cycles_of(overlapped).tolist() == [263.0, 256.0]
    serial = run_pass(data, params(flush_overlap=False), compiled)
    assert serial.tolist() == [263.0, 526.0]


@pytest.mark.parametrize("compiled", [True, False])
def test_full_queues_stall_the_rasterizer(compiled):
    """One processor. Tile 0: one quad (1 issue cycle, 1 of latency), written at cycle 6, then
    a 400-byte flush (100 cycles): the color buffer is free at T = 106. Tile 1: 10 quads.
    With Table 3.1's queues all ten are shaded while the flush runs; from T the ROP writes one
    a cycle (T .. T + 9), then the flush: T + 9 + 100 = 215. With one warp slot, a one-quad
    fragment queue and one quad in early Z, three quads wait (slot, queue, early Z) and the
    rasterizer stalls on the fourth; from T each quad needs the slot for its issue cycle and
    its write, two cycles: the tenth is written at T + 18 and the tile ends at 224."""
    data = full_quads([1, 10], issue=1.0, latency=1.0, flush=400.0)
    roomy = run_pass(data, params(processors=1), compiled)
    assert roomy.tolist() == [106.0, 215.0]
    tight = run_pass(data, params(processors=1, warp_slots=1, fragment_queue=1, z_in_flight=1),
                     compiled)
    assert tight.tolist() == [106.0, 224.0]


@pytest.mark.parametrize("compiled", [True, False])
def test_dsr_dct_after_the_flush_or_beside_it(compiled):
    """One quad and a 1 KB flush (cycles 7-262, as above), with a 64-cycle DCT row pass on the
    color buffer: after the flush (``dct_after_flush``) the tile ends 64 cycles later, 327;
    beside it the DCT ends first and the tile ends with the flush, 263."""
    data = full_quads([1], issue=2.0, latency=2.0, flush=1024.0, dct=64.0)
    assert run_pass(data, params(dct_after_flush=True), compiled).tolist() == [327.0]
    assert run_pass(data, params(dct_after_flush=False), compiled).tolist() == [263.0]


def test_empty_and_flush_only_tiles():
    """A tile without primitives costs its flush; one with neither nothing. The fetcher
    passes both in cycle 0, the rasterizer in cycle 1, and the ROP starts tile 0's flush in
    cycle 2: 256 cycles, ending at 258; tile 1 ends there too. With RE's 2-cycle compare before
    each tile, the fetcher passes tile 0 in cycle 1 (compare in cycles 0-1) and tile 1 in cycle
    3; the rasterizer passes tile 0 in cycle 2, the ROP starts its flush in cycle 3 (ending at
    259) and tile 1, passed in cycle 4, ends with it."""
    data = full_quads([0, 0], flush=0.0)
    data.entry_start = np.zeros(3, dtype=np.int64)
    data.flush_bytes = np.array([1024.0, 0.0])
    assert run_pass(data, params()).tolist() == [258.0, 258.0]
    data.serial_cycles = np.array([2.0, 2.0])
    assert run_pass(data, params()).tolist() == [259.0, 259.0]
