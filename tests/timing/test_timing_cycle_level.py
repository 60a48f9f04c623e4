"""The cycle-level reference of the raster pipeline (``tilesim.timing.cycle_level``, issue 15
item 2): hand-derived cycles on synthetic tiles, the recorded quad stream against the
renderer's counters, and the analytic model's error against the reference on real frames.

Since issue 30 the reference has its own DRAM (``timing/cycle_level/dram.py``): a line request
pays the controller's half round trip (5.5 cycles), an activate (tRCD 8) on a closed bank, the
CAS (tCL 7 reads, tWL 4 writes) and 32 cycles on its channel's data bus (2 bytes a cycle, half of
Table 3.1's 4); 256-byte blocks alternate between the 2 channels, so a 1 KB flush (16 lines)
puts 8 lines on each channel. An idle channel (16 cycles) powers down and pays tXP 3 cycles.

Cycle conventions of the loop (``timing/cycle_level/raster.py``): in every cycle the stages act
back to front (ROP, bus, processors' issue then dispatch, early Z, rasterizer, fetcher), so a
quad moves one stage per cycle; a display-list entry from the tile cache is ready 1 cycle after
its issue.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.cycle_level.raster import PassInput, RasterParameters, run_pass, tile_cycles_of

CFG = load_gpu_config()
ECFG = load_energy_config()


def params(**changes) -> RasterParameters:
    """Table 3.1's raster pipeline (baseline_gpu.toml, 32 warp slots per processor)."""
    base = RasterParameters.from_config(CFG, warp_slots=32)
    for name, value in changes.items():
        setattr(base, name, value)
    return base


def full_quads(quads_per_tile, issue=8.0, latency=8.0, flush=0, dct=0.0) -> PassInput:
    """Tiles of full quads (4 lanes covered, early Z, all pass, shaded, 4 lanes written, no
    texture work), each tile one display-list entry from the tile cache; ``flush`` color lines
    per tile, tile t's color slot at byte 1024 t."""
    n, tiles = int(sum(quads_per_tile)), len(quads_per_tile)
    full = lambda v: np.full(n, v, dtype=np.float64)  # noqa: E731
    ints = lambda v: np.full(n, v, dtype=np.int64)  # noqa: E731
    return PassInput(
        quad_start=np.concatenate([[0], np.cumsum(quads_per_tile)]).astype(np.int64),
        entry_start=np.arange(tiles + 1, dtype=np.int64),
        color_address=np.arange(tiles) * 1024.0, color_lines=np.full(tiles, int(flush)),
        depth_address=np.arange(tiles) * 1024.0 + 2.0 ** 40,
        depth_lines=np.zeros(tiles, dtype=np.int64), dct_cycles=np.full(tiles, float(dct)),
        serial_cycles=np.zeros(tiles), entry_latency=np.ones(tiles),
        entry_dram_start=np.zeros(tiles + 1, dtype=np.int64), entry_dram_address=np.zeros(0),
        entry=np.repeat(np.arange(tiles), quads_per_tile).astype(np.int64),
        raster_cost=full(16.0), early=ints(1), survives=ints(1), issue=full(issue),
        texture=full(0.0), latency=full(latency), l2_misses=ints(0),
        tex_dram_start=np.zeros(n + 1, dtype=np.int64), tex_dram_address=np.zeros(0),
        rop_lanes=full(4.0), late=ints(0))


@pytest.mark.slow
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
    """Two tiles of one quad (2 issue cycles, 2 of latency) and a 1 KB flush (16 lines).
    Tile 0's quad: entry ready at 1, early Z 1-3, dispatched at 4, issued in 5-6, written at 7;
    its 16 writes are asked at 7, reach DRAM at 12.5, bank 0 of each channel opens (row ready
    at 20.5, write data at 24.5) and each channel moves its 8 lines in 24.5-280.5: the color
    buffer is free at 281. With ``flush_overlap`` tile 1 is fetched, rasterized, depth-tested
    and shaded meanwhile and waits with its quad finished; it writes at 281, its lines reach
    the still open rows at 286.5 (row hits: data at 290.5) and cross in 290.5-546.5: it ends at
    547. Serialized, tile 1's fetch waits for cycle 281 and its quad takes the same 7 cycles to
    reach the ROP: its lines are written in 297.5-553.5, it ends at 554."""
    data = full_quads([1, 1], issue=2.0, latency=2.0, flush=16)
    overlapped = run_pass(data, params(), compiled)
    assert overlapped.tolist() == [281.0, 547.0]
    assert tile_cycles_of(overlapped).tolist() == [281.0, 266.0]
    serial = run_pass(data, params(flush_overlap=False), compiled)
    assert serial.tolist() == [281.0, 554.0]


@pytest.mark.parametrize("compiled", [True, False])
def test_full_queues_stall_the_rasterizer(compiled):
    """One processor. Tile 0: one quad (1 issue cycle, 1 of latency), written at cycle 6, then
    a 6-line flush (4 lines on channel 0: at DRAM 11.5, row open 19.5, data 23.5, on the bus
    23.5-151.5): the color buffer is free at T = 152. Tile 1: 10 quads. With Table 3.1's queues
    all ten are shaded while the flush runs; from T the ROP writes one a cycle (T .. T + 9),
    then the flush, asked at 161, row hits from 166.5 (data 170.5), channel 0's 4 lines in
    170.5-298.5: 299. With one warp slot, a one-quad fragment queue and one quad in early Z,
    three quads wait (slot, queue, early Z) and the rasterizer stalls on the fourth; from T
    each quad needs the slot for its issue cycle and its write, two cycles: the tenth is
    written at T + 18 = 170; the channels have been idle for 24 > 16 cycles, powered down, and
    the flush's first write pays tXP (3): data at 182.5, done at 310.5, the tile ends at 311."""
    data = full_quads([1, 10], issue=1.0, latency=1.0, flush=6)
    roomy = run_pass(data, params(processors=1), compiled)
    assert roomy.tolist() == [152.0, 299.0]
    tight = run_pass(data, params(processors=1, warp_slots=1, fragment_queue=1, z_in_flight=1),
                     compiled)
    assert tight.tolist() == [152.0, 311.0]


@pytest.mark.parametrize("compiled", [True, False])
def test_dsr_dct_after_the_flush_or_beside_it(compiled):
    """One quad and a 1 KB flush (written by 280.5, as above), with a 64-cycle DCT row pass on
    the color buffer: after the flush (``dct_after_flush``) it runs in cycles 281-344 and the
    tile ends at 345; beside it the DCT ends first and the tile ends with the flush, 281."""
    data = full_quads([1], issue=2.0, latency=2.0, flush=16, dct=64.0)
    assert run_pass(data, params(dct_after_flush=True), compiled).tolist() == [345.0]
    assert run_pass(data, params(dct_after_flush=False), compiled).tolist() == [281.0]


def test_empty_and_flush_only_tiles():
    """A tile without primitives costs its flush; one with neither nothing. The fetcher
    passes both in cycle 0, the rasterizer in cycle 1, and the ROP asks tile 0's 16 writes in
    cycle 2: at DRAM 7.5, rows open 15.5, data 19.5, 8 lines a channel, written by 275.5: the
    tile ends at 276, tile 1 with it. With RE's 2-cycle compare before each tile, the fetcher
    passes tile 0 in cycle 1 (compare in cycles 0-1) and tile 1 in cycle 3; the rasterizer
    passes tile 0 in cycle 2, the ROP asks its flush in cycle 3 (one cycle later: 277) and tile
    1, passed in cycle 4, ends with it."""
    data = full_quads([0, 0], flush=0)
    data.entry_start = np.zeros(3, dtype=np.int64)
    data.color_lines = np.array([16, 0])
    assert run_pass(data, params()).tolist() == [276.0, 276.0]
    data.serial_cycles = np.array([2.0, 2.0])
    assert run_pass(data, params()).tolist() == [277.0, 277.0]


def test_a_pass_whose_tiles_re_skips_costs_the_compares_only():
    """RE skips every tile of a pass (no entries, no quads, nothing flushed): the reference's
    inputs hold no memory request and each tile costs its 2-cycle signature compare (the
    fetcher passes tile t at 2 t + 1, the rasterizer a cycle later, the ROP ends it then)."""
    from tilesim.timing.cycle_level.inputs import parameters, pass_input
    from tilesim.timing.cycle_level.records import QUAD_FIELDS, QuadStream

    n = 6
    stream = QuadStream.from_quads({k: np.zeros(0, d) for k, d in QUAD_FIELDS.items()}, n, [])
    tiles = {"prims_binned": np.full(n, 3), "re_tiles_skipped": np.ones(n),
             "pb_bytes_read": np.full(n, 300.0), "color_flush_bytes": np.zeros(n),
             "re_signature_accesses": np.ones(n)}
    data = pass_input(stream, tiles, np.arange(n), {}, CFG, 0, 3)
    assert data.entry_start[-1] == 0 and data.entry_dram_address.size == 0
    assert run_pass(data, parameters(CFG)).tolist() == [3.0, 5.0, 7.0, 9.0, 11.0, 13.0]


def test_evr_layer_ids_ride_with_the_display_lists():
    """EVR stores a 2-byte layer id with each display-list entry (Frame Coherence §5.3.1): a
    tile's 64 entries read 6 x 64 bytes of lists instead of 4 x 64. Six tiles of entries
    without records, read cold: 6 x 256 B = 24 lines from DRAM, 6 x 384 B = 36 with EVR. The
    geometry phase writes them too: 6 bytes an entry instead of 4."""
    from tilesim.render.pipeline.counters import FrameCounters, PassCounters
    from tilesim.timing.cycle_level.agreement import layer_bytes
    from tilesim.timing.cycle_level.geometry import geometry_input
    from tilesim.timing.cycle_level.inputs import pass_input
    from tilesim.timing.cycle_level.records import QUAD_FIELDS, DrawStream, QuadStream

    n = 6
    stream = QuadStream.from_quads({k: np.zeros(0, d) for k, d in QUAD_FIELDS.items()}, n, [])
    tiles = {"prims_binned": np.full(n, 64), "pb_bytes_read": np.full(n, 64 * 4.0),
             "color_flush_bytes": np.zeros(n)}
    plain = pass_input(stream, tiles, np.arange(n), {}, CFG, 0, 3)
    evr = pass_input(stream, {**tiles, "evr_layer_bytes_written": np.full(n, 128)},
                     np.arange(n), {}, CFG, 0, 3)
    assert plain.entry_dram_address.size == 24 and evr.entry_dram_address.size == 36

    frame = FrameCounters(0)
    p = PassCounters("default", 48, 32, 16, 3, 2, np.arange(n))
    p.tiles.update({k: np.asarray(v) for k, v in tiles.items()})
    p.tiles["evr_layer_bytes_written"] = np.full(n, 128)
    frame.passes.append(p)
    assert layer_bytes(frame) == 2.0
    draws = DrawStream({"vertices_shaded": np.array([3]), "vertex_cache_accesses": np.array([3]),
                        "vertex_cache_misses": np.array([0]), "index_bytes": np.array([0]),
                        "vs_instructions": np.array([0]), "vs_program": np.array([-1]),
                        "prims_assembled": np.array([1]), "record_bytes": np.array([96]),
                        "re_subblocks": np.array([0]), "re_folds": np.array([0])},
                       np.array([5]), np.array([0, 1]), [])
    assert geometry_input(draws, np.zeros(0), CFG).write_bytes.tolist() == [96 + 4 * 5]
    assert geometry_input(draws, np.zeros(0), CFG, 2.0).write_bytes.tolist() == [96 + 6 * 5]


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [True, False])
def test_dram_rows_refresh_and_power_down(compiled):
    """The reference's DRAM on three reads asked at cycle 0 and one at 1500 (channel 0, bank
    0). Read 1: at the DRAM at 5.5 (half the 11-cycle round trip), the bank closed: activate,
    row ready at 13.5, data after tCL at 20.5, on the 2 B/cycle bus until 52.5, back at 58.
    Read 2, the next line: a row hit, its data waits for the bus: 52.5-84.5, back at 90.
    Read 3, another row of bank 0: precharge at max(13.5, 5.5 + tRAS 17) = 22.5 (the bank's
    last column command, its activate plus tRAS), activate at 30.5, row ready at 38.5, data
    at 45.5, bus 84.5-116.5, back at 122. Read 4 asked at 1500: channel 0, idle since 116.5,
    has been in (active) power-down, exit tXP 3 -> 1508.5, inside the refresh window (the
    last tRFC 112 of tREFI 1561): it waits for 1561, the refresh has
    closed the row: activate, back at 1613.5. Closed at 1700, the two channels' 3400 cycles
    split into standby and power-down; one refresh per channel."""
    from tilesim.timing.cycle_level.dram import DramState, DramTiming, dram_sequence, energy

    timing = DramTiming.from_config(CFG)
    dram = DramState(timing)
    loop = dram_sequence if compiled else getattr(dram_sequence, "py_func", dram_sequence)

    def ask(now, addresses):
        done = np.zeros(len(addresses))
        loop(float(now), np.array(addresses, dtype=np.float64),
             np.zeros(len(addresses), dtype=np.int64), *dram.arrays(), timing.vector(), done)
        return done.tolist()

    other_row = 2 * 8 * 2048       # 256-byte blocks alternate channels; 8 banks of 2 KB rows
    assert ask(0, [0, 64, other_row]) == [58.0, 90.0, 122.0]
    assert ask(1500, [0]) == [1613.5]
    dram.close(1700.0)
    counts = dram.counts()
    assert (counts["activates"], counts["row_hits"], counts["reads"]) == (3, 1, 4)
    assert counts["refreshes"] == 2
    assert counts["active_powerdown"] == 1505.5 - (116.5 + 16)
    assert sum(counts[k] for k in ("active_standby", "precharge_standby", "active_powerdown",
                                   "precharge_powerdown")) == 2 * 1700
    joules = energy(counts, CFG, ECFG)
    assert joules["act_pre"] == pytest.approx(3 * ECFG["memory.act_pre"] * 1e-12)
    assert joules["refresh"] == pytest.approx(2 * ECFG["memory.refresh"] * 1e-3 * 1561 / 400e6)


# -- real frames ------------------------------------------------------------------------------

RUNNER = TRACES / "runner-1196x768.tsim"
SMALL = (320, 192)          # 20 x 12 tiles: a real frame's mix of tiles in a few seconds


@pytest.fixture(scope="module")
def runner_frames():
    """Frames 1-2 of the runner trace, rendered at 320x192 with the quad recorder."""
    from tilesim.studies.quad_stream import record_frames

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


@pytest.mark.slow
def test_compiled_and_python_loops_agree_on_a_real_pass(runner_frames):
    """The Numba loop and its pure-Python source give the same cycles and the same DRAM
    counts on a real recorded pass (its first 40 tiles in traversal order, to keep the Python
    loop short)."""
    from tilesim.timing.cycle_level.dram import DramState
    from tilesim.timing.cycle_level.inputs import frame_pass_inputs, parameters

    recorded = runner_frames[0]
    (_, data), = frame_pass_inputs(recorded.counters, recorded.streams, CFG)
    cut = data.head(40)
    assert int(cut.quad_start[-1]) > 1000 and cut.tex_dram_address.size > 0
    fast_dram, slow_dram = DramState(parameters(CFG).dram), DramState(parameters(CFG).dram)
    fast = run_pass(cut, parameters(CFG), compiled=True, dram=fast_dram)
    slow = run_pass(cut, parameters(CFG), compiled=False, dram=slow_dram)
    assert slow.tolist() == fast.tolist()
    assert slow_dram.counts() == fast_dram.counts()


@pytest.mark.parametrize("compiled", [True, False])
def test_a_pass_run_in_slices_is_the_pass_run_whole(compiled):
    """The loop runs in slices of cycles (Python hears Ctrl-C between them: a 4K pass was ~18 s
    in one call), each resumed from the state the last left: the slices change no tile's
    finish and no DRAM count, with the flush, the DCT, full queues and the horizon's check."""
    from tilesim.jit import UNSLICED
    from tilesim.timing.cycle_level.dram import DramState

    cases = [(full_quads([1, 1], issue=2.0, latency=2.0, flush=16), params()),
             (full_quads([1, 10], issue=1.0, latency=1.0, flush=6),
              params(processors=1, warp_slots=1, fragment_queue=1, z_in_flight=1)),
             (full_quads([1], issue=2.0, latency=2.0, flush=16, dct=64.0),
              params(dct_after_flush=True)),
             (full_quads([3, 0, 5], flush=4), params(flush_overlap=False))]
    for data, raster in cases:
        whole_dram = DramState(raster.dram)
        whole = run_pass(data, raster, compiled, whole_dram, slice_cycles=UNSLICED)
        for slice_cycles in (1, 3, 50, None):
            dram = DramState(raster.dram)
            assert run_pass(data, raster, compiled, dram,
                            slice_cycles=slice_cycles).tolist() == whole.tolist()
            assert dram.counts() == whole_dram.counts()


def test_a_real_pass_run_in_slices_is_the_pass_run_whole(runner_frames):
    """As above, on a recorded pass of the runner (compiled, every tile)."""
    from tilesim.jit import UNSLICED
    from tilesim.timing.cycle_level.dram import DramState
    from tilesim.timing.cycle_level.inputs import frame_pass_inputs, parameters

    (_, data), = frame_pass_inputs(runner_frames[0].counters, runner_frames[0].streams, CFG)
    raster = parameters(CFG)
    whole_dram, sliced_dram = DramState(raster.dram), DramState(raster.dram)
    whole = run_pass(data, raster, dram=whole_dram, slice_cycles=UNSLICED)
    sliced = run_pass(data, raster, dram=sliced_dram, slice_cycles=997)
    assert whole.size > 100 and sliced.tolist() == whole.tolist()
    assert sliced_dram.counts() == whole_dram.counts()


def test_the_reference_decides_its_own_memory(runner_frames):
    """The reference's inputs come from the records and its own caches: every texture-cache
    miss of a rendered tile is an L2 hit or a DRAM read, every entry reads its list entry and
    record through the tile cache, and the flushes write the recorded color bytes."""
    from tilesim.timing.cycle_level.inputs import frame_pass_inputs

    recorded = runner_frames[0]
    (visit, data), = frame_pass_inputs(recorded.counters, recorded.streams, CFG)
    tiles = recorded.counters.passes[0].tiles
    assert data.l2_misses.sum() + data.tex_dram_address.size == tiles["tex_cache_misses"].sum()
    tile_lookups, tile_hits, l2_lookups, l2_hits, pb_dram, tex_dram = data.lookups.tolist()
    assert 0 < tile_hits < tile_lookups and 0 < l2_hits < l2_lookups
    assert pb_dram == data.entry_dram_address.size and tex_dram == data.tex_dram_address.size
    assert (data.color_lines * 64).sum() >= tiles["color_flush_bytes"].sum()
    assert data.entry_start[-1] >= tiles["prims_binned"].sum()


@pytest.mark.slow
def test_memoized_quads_run_no_program_in_the_reference():
    """With memoization, the recorder marks the quads whose looked-up lanes all hit (the
    outcome arrives when the frame's pair is done): they are among the frame's hits (each
    holds at least one), and the reference gives them no issue, latency or texture work, so
    the marked frame takes fewer cycles than the same stream with the marks cleared."""
    from tilesim.studies.quad_stream import record_frames
    from tilesim.timing.cycle_level.agreement import compare
    from tilesim.timing.cycle_level.inputs import frame_pass_inputs
    from tilesim.timing.cycle_level.records import QuadStream

    recorded = record_frames(Path(RUNNER).with_name("match3-1196x768.tsim"), [1], size=(64, 64),
                             technique="memo")[0]
    stream, = recorded.streams
    tiles = recorded.counters.passes[0].tiles
    marked = stream.quads["memo_hit"]
    assert marked.sum() > 0 and not np.any(marked & ~stream.quads["shaded"])
    assert np.all(np.bincount(stream.quads["tile"], weights=marked, minlength=stream.tiles)
                  <= np.ravel(tiles["memo_hits"]))
    (_, data), = frame_pass_inputs(recorded.counters, [stream], CFG)
    cleared = QuadStream({**stream.quads, "memo_hit": np.zeros_like(marked)}, stream.offsets,
                         stream.programs)
    (_, unmarked), = frame_pass_inputs(recorded.counters, [cleared], CFG)
    assert data.issue.sum() < unmarked.issue.sum() and data.texture.sum() < unmarked.texture.sum()
    with_marks = compare([(recorded.counters, [stream])], CFG, ECFG).reference_frame.sum()
    without = compare([(recorded.counters, [cleared])], CFG, ECFG).reference_frame.sum()
    assert with_marks < without


def test_the_reference_frames_add_up_and_sample(runner_frames):
    """The tiles add up to the frames both ways, and a sample of each pass's first 60 tiles in
    traversal order sums the same tiles."""
    from tilesim.timing.cycle_level.agreement import compare

    result = compare([(r.counters, r.streams) for r in runner_frames], CFG, ECFG)
    sample = compare([(r.counters, r.streams) for r in runner_frames], CFG, ECFG, tiles=60)
    assert sample.sampled.sum() == 2 * 60 and sample.tiles_simulated == 2 * 61
    assert sample.analytic_frame == pytest.approx(
        [result.analytic[(result.frame == f) & sample.sampled].sum() for f in (1, 2)])
    assert result.reference_frame.sum() == pytest.approx(result.reference.sum())
    assert result.analytic_frame.sum() == pytest.approx(result.analytic.sum())
    assert len(result.dram) == 2 and all(d["writes"] > 0 and d["reads"] > 0
                                         for d in result.dram)


@pytest.mark.xfail(reason="issue 30: with its own DRAM and caches the reference takes about "
                          "1.5x the analytic raster time on these frames (analytic -35%; -51% "
                          "under Shader Core's 8 threads a cycle): "
                          "its caches send ~2.8x the analytic model's DRAM read bytes "
                          "(Parameter Buffer records re-read 1.7 times, not the assumed 4; "
                          "texture misses hitting its L2 ~25%, not the capacity rule's 82%) "
                          "and its bus runs ~93% busy; the fitted constants no longer meet "
                          "issue 15's 5% band (docs/notes/issue-30-reference-memory.md)",
                   strict=True)
def test_the_analytic_model_stays_within_the_error_bounds_of_the_reference(runner_frames):
    """Issue 15's bounds on a small sample: the analytic model's raster cycles per frame
    within 5% of the reference's on average and no frame beyond 15%, with the fitted overlap
    constants of baseline_gpu.toml (buffers.color.flush_hidden_quads, flush_read_share)."""
    from tilesim.timing.cycle_level.agreement import compare, distribution

    result = compare([(r.counters, r.streams) for r in runner_frames], CFG, ECFG)
    frames = distribution(result.frame_error)
    assert frames["count"] == 2
    assert frames["mean_abs"] < 0.05 and frames["max"] < 0.15


@pytest.mark.slow
def test_reference_timing_command(capsys):
    from tilesim.cli import main

    assert main(["reference-timing", str(RUNNER), "--frames", "1:2", "--size", "160x96",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["frame"] for f in report["frames"]] == [1]
    assert report["frame_error"]["count"] == 1 and report["reference_speed"]["tiles"] == 60
    energy = report["dram_energy"]["frames"][0]
    assert energy["reference_dram_energy"] > 0 and energy["analytic_dram_energy"] > 0
    assert set(energy["reference_energy"]) >= {"act_pre", "read", "write", "refresh",
                                               "active_standby", "precharge_powerdown"}
    assert main(["reference-timing", str(RUNNER), "--frames", "1:999"]) == 2
    assert "--frames '1:999'" in capsys.readouterr().err


# -- the geometry pipeline --------------------------------------------------------------------

def binner_only(entries, sign, fold):
    """Primitives straight into the tiler (no vertex work, nothing written to memory)."""
    from tilesim.timing.cycle_level.geometry import GeometryInput

    n = len(entries)
    empty = np.zeros(0)
    return GeometryInput(fetch=empty, read_bytes=empty, shade=empty,
                         needs=np.zeros(n, dtype=np.int64), binned=np.arange(n),
                         entries=np.asarray(entries, dtype=np.int64), write_bytes=np.zeros(n),
                         sign=np.asarray(sign, dtype=np.float64),
                         fold=np.asarray(fold, dtype=np.float64))


@pytest.mark.slow
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
    from tilesim.timing.cycle_level.geometry import run_geometry

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


@pytest.mark.slow
def test_the_analytic_geometry_phase_is_within_the_bounds_of_the_reference(runner_frames):
    from tilesim.timing.cycle_level.agreement import compare_geometry

    result = compare_geometry([(r.counters, r.draws) for r in runner_frames], CFG, ECFG)
    assert result.reference.size == 2 and np.all(result.reference > 0)
    assert np.abs(result.error).max() < 0.05
