"""The cycle-level reference of the raster pipeline (``tilesim.timing.reference``, issue 15
item 2): hand-derived cycles on synthetic tiles, the recorded quad stream against the
renderer's counters, and the analytic model's error against the reference on real frames.

Cycle conventions of the loop (``timing/reference/raster.py``): in every cycle the stages act
back to front (ROP, bus, processors' issue then dispatch, early Z, rasterizer, fetcher), so a
quad moves one stage per cycle; a display-list entry from the tile cache is ready 1 cycle after
its issue.
"""

from __future__ import annotations

import json
from pathlib import Path

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


# -- real frames ------------------------------------------------------------------------------

RUNNER = Path(__file__).resolve().parent.parent / "traces" / "runner-1196x768.tsim"
SMALL = (320, 192)          # 20 x 12 tiles: a real frame's mix of tiles in a few seconds


@pytest.fixture(scope="module")
def runner_frames():
    """Frames 1-2 of the runner trace, rendered at 320x192 with the quad recorder."""
    from tilesim.render.studies.quad_stream import record_frames

    return record_frames(RUNNER, [1, 2], size=SMALL)


def test_the_recorded_quads_add_up_to_the_counters_tile_by_tile(runner_frames):
    """Every quad the pipeline processed is in the stream, with the work the counters charge
    its tile: summed per tile, the stream gives the tile counters exactly."""
    sums = {"quads_rasterized": lambda q: np.ones_like(q["covered"]),
            "fragments_rasterized": lambda q: q["covered"],
            "early_z_tested": lambda q: q["early_tested"],
            "quads_shaded": lambda q: q["shaded"].astype(np.int64),
            "late_z_tested": lambda q: q["late_tested"],
            "color_writes": lambda q: q["written"],
            "tex_cache_accesses": lambda q: q["tex_accesses"],
            "tex_cache_misses": lambda q: q["tex_misses"],
            "texels_fetched": lambda q: q["texels"]}
    for recorded in runner_frames:
        for counters, stream in zip(recorded.counters.passes, recorded.streams, strict=True):
            q = stream.quads
            assert q["tile"].size == counters.tiles["quads_rasterized"].sum() > 0
            for name, value in sums.items():
                got = np.bincount(q["tile"], weights=value(q), minlength=stream.tiles)
                want = np.ravel(counters.tiles[name])
                assert got.astype(np.int64).tolist() == want.tolist(), name
            issued = sum(counters.tiles[f"fs_quad_{k}"] for k in ("alu", "tex", "flow"))
            got = np.bincount(q["tile"], weights=q["instructions"], minlength=stream.tiles)
            assert got.astype(np.int64).tolist() == np.ravel(issued).tolist()
            # primitives in submission order within a tile: their draws never go back
            draw = q["primitive"] >> 32
            for t in range(stream.tiles):
                part = draw[stream.offsets[t]:stream.offsets[t + 1]]
                assert np.all(np.diff(part) >= 0)


def test_compiled_and_python_loops_agree_on_a_real_pass(runner_frames):
    """The Numba loop and its pure-Python source give the same cycles on a real recorded
    pass (its first 40 tiles in traversal order, to keep the Python loop short)."""
    from tilesim.timing.counter_batch import batch_from_frames
    from tilesim.timing.model import traversal_order
    from tilesim.timing.reference.inputs import batch_pass_inputs, parameters

    recorded = runner_frames[0]
    batch = batch_from_frames([recorded.counters])
    (_, data), = batch_pass_inputs(batch, recorded.streams, traversal_order(batch, CFG), CFG)
    keep = 40
    q, e = int(data.quad_start[keep]), int(data.entry_start[keep])
    cut = PassInput(**{name: (value[:keep + 1] if name in ("quad_start", "entry_start")
                              else value[:keep] if value.size == data.flush_bytes.size
                              else value[:e] if value.size == data.entry_latency.size
                              else value[:q])
                       for name, value in vars(data).items()})
    assert q > 1000
    fast = run_pass(cut, parameters(CFG), compiled=True)
    assert run_pass(cut, parameters(CFG), compiled=False).tolist() == fast.tolist()


def test_the_analytic_model_stays_within_the_error_bounds_of_the_reference(runner_frames):
    """Issue 15's bounds on a small sample: the analytic model's raster cycles per frame
    within 5% of the reference's on average and no frame beyond 15%, with the fitted overlap
    constants of baseline_gpu.toml (buffers.color.flush_hidden_quads, flush_read_share).
    (+2.9% on these frames). With the constants set back (48 quads, no read share; the
    color-buffer floor stays) they are 6% short: the fitted terms are what the bound tests."""
    from tilesim.timing.reference.compare import compare, distribution

    result = compare([(r.counters, r.streams) for r in runner_frames], CFG, ECFG)
    frames = distribution(result.frame_error)
    assert frames["count"] == 2
    assert frames["mean_abs"] < 0.05 and frames["max"] < 0.15
    # a sample: each pass's first 60 tiles in traversal order, the frames' sums over them
    sample = compare([(r.counters, r.streams) for r in runner_frames], CFG, ECFG, tiles=60)
    assert sample.sampled.sum() == 2 * 60 and sample.tiles_simulated == 2 * 61
    assert sample.analytic_frame == pytest.approx(
        [result.analytic[(result.frame == f) & sample.sampled].sum() for f in (1, 2)])
    assert np.abs(sample.frame_error).max() < 0.15
    # the tiles add up to the frames both ways
    assert result.reference_frame.sum() == pytest.approx(result.reference.sum())
    assert result.analytic_frame.sum() == pytest.approx(result.analytic.sum())
    # and the untuned overlap terms were measurably worse on the same frames
    untuned = CFG.replace(**{"buffers.color.flush_hidden_quads": 48,
                             "buffers.color.flush_read_share": 0.0})
    before = distribution(compare([(r.counters, r.streams) for r in runner_frames], untuned,
                                  ECFG).frame_error)
    assert before["mean_abs"] > frames["mean_abs"]


@pytest.mark.slow
def test_reference_timing_command(capsys):
    from tilesim.cli import main

    assert main(["reference-timing", str(RUNNER), "--frames", "1:2", "--size", "160x96",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["frame"] for f in report["frames"]] == [1]
    assert report["frame_error"]["count"] == 1 and report["reference_speed"]["tiles"] == 60
    assert abs(report["frames"][0]["relative_error"]) < 0.15
    assert main(["reference-timing", str(RUNNER), "--frames", "1:999"]) == 2
    assert "--frames '1:999'" in capsys.readouterr().err


# -- the geometry pipeline --------------------------------------------------------------------

def binner_only(entries, sign, fold):
    """Primitives straight into the tiler (no vertex work, nothing written to memory)."""
    from tilesim.timing.reference.geometry import GeometryInput

    n = len(entries)
    empty = np.zeros(0)
    return GeometryInput(fetch=empty, read_bytes=empty, shade=empty,
                         needs=np.zeros(n, dtype=np.int64), binned=np.arange(n),
                         entries=np.asarray(entries, dtype=np.int64), write_bytes=np.zeros(n),
                         sign=np.asarray(sign, dtype=np.float64),
                         fold=np.asarray(fold, dtype=np.float64))


@pytest.mark.parametrize("compiled", [True, False])
def test_an_overlapped_tiles_queue_overflow_stalls_the_binner(compiled):
    """Primitive 0 covers 300 tiles, signed in 10 cycles, its folds 2 cycles each; primitive 1
    covers 300 tiles and is not signed. Primitive assembly queues both in cycles 0-1; the tiler
    takes primitive 0 in cycle 1 (signed at 11) and pushes one tile a cycle into the Overlapped
    Tiles Queue; the Accumulate unit pops one every 2 cycles from cycle 12 (12, 14, ..., 610
    for the 300). With 128 entries the queue is full after cycle 245's push (245 pushed, 117
    popped); from then the tiler pushes only after a pop, in even cycles, its 300th in cycle
    354; primitive 1's 300 entries follow in 355-654: the frame ends at 655. With a queue that
    never fills, primitive 0's pushes end in cycle 300 and primitive 1's in 600, the folds at
    610: the frame ends at 611. The overflow (300 - 128 = 172 entries) cost 44 cycles."""
    from tilesim.timing.reference.geometry import run_geometry

    data = binner_only([300, 300], [10, 0], [2, 0])
    assert run_geometry(data, CFG, compiled) == 655
    roomy = CFG.replace(**{"techniques.signature.ot_queue_entries": 1024})
    assert run_geometry(data, roomy, compiled) == 611
    # no signature work: the tiler alone, 600 entries from cycle 1
    assert run_geometry(binner_only([300, 300], [0, 0], [0, 0]), CFG, compiled) == 601


def test_the_recorded_draws_add_up_to_the_frame_counters(runner_frames):
    """Per draw, the recorder keeps the frame counters' growth: summed over the draws they
    give the frame's; the binned primitives and their entries give prims_rasterized and the
    tiles' prims_binned."""
    for recorded in runner_frames:
        draws, scalars = recorded.draws, recorded.counters.scalars
        for name in ("vertices_shaded", "vertex_cache_accesses", "vertex_cache_misses",
                     "index_bytes", "prims_assembled"):
            assert draws.draws[name].sum() == scalars[name], name
        assert draws.draws["vs_instructions"].sum() == sum(
            scalars[f"vs_{k}"] for k in ("alu", "tex", "flow"))
        assert draws.prim_start[-1] == scalars["prims_rasterized"]
        assert draws.entries.sum() == sum(p.tiles["prims_binned"].sum()
                                          for p in recorded.counters.passes)


def test_the_analytic_geometry_phase_is_within_the_bounds_of_the_reference(runner_frames):
    from tilesim.timing.reference.compare import compare_geometry

    result = compare_geometry([(r.counters, r.draws) for r in runner_frames], CFG, ECFG)
    assert result.reference.size == 2 and np.all(result.reference > 0)
    assert np.abs(result.error).max() < 0.05
