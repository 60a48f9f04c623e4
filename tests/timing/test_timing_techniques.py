"""Technique overheads in the timing model: each technique's own time and energy from its
counters, exactness of a skipped tile's savings, the provenance of the per-event energies, and
the theses' overhead figures as checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tilesim.render.pipeline.counters import FrameCounters, PassCounters
from tilesim.timing import techniques
from tilesim.timing.config import load_energy_config, load_gpu_config, warp_instruction_floor
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.model import BASELINE_UNITS, estimate_batch, estimate_frame

CFG = load_gpu_config()
ECFG = load_energy_config()
PJ = 1e-12
H_TEX = 1 - math.sqrt(8 / 256)

# Raster work of one tile (small enough that every cache holds everything: the hit ratios are
# the same whatever the other tiles do, so savings and overheads add up exactly)
RASTER = {"pb_bytes_read": 600, "quads_rasterized": 80, "fragments_rasterized": 300,
          "early_z_tested": 300, "early_z_killed": 40, "fragments_shaded": 260,
          "quads_shaded": 70, "fs_alu": 2600, "fs_tex": 520, "fs_quad_alu": 700,
          "fs_quad_tex": 140, "tex_samples": 520, "texels_fetched": 2080,
          "tex_cache_accesses": 520, "tex_cache_misses": 30, "depth_reads": 300,
          "depth_writes": 260, "color_writes": 260, "blend_ops": 20, "color_flush_bytes": 1024}
GEOMETRY = {"prims_binned": 6, "pb_list_bytes_written": 24}
SCALARS = {"vertex_cache_accesses": 400, "vertex_cache_misses": 20, "index_bytes": 300,
           "vs_alu": 4000, "prims_assembled": 60, "prims_rasterized": 60,
           "pb_record_bytes_written": 3000}


def frame(ntiles=3, skip=(), extra=None, scalars=None, raster=None):
    """``ntiles`` tiles with RASTER + GEOMETRY work; tiles in ``skip`` lose their raster work
    (as the renderer leaves a tile RE skipped); ``extra``: name -> per-tile list."""
    f = FrameCounters(0)
    f.scalars.update(SCALARS if scalars is None else scalars)
    p = PassCounters("default", 16 * ntiles, 16, 16, ntiles, 1, np.arange(ntiles))
    for name, value in {**GEOMETRY, **(RASTER if raster is None else raster)}.items():
        values = np.full(ntiles, value, dtype=np.int64)
        if name in RASTER:
            values[list(skip)] = 0
        p.tiles[name] = values
    for name, values in (extra or {}).items():
        p.tiles[name] = np.asarray(values, dtype=np.int64)
    f.passes.append(p)
    return f


def run(f):
    return estimate_batch(batch_from_frames([f]), CFG, ECFG)


def test_rendering_elimination_skip_removes_exactly_the_tile_and_adds_its_overhead():
    # no display-list bytes: a tile's Parameter Buffer reads then split between first reads
    # and re-reads the same way alone or beside others (lists are read first)
    no_lists = {"pb_list_bytes_written": [0, 0, 0]}
    base = run(frame(extra=no_lists))
    re_counters = {**no_lists, "re_subblocks_signed": [116, 116, 116], "re_shifts": [116, 116, 116],
                   "re_signature_accesses": [14, 14, 14], "re_bitmap_accesses": [1, 1, 1],
                   "re_tiles_skipped": [0, 1, 0]}
    re = run(frame(skip=[1], extra=re_counters))
    compare = CFG["techniques.signature.compare_cycles"]
    # raster: tile 1's cycles (pipeline, fill, flush) are gone; every signed tile compares
    assert re.tile_cycles[0] == pytest.approx(base.tile_cycles[0] + compare)
    assert re.tile_cycles[1] == pytest.approx(compare)
    assert re.raster_cycles[0] == pytest.approx(base.raster_cycles[0] - base.tile_cycles[1]
                                                + 3 * compare)
    # geometry: 348 signature cycles hide behind the 1000-cycle vertex shading
    assert re.geometry_cycles[0] == pytest.approx(base.geometry_cycles[0])
    assert re.technique_cycles[0] == pytest.approx(3 * compare)

    # energy: every baseline unit loses exactly tile 1's raster energy (the same counters
    # alone in a frame without geometry)...
    alone = run(frame(ntiles=3, skip=[0, 2], scalars={}, extra={**no_lists,
                                                                "prims_binned": [0, 0, 0]}))
    for unit in BASELINE_UNITS:
        assert re.gpu_dynamic[unit][0] == pytest.approx(
            base.gpu_dynamic[unit][0] - alone.gpu_dynamic[unit][0], abs=1e-18), unit
    for source in ("pb_reads", "textures", "color_flush"):
        assert re.traffic[source][0] == pytest.approx(
            base.traffic[source][0] - alone.traffic[source][0]), source
    # ... and the Signature Unit adds its own, event by event: 348 sub-blocks signed, 21
    # display-list entries folded (one Accumulate step each)
    assert re.gpu_dynamic["crc_luts"][0] == pytest.approx((348 * 19.7 + 21 * 6.7) * PJ)
    assert re.gpu_dynamic["signature_buffer"][0] == pytest.approx(42 * 8.42 * PJ)
    assert re.gpu_dynamic["ot_queue"][0] == pytest.approx(42 * 0.258 * PJ)
    assert re.gpu_dynamic["constant_bitmap"][0] == pytest.approx(3 * 0.033 * PJ)
    leak = techniques.static_power(CFG, ECFG)["re_structures"]
    assert re.gpu_static["re_structures"][0] == pytest.approx(leak * re.seconds[0])
    assert base.gpu_static["re_structures"][0] == 0
    assert re.diagnostics["re_tiles_skipped"][0] == 1
    assert re.diagnostics["tiles_rendered"][0] == 2


@pytest.mark.parametrize("per_entry", [1, 0])
def test_signature_unit_stalls_geometry_only_beyond_the_other_stages(per_entry):
    # 15000 Accumulate steps > 1000 cycles of vertex shading: one step per folded entry
    # (2 Signature Buffer accesses each) by default, one per sub-block of zeros literally
    cfg = CFG.replace(**{"techniques.signature.accumulate_per_entry": per_entry})
    steps = 5000
    extra = {"re_subblocks_signed": [10] * 3,
             "re_shifts": [steps if not per_entry else 20] * 3,
             "re_signature_accesses": [2 * steps if per_entry else 4] * 3}
    re = estimate_batch(batch_from_frames([frame(extra=extra)]), cfg, ECFG)
    base = run(frame())
    assert re.geometry_stages["crc_accumulate"][0] == 3 * steps
    assert re.geometry_cycles[0] == pytest.approx(3 * steps + 100 + 6)
    overhead = re.geometry_cycles[0] - base.geometry_cycles[0]
    compares = 3 * CFG["techniques.signature.compare_cycles"]   # every signed tile, raster
    assert re.technique_cycles[0] == pytest.approx(overhead + compares)


@pytest.mark.parametrize("per_entry", [1, 0])
def test_overlapped_tiles_queue_overflow_is_folded_in_series(per_entry):
    """Frame Coherence §4.3: the pipeline stalls only when a primitive's tiles overflow the
    Overlapped Tiles Queue. 3 tiles fold 100 entries each (2 Shift steps per fold literally);
    150 entries overflowed. The overflow's folds (1 step each per entry, the mean 2 literally)
    times otq_stall_share (fitted to the cycle-level reference) are in series, the rest
    overlapped and hidden by the other geometry stages: the geometry
    phase grows by exactly the stall. Frame totals only (otq_stall = 0): no growth. The stall
    never exceeds the Accumulate unit's work, and no overflow means no stall."""
    cfg = CFG.replace(**{"techniques.signature.accumulate_per_entry": per_entry})
    base = estimate_batch(batch_from_frames([frame()]), cfg, ECFG)
    hidden = max(base.geometry_stages[k][0] for k in base.geometry_stages)
    extra = {"re_subblocks_signed": [10] * 3, "re_shifts": [200] * 3,
             "re_signature_accesses": [200] * 3}
    steps = 300 if per_entry else 600
    assert steps < hidden
    share = CFG["techniques.signature.otq_stall_share"]
    for overflow, stall in (([150, 0, 0], share * 150 * (1 if per_entry else 2)),
                            ([0, 0, 0], 0), ([1000, 0, 0], min(share * 1000 * (
                                1 if per_entry else 2), steps))):
        counters = frame(extra={**extra, "re_otq_overflow_entries": overflow})
        for on in (1, 0):
            c = cfg.replace(**{"techniques.signature.otq_stall": on})
            re = estimate_batch(batch_from_frames([counters]), c, ECFG)
            assert re.geometry_stages["otq_stall"][0] == pytest.approx(stall * on)
            assert re.geometry_stages["crc_accumulate"][0] == pytest.approx(steps - stall * on)
            assert re.geometry_cycles[0] - base.geometry_cycles[0] == pytest.approx(stall * on)
            assert re.technique_cycles[0] == pytest.approx(
                stall * on + 3 * CFG["techniques.signature.compare_cycles"])
    # a faster Accumulate unit shortens the stall in proportion
    fast = cfg.replace(**{"techniques.signature.accumulate_rate": 4})
    re = estimate_batch(batch_from_frames([frame(extra={
        **extra, "re_otq_overflow_entries": [150, 0, 0]})]), fast, ECFG)
    assert re.geometry_stages["otq_stall"][0] == pytest.approx(
        share * 150 * (1 if per_entry else 2) / 4)


def test_accumulating_per_entry_keeps_the_signature_work_overlapped():
    # Frame Coherence §4.3: the signature work hides behind the geometry pipeline. A tile
    # folding 7 entries of 116 sub-blocks in all takes 7 steps, not 116.
    extra = {"re_subblocks_signed": [0, 0, 0], "re_shifts": [116] * 3,
             "re_signature_accesses": [14] * 3}
    entry = run(frame(extra=extra))
    literal = estimate_batch(batch_from_frames([frame(extra=extra)]), CFG.replace(
        **{"techniques.signature.accumulate_per_entry": 0}), ECFG)
    assert entry.geometry_stages["crc_accumulate"][0] == 21
    assert literal.geometry_stages["crc_accumulate"][0] == 348
    assert entry.geometry_cycles[0] <= literal.geometry_cycles[0]


def test_transaction_elimination_costs_energy_not_time():
    # the renderer already left tile 2's flush out; TE signs 128 sub-blocks per tile
    flushed = {"color_flush_bytes": [1024, 1024, 0]}
    plain = run(frame(extra=flushed))
    te = run(frame(extra={**flushed, "te_subblocks_signed": [128] * 3,
                          "te_signature_accesses": [2] * 3, "te_flushes_skipped": [0, 0, 1],
                          "te_flush_bytes_saved": [0, 0, 1024]}))
    assert te.geometry_cycles[0] == plain.geometry_cycles[0]
    assert te.raster_cycles[0] == plain.raster_cycles[0]
    assert te.gpu_dynamic["crc_luts"][0] == pytest.approx(384 * 19.7 * PJ)
    assert te.gpu_dynamic["signature_buffer"][0] == pytest.approx(6 * 8.42 * PJ)
    tech = te.gpu_dynamic["crc_luts"][0] + te.gpu_dynamic["signature_buffer"][0]
    leak = techniques.static_power(CFG, ECFG)["te_structures"] * te.seconds[0]
    assert te.gpu_static["te_structures"][0] == pytest.approx(leak)
    gpu = lambda e: sum(v[0] for v in e.gpu_dynamic.values()) + sum(  # noqa: E731
        v[0] for v in e.gpu_static.values())
    assert gpu(te) == pytest.approx(gpu(plain) + tech + leak)
    assert te.diagnostics["te_flush_bytes_saved"][0] == 1024


def test_memoization_hits_remove_the_hit_fragments_shader_work():
    lookups = [260] * 3
    hits = [65, 0, 260]  # a quarter, none, all of the tile's shaded fragments
    memo = run(frame(extra={"memo_lookups": lookups, "memo_hits": hits,
                            "memo_table_writes": [195, 260, 0]}))
    base = run(frame())
    keep = np.array([0.75, 1.0, 0.0])
    # fragment shading is issue-bound here: (700 ALU + 140 TEX quad instructions) x 4 cycles a
    # warp instruction (Frame Coherence §2.2's vector unit) / 4 processors
    assert warp_instruction_floor(CFG) == 4
    assert memo.tile_stages["fragment_shading"] == pytest.approx(840 * 4 / 4 * keep)
    assert memo.tile_stages["texture_filter"] == pytest.approx(2080 / 16 * keep)
    assert memo.gpu_dynamic["fragment_processors"][0] == pytest.approx(
        base.gpu_dynamic["fragment_processors"][0] * keep.mean())
    # every lookup hashes (6.4 pJ), reads its set's 4 tags and its LRU state (11.2 pJ); each
    # hit reads a color (4.5 pJ), each miss's insert writes a tag and a color (7.07 pJ)
    assert memo.gpu_dynamic["memo_lut"][0] == pytest.approx(
        (780 * (6.4 + 11.2) + 325 * 4.5 + 455 * 7.07) * PJ)
    assert memo.traffic["textures"][0] == pytest.approx(30 * 64 * (1 - H_TEX) * keep.sum())
    assert memo.diagnostics["fragments_shaded_effective"][0] == pytest.approx(260 * keep.sum())
    assert memo.diagnostics["fragments_shaded"][0] == 780
    lut = memo.tile_stages["memo_lut"]
    assert lut == pytest.approx((np.array(lookups) + [195, 260, 0]) / 4)
    # the LUT's 54 KB of entries and 1.5 KB of LRU state leak while memoization is on
    # (gpu.static.sram per KB), not otherwise
    assert memo.gpu_static["memo_structures"][0] == pytest.approx(
        _leak(2048 * (4 * 54 + 6) / 8) * memo.seconds[0])
    assert base.gpu_static["memo_structures"][0] == 0


def test_early_visibility_resolution_tables_and_layer_traffic():
    evr = run(frame(skip=[2], extra={
        "evr_lgt_accesses": [6, 6, 6], "evr_fvp_reads": [6, 6, 6],
        "evr_layer_bytes_written": [12, 12, 12], "evr_layer_buffer_writes": [200, 200, 0],
        "evr_fvp_updates": [1, 1, 0], "evr_prims_occluded": [2, 0, 0],
        "re_tiles_skipped": [0, 0, 1], "oracle_fragments_shaded": [200, 200, 0]}))
    # layer ids: 36 bytes written to the Parameter Buffer, read back by the 2 rendered tiles;
    # the small Parameter Buffer stays in the L2, so only the writes reach DRAM
    assert evr.traffic["technique_tables"][0] == pytest.approx(36)
    assert evr.tile_stages["evr_fvp_update"] == pytest.approx([23, 23, 0])
    assert evr.tile_stages["evr_layer_buffer"] == pytest.approx([50, 50, 0])
    assert evr.geometry_stages["evr_tables"][0] == 18
    assert evr.gpu_dynamic["layer_generator_table"][0] == pytest.approx(18 * 4.11 * PJ)
    assert evr.gpu_dynamic["fvp_table"][0] == pytest.approx(18 * 4.11 * PJ)
    assert evr.gpu_dynamic["fvp_unit"][0] == pytest.approx(2 * 480 * PJ)
    assert evr.gpu_dynamic["layer_buffer"][0] == pytest.approx(400 * 0.365 * PJ)
    per_write = (1204.7 / 2048 + 40.26) * PJ    # written with the PB: one activation per row
    assert evr.memory_by_source["technique_tables"][0] == pytest.approx(36 * per_write)
    assert evr.diagnostics["evr_prims_occluded"][0] == 2
    assert evr.diagnostics["oracle_fragments_shaded"][0] == 400


def test_dynamic_sampling_rate_dct_and_rate_histogram():
    dsr = run(frame(ntiles=4, extra={"dsr_dcts": [1, 1, 1, 1], "dsr_srt_accesses": [2] * 4,
                                     "dsr_rate": [0, 1, 3, 4]}))
    # Frame Coherence §6.4.2: the row pass (4 compute units, 4 rows each, 16 cycles per row)
    # is the DCT's time on the color buffer; the column pass works on the DCT Buffer
    assert dsr.tile_stages["dsr_dct"] == pytest.approx([64] * 4)
    assert CFG["techniques.dsr.dct_cycles"] == 2 * 64
    assert dsr.gpu_dynamic["dct_unit"][0] == pytest.approx(4 * 4740 * PJ)
    assert dsr.gpu_dynamic["sampling_rate_table"][0] == pytest.approx(8 * 0.257 * PJ)
    assert [dsr.diagnostics[f"dsr_tiles_rate{r}"][0] for r in range(5)] == [1, 1, 0, 1, 1]
    asr = (1 + 1 / 4 + 1 / 64 + 1 / 256) / 4
    assert dsr.diagnostics["dsr_average_sample_rate"][0] == pytest.approx(asr)
    # §6.4.1: the DCT starts after the tile's flush. The next tile's start (fill 108 + 48
    # queued quads = 156 cycles) already hides what it can of the 256-cycle flush, so every
    # DSR tile ends 64 cycles later; beside the flush (dct_after_flush = 0) the row pass hides
    # behind it (§6.5: no time penalty)
    base = run(frame(ntiles=4))
    dcts = {"dsr_dcts": [1, 1, 1, 1]}
    beside = CFG.replace(**{"techniques.dsr.dct_after_flush": 0})
    assert CFG["techniques.dsr.dct_after_flush"] == 0      # the default: §6.5's reading
    after_flush = CFG.replace(**{"techniques.dsr.dct_after_flush": 1})
    after = estimate_batch(batch_from_frames([frame(ntiles=4, extra=dcts)]), after_flush, ECFG)
    assert after.tile_cycles - base.tile_cycles == pytest.approx([64] * 4)
    assert estimate_batch(batch_from_frames([frame(ntiles=4, extra=dcts)]), beside,
                          ECFG).raster_cycles[0] == pytest.approx(base.raster_cycles[0])
    # a short flush (256 B: 64 cycles): serialized, after it each DCT costs its 64 cycles,
    # beside it nothing (64 <= 64); overlapped (the default), after it the next tile's start
    # hides the 128 cycles but after the pass's last tile (tile 3), beside it nothing
    short = {"color_flush_bytes": [256] * 4}
    serial = CFG.replace(**{"buffers.color.flush_overlap": 0})
    for cfg, dcts, extra in (
            (serial.replace(**{"techniques.dsr.dct_after_flush": 1}), [1, 1, 0, 0],
             [64, 64, 0, 0]),
            (after_flush, [0, 0, 1, 1], [0, 0, 0, 64]),
            (serial, [1, 1, 0, 0], [0] * 4),
            (beside, [0, 0, 1, 1], [0] * 4)):
        slow = estimate_batch(batch_from_frames([frame(ntiles=4, extra={**short,
                                                                        "dsr_dcts": dcts})]),
                              cfg, ECFG)
        quick = estimate_batch(batch_from_frames([frame(ntiles=4, extra=short)]), cfg, ECFG)
        assert slow.tile_cycles - quick.tile_cycles == pytest.approx(extra)
        assert slow.technique_cycles[0] == pytest.approx(sum(extra))


def test_absent_techniques_cost_nothing_and_leak_nothing():
    est = run(frame())
    for unit in (*techniques.TECHNIQUE_UNITS, *techniques.TECHNIQUE_STATIC_UNITS):
        value = est.gpu_dynamic.get(unit, est.gpu_static.get(unit))
        assert value[0] == 0, unit
    assert est.technique_cycles[0] == 0


_sram = techniques.sram_access_pj    # the SRAM rule of energy_32nm.toml (pJ per access)


def test_structure_energies_follow_the_sram_rule_and_the_seed_sizes():
    sig, evr, dsr, memo = ("techniques.signature.", "techniques.evr.", "techniques.dsr.",
                           "techniques.memo.")
    assert CFG[sig + "buffer_entries"] == 3588 and CFG[sig + "ot_queue_entries"] == 128
    assert CFG[evr + "lgt_entry_bits"] == 25 and CFG[dsr + "srt_entries"] == 8100
    assert CFG[memo + "lut_sets"] == 2048 and CFG[memo + "lut_ways"] == 4
    # Frame Coherence Table 4.1: 32-bit signatures; a set-associative array stores each
    # signature less the log2(sets) index bits its set stands for, plus a valid bit
    assert CFG[memo + "signature_bits"] == 32
    tag_bits = 32 - int(math.log2(CFG[memo + "lut_sets"])) + 1
    memo_lut = techniques.MemoLUT.of(CFG)
    # exact LRU: 6 pairwise orders of 4 ways a set
    assert (memo_lut.tag_bits, memo_lut.lru_bits) == (tag_bits, 6) == (22, 6)
    assert memo_lut.bytes == 2048 * (4 * (22 + 32) + 6) / 8
    buffer = CFG[sig + "buffer_entries"] * CFG[sig + "buffer_frames"] * 4
    expected = {
        "technique.signature_buffer.access": _sram(buffer, 32),
        "technique.ot_queue.access": _sram(128 * 12 / 8, 12),
        "technique.bitmap.access": _sram(3588 / 8, 1),
        "technique.lgt.access": _sram(3588 * 25 / 8, 25),
        "technique.fvp_table.access": _sram(3588 * 25 / 8, 25),
        "technique.layer_buffer.write": _sram(256 * 12 / 8, 12),
        "technique.srt.access": _sram(8100 * 3 / 8, 3),
        # the LUT way-banked: per way a tag bank and a 2048 x 32-bit color bank (8 KB); a
        # tag bank holds what the set does not imply, the 32-bit signature less its 11
        # set-index bits, and a valid bit: 2048 x 22 bits (5.5 KB)
        "technique.memo.write": _sram(2048 * tag_bits / 8, tag_bits) + _sram(2048 * 4, 32),
        "technique.memo.hit_read": _sram(2048 * 4, 32),
    }
    for key, value in expected.items():
        assert ECFG[key] == pytest.approx(value, rel=0.02), key
    lut = _sram(1024, 32)  # one 1 KB CRC LUT
    assert 12 * lut <= ECFG["technique.crc.compute_subblock"] <= 12 * lut + 1
    assert 4 * lut <= ECFG["technique.crc.accumulate_shift"] <= 4 * lut + 1
    # a lookup reads the set's 4 tags (one per way's bank), compares their 21 bits (4 x 0.059
    # pJ: Horowitz's 0.1 pJ 32-bit add, x0.9, x21/32) and reads and writes the set's LRU bits
    lru = _sram(2048 * 6 / 8, 6)
    assert ECFG["technique.memo.lookup"] == pytest.approx(
        4 * _sram(2048 * tag_bits / 8, tag_bits) + 4 * 0.09 * 21 / 32 + 2 * lru, rel=0.01)
    for key in expected:
        assert "SRAM rule" in ECFG.sources[key], key
    # the shipped figures are the rule's for Table 4.1's LUT
    assert techniques.memo_lut_scale(CFG) == {"lookup": 1.0, "hit_read": 1.0, "write": 1.0}
    for kind, pj in memo_lut.access_pj().items():
        assert ECFG[f"technique.memo.{kind}"] == pytest.approx(pj, rel=0.01), kind
    # static power follows the sizes: RE's structures are 16 KB of LUTs + 28 KB of signatures
    kb = techniques.structure_bytes(CFG)["re"] / 1024
    assert kb == pytest.approx(16 + 28.03 + 0.19 + 0.44, abs=0.02)


def test_a_configured_lut_costs_what_an_sram_of_its_size_does():
    """``--set techniques.memo.lut_sets`` changed the LUT's hits and leakage while each
    lookup kept the price of Table 4.1's 2048 x 4 LUT: a 16x larger LUT's lookups cost the
    SRAM rule's sqrt(16) more per tag bank (its tags 4 bits shorter), a 2-way one reads two
    tag banks, not four."""
    memo = "techniques.memo."
    per_frame = {name: np.zeros(1) for name in techniques.TECHNIQUE_WORK_COUNTERS}
    per_frame.update(memo_lookups=np.array([1000.0]), memo_hits=np.array([300.0]),
                     memo_table_writes=np.array([700.0]))
    shipped = techniques.dynamic_energy(per_frame, ECFG, CFG)["memo_lut"][0]
    for change in ({memo + "lut_sets": 32768}, {memo + "lut_ways": 2},
                   {memo + "lut_sets": 512, memo + "lut_ways": 8}):
        cfg = CFG.replace(**change)
        lut = techniques.MemoLUT.of(cfg)
        tag, color = _sram(lut.sets * lut.tag_bits / 8, lut.tag_bits), _sram(lut.sets * 4, 32)
        lru = _sram(lut.sets * lut.lru_bits / 8, lut.lru_bits)
        lookup = lut.ways * (tag + 0.09 / 32 * (lut.tag_bits - 1)) + 2 * lru
        hash_pj = ECFG["technique.memo.hash"]
        expected = 1000 * (hash_pj + lookup) + 300 * color + 700 * (tag + color)
        got = techniques.dynamic_energy(per_frame, ECFG, cfg)["memo_lut"][0]
        assert got == pytest.approx(expected * 1e-12, rel=0.02), change
        assert got != pytest.approx(shipped, rel=0.01), change


def representative_frame(width, height, extra=None):
    """A 2D-game-like frame: every tile 6 primitives, 1.5x overdraw, a 12-instruction shader
    with 2 bilinear samples per fragment, 5% texture-cache misses."""
    tx, ty = -(-width // 16), -(-height // 16)
    n = tx * ty
    prims = n * 6 // 3
    f = FrameCounters(0)
    f.scalars.update(vertex_cache_accesses=prims * 6, vertex_cache_misses=prims * 3 // 2,
                     index_bytes=prims * 6, vs_alu=prims * 90, prims_assembled=prims,
                     prims_rasterized=prims, pb_record_bytes_written=prims * 96)
    p = PassCounters("default", width, height, 16, tx, ty, np.arange(n))
    frags = 384
    per_tile = {"prims_binned": 6, "pb_list_bytes_written": 24, "pb_bytes_read": 600,
                "fragments_rasterized": frags, "early_z_tested": frags,
                "fragments_shaded": 307, "fs_alu": 307 * 12, "fs_tex": 614,
                "fs_quad_alu": 92 * 12, "fs_quad_tex": 184, "tex_samples": 614,
                "texels_fetched": 2456, "tex_cache_accesses": 614, "tex_cache_misses": 31,
                "depth_reads": frags, "depth_writes": 230, "color_writes": 307,
                "blend_ops": 77, "color_flush_bytes": 1024}
    for name, value in {**per_tile, **(extra or {})}.items():
        p.tiles[name] = np.full(n, value, dtype=np.int64)
    f.passes.append(p)
    return f


def _tiles(width, height):
    return -(-width // 16) * -(-height // 16)


def _leak(structure_bytes):
    """Leakage (W) of SRAM structures: gpu.static.sram mW per KB."""
    return structure_bytes / 1024 * ECFG["gpu.static.sram"] * 1e-3


def _representative_geometry_cycles(n, extra_pb_bytes_per_tile=0):
    """Geometry phase of ``representative_frame``, from its counters by the model's formula:
    the slowest of the stages (per tile: vertex fetch 12 accesses / 1 bank or 204 B / 4 B/cycle
    = 51, vertex shading 2 x 90 / 4 lanes = 45 warp instructions at the floor of
    warp_instruction_floor cycles each on 1 vertex processor, PB writes (216 + extra) / 4,
    tiler 6, the shared bus carrying vertices (3 x 64 B), indices (12 B), PB records (192 B),
    lists (24 B) and EVR layer ids (extra) at memory.bandwidth); plus the fill latency_max + 6.
    Under Frame Coherence §2.2's processors (the default, 4 cycles a warp instruction) vertex
    shading binds (180 a tile), under Shader Core's (0.5) the bus (105 a tile)."""
    shading = n * 45 * warp_instruction_floor(CFG) / CFG["processors.vertex.count"]
    bus = n * (192 + 12 + 192 + 24 + extra_pb_bytes_per_tile) / CFG["memory.bandwidth"]
    return max(shading, bus) + CFG["memory.latency_max"] + 6


def _baseline_static_watts():
    kb = sum(CFG[f"caches.{c}.count"] * CFG[f"caches.{c}.size"]
             for c in ("vertex", "texture", "tile", "l2")) / 1024
    mw = (CFG["processors.vertex.count"] * ECFG["gpu.static.vertex_processor"]
          + CFG["processors.fragment.count"] * ECFG["gpu.static.fragment_processor"]
          + ECFG["gpu.static.fixed_function"] + kb * ECFG["gpu.static.sram"])
    return mw * 1e-3


def _dram_timed_joules(est):
    """DRAM background + refresh of a frame (open page): active standby outside the seconds
    the estimate spends in power-down (IDD3P) and self-refresh (IDD6), refresh outside
    self-refresh (memory_traffic.dram_energy)."""
    s = est.seconds
    pd = est.diagnostics["dram_power_down_seconds"]
    sr = est.diagnostics["dram_self_refresh_seconds"]
    return CFG["memory.channels"] * 1e-3 * (
        ECFG["memory.background_open"] * (s - pd - sr) + ECFG["memory.power_down_active"] * pd
        + ECFG["memory.self_refresh_power"] * sr + ECFG["memory.refresh"] * (s - sr))


def test_seed_overhead_figures_as_checks():
    """The theses' overheads are checks, not inputs. On a representative frame where nothing is
    skipped (the techniques' worst case), each technique's overhead is computed here from the
    model's formulas (timing/model.py, timing/techniques.py) and the numbers of
    baseline_gpu.toml and energy_32nm.toml, asserted exactly, and then held to the theses:
    The baseline GPU's processors are Frame Coherence §2.2's (4 cycles a warp instruction), so
    the geometry phase is bound by vertex shading (180 cycles a tile), not the bus (105).
    * RE (1196x768, 3600 tiles): its GPU energy is 0.43% of the baseline's (0.42% dynamic: the
      Compute CRC work is counted once per tile a block folds into, an upper bound; 0.01%
      leakage of 45 KB of SRAM at the low-power gpu.static.sram, 2.5e-4 mW/KB), and the
      frame's energy grows by 0.46% with the baseline's leakage and the DRAM background over
      the 0.12% longer frame (the signature unit's 116 sub-blocks per tile hide behind the
      geometry phase's 180 cycles of vertex shading; 2 compare cycles per tile remain). Frame
      Coherence §4.3: < 5% energy in benchmarks RE cannot exploit, slowdowns up to 5% (~0.7%
      for its LUTs on average, §5.4).
    * EVR: its structures add 0.11% energy (Frame Coherence §5.4: 0.5% on average; same
      leakage), the layer ids 0.18% more as DRAM traffic (written with the Parameter Buffer:
      one activation per 2 KB row, open page), and the frame is no longer (12 more PB bytes per
      tile on the bus, 108 cycles, still below vertex shading).
    * DSR (1920x1080): SRT + DCT unit 0.82% energy (Frame Coherence §6.5: < 2%); with the DCT
      after the flush (§6.4.1, dct_after_flush = 1) the frame is 4.0% longer (64 cycles of row
      pass per tile on the color buffer), against §6.5's "no execution time penalty", which the
      other reading (the DCT beside the flush) keeps.
    Shares of a baseline frame whose tile flushes overlap the next tile's start
    (buffers.color.flush_overlap = 1, the default): a shorter frame than serialized flushes
    give, so each overhead is a larger share of its time (RE 1.6% serialized) and the
    leakage a smaller share of its energy. With the high-performance leakage (each
    gpu.static range's high end; measured under an earlier, lighter lane instruction energy)
    RE's GPU energy was 1.8% (1.28% leakage), EVR's 0.77%, DSR's 1.31%: the low-power default
    (energy_32nm.toml) leaves the structures' dynamic energy; the open-page DRAM (fewer
    activations for the baseline's sequential streams) makes the baseline frame cheaper, each
    share a little larger.
    """
    clock = CFG["tech.clock"]
    e = lambda key: ECFG[key] * PJ  # noqa: E731

    def estimates(width, height, extra):
        base = estimate_frame(representative_frame(width, height), CFG, ECFG)
        run_ = estimate_frame(representative_frame(width, height, extra), CFG, ECFG)
        return base, run_

    def overhead(base, run_):
        return run_.technique_gpu_energy / base.energy, run_.cycles / base.cycles - 1

    # --- Rendering Elimination
    n = _tiles(1196, 768)
    assert n == 3600
    shifts = 6 * 18 + 8  # 6 primitives of 18 sub-blocks + one 8-sub-block constant block
    base, re = estimates(1196, 768, {
        "re_subblocks_signed": shifts, "re_shifts": shifts, "re_signature_accesses": 14,
        "re_bitmap_accesses": 1})
    sig = "techniques.signature."
    geometry = _representative_geometry_cycles(n)
    assert base.geometry_cycles == pytest.approx(geometry)              # 180 n + 106
    # the Compute CRC unit (one sub-block per cycle, 116 a tile) and the Accumulate CRC unit
    # (the 7 entries of a tile in 7 steps, one per display-list entry) hide behind vertex
    # shading (180 a tile); every tile compares its signatures before it is scheduled
    crc = n * shifts / CFG[sig + "compute_rate"]
    assert n * 7 / CFG[sig + "accumulate_rate"] < crc
    assert crc < geometry - CFG["memory.latency_max"] - 6
    extra_cycles = n * CFG[sig + "compare_cycles"]
    assert extra_cycles == 2 * n
    assert re.geometry_cycles == pytest.approx(geometry)
    assert re.raster_cycles == pytest.approx(base.raster_cycles + 2 * n)
    assert re.cycles - base.cycles == pytest.approx(extra_cycles)
    assert re.technique_cycles == pytest.approx(extra_cycles)
    dynamic = n * (shifts * e("technique.crc.compute_subblock")
                   + 7 * e("technique.crc.accumulate_shift")
                   + 14 * e("technique.signature_buffer.access")
                   + 14 * e("technique.ot_queue.access") + 1 * e("technique.bitmap.access"))
    re_bytes = (CFG[sig + "compute_lut_bytes"] + CFG[sig + "accumulate_lut_bytes"]
                + CFG[sig + "buffer_entries"] * CFG[sig + "buffer_frames"]
                * CFG[sig + "buffer_entry_bits"] / 8
                + CFG[sig + "ot_queue_entries"] * CFG[sig + "ot_queue_entry_bits"] / 8
                + CFG[sig + "bitmap_entries"] / 8)
    assert re_bytes == 16384 + 28704 + 192 + 448.5
    leakage = _leak(re_bytes) * re.cycles / clock
    assert re.technique_gpu_energy == pytest.approx(dynamic + leakage, rel=1e-12)
    # nothing else changes but the time everything else leaks and the DRAM idles
    longer = (extra_cycles / clock * _baseline_static_watts()
              + _dram_timed_joules(re) - _dram_timed_joules(base))
    assert re.energy - base.energy == pytest.approx(dynamic + leakage + longer, rel=1e-9)
    re_energy, re_time = overhead(base, re)
    assert re_energy == pytest.approx((dynamic + leakage) / base.energy, rel=1e-12)
    assert re_time == pytest.approx(extra_cycles / base.cycles, rel=1e-12)
    assert dynamic / base.energy == pytest.approx(0.0042, abs=0.0005)
    assert leakage / base.energy == pytest.approx(0.0001, abs=0.0005)
    assert re_energy == pytest.approx(0.0043, abs=0.0005)
    assert re.energy / base.energy - 1 == pytest.approx(0.0046, abs=0.0005)
    assert re_time == pytest.approx(0.0012, abs=0.0005)
    assert re_energy < 0.05 and re_time < 0.05                           # Frame Coherence §4.3

    # --- Early Visibility Resolution
    base, evr = estimates(1196, 768, {
        "evr_lgt_accesses": 6, "evr_fvp_reads": 6, "evr_layer_bytes_written": 12,
        "evr_layer_buffer_writes": 256, "evr_fvp_updates": 1})
    # 12 more Parameter Buffer bytes per tile on the bus: 3 cycles per tile, a bus of 108 still
    # below vertex shading's 180; the tables (6 + 6 lookups per tile in parallel) hide behind
    # the geometry phase, the FVP update (23 cycles) and Layer Buffer (256 writes / 4 per
    # cycle) behind each tile's bottleneck
    assert evr.geometry_cycles == pytest.approx(_representative_geometry_cycles(n, 12))
    assert _representative_geometry_cycles(n, 12) == _representative_geometry_cycles(n)
    assert evr.raster_cycles == pytest.approx(base.raster_cycles)
    assert evr.cycles == base.cycles
    dynamic = n * (6 * e("technique.lgt.access") + 6 * e("technique.fvp_table.access")
                   + 1 * e("technique.fvp_update.tile")
                   + 256 * e("technique.layer_buffer.write"))
    ev = "techniques.evr."
    evr_bytes = (CFG[ev + "lgt_entries"] * CFG[ev + "lgt_entry_bits"]
                 + CFG[ev + "layer_buffer_entries"] * CFG[ev + "layer_buffer_entry_bits"]
                 + CFG[ev + "fvp_entries"] * CFG[ev + "fvp_entry_bits"]) / 8
    leakage = _leak(evr_bytes) * evr.cycles / clock
    assert evr.technique_gpu_energy == pytest.approx(dynamic + leakage, rel=1e-12)
    # the layer ids: written to DRAM with the Parameter Buffer, read back by every tile from
    # the L2 while it still holds the Parameter Buffer (min(1, L2 / bytes written)), else DRAM
    written = n * (192 + 24 + 12)
    retained = min(1.0, CFG["caches.l2.size"] / written)
    # a sequential stream (open page): one activation per 2 KB row it crosses
    act = ECFG["memory.act_pre"] / ECFG["memory.row_size"]
    layer_ids = n * 12 * ((act + ECFG["memory.write_per_byte"])
                          + (1 - retained) * (act + ECFG["memory.read_per_byte"])) * PJ
    assert evr.technique_memory_energy == pytest.approx(layer_ids, rel=1e-12)
    evr_energy, evr_time = overhead(base, evr)
    assert evr_energy == pytest.approx((dynamic + leakage) / base.energy, rel=1e-12)
    assert evr_time == 0
    assert evr_energy == pytest.approx(0.0011, abs=0.0005)
    assert layer_ids / base.energy == pytest.approx(0.0018, abs=0.0005)
    assert evr_energy < 0.01                                             # Frame Coherence §5.4

    # --- Dynamic Sampling Rate
    n = _tiles(1920, 1080)
    assert n == 8160
    base, dsr = estimates(1920, 1080, {"dsr_dcts": 1, "dsr_srt_accesses": 2})
    # beside the flush (the default, techniques.dsr.dct_after_flush = 0) the DCT's row pass
    # (64 cycles on the color buffer) hides behind each tile's 1 KB flush (256 cycles at
    # 4 B/cycle): §6.5's "no execution time penalty"
    assert dsr.cycles == base.cycles and dsr.technique_cycles == 0     # Frame Coherence §6.5
    dynamic = n * (e("technique.dct.tile") + 2 * e("technique.srt.access"))
    ds = "techniques.dsr."
    dsr_bytes = CFG[ds + "srt_entries"] * CFG[ds + "srt_entry_bits"] / 8 + CFG[
        ds + "dct_buffer_bytes"]
    leakage = (_leak(dsr_bytes) + ECFG["technique.static.dct_logic"] * 1e-3) * (
        dsr.cycles / clock)
    assert dsr.technique_gpu_energy == pytest.approx(dynamic + leakage, rel=1e-12)
    assert dsr.energy - base.energy == pytest.approx(dynamic + leakage, rel=1e-9)
    dsr_energy, dsr_time = overhead(base, dsr)
    assert dsr_energy == pytest.approx((dynamic + leakage) / base.energy, rel=1e-12)
    assert dsr_time == 0
    assert dsr_energy < 0.02                                             # Frame Coherence §6.5
    # after the flush (§6.4.1's order read literally, dct_after_flush = 1) the next tile's
    # start hides only part of the flush: 64 more cycles a tile
    after_flush = CFG.replace(**{"techniques.dsr.dct_after_flush": 1})
    base, dsr = (estimate_frame(representative_frame(1920, 1080, extra), after_flush, ECFG)
                 for extra in (None, {"dsr_dcts": 1, "dsr_srt_accesses": 2}))
    assert dsr.cycles - base.cycles == pytest.approx(64 * n)
    assert dsr.technique_cycles == pytest.approx(64 * n)


def test_transaction_elimination_skipped_flush_hides_the_next_tiles_fill():
    """Behind a rendered tile whose flush TE skipped, the next tile's fetch and shading start
    under that tile's work (the color buffer holds nothing back): its fill is not charged
    again; the pass's first tile and any tile after a flush pay it whole."""
    from tilesim.timing.model import effective_tiles, tile_cycle_parts, traversal_order

    fill = CFG["memory.latency_max"] + 8
    skipped = run(frame(extra={"color_flush_bytes": [0, 0, 0]}))
    flushed = run(frame())
    # a tile's work (its bottleneck) is longer than the fill: the fill is hidden whole
    assert skipped.raster_cycles[0] < flushed.raster_cycles[0]
    for est, charged in ((skipped, [fill, 0, 0]), (flushed, [fill] * 3)):
        b = est.batch
        parts = tile_cycle_parts(effective_tiles(b), est.tile_stages, CFG,
                                 traversal_order(b, CFG))
        assert parts["fill"] == pytest.approx(charged)
        assert sum(parts.values()) == pytest.approx(est.tile_cycles)
    work = skipped.tile_cycles[1]
    assert skipped.tile_cycles[0] == pytest.approx(work + fill)
