"""Baseline timing / traffic / energy model: stage formulas on hand-built counters, the cache
hierarchy and DRAM energy, invariants, config validation and the `tilesim estimate` command."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.render.pipeline.counters import (
    FRAME_COUNTERS,
    TILE_COUNTERS,
    FrameCounters,
    PassCounters,
)
from tilesim.timing.config import BASELINE_GPU, ENERGY_32NM, load_energy_config, load_gpu_config
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.memory_traffic import texture_l2_hit_ratio, tile_memory
from tilesim.timing.model import (
    effective_tiles,
    estimate_batch,
    estimate_frame,
    geometry_cycles,
    geometry_stage_cycles,
    gpu_static_power,
)
from tilesim.timing.techniques import (
    TECHNIQUE_SAVINGS_COUNTERS,
    TECHNIQUE_TILE_COUNTERS,
    TECHNIQUE_WORK_COUNTERS,
)

CFG = load_gpu_config()
ECFG = load_energy_config()
LAT_MAX = 100.0
LAT_AVG = 75.0
L2 = 262144.0
H_TEX = 1 - math.sqrt(8 / 256)     # L2 hit ratio of texture-cache misses (sqrt(2) rule)
DRAM_BG_W = 2 * (37.88 + 5.73) * 1e-3  # active standby + refresh of two LPDDR4 channels
# cycles per warp instruction at least: 4 lanes at 1 thread a cycle (Frame Coherence §2.2's
# 4-wide vector unit runs one thread's [x,y,z,w] a cycle); 0.5 under Shader Core's reading
FLOOR = 4.0


def make_frame(scalars=None, tiles=None, ntiles=2) -> FrameCounters:
    """One pass of ``ntiles`` tiles (1 row); ``tiles`` maps name -> list of per-tile values."""
    f = FrameCounters(0)
    f.scalars.update(scalars or {})
    p = PassCounters("screen", 16 * ntiles, 16, 16, ntiles, 1, np.arange(ntiles))
    for name, values in (tiles or {}).items():
        p.tiles[name] = np.asarray(values, dtype=np.int64)
    f.passes.append(p)
    return f


def run(frame, cfg=CFG, ecfg=ECFG):
    return estimate_batch(batch_from_frames([frame]), cfg, ecfg)


def test_baseline_values_match_table_3_1():
    assert CFG["tech.clock"] == 400e6 and CFG["tech.voltage"] == 1 and CFG["tech.node"] == 32
    assert CFG["memory.bandwidth"] == 4 and CFG["memory.latency_min"] == 50
    assert CFG["caches.tile.size"] == 128 * 1024 and CFG["caches.l2.latency"] == 2
    assert CFG["processors.fragment.count"] == 4 and CFG["stages.rasterizer.rate"] == 16
    table = [k for k, s in CFG.sources.items() if s.startswith("Frame Coherence Table 3.1")]
    assert len(table) >= 45
    assert not uncited_sources({**CFG.sources, **ECFG.sources})


# The documents a configuration entry may cite (a title, a table or a section of one); an
# "estimate" or a "model assumption" names the document it rests on too.
CITED_DOCUMENTS = (
    "Frame Coherence", "Shader Core", "Horowitz", "McPAT", "CACTI", "Micron", "TN-41-01",
    "DRAMPower", "DRAMSim2", "JEDEC", "GLSL ES", "OpenGL ES", "Dong", "Hartstein", "Arnau",
    "docs/notes/", "timing/cycle_level",
)
SOURCE_KINDS = ("Frame Coherence", "Shader Core", "Micron", "DRAMPower", "GLSL ES", "CACTI",
                "model assumption", "estimate", "fitted to the cycle-level reference",
                "derived from")


# A table or section of the thesis, cited by number (DESIGN.md calls Frame Coherence "001").
CITED_PART = re.compile(r"\b(Table|Tables|Figure|section|Algorithm) \d|§\d|\b001 (section|§)")


def uncited_sources(sources: dict[str, str]) -> list[str]:
    """The keys whose source does not cite a document: empty, not opening with what it is (a
    document, 'estimate', 'model assumption', 'fitted to ...', 'derived from ...'), or naming
    none of ``CITED_DOCUMENTS`` nor a numbered table or section (``CITED_PART``)."""
    return [k for k, s in sources.items()
            if not s.strip() or not s.startswith(SOURCE_KINDS)
            or not (any(doc in s for doc in CITED_DOCUMENTS) or CITED_PART.search(s))]


def test_every_configuration_entry_cites_a_document(tmp_path):
    """Every entry of baseline_gpu.toml and energy_32nm.toml says where its number comes from
    with a document; one that does not fails, whether its source is empty (the loader refuses
    it) or an estimate that rests on nothing named."""
    for conf in (CFG, ECFG):
        assert set(conf.sources) == set(conf.values)
        assert not uncited_sources(conf.sources), conf.path
    assert uncited_sources({"a": "estimate: about right", "b": "", "c": "a guess (Horowitz)",
                            "d": "model assumption: one per cycle (Frame Coherence Table 3.1)"}
                           ) == ["a", "b", "c"]
    text = ENERGY_32NM.read_text()
    bad = tmp_path / "energy.toml"
    bad.write_text(re.sub(r'(panel = \{ value = 50.0, unit = "mW", source = )"[^"]*"', r'\1""',
                          text))
    with pytest.raises(InputError, match="screen.panel.source"):
        load_energy_config(bad)


def test_geometry_stage_formulas():
    f = make_frame(
        {"vertex_cache_accesses": 10, "vertex_cache_misses": 3, "index_bytes": 64,
         "vs_alu": 800, "vs_tex": 0, "vs_flow": 0, "prims_assembled": 50,
         "pb_record_bytes_written": 1000},
        {"prims_binned": [30, 20], "pb_list_bytes_written": [100, 180]})
    b = batch_from_frames([f])
    s = {k: float(v[0]) for k, v in geometry_stage_cycles(b, effective_tiles(b), CFG).items()}
    # vertex fetch: (3 lines x 64 + 64) B / 4 B/cycle = 64 > 4 lines x 75 / 32 in flight
    assert s["vertex_fetch"] == pytest.approx(64.0)
    # 800 thread instructions = 200 warp instructions of 4 lanes, at FLOOR cycles, 1 processor
    assert s["vertex_shading"] == pytest.approx(800 / 4 * FLOOR / 1)
    assert s["primitive_assembly"] == 50
    assert s["tiler"] == 50
    assert s["pb_write"] == pytest.approx(1280 / 4)
    assert s["bus"] == pytest.approx((256 + 1280) / 4)
    assert s["crc_compute"] == s["crc_accumulate"] == s["evr_tables"] == 0
    total = geometry_cycles(geometry_stage_cycles(b, effective_tiles(b), CFG), CFG)[0]
    # the bottleneck is vertex shading (800 > the bus's 384), then the fill
    assert total == pytest.approx(800 + LAT_MAX + 6)


def test_pb_read_hierarchy_fractions():
    """Lists and first record reads go to L2 (kept while the whole PB fits), re-reads hit the
    tile cache while a row of tiles' reads fits; hand-computed shares."""
    written = 4_000_000.0
    f = make_frame({"pb_record_bytes_written": written},
                   {"pb_bytes_read": [1_000_000, 0], "prims_binned": [1, 0]})
    b = batch_from_frames([f])
    m = {k: float(v[0]) for k, v in tile_memory(b, effective_tiles(b), CFG).items()}
    footprint = 2 * 1_000_000 / 2                       # tiles_x x reads per tile
    c_tc, c_l2, kept = 131072 / footprint, L2 / footprint, L2 / written
    reuse, first = 0.75 * 1_000_000, 0.25 * 1_000_000   # no list bytes: all records
    assert m["pb_tile_cache"] == pytest.approx(reuse * c_tc)
    assert m["pb_l2"] == pytest.approx(first * kept + reuse * (1 - c_tc) * c_l2)
    assert m["pb_dram"] == pytest.approx(first * (1 - kept) + reuse * (1 - c_tc) * (1 - c_l2))
    assert m["pb_tile_cache"] + m["pb_l2"] + m["pb_dram"] == pytest.approx(1_000_000)
    # a Parameter Buffer that fits the L2: nothing read from DRAM
    small = make_frame({"pb_record_bytes_written": 1000}, {"pb_bytes_read": [5000, 300],
                                                           "pb_list_bytes_written": [40, 8]})
    assert run(small).traffic["pb_reads"][0] == 0
    assert texture_l2_hit_ratio(CFG) == pytest.approx(H_TEX)


def test_memory_latency_bound_when_few_requests_in_flight():
    cfg = load_gpu_config()
    cfg.values["queues.tile.entries"] = 1  # one request in flight: latency-bound
    # 640 list bytes (first reads); the frame's PB is 4x the L2, which keeps a quarter of it
    f = make_frame({"pb_record_bytes_written": 4 * L2 - 640},
                   {"pb_bytes_read": [640, 0], "pb_list_bytes_written": [640, 0],
                    "prims_binned": [1, 0]})
    s = run(f, cfg).tile_stages["tile_fetch"]
    assert s[0] == pytest.approx(640 * 0.25 / 64 * 2 + 640 * 0.75 / 64 * LAT_AVG)
    assert s[1] == 0


def test_raster_stage_formulas():
    f = make_frame({"pb_record_bytes_written": 4 * L2 - 80}, {
        "prims_binned": [2, 0], "pb_bytes_read": [400, 0], "pb_list_bytes_written": [80, 0],
        "fragments_rasterized": [256, 0], "early_z_tested": [256, 0], "late_z_tested": [0, 0],
        "fs_quad_alu": [640, 0], "fs_quad_tex": [64, 0], "fs_quad_flow": [16, 0],
        "texels_fetched": [1024, 0], "tex_cache_misses": [10, 0], "color_writes": [256, 0],
        "color_flush_bytes": [1024, 1024]})
    est = run(f)
    s = {k: v[0] for k, v in est.tile_stages.items()}
    # PB: 80 list + 320 record bytes; 240 re-reads hit the tile cache; the L2 keeps a quarter
    # of the 4 x L2 Parameter Buffer, so of the 160 first-read bytes 120 come from DRAM
    assert s["tile_fetch"] == pytest.approx(120 / 4)
    assert s["rasterizer"] == pytest.approx(256 * 4 / 16)   # 64
    assert s["early_z"] == pytest.approx(64)                # 64 quads at 1 quad/cycle
    # issue-bound: 720 warp instructions x FLOOR cycles / 4 processors = 720
    assert s["fragment_shading"] == pytest.approx(720 * FLOOR / 4)
    assert s["texture_filter"] == pytest.approx(1024 / 16)  # 64
    tex_dram = 640 * (1 - H_TEX)
    assert s["texture_memory"] == pytest.approx(tex_dram / 4)
    assert s["blend"] == pytest.approx(64)
    assert s["bus"] == pytest.approx((120 + tex_dram) / 4)
    flush = 1024 / 4
    # bottleneck (fragment shading) + fill (first miss + 8 stages) + serialized color flush
    assert est.tile_cycles[0] == pytest.approx(720 + LAT_MAX + 8 + flush)
    assert est.tile_cycles[1] == pytest.approx(flush)      # empty tile: flush only
    assert est.raster_cycles[0] == pytest.approx(est.tile_cycles.sum())
    assert est.seconds[0] == pytest.approx((est.geometry_cycles[0] + est.raster_cycles[0]) / 4e8)


def test_shader_latency_bound_when_texture_misses_dominate():
    # 100 texture instructions, 400 texture-cache misses: exposed latency / (4 cores x 4 warps)
    f = make_frame(tiles={"prims_binned": [1, 0], "fs_quad_tex": [100, 0],
                          "tex_cache_misses": [400, 0]})
    exposed = 100 * (1 + 4) + 400 * (2 + (1 - H_TEX) * LAT_AVG)
    assert run(f).tile_stages["fragment_shading"][0] == pytest.approx(exposed / 16)


def grid_frame(tiles_x, tiles_y, tiles, target="default", passes=1) -> FrameCounters:
    """``passes`` passes of a tiles_x x tiles_y grid; ``tiles`` maps name -> per-tile list
    (tile number order: row-major from the bottom-left tile, as the counters store them)."""
    f = FrameCounters(0)
    for _ in range(passes):
        n = tiles_x * tiles_y
        p = PassCounters(target, 16 * tiles_x, 16 * tiles_y, 16, tiles_x, tiles_y, np.arange(n))
        for name, values in tiles.items():
            p.tiles[name] = np.asarray(values, dtype=np.int64)
        f.passes.append(p)
    return f


def overlap_config(tmp_path, value=1):
    other = 0 if value else 1
    text = BASELINE_GPU.read_text()
    if f"flush_overlap = {{ value = {value}," in text:
        return CFG
    return load_gpu_config(_write_variant(tmp_path, BASELINE_GPU,
                                          rf'^(flush_overlap = \{{ value = ){other}',
                                          rf'\g<1>{value}', name=f"overlap{value}.toml"))


FILL = LAT_MAX + 8
# quads the next tile's start hides a flush for (fitted to the cycle-level reference)
QUEUED = CFG["buffers.color.flush_hidden_quads"]


def test_flush_bound_tiles_overlap_their_flush_with_the_next_tiles_start(tmp_path):
    """A flush-bound sequence: a 3x2 grid of tiles, each 100 cycles of shading then 4 KB of
    color and depth (1024 cycles at 4 B/cycle). Serialized, every flush follows its tile; with
    buffers.color.flush_overlap the next tile in scanline order (top row first, left to right)
    fills and takes its first quads meanwhile (up to buffers.color.flush_hidden_quads, at
    most its 100 cycles of work), hiding fill + min(flush_hidden_quads, 100) cycles of it; the
    last tile of the pass (the bottom-right one, tile 2) hides behind nothing. No tile ends
    before its own flush (the color buffer's time, ``color_buffer_cycles``)."""
    n = 6
    # 100 warp instructions x FLOOR cycles / 4 processors = 100 cycles of shading a tile
    f = grid_frame(3, 2, {"prims_binned": [1] * n, "color_flush_bytes": [2048] * n,
                          "depth_flush_bytes": [2048] * n, "fs_quad_alu": [100] * n})
    off = run(f, overlap_config(tmp_path, 0)).tile_cycles
    assert off == pytest.approx([100 + FILL + 1024] * n)
    on = run(f, overlap_config(tmp_path, 1))
    hidden = np.full(n, FILL + min(QUEUED, 100))
    hidden[2] = 0
    assert on.tile_cycles == pytest.approx(np.maximum(100 + FILL + 1024 - hidden, 1024))
    assert on.raster_cycles[0] == pytest.approx(on.tile_cycles.sum())
    # a next tile with 10 cycles of work hides its fill and those 10 cycles only
    short = grid_frame(2, 1, {"prims_binned": [1, 1], "color_flush_bytes": [1024, 1024],
                              "fs_quad_alu": [10, 10]})
    assert run(short, overlap_config(tmp_path, 1)).tile_cycles == pytest.approx(
        [10 + FILL + 256 - (FILL + 10), 10 + FILL + 256])


def test_flush_overlap_follows_the_next_tile_that_occupies_the_pipeline(tmp_path):
    """Row of tiles A, B, C, D, E in scanline order. A is followed by an RE-skipped tile (no
    work, no flush: passed over), so C's start hides A's flush; C is followed by an empty tile
    that only flushes the clear color (D), whose flush must follow C's on the bus: nothing
    hides C's flush; E's start hides D's; E is the pass's last tile. A second pass does not
    hide the first pass's last flush."""
    cfg = overlap_config(tmp_path, 1)
    tiles = {"prims_binned": [1, 3, 1, 0, 1], "re_tiles_skipped": [0, 1, 0, 0, 0],
             "color_flush_bytes": [1024, 0, 1024, 1024, 1024], "fs_quad_alu": [100, 0, 100, 0, 100]}
    est = run(grid_frame(5, 1, tiles), cfg)
    flush = 256
    hidden = FILL + min(QUEUED, 100)      # E's and C's start: fill + their first quads
    assert est.tile_cycles == pytest.approx([max(100 + FILL + flush - hidden, flush), 0,
                                             100 + FILL + flush, flush - hidden,
                                             100 + FILL + flush])
    two = run(grid_frame(5, 1, tiles, passes=2), cfg)
    assert two.tile_cycles == pytest.approx(np.concatenate([est.tile_cycles] * 2))


# a tile's raster counters as Rendering Elimination leaves them when it skips the tile
RE_CLEARED = [n for n in TILE_COUNTERS if n not in ("prims_binned", "pb_list_bytes_written")]
FLUSH_BOUND = {"prims_binned": st.integers(0, 4), "fs_quad_alu": st.integers(0, 2000),
               "fragments_rasterized": st.integers(0, 256),
               "color_flush_bytes": st.sampled_from([0, 1024]),
               "depth_flush_bytes": st.sampled_from([0, 768]),
               "dsr_dcts": st.integers(0, 1)}


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(shape=st.sampled_from([(1, 1), (4, 1), (3, 2), (4, 4), (5, 3)]),
       data=st.data(), overlap=st.sampled_from([0, 1]), cleared=st.booleans(),
       zorder=st.sampled_from([0, 1]))
def test_skipping_tiles_never_adds_time(tmp_path_factory, shape, data, overlap, cleared, zorder):
    """Marking more tiles RE-skipped never raises the pass's raster cycles, with the flush
    overlapped or serialized, in scanline or Z order, whether the skipped tiles' raster
    counters are cleared (as the renderer leaves them) or only re_tiles_skipped is set (the
    model then charges no pipeline work, only their flush)."""
    tx, ty = shape
    n = tx * ty
    tiles = {name: data.draw(st.lists(values, min_size=n, max_size=n))
             for name, values in FLUSH_BOUND.items()}
    tiles["re_signature_accesses"] = [2] * n
    skipped = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    more = [a or b for a, b in zip(skipped, data.draw(st.lists(st.booleans(), min_size=n,
                                                                max_size=n)), strict=True)]
    cfg = overlap_config(tmp_path_factory.mktemp("cfg"), overlap).replace(
        **{"screen.zorder_traversal": zorder})

    def cycles(skip):
        counters = {k: np.where(skip, 0, v) if cleared and k in (*RE_CLEARED, "dsr_dcts")
                    else np.asarray(v) for k, v in tiles.items()}
        counters["re_tiles_skipped"] = np.asarray(skip, dtype=np.int64)
        return run(grid_frame(tx, ty, counters), cfg).raster_cycles[0]

    assert cycles(more) <= cycles(skipped) + 1e-9


def test_double_buffered_color_buffer_overlaps_flush():
    cfg = load_gpu_config()
    cfg.values["buffers.color.entries"] = 512
    f = make_frame(tiles={"prims_binned": [1, 0], "color_flush_bytes": [1024, 1024],
                          "fs_quad_alu": [1000, 0]})     # 1000 x FLOOR / 4 = 1000 cycles
    cycles = run(f, cfg).tile_cycles
    assert cycles[0] == pytest.approx(1000 + LAT_MAX + 8)
    assert cycles[1] == pytest.approx(256)


def test_no_work_means_static_energy_only():
    est = estimate_frame(make_frame(), CFG, ECFG)
    assert est.cycles == 0 and est.traffic_total == 0
    assert all(v == 0 for v in est.gpu_dynamic.values())
    assert est.memory["act_pre"] == est.memory["read"] == est.memory["write"] == 0
    assert est.energy == pytest.approx(sum(est.gpu_static.values()) + est.memory["background"]
                                       + est.memory["refresh"])
    # idle time still leaks: a flush-only frame spends static energy on its 1000 cycles
    idle = estimate_frame(make_frame(tiles={"color_flush_bytes": [4000, 0]}), CFG, ECFG)
    assert all(v == 0 for v in idle.gpu_dynamic.values()) and idle.energy > 0


def test_static_energy_is_power_times_time():
    f = make_frame(tiles={"color_flush_bytes": [4000, 0]})
    est = estimate_frame(f, CFG, ECFG)
    assert est.seconds == pytest.approx(1000 / 400e6)
    # low-power leakage (energy_32nm.toml): 1 vertex + 4 fragment processors, the fixed
    # function units, and 420 KB of caches (vertex 4, texture 4 x 8, tile 128, L2 256)
    gpu_w = (0.003084 + 4 * 0.003084 + 0.006167 + (4 + 4 * 8 + 128 + 256) * 2.499e-4) * 1e-3
    assert sum(est.gpu_static.values()) == pytest.approx(gpu_w * est.seconds)
    assert est.memory["background"] + est.memory["refresh"] == pytest.approx(
        DRAM_BG_W * est.seconds)


# McPAT/CACTI's 32 nm device tables (cacti/technology.cc, tech == 32), as energy_32nm.toml
# states them: per um of transistor width, subthreshold I_off_n at 300 K and 350 K and gate
# leakage I_g_on_n (A/um), for the high-performance (HP) and low-standby-power (LSTP) devices.
MCPAT_32NM = {"hp": {"off_300": 1.52e-7, "off_350": 2.69e-7, "gate": 6.55e-8, "vdd": 0.9},
              "lstp": {"off_300": 2.06e-11, "off_350": 1.69e-10, "gate": 3.73e-11, "vdd": 1.0}}
# The high-performance estimates each leakage entry started from (mW, mW/processor, mW/KB).
HP_LEAKAGE = {"gpu.static.vertex_processor": 5.0, "gpu.static.fragment_processor": 5.0,
              "gpu.static.fixed_function": 10.0, "technique.static.dct_logic": 0.5}
# CACTI's 6T SRAM cell (cacti/technology.cc): access, pull-up and pull-down widths in F.
CACTI_CELL_WIDTH_F = (1.31, 1.23, 2.08)


def test_leakage_is_the_low_power_process_derived_from_its_stated_inputs():
    """Every leakage entry = its HP estimate x r, r = (I_off + I_gate)_LSTP / (I_off +
    I_gate)_HP of McPAT's 32 nm devices at the GPU's 1 V: 350 K for the value, 300 K for the
    range's low end, the HP estimate its high end; each source states the inputs it used."""
    def ratio(temp):
        hp, lstp = MCPAT_32NM["hp"], MCPAT_32NM["lstp"]
        return (lstp[f"off_{temp}"] + lstp["gate"]) / (hp[f"off_{temp}"] + hp["gate"])

    r350, r300 = ratio(350), ratio(300)
    assert r350 == pytest.approx(6.167e-4, rel=1e-4) and r300 == pytest.approx(2.662e-4, rel=1e-4)
    assert set(HP_LEAKAGE) | {"gpu.static.sram"} == {k for k in ECFG.values if ".static." in k}
    # SRAM: CACTI's cell, one of each leaking transistor per bit, x 8192 bits per KB (mW/KB)
    width_um = sum(CACTI_CELL_WIDTH_F) * 0.032
    per_kb = lambda d, t: (MCPAT_32NM[d][f"off_{t}"] + MCPAT_32NM[d]["gate"]) * width_um * 8192e3  # noqa: E731
    assert ECFG["gpu.static.sram"] == pytest.approx(per_kb("lstp", 350), rel=5e-4)
    assert ECFG.ranges["gpu.static.sram"] == pytest.approx((per_kb("lstp", 300),
                                                            per_kb("hp", 350)), rel=5e-4)
    for key, hp in HP_LEAKAGE.items():
        assert ECFG[key] == pytest.approx(hp * r350, rel=5e-4), key
        low, high = ECFG.ranges[key]
        assert low == pytest.approx(hp * r300, rel=5e-4) and high == hp, key
        assert "6.167e-4" in ECFG.sources[key] and f"{hp:g} m" in ECFG.sources[key], key
    # Table 3.1's 1 V at 32 nm is the LSTP device's supply, not the HP one's
    assert CFG["tech.voltage"] == MCPAT_32NM["lstp"]["vdd"] != MCPAT_32NM["hp"]["vdd"]
    # the inputs of the derivation are the file's: its header states each McPAT figure
    header = ENERGY_32NM.read_text()
    for device in MCPAT_32NM.values():
        for value in (device["off_300"], device["off_350"], device["gate"]):
            assert f"{value:.3g}".replace("e-0", "e-") in header, value
    # static power is now a small share of the baseline GPU's: below 1% of a busy frame's energy
    # where a processor completes 8 threads a cycle (Shader Core's reading); at Frame Coherence
    # §2.2's one thread a cycle the same work takes longer and leaks for longer, in proportion
    f = make_frame(tiles={"prims_binned": [1, 1], "fs_quad_alu": [4000, 4000],
                          "tex_cache_accesses": [2000, 2000], "color_flush_bytes": [1024, 1024]})
    fast = run(f, CFG.replace(**{"processors.shader.threads_per_cycle": 8}))
    slow = run(f)

    def static_dynamic(est):
        return (sum(float(v[0]) for v in est.gpu_static.values()),
                sum(float(v[0]) for v in est.gpu_dynamic.values()))

    static, dynamic = static_dynamic(fast)
    assert static < 0.01 * dynamic
    slow_static, slow_dynamic = static_dynamic(slow)
    assert slow.seconds[0] > fast.seconds[0]
    assert slow_static == pytest.approx(static * slow.seconds[0] / fast.seconds[0])
    assert slow_static == pytest.approx(sum(gpu_static_power(CFG, ECFG).values())
                                        * slow.seconds[0])


def test_dram_energy_split_like_micron():
    """Open page (the default): a sequential source activates one row per 2 KB it streams
    through; closed page: one activate/precharge per 64-byte request. Read and write bursts
    per byte either way; the per-source attribution adds up to the dynamic DRAM energy."""
    f = make_frame({"vertex_cache_misses": 10, "index_bytes": 640},
                   {"color_flush_bytes": [1280, 0]})
    reads, writes = 10 * 64 + 640, 1280
    closed = ECFG.replace(**{"memory.open_page": 0})
    for ecfg, bytes_per_activation in ((ECFG, 2048), (closed, 64)):
        est = estimate_frame(f, CFG, ecfg)
        assert est.memory["act_pre"] == pytest.approx(
            (reads + writes) / bytes_per_activation * 1204.7e-12)
        assert est.diagnostics["dram_activations"] == pytest.approx(
            (reads + writes) / bytes_per_activation)
        assert est.memory["read"] == pytest.approx(reads * 67.76e-12)
        assert est.memory["write"] == pytest.approx(writes * 40.26e-12)
        dynamic = est.memory["act_pre"] + est.memory["read"] + est.memory["write"]
        assert sum(est.memory_by_source.values()) == pytest.approx(dynamic)
    # the background: active standby with rows left open, precharge standby without
    idle = make_frame(tiles={"color_flush_bytes": [4000, 0]})
    assert estimate_frame(idle, CFG, ECFG).memory["background"] == pytest.approx(
        2 * 37.88e-3 * 1000 / 400e6)
    assert estimate_frame(idle, CFG, closed).memory["background"] == pytest.approx(
        2 * 34.1e-3 * 1000 / 400e6)


def test_open_page_sequential_streams_activate_fewer_rows_than_texture_lines():
    """The same DRAM bytes cost 16x fewer activations as a flush (one per 2 KB row) than as
    scattered texture lines (half of them miss the open row: one per 128 B); closed page
    charges both one per 64 B. Fewer activations per row (DRAMSim2's 4-request cap) or a
    lower texture row-hit rate never lower the energy."""
    lines = 4096
    tex = make_frame(tiles={"tex_cache_misses": [lines, 0]})
    tex_dram = lines * 64 * (1 - H_TEX)
    flush = make_frame(tiles={"color_flush_bytes": [lines * 64, 0]})
    closed = ECFG.replace(**{"memory.open_page": 0})
    act = {}
    for name, f, nbytes in (("tex", tex, tex_dram), ("flush", flush, lines * 64)):
        for policy, ecfg in (("open", ECFG), ("closed", closed)):
            est = estimate_frame(f, CFG, ecfg)
            act[name, policy] = est.diagnostics["dram_activations"] / nbytes
    assert act["flush", "open"] == pytest.approx(1 / 2048)
    assert act["tex", "open"] == pytest.approx(0.5 / 64)
    assert act["tex", "open"] == pytest.approx(16 * act["flush", "open"])
    assert act["tex", "closed"] == pytest.approx(act["flush", "closed"]) == pytest.approx(1 / 64)
    energy = lambda f, **kw: estimate_frame(f, CFG, ECFG.replace(**kw)).energy  # noqa: E731
    for f in (tex, flush):
        assert energy(f) <= energy(f, **{"memory.row_accesses_max": 4})
        assert energy(f) <= energy(f, **{"memory.texture_row_hit": 0.0})
        assert energy(f) < energy(f, **{"memory.open_page": 0})
    assert energy(flush) < energy(flush, **{"memory.row_accesses_max": 4})
    assert energy(tex) < energy(tex, **{"memory.texture_row_hit": 0.0})


# The LPDDR4 part energy_32nm.toml states (Micron 6 Gb LPDDR4-3200 x16, DRAMPower's memspec):
# supplies (V), currents (mA) per supply VDD1 / VDD2 / VDDQ, timings (clocks of tCK ns),
# organization.
LPDDR4 = {"vdd": (1.8, 1.1, 1.1), "idd0": (3.5, 45, 0.75), "idd2n": (2.0, 27, 0.75),
          "idd3n": (2.25, 30, 0.75), "idd4r": (2.25, 275, 150), "idd4w": (2.25, 210, 55),
          "idd5ab": (10, 90, 0.75), "tck": 0.625, "trc": 97, "tras": 68, "burst": 8,
          "burst_bytes": 32, "trfcab": 448, "trefi": 6246, "columns": 1024, "width": 16}


def test_dram_figures_rederived_from_the_lpddr4_part():
    """Micron TN-41-01's method on the part's currents gives each [memory] entry (mA x ns x V
    = pJ; mA x V = mW); the row is the part's 1024 columns of 16 bits."""
    p = LPDDR4
    rails = lambda f: sum(f(i) * v for i, v in enumerate(p["vdd"]))  # noqa: E731
    ns = lambda clocks: clocks * p["tck"]  # noqa: E731
    trc, tras, burst = ns(p["trc"]), ns(p["tras"]), ns(p["burst"])
    act = rails(lambda i: p["idd0"][i] * trc - p["idd3n"][i] * tras
                - p["idd2n"][i] * (trc - tras))
    read = rails(lambda i: (p["idd4r"][i] - p["idd3n"][i]) * burst) / p["burst_bytes"]
    write = rails(lambda i: (p["idd4w"][i] - p["idd3n"][i]) * burst) / p["burst_bytes"]
    refresh = rails(lambda i: (p["idd5ab"][i] - p["idd3n"][i])) * p["trfcab"] / p["trefi"]
    derived = {"act_pre": act, "read_per_byte": read, "write_per_byte": write,
               "background": rails(lambda i: p["idd2n"][i]),
               "background_open": rails(lambda i: p["idd3n"][i]), "refresh": refresh,
               "row_size": p["columns"] * p["width"] / 8}
    for key, value in derived.items():
        assert ECFG[f"memory.{key}"] == pytest.approx(value, rel=2e-3), key
    # the whole row by default; DRAMSim2's 4-request cap as the range's low end
    assert ECFG["memory.row_accesses_max"] == derived["row_size"] / ECFG["memory.access_size"]
    assert ECFG.ranges["memory.row_accesses_max"] == (4, 32)
    header = ENERGY_32NM.read_text()
    for name in ("idd0", "idd2n", "idd3n", "idd4r", "idd4w", "idd5ab"):
        stated = " / ".join(f"{x:.1f}" if x == int(x) and x < 10 else f"{x:g}" for x in p[name])
        assert f"{name.upper()} {stated}" in header, name
    assert "1024 columns x 16 bits" in ECFG.sources["memory.row_size"]


def test_traffic_is_sum_of_sources():
    f = make_frame({"vertex_cache_misses": 2, "index_bytes": 30, "pb_record_bytes_written": 7},
                   {"pb_list_bytes_written": [4, 8], "pb_bytes_read": [50, 60],
                    "tex_cache_misses": [1, 2], "color_flush_bytes": [1024, 0],
                    "depth_flush_bytes": [0, 768]})
    t = estimate_frame(f, CFG, ECFG).traffic
    # the 19-byte Parameter Buffer stays in the L2; 18% of texture-cache misses reach DRAM
    assert t == pytest.approx({"vertices": 128, "indices": 30, "pb_writes": 19, "pb_reads": 0,
                               "textures": 192 * (1 - H_TEX), "color_flush": 1024,
                               "depth_flush": 768, "technique_tables": 0})
    d = estimate_frame(f, CFG, ECFG).to_dict()
    assert d["traffic_bytes"]["total"] == pytest.approx(sum(t.values()))
    e = d["energy_j"]
    assert e["total"] == pytest.approx(e["gpu"] + e["memory"])


def test_batch_equals_frame_by_frame():
    """Vectorizing over frames changes nothing: a batch of frames = each frame alone."""
    rng = np.random.default_rng(1)
    frames = []
    for i in range(4):
        scalars = {k: int(v) for k, v in zip(FRAME_COUNTERS, rng.integers(0, 5000, 20),
                                             strict=False)}
        tiles = {k: rng.integers(0, 3000, 3) for k in TILE_COUNTERS}
        f = make_frame(scalars, tiles, ntiles=3)
        f.frame = i
        frames.append(f)
    together = estimate_batch(batch_from_frames(frames), CFG, ECFG).frames()
    for f, est in zip(frames, together, strict=True):
        alone = estimate_frame(f, CFG, ECFG)
        assert est.frame == f.frame
        assert est.cycles == pytest.approx(alone.cycles)
        assert est.energy == pytest.approx(alone.energy)
        assert est.traffic == pytest.approx(alone.traffic)


SCALAR_NAMES = sorted(FRAME_COUNTERS)
# every tile counter that is work: the baseline's and the techniques' (savings and
# diagnostics are tested apart below)
TILE_NAMES = sorted([*TILE_COUNTERS, *TECHNIQUE_WORK_COUNTERS])
# small counts, and large ones that overflow the tile cache and the L2 (capacity regimes)
counts = st.integers(0, 5000) | st.integers(100_000, 3_000_000)


def _frame(s_values, t_values, names, techniques=()):
    s = dict(zip(SCALAR_NAMES, s_values, strict=True))
    t = {n: [t_values[2 * i], t_values[2 * i + 1]] for i, n in enumerate(names)}
    for n in techniques:
        t.setdefault(n, [0, 0])
    return make_frame(s, t)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(base_s=st.lists(counts, min_size=len(SCALAR_NAMES), max_size=len(SCALAR_NAMES)),
       base_t=st.lists(counts, min_size=2 * len(TILE_NAMES), max_size=2 * len(TILE_NAMES)),
       which=st.integers(0, len(SCALAR_NAMES) + 2 * len(TILE_NAMES) - 1),
       inc=st.integers(1, 100000) | st.integers(100_000, 3_000_000))
def test_time_and_energy_never_decrease_with_more_work(base_s, base_t, which, inc):
    bumped_s, bumped_t = list(base_s), list(base_t)
    if which < len(SCALAR_NAMES):
        bumped_s[which] += inc
    else:
        bumped_t[which - len(SCALAR_NAMES)] += inc
    # every technique array present in both, so the technique hardware leaks in both
    a = estimate_frame(_frame(base_s, base_t, TILE_NAMES, TECHNIQUE_TILE_COUNTERS), CFG, ECFG)
    b = estimate_frame(_frame(bumped_s, bumped_t, TILE_NAMES, TECHNIQUE_TILE_COUNTERS), CFG,
                       ECFG)
    assert b.cycles >= a.cycles * (1 - 1e-12)
    assert b.seconds >= a.seconds * (1 - 1e-12)
    assert b.energy >= a.energy * (1 - 1e-12)
    assert b.gpu_energy >= a.gpu_energy * (1 - 1e-12)
    assert b.memory_energy >= a.memory_energy * (1 - 1e-12)
    assert b.traffic_total >= a.traffic_total * (1 - 1e-12)


SAVINGS = sorted(TECHNIQUE_SAVINGS_COUNTERS)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(base_t=st.lists(counts, min_size=2 * len(TILE_NAMES), max_size=2 * len(TILE_NAMES)),
       saved=st.lists(st.integers(0, 3), min_size=2 * len(SAVINGS), max_size=2 * len(SAVINGS)),
       which=st.integers(0, 2 * len(SAVINGS) - 1), inc=st.integers(1, 5000))
def test_savings_counters_never_add_time_or_energy(base_t, saved, which, inc):
    """Savings the renderer reports (skipped tiles, memo hits, ...) never cost time or
    traffic, nor energy but a memoization hit's read of its stored color
    (``technique.memo.hit_read``): the counts here are arbitrary, so a hit may have no shading
    of its own to save, and then costs exactly that read."""
    names = [*TILE_NAMES, *SAVINGS]
    bumped = list(saved)
    bumped[which] += inc
    a = estimate_frame(_frame([0] * len(SCALAR_NAMES), base_t + saved, names), CFG, ECFG)
    b = estimate_frame(_frame([0] * len(SCALAR_NAMES), base_t + bumped, names), CFG, ECFG)
    read = inc * ECFG["technique.memo.hit_read"] * 1e-12 if SAVINGS[which // 2] == "memo_hits" \
        else 0.0
    assert b.cycles <= a.cycles * (1 + 1e-12)
    assert b.energy <= (a.energy + read) * (1 + 1e-12)
    assert b.traffic_total <= a.traffic_total * (1 + 1e-12)


def test_a_memo_hit_costs_its_color_read_and_saves_its_shading():
    """The falsifying case the property above once found (a hit with nothing shaded to save
    costs its 4.5 pJ read), and its consistent counterpart: a hit of a fragment the baseline
    shaded saves more than the read costs."""
    names = [*TILE_NAMES, *SAVINGS]
    zeros = [0] * (2 * len(names))
    zeros[2 * names.index("memo_lookups")] = 1     # the example: a lookup, nothing shaded
    hit = list(zeros)
    hit[2 * names.index("memo_hits")] = 1
    a = estimate_frame(_frame([0] * len(SCALAR_NAMES), zeros, names), CFG, ECFG)
    b = estimate_frame(_frame([0] * len(SCALAR_NAMES), hit, names), CFG, ECFG)
    assert b.energy - a.energy == pytest.approx(ECFG["technique.memo.hit_read"] * 1e-12)
    shaded = list(zeros)
    for counter, count in (("fragments_rasterized", 4), ("fragments_shaded", 4),
                           ("fs_alu", 40), ("fs_quad_alu", 10), ("memo_lookups", 4)):
        shaded[2 * names.index(counter)] = count
    saved = list(shaded)
    saved[2 * names.index("memo_hits")] = 4
    c = estimate_frame(_frame([0] * len(SCALAR_NAMES), shaded, names), CFG, ECFG)
    d = estimate_frame(_frame([0] * len(SCALAR_NAMES), saved, names), CFG, ECFG)
    assert d.energy < c.energy


def _write_variant(tmp_path, src, pattern, repl, name="cfg.toml"):
    text = src.read_text()
    new = re.sub(pattern, repl, text, count=1, flags=re.M)
    assert new != text
    path = tmp_path / name
    path.write_text(new)
    return path


@pytest.mark.parametrize("pattern, repl, message", [
    (r'^bandwidth = .*$', '', "missing key(s): memory.bandwidth"),
    (r'^(bandwidth = \{ value = 4, unit = )"bytes/cycle"', r'\1"GB/s"',
     "memory.bandwidth.unit: expected 'bytes/cycle'"),
    (r'^(bandwidth = \{ value = )4', r'\1-4', "memory.bandwidth.value: must be positive"),
    (r'^(bandwidth = \{ value = )4', r'\1"fast"', "memory.bandwidth.value: expected a finite"),
    (r'^(bandwidth = \{ value = 4, unit = "bytes/cycle", source = )"[^"]*"', r'\1" "',
     "memory.bandwidth.source"),
    (r'^(bandwidth = .*)$', r'\1\nbandwith = { value = 4, unit = "x", source = "typo" }',
     "unknown key(s): memory.bandwith"),
    (r'^(latency_min = \{ value = )50', r'\g<1>500', "memory.latency_min: must not exceed"),
    (r'^\[tech\]', '[tech', "not valid TOML"),
])
def test_gpu_config_errors_name_the_key(tmp_path, pattern, repl, message):
    path = _write_variant(tmp_path, BASELINE_GPU, pattern, repl)
    with pytest.raises(InputError) as exc:
        load_gpu_config(path)
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_energy_config_errors(tmp_path):
    path = _write_variant(tmp_path, ENERGY_32NM, r'^(read_per_byte = \{ value = )67\.76',
                          r'\1-1')
    with pytest.raises(InputError, match="memory.read_per_byte.value: must be non-negative"):
        load_energy_config(path)
    with pytest.raises(InputError, match="^.*nope.toml: no such config file$"):
        load_gpu_config(tmp_path / "nope.toml")


def test_user_config_changes_the_estimate(tmp_path):
    path = _write_variant(tmp_path, BASELINE_GPU,
                          r'^(clock = \{ value = )400_000_000', r'\g<1>800_000_000')
    f = make_frame(tiles={"color_flush_bytes": [4000, 0]})
    fast = estimate_frame(f, load_gpu_config(path), ECFG)
    assert fast.seconds == pytest.approx(estimate_frame(f, CFG, ECFG).seconds / 2)


def test_estimate_command(tmp_path, capsys):
    out = tmp_path / "render"
    f = make_frame({"vertex_cache_misses": 2}, {"prims_binned": [1, 0],
                                                "color_flush_bytes": [1024, 1024]})
    f.save(out / "counters" / "000000.npz")
    f.frame = 1
    f.save(out / "counters" / "000001.npz")
    assert main(["estimate", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out, parse_constant=pytest.fail)  # no NaN
    assert [x["frame"] for x in report["frames"]] == [0, 1]
    assert report["total"]["traffic_bytes"]["total"] == 2 * (128 + 2048)
    assert report["total"]["cycles"]["total"] == pytest.approx(
        2 * report["frames"][0]["cycles"]["total"])
    assert report["total"]["energy_j"]["screen"] is None  # no frames/*.png
    # what bounds it: per frame, per workload total, and beside the workload's name
    shares = report["workloads"][0]["bound_shares"]
    assert shares == report["total"]["bound_shares"] and sum(shares.values()) == pytest.approx(1)
    assert "fragment_bound" in report["workloads"][0]["regime"]
    assert all(sum(x["bound_shares"].values()) == pytest.approx(1) for x in report["frames"])
    assert main(["estimate", str(out)]) == 0
    text = capsys.readouterr().out
    assert "total" in text and "bound by: " in text and "fragment-bound" in text
    assert main(["estimate", str(out), "--sensitivity", "--json"]) == 0
    swing = json.loads(capsys.readouterr().out)["workloads"][0]["sensitivity"]
    assert {r["parameter"] for r in swing["parameters"]} >= {"gpu.static.sram"}
    assert main(["estimate", str(out), "--sensitivity"]) == 0
    assert "sensitivity of" in capsys.readouterr().out
    assert main(["estimate", str(tmp_path / "empty")]) == 2
    assert main(["estimate", str(out), "--config", str(tmp_path / "missing.toml")]) == 2
    (out / "counters" / "000002.npz").write_bytes(b"not a zip")
    assert main(["estimate", str(out)]) == 2
    assert "000002.npz: unreadable counters file" in capsys.readouterr().err


# --- shading charged by the shader core's throughput (Shader Core ch. 3; issue 14 item 5) ---

ALU_PROGRAM = """FRAG
DCL IN[0], GENERIC[0], PERSPECTIVE
DCL OUT[0], COLOR
DCL TEMP[0..1]
  0: MUL TEMP[0], IN[0], IN[0]
  1: ADD TEMP[1], TEMP[0], IN[0]
  2: MUL TEMP[0], TEMP[1], TEMP[1]
  3: MOV OUT[0], TEMP[0]
  4: END
"""
CHAIN_PROGRAM = """FRAG
DCL IN[0], GENERIC[0], PERSPECTIVE
DCL OUT[0], COLOR
DCL TEMP[0]
  0: RCP TEMP[0].x, IN[0].xxxx
  1: RSQ TEMP[0].x, TEMP[0].xxxx
  2: RCP TEMP[0].x, TEMP[0].xxxx
  3: RSQ TEMP[0].x, TEMP[0].xxxx
  4: MOV OUT[0], TEMP[0].xxxx
  5: END
"""


def _program_frame(instructions, texts):
    """Two tiles; tile 0 runs ``instructions[d]`` quad instructions of each program ``d``."""
    total = sum(instructions.values())
    f = make_frame(tiles={"prims_binned": [1, 0], "fs_quad_alu": [total, 0]})
    f.programs = dict(texts)
    for digest, count in instructions.items():
        f.passes[0].fs_programs[digest] = np.array([count, 0], dtype=np.int64)
    return f


def test_fragment_shading_charges_each_program_the_cores_cycles_per_instruction(tmp_path,
                                                                                 monkeypatch):
    from tilesim.timing.shader_core.config import load_core_config
    from tilesim.timing.shader_core.throughput import text_throughput

    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    core = load_core_config()
    cpi = {d: text_throughput(t, core)["cycles_per_instruction"]
           for d, t in (("alu", ALU_PROGRAM), ("chain", CHAIN_PROGRAM))}
    # the dependent transcendental chain cannot issue every cycle; independent ALU work can
    assert cpi["chain"] > cpi["alu"] >= 1 / core["issue.width"]
    texts = {"alu": ALU_PROGRAM, "chain": CHAIN_PROGRAM}
    # Shader Core's reading (8 threads a cycle): the core's own figure, never below its floor
    core8 = CFG.replace(**{"processors.shader.threads_per_cycle": 8})
    one = run(_program_frame({"alu": 4000}, texts), core8).tile_stages["fragment_shading"]
    assert one[0] == pytest.approx(4000 * cpi["alu"] / 4) and one[1] == 0
    # a tile running both is charged the instruction-weighted mean
    both = run(_program_frame({"alu": 3000, "chain": 1000}, texts), core8).tile_stages
    mean = (3000 * cpi["alu"] + 1000 * cpi["chain"]) / 4000
    assert both["fragment_shading"][0] == pytest.approx(4000 * mean / 4)
    # the switch off: the issue-rate model, one instruction per cycle per processor
    path = _write_variant(tmp_path, BASELINE_GPU, r'^(core_throughput = \{ value = )1', r'\g<1>0')
    off = load_gpu_config(path)
    at_issue_rate = run(_program_frame({"alu": 4000}, texts),
                        off.replace(**{"processors.shader.threads_per_cycle": 8}))
    assert at_issue_rate.tile_stages["fragment_shading"][0] == pytest.approx(4000 / 4)
    # ... and never below the floor of the processor's vector unit
    at_floor = run(_program_frame({"alu": 4000}, texts), off)
    assert at_floor.tile_stages["fragment_shading"][0] == pytest.approx(4000 * FLOOR / 4)
    # the default, Frame Coherence §2.2's reading: a processor's vector unit runs one thread a
    # cycle, so a warp instruction of 4 threads takes at least FLOOR cycles, whatever the core
    # measured
    assert CFG["processors.shader.threads_per_cycle"] == 1
    slow = run(_program_frame({"alu": 4000}, texts)).tile_stages["fragment_shading"]
    assert cpi["chain"] < FLOOR
    assert slow[0] == pytest.approx(4000 * max(cpi["alu"], FLOOR) / 4)


def test_vertex_shading_charges_the_vertex_programs(tmp_path, monkeypatch):
    from tilesim.timing.shader_core.config import load_core_config
    from tilesim.timing.shader_core.throughput import text_throughput

    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    vertex = ALU_PROGRAM.replace("FRAG", "VERT").replace("GENERIC[0], PERSPECTIVE",
                                                         "GENERIC[0]").replace("COLOR",
                                                                               "POSITION")
    cpi = text_throughput(vertex, load_core_config())["cycles_per_instruction"]
    f = make_frame({"vs_alu": 4000})
    f.programs, f.vs_programs = {"v": vertex}, {"v": 4000}
    core8 = CFG.replace(**{"processors.shader.threads_per_cycle": 8})
    assert run(f, core8).geometry_stages["vertex_shading"][0] == pytest.approx(1000 * cpi)
    assert run(f).geometry_stages["vertex_shading"][0] == pytest.approx(1000 * max(cpi, FLOOR))


def test_flag_values_are_checked(tmp_path):
    path = _write_variant(tmp_path, BASELINE_GPU, r'^(core_throughput = \{ value = )1', r'\g<1>2')
    with pytest.raises(InputError, match="processors.shader.core_throughput.value: a flag is 0"):
        load_gpu_config(path)


def test_sensitivity_moves_one_parameter_across_its_documented_range():
    from tilesim.timing.sensitivity import sensitivity, sensitivity_table

    assert CFG.ranges["buffers.color.flush_overlap"] == (0.0, 1.0)
    assert ECFG.ranges["gpu.static.sram"] == (7.012e-5, 0.4051)
    f = make_frame(tiles={"prims_binned": [1, 1], "color_flush_bytes": [4096, 4096],
                          "fs_quad_alu": [400, 400]})
    result = sensitivity(batch_from_frames([f]), CFG, ECFG)
    rows = {r["parameter"]: r for r in result["parameters"]}
    assert set(rows) == set(CFG.ranges) | set(ECFG.ranges)
    assert result["seconds"] == pytest.approx(float(run(f).seconds.sum()))
    # leakage moves energy, never time: the low-power value sits inside its range (a cooler
    # die below, the high-performance figure above)
    sram = rows["gpu.static.sram"]
    assert sram["energy_low"] < 0 < sram["energy_high"]
    assert sram["seconds_low"] == sram["seconds_high"] == 0
    # a flush-bound frame: serializing the flush adds time, overlapped (the value) nothing
    flush = rows["buffers.color.flush_overlap"]
    assert flush["seconds_low"] > 0 and flush["seconds_high"] == 0
    spans = [max(abs(r["seconds_low"] - r["seconds_high"]), abs(r["energy_low"] - r["energy_high"]))
             for r in result["parameters"]]
    assert spans == sorted(spans, reverse=True)
    assert "gpu.static.sram" in sensitivity_table("w", result)


@pytest.mark.parametrize("repl, message", [
    (r'\g<1>[0.5, 0.9] }', "range: [0.5, 0.9] must hold the value 1"),
    (r'\g<1>[0, 2] }', "a flag: [0, 1]"),
    (r'\g<1>"wide" }', "range: expected [low, high]"),
])
def test_config_ranges_are_checked(tmp_path, repl, message):
    path = _write_variant(tmp_path, BASELINE_GPU,
                          r'^(core_throughput = \{ value = 1, .*, range = )\[0, 1\] \}$', repl)
    with pytest.raises(InputError, match=re.escape(message)):
        load_gpu_config(path)


def test_bound_shares_add_up_to_the_frame_and_name_the_bottleneck():
    """bound_cycles split every frame's cycles by what bounds them (model.bound_cycles): they
    add up to the frame's cycles; a tile whose shading dominates is shading-bound, a tile that
    only flushes is flush-bound, the geometry phase is its own share."""
    from tilesim.timing.model import bound_report

    f = make_frame({"vertex_cache_accesses": 10, "vs_alu": 400, "prims_assembled": 5},
                   tiles={"prims_binned": [1, 0], "fs_quad_alu": [40000, 0],
                          "color_flush_bytes": [1024, 4096]})
    est = run(f)
    cycles = {k: float(v[0]) for k, v in est.bound_cycles.items()}
    assert sum(cycles.values()) == pytest.approx(est.geometry_cycles[0] + est.raster_cycles[0])
    assert cycles["geometry"] == pytest.approx(est.geometry_cycles[0])
    assert cycles["shading"] == pytest.approx(est.raster_stages["fragment_shading"][0])
    assert cycles["flush"] >= 4096 / 4
    report = bound_report(cycles)
    assert sum(report["bound_shares"].values()) == pytest.approx(1.0)
    assert sum(report["raster_bound_shares"].values()) == pytest.approx(1.0)
    assert "geometry" not in report["raster_bound_shares"]
    assert report["regime"]["fragment_bound"] and report["regime"]["largest"] == "shading"
    assert est.frame(0).to_dict()["bound_shares"] == pytest.approx(report["bound_shares"])


def test_dram_idle_time_goes_to_power_down_and_self_refresh_as_drampower_counts_it():
    """A channel's idle gaps are spent in standby for power_down_idle, in power-down (IDD3P
    with an open page) up to self_refresh_idle, then in self-refresh (IDD6, no refresh
    charged); each exit at standby power. The currents are the DRAMPower memspec's."""
    from tilesim.timing.memory_traffic import dram_low_power_cycles

    # 4 gaps of 100 cycles (250 ns): 250 - 7.5 (entry) - 7.5 (tXP) = 235 ns in power-down
    pd, sr = dram_low_power_cycles(np.array([400.0]), np.array([4.0]), CFG, ECFG)
    assert pd == pytest.approx(4 * 235 * 0.4) and sr == 0
    # one gap of 2000 ns: power-down until 1000 ns less entry and tXP, then self-refresh
    # after the 1000 ns threshold and its 286.25 ns exit
    pd, sr = dram_low_power_cycles(np.array([800.0]), np.array([1.0]), CFG, ECFG)
    assert pd == pytest.approx((1000 - 15) * 0.4) and sr == pytest.approx((1000 - 286.25) * 0.4)
    off = ECFG.replace(**{"memory.power_down": 0})
    assert dram_low_power_cycles(np.array([800.0]), np.array([1.0]), CFG, off)[0] == 0
    # the DRAMPower memspec MICRON_6Gb_LPDDR4-3200_32bit_A: V x IDD3P, IDD2P, IDD6 (mW)
    rails = (1.8, 1.1, 1.1)
    for key, idd in (("power_down_active", (1.2, 9.0, 0.75)),
                     ("power_down_precharge", (1.2, 3.0, 0.75)),
                     ("self_refresh_power", (0.3, 0.5, 0.1))):
        assert ECFG[f"memory.{key}"] == pytest.approx(sum(v * i for v, i in zip(rails, idd,
                                                                                strict=True)))
    # a frame of shading without DRAM traffic: one tile, one 25 us gap: 985 ns in
    # power-down, then self-refresh; the geometry phase (the tiler's cycle and the fill) one
    # gap in power-down; off, all standby
    f = make_frame(tiles={"prims_binned": [1, 0], "fs_quad_alu": [40000, 0]})
    est, standby = run(f), run(f, ecfg=off)
    seconds = est.seconds[0]
    assert standby.memory["background"][0] == pytest.approx(2 * 37.88e-3 * seconds)
    pd_s = est.diagnostics["dram_power_down_seconds"][0]
    sr_s = est.diagnostics["dram_self_refresh_seconds"][0]
    geometry = est.geometry_cycles[0] / 400e6
    assert pd_s == pytest.approx(985e-9 + geometry - 15e-9)
    assert sr_s == pytest.approx(seconds - geometry - 1000e-9 - 286.25e-9)
    assert est.memory["background"][0] == pytest.approx(
        2e-3 * (37.88 * (seconds - pd_s - sr_s) + 12.885 * pd_s + 1.2 * sr_s))
    assert est.memory["refresh"][0] == pytest.approx(2 * 5.73e-3 * (seconds - sr_s))
