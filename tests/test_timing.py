"""Baseline timing / traffic / energy model: stage formulas on hand-built counters, invariants,
config validation and the `tilesim estimate` command."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from render.counters import FRAME_COUNTERS, TILE_COUNTERS, FrameCounters, PassCounters
from tilesim.cli import main
from tilesim.errors import InputError
from timing.config import BASELINE_GPU, ENERGY_32NM, load_energy_config, load_gpu_config
from timing.model import (
    estimate_frame,
    geometry_cycles,
    geometry_stage_cycles,
    tile_cycles,
    tile_stage_cycles,
    traffic_bytes,
)

CFG = load_gpu_config()
ECFG = load_energy_config()
LAT_MAX = 100.0
LAT_AVG = 75.0


def make_frame(scalars=None, tiles=None, ntiles=2) -> FrameCounters:
    """One pass of ``ntiles`` tiles (1 row); ``tiles`` maps name -> list of per-tile values."""
    f = FrameCounters(0)
    f.scalars.update(scalars or {})
    p = PassCounters("screen", 16 * ntiles, 16, 16, ntiles, 1, np.arange(ntiles))
    for name, values in (tiles or {}).items():
        p.tiles[name] = np.asarray(values, dtype=np.int64)
    f.passes.append(p)
    return f


def test_baseline_values_match_table_3_1():
    assert CFG["tech.clock"] == 400e6 and CFG["tech.voltage"] == 1 and CFG["tech.node"] == 32
    assert CFG["memory.bandwidth"] == 4 and CFG["memory.latency_min"] == 50
    assert CFG["caches.tile.size"] == 128 * 1024 and CFG["caches.l2.latency"] == 2
    assert CFG["processors.fragment.count"] == 4 and CFG["stages.rasterizer.rate"] == 16
    table = [k for k, s in CFG.sources.items() if s.startswith("001 Table 3.1")]
    assert len(table) >= 45
    for k, s in {**CFG.sources, **ECFG.sources}.items():
        assert s.startswith(("001 Table 3.1", "model assumption:", "estimate:", "002")), k


def test_geometry_stage_formulas():
    f = make_frame(
        {"vertex_cache_accesses": 10, "vertex_cache_misses": 3, "index_bytes": 64,
         "vs_alu": 800, "vs_tex": 0, "vs_flow": 0, "prims_assembled": 50,
         "pb_record_bytes_written": 1000},
        {"prims_binned": [30, 20], "pb_list_bytes_written": [100, 180]})
    s = geometry_stage_cycles(f, CFG)
    # vertex fetch: (3 lines x 64 + 64) B / 4 B/cycle = 64 > 4 lines x 75 / 32 in flight
    assert s["vertex_fetch"] == pytest.approx(64.0)
    assert s["vertex_shading"] == pytest.approx(800 / (1 * 4 * 1))
    assert s["primitive_assembly"] == 50
    assert s["tiler"] == 50
    assert s["pb_write"] == pytest.approx(1280 / 4)
    assert s["bus"] == pytest.approx((256 + 1280) / 4)
    total, _ = geometry_cycles(f, CFG)
    assert total == pytest.approx(384 + LAT_MAX + 6)


def test_memory_latency_bound_when_few_requests_in_flight():
    cfg = load_gpu_config()
    cfg.values["queues.tile.entries"] = 1  # one request in flight: latency-bound
    f = make_frame(tiles={"pb_bytes_read": [640, 0], "prims_binned": [1, 0]})
    s = tile_stage_cycles(f.passes[0], cfg)
    assert s["tile_fetch"][0] == pytest.approx(10 * LAT_AVG)
    assert s["tile_fetch"][1] == 0


def test_raster_stage_formulas():
    f = make_frame(tiles={
        "prims_binned": [2, 0], "pb_bytes_read": [400, 0],
        "fragments_rasterized": [256, 0], "early_z_tested": [256, 0], "late_z_tested": [0, 0],
        "fs_quad_alu": [640, 0], "fs_quad_tex": [64, 0], "fs_quad_flow": [16, 0],
        "texels_fetched": [1024, 0], "tex_cache_misses": [10, 0], "color_writes": [256, 0],
        "color_flush_bytes": [1024, 1024]})
    s = tile_stage_cycles(f.passes[0], CFG)
    assert s["tile_fetch"][0] == pytest.approx(100)            # 400 B / 4
    assert s["rasterizer"][0] == pytest.approx(256 * 4 / 16)   # 64
    assert s["early_z"][0] == pytest.approx(64)                # 64 quads at 1 quad/cycle
    assert s["fragment_shading"][0] == pytest.approx(720 / 4)  # 180
    assert s["texture_filter"][0] == pytest.approx(1024 / 16)  # 64
    assert s["texture_memory"][0] == pytest.approx(160)        # 640 B / 4
    assert s["blend"][0] == pytest.approx(64)
    assert s["bus"][0] == pytest.approx(260)                   # (400 + 640) / 4
    total, _ = tile_cycles(f.passes[0], CFG)
    flush = 1024 / 4
    # bottleneck (shared bus) + fill (first miss + 8 stages) + serialized color flush
    assert total[0] == pytest.approx(260 + LAT_MAX + 8 + flush)
    assert total[1] == pytest.approx(flush)                    # empty tile: flush only
    est = estimate_frame(f, CFG, ECFG)
    assert est.raster_cycles == pytest.approx(total.sum())
    assert est.seconds == pytest.approx(est.cycles / 400e6)


def test_double_buffered_color_buffer_overlaps_flush():
    cfg = load_gpu_config()
    cfg.values["buffers.color.entries"] = 512
    f = make_frame(tiles={"prims_binned": [1, 0], "color_flush_bytes": [1024, 1024],
                          "fs_quad_alu": [4000, 0]})
    total, s = tile_cycles(f.passes[0], cfg)
    assert total[0] == pytest.approx(1000 + LAT_MAX + 8)
    assert total[1] == pytest.approx(256)


def test_no_work_means_static_energy_only():
    est = estimate_frame(make_frame(), CFG, ECFG)
    assert est.cycles == 0 and est.traffic_total == 0
    assert all(v == 0 for v in est.gpu_dynamic.values())
    assert est.memory["per_byte"] == 0 and est.memory["per_access"] == 0
    assert est.energy == pytest.approx(sum(est.gpu_static.values()) + est.memory["background"])


def test_static_energy_is_power_times_time():
    f = make_frame(tiles={"color_flush_bytes": [4000, 0]})
    est = estimate_frame(f, CFG, ECFG)
    assert est.seconds == pytest.approx(1000 / 400e6)
    gpu_w = (5 + 4 * 5 + 10) * 1e-3 + (4 + 4 * 8 + 128 + 256) * 0.08e-3
    assert sum(est.gpu_static.values()) == pytest.approx(gpu_w * est.seconds)
    assert est.memory["background"] == pytest.approx(40e-3 * est.seconds)
    assert est.memory["per_byte"] == pytest.approx(4000 * 32e-12)
    assert est.memory["per_access"] == pytest.approx(4000 / 64 * 500e-12)


def test_traffic_is_sum_of_sources():
    f = make_frame({"vertex_cache_misses": 2, "index_bytes": 30, "pb_record_bytes_written": 7},
                   {"pb_list_bytes_written": [4, 8], "pb_bytes_read": [50, 60],
                    "tex_cache_misses": [1, 2], "color_flush_bytes": [1024, 0],
                    "depth_flush_bytes": [0, 768]})
    t = traffic_bytes(f, CFG)
    assert t == {"vertices": 128, "indices": 30, "pb_writes": 19, "pb_reads": 110,
                 "textures": 192, "color_flush": 1024, "depth_flush": 768}
    d = estimate_frame(f, CFG, ECFG).to_dict()
    assert d["traffic_bytes"]["total"] == sum(t.values())
    e = d["energy_j"]
    assert e["total"] == pytest.approx(e["gpu"] + e["memory"])


SCALAR_NAMES = sorted(FRAME_COUNTERS)
TILE_NAMES = sorted(TILE_COUNTERS)
counts = st.integers(0, 5000)


@settings(max_examples=60, deadline=None)
@given(base_s=st.lists(counts, min_size=len(SCALAR_NAMES), max_size=len(SCALAR_NAMES)),
       base_t=st.lists(counts, min_size=2 * len(TILE_NAMES), max_size=2 * len(TILE_NAMES)),
       which=st.integers(0, len(SCALAR_NAMES) + 2 * len(TILE_NAMES) - 1),
       inc=st.integers(1, 100000))
def test_time_and_energy_never_decrease_with_more_work(base_s, base_t, which, inc):
    def build(bump):
        s = dict(zip(SCALAR_NAMES, base_s, strict=True))
        t = {n: [base_t[2 * i], base_t[2 * i + 1]] for i, n in enumerate(TILE_NAMES)}
        if bump:
            if which < len(SCALAR_NAMES):
                s[SCALAR_NAMES[which]] += inc
            else:
                k = which - len(SCALAR_NAMES)
                t[TILE_NAMES[k // 2]][k % 2] += inc
        return estimate_frame(make_frame(s, t), CFG, ECFG)

    a, b = build(False), build(True)
    assert b.cycles >= a.cycles
    assert b.seconds >= a.seconds
    assert b.energy >= a.energy * (1 - 1e-12)
    assert b.gpu_energy >= a.gpu_energy * (1 - 1e-12)
    assert b.traffic_total >= a.traffic_total


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
    path = _write_variant(tmp_path, ENERGY_32NM, r'^(per_byte = \{ value = )32\.0', r'\1-1')
    with pytest.raises(InputError, match="memory.per_byte.value: must be non-negative"):
        load_energy_config(path)
    with pytest.raises(InputError, match="not found"):
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
    report = json.loads(capsys.readouterr().out)
    assert [x["frame"] for x in report["frames"]] == [0, 1]
    assert report["total"]["traffic_bytes"]["total"] == 2 * (128 + 2048)
    assert report["total"]["cycles"]["total"] == pytest.approx(
        2 * report["frames"][0]["cycles"]["total"])
    assert main(["estimate", str(out)]) == 0
    assert "total" in capsys.readouterr().out
    assert main(["estimate", str(tmp_path / "empty")]) == 2
    assert main(["estimate", str(out), "--config", str(tmp_path / "missing.toml")]) == 2
