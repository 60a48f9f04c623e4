"""Analytic baseline timing, memory-traffic and energy model fed only by the counters.

Cycles (all floats, in GPU cycles at ``tech.clock``):

* Memory stage of ``B`` bytes in ``L = B / line`` requests with ``Q`` requests in flight:
  ``mem(B, Q) = max(B / bandwidth, L * latency_avg / Q)`` (bandwidth bound, or Little's law
  when too few requests overlap). ``latency_avg`` is the mean of the 50-100 cycle range; the
  first, unhidden miss of a phase costs ``latency_max`` in the fill term.
* Queue sizes enter twice: (1) the queue in front of a memory client bounds its requests in
  flight ``Q`` (vertex fetch: 2 vertex queues x 16; Parameter Buffer writes: triangle queue;
  Parameter Buffer reads: tile queue; texture misses: fragment queue / 4 lanes = quads); (2)
  the bottleneck model (max over stages) assumes the queues decouple the stages, which holds
  when a phase's work is much larger than a queue (the fill/drain term covers the rest).
* Geometry phase, per frame: vertex fetch ``max(vertex-cache accesses / banks,
  mem(vertex lines x 64 + index bytes, 2 x 16))``; vertex shading ``VS lane instructions /
  (vertex processors x lanes x issue_rate)``; primitive assembly ``prims_assembled / 1``;
  tiler ``sum(prims_binned) / 1``; Parameter Buffer writes ``mem(record + list bytes, 16)``;
  shared bus ``(vertex + index + PB write bytes) / bandwidth``.
  ``geometry = max(stages) + fill``; ``fill = latency_max + number of stages`` when the frame
  has geometry work, else 0.
* Raster phase, per tile (one 16x16 tile at a time through one pipeline; its quads are shared
  by the 4 fragment processors, each with its own texture cache and unit, as in Teapot's
  Mali-400MP-like model): tile fetch ``mem(pb_bytes_read, 16)``; rasterizer
  ``fragments x attributes_per_fragment / 16``; early Z ``(early + late z tested) / 4 /
  min(max_rate, in_flight / test_latency)``; fragment shading ``(fs_quad_alu + fs_quad_tex +
  fs_quad_flow) / (4 processors x issue_rate)``; texture filtering ``texels / (4 units x 4)``;
  texture memory ``mem(misses x 64, 64 / 4)``; blending ``color_writes / 4``; shared bus
  ``(PB read + texture miss bytes) / bandwidth``.
  ``tile = max(stages) + fill + flush`` with ``fill = latency_max + number of stages`` if the
  tile has primitives, and ``flush = (color + depth flush bytes) / bandwidth`` serialized
  because the 256-entry color buffer holds exactly one 16x16 tile (when it holds two tiles or
  more the flush joins the shared-bus stage instead, i.e. it overlaps the next tile).
* ``frame = geometry + sum over passes and tiles of tile`` (phases in sequence).

Energy (joules): sum of event counts x energy per event (``energy_32nm.toml``) per unit, plus
static power x frame time; main memory: bytes x per_byte + requests x per_access + background
power x frame time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from render.counters import FrameCounters, PassCounters
from timing.config import Config

GEOMETRY_STAGES = ("vertex_fetch", "vertex_shading", "primitive_assembly", "tiler",
                   "pb_write", "bus")
RASTER_STAGES = ("tile_fetch", "rasterizer", "early_z", "fragment_shading", "texture_filter",
                 "texture_memory", "blend", "bus")
TRAFFIC_SOURCES = ("vertices", "indices", "pb_writes", "pb_reads", "textures", "color_flush",
                   "depth_flush")
PJ = 1e-12
MW = 1e-3


def latency_avg(cfg: Config) -> float:
    return 0.5 * (cfg["memory.latency_min"] + cfg["memory.latency_max"])


def memory_cycles(nbytes, in_flight: float, cfg: Config, line: float = 64.0):
    """Cycles to move ``nbytes`` (scalar or array) with ``in_flight`` requests overlapping."""
    nbytes = np.asarray(nbytes, dtype=np.float64)
    return np.maximum(nbytes / cfg["memory.bandwidth"],
                      nbytes / line * latency_avg(cfg) / in_flight)


def _pb_write_bytes(frame: FrameCounters) -> float:
    return float(frame.scalars.get("pb_record_bytes_written", 0)) + sum(
        float(p.tiles["pb_list_bytes_written"].sum()) for p in frame.passes)


def geometry_stage_cycles(frame: FrameCounters, cfg: Config) -> dict[str, float]:
    """Cycles of each geometry stage of one frame (before overlap)."""
    s = frame.scalars
    get = lambda k: float(s.get(k, 0))  # noqa: E731
    vline = cfg["caches.vertex.line_size"]
    vertex_bytes = get("vertex_cache_misses") * vline + get("index_bytes")
    pbw = _pb_write_bytes(frame)
    binned = sum(float(p.tiles["prims_binned"].sum()) for p in frame.passes)
    vs_lane = get("vs_alu") + get("vs_tex") + get("vs_flow")
    vq = cfg["queues.vertex.count"] * cfg["queues.vertex.entries"]
    return {
        "vertex_fetch": float(max(get("vertex_cache_accesses") / cfg["caches.vertex.banks"],
                                  memory_cycles(vertex_bytes, vq, cfg, vline))),
        "vertex_shading": vs_lane / (cfg["processors.vertex.count"]
                                     * cfg["processors.shader.lanes"]
                                     * cfg["processors.shader.issue_rate"]),
        "primitive_assembly": get("prims_assembled") / cfg["stages.primitive_assembly.rate"],
        "tiler": binned / cfg["stages.tiler.rate"],
        "pb_write": float(memory_cycles(pbw, cfg["queues.triangle.entries"], cfg,
                                        cfg["caches.tile.line_size"])),
        "bus": (vertex_bytes + pbw) / cfg["memory.bandwidth"],
    }


def geometry_cycles(frame: FrameCounters, cfg: Config) -> tuple[float, dict[str, float]]:
    stages = geometry_stage_cycles(frame, cfg)
    bottleneck = max(stages.values())
    fill = (cfg["memory.latency_max"] + len(stages)) if bottleneck > 0 else 0.0
    return bottleneck + fill, stages


def _flush_overlaps(cfg: Config) -> bool:
    return cfg["buffers.color.entries"] >= 2 * cfg["screen.tile_size"] ** 2


def tile_stage_cycles(p: PassCounters, cfg: Config) -> dict[str, np.ndarray]:
    """Cycles of each raster stage for every tile of a pass: arrays of shape (tiles,)."""
    t = {k: v.astype(np.float64) for k, v in p.tiles.items()}
    tline = cfg["caches.texture.line_size"]
    tex_bytes = t["tex_cache_misses"] * tline
    flush = t["color_flush_bytes"] + t["depth_flush_bytes"]
    bus_bytes = t["pb_bytes_read"] + tex_bytes + (flush if _flush_overlaps(cfg) else 0.0)
    z_rate = min(cfg["stages.early_z.max_rate"],
                 cfg["stages.early_z.in_flight"] / cfg["stages.early_z.test_latency"])
    lanes = cfg["processors.shader.lanes"]
    return {
        "tile_fetch": memory_cycles(t["pb_bytes_read"], cfg["queues.tile.entries"], cfg,
                                    cfg["caches.tile.line_size"]),
        "rasterizer": t["fragments_rasterized"] * cfg["stages.rasterizer.attributes_per_fragment"]
        / cfg["stages.rasterizer.rate"],
        "early_z": (t["early_z_tested"] + t["late_z_tested"]) / lanes / z_rate,
        "fragment_shading": (t["fs_quad_alu"] + t["fs_quad_tex"] + t["fs_quad_flow"])
        / (cfg["processors.fragment.count"] * cfg["processors.shader.issue_rate"]),
        "texture_filter": t["texels_fetched"] / (cfg["caches.texture.count"]
                                                 * cfg["stages.texture.texels_per_cycle"]),
        "texture_memory": memory_cycles(tex_bytes, cfg["queues.fragment.entries"] / lanes, cfg,
                                        tline),
        "blend": t["color_writes"] / cfg["stages.blend.rate"],
        "bus": bus_bytes / cfg["memory.bandwidth"],
    }


def tile_cycles(p: PassCounters, cfg: Config) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Total cycles of every tile of a pass (shape (tiles,)) and the per-stage arrays."""
    stages = tile_stage_cycles(p, cfg)
    bottleneck = np.max(np.stack(list(stages.values())), axis=0)
    fill = np.where(p.tiles["prims_binned"] > 0,
                    cfg["memory.latency_max"] + len(stages), 0.0)
    flush = 0.0 if _flush_overlaps(cfg) else (
        (p.tiles["color_flush_bytes"] + p.tiles["depth_flush_bytes"]).astype(np.float64)
        / cfg["memory.bandwidth"])
    return bottleneck + fill + flush, stages


def traffic_bytes(frame: FrameCounters, cfg: Config) -> dict[str, float]:
    """Main-memory bytes by source (no L2 hits are modelled: every miss goes to DRAM)."""
    tot = lambda k: float(sum(int(p.tiles[k].sum()) for p in frame.passes))  # noqa: E731
    return {
        "vertices": float(frame.scalars.get("vertex_cache_misses", 0))
        * cfg["caches.vertex.line_size"],
        "indices": float(frame.scalars.get("index_bytes", 0)),
        "pb_writes": _pb_write_bytes(frame),
        "pb_reads": tot("pb_bytes_read"),
        "textures": tot("tex_cache_misses") * cfg["caches.texture.line_size"],
        "color_flush": tot("color_flush_bytes"),
        "depth_flush": tot("depth_flush_bytes"),
    }


def gpu_dynamic_energy(frame: FrameCounters, cfg: Config, ecfg: Config,
                       traffic: dict[str, float]) -> dict[str, float]:
    """Dynamic GPU energy (J) by unit: event counts x energy per event."""
    s = lambda k: float(frame.scalars.get(k, 0))  # noqa: E731
    tot = lambda k: float(sum(int(p.tiles[k].sum()) for p in frame.passes))  # noqa: E731
    e = lambda k: ecfg[k] * PJ  # noqa: E731
    lanes = cfg["processors.shader.lanes"]
    vs_lane = s("vs_alu") + s("vs_tex") + s("vs_flow")
    fs_lane = tot("fs_alu") + tot("fs_tex") + tot("fs_flow")
    fs_quad = tot("fs_quad_alu") + tot("fs_quad_tex") + tot("fs_quad_flow")
    pb_lines = (traffic["pb_writes"] + traffic["pb_reads"]) / cfg["caches.tile.line_size"]
    dram_lines = sum(traffic.values()) / cfg["caches.l2.line_size"]
    return {
        "vertex_processor": vs_lane * e("gpu.shader.lane_op")
        + vs_lane / lanes * e("gpu.shader.issue"),
        "fragment_processors": fs_lane * e("gpu.shader.lane_op") + fs_quad * e("gpu.shader.issue"),
        "vertex_cache": s("vertex_cache_accesses") * e("gpu.vertex_cache.access"),
        "texture_caches": tot("tex_cache_accesses") * e("gpu.texture_cache.access"),
        "texture_units": tot("texels_fetched") * e("gpu.texture_unit.texel"),
        "tile_cache": pb_lines * e("gpu.tile_cache.line"),
        "l2": dram_lines * e("gpu.l2.line"),
        "primitive_assembly": s("prims_assembled") * e("gpu.primitive_assembly.triangle"),
        "tiler": tot("prims_binned") * e("gpu.tiler.entry"),
        "rasterizer": tot("fragments_rasterized") * cfg["stages.rasterizer.attributes_per_fragment"]
        * e("gpu.rasterizer.attribute"),
        "early_z": (tot("depth_reads") + tot("depth_writes")) * e("gpu.early_z.access"),
        "color_buffer": (tot("color_writes") + tot("blend_ops")) * e("gpu.color_buffer.access"),
        "blend": tot("blend_ops") * e("gpu.blend.op"),
    }


def gpu_static_power(cfg: Config, ecfg: Config) -> dict[str, float]:
    """Leakage power (W) by unit."""
    kb = sum(cfg[f"caches.{c}.count"] * cfg[f"caches.{c}.size"]
             for c in ("vertex", "texture", "tile", "l2")) / 1024
    return {
        "vertex_processor": cfg["processors.vertex.count"] * ecfg["gpu.static.vertex_processor"]
        * MW,
        "fragment_processors": cfg["processors.fragment.count"]
        * ecfg["gpu.static.fragment_processor"] * MW,
        "fixed_function": ecfg["gpu.static.fixed_function"] * MW,
        "caches": kb * ecfg["gpu.static.sram"] * MW,
    }


@dataclass
class FrameEstimate:
    frame: int
    geometry_cycles: float
    raster_cycles: float
    seconds: float
    geometry_stages: dict[str, float]
    raster_stages: dict[str, float]  # summed over tiles (for the bottleneck breakdown)
    traffic: dict[str, float]
    gpu_dynamic: dict[str, float]
    gpu_static: dict[str, float]
    memory: dict[str, float]
    extra: dict = field(default_factory=dict)

    @property
    def cycles(self) -> float:
        return self.geometry_cycles + self.raster_cycles

    @property
    def gpu_energy(self) -> float:
        return sum(self.gpu_dynamic.values()) + sum(self.gpu_static.values())

    @property
    def memory_energy(self) -> float:
        return sum(self.memory.values())

    @property
    def energy(self) -> float:
        return self.gpu_energy + self.memory_energy

    @property
    def traffic_total(self) -> float:
        return sum(self.traffic.values())

    def to_dict(self) -> dict:
        return {
            "frame": self.frame,
            "cycles": {"geometry": self.geometry_cycles, "raster": self.raster_cycles,
                       "total": self.cycles},
            "seconds": self.seconds,
            "geometry_stage_cycles": self.geometry_stages,
            "raster_stage_cycles_summed_over_tiles": self.raster_stages,
            "energy_j": {"total": self.energy, "gpu": self.gpu_energy,
                         "memory": self.memory_energy,
                         "gpu_dynamic": self.gpu_dynamic, "gpu_static": self.gpu_static,
                         "memory_parts": self.memory},
            "traffic_bytes": {**self.traffic, "total": self.traffic_total},
        }


def estimate_frame(frame: FrameCounters, cfg: Config, ecfg: Config) -> FrameEstimate:
    geometry, gstages = geometry_cycles(frame, cfg)
    raster = 0.0
    rstages = dict.fromkeys(RASTER_STAGES, 0.0)
    for p in frame.passes:
        cycles, stages = tile_cycles(p, cfg)
        raster += float(cycles.sum())
        for k, v in stages.items():
            rstages[k] += float(v.sum())
    seconds = (geometry + raster) / cfg["tech.clock"]
    traffic = traffic_bytes(frame, cfg)
    total_bytes = sum(traffic.values())
    static = {k: w * seconds for k, w in gpu_static_power(cfg, ecfg).items()}
    memory = {
        "per_byte": total_bytes * ecfg["memory.per_byte"] * PJ,
        "per_access": total_bytes / ecfg["memory.access_size"] * ecfg["memory.per_access"] * PJ,
        "background": ecfg["memory.background"] * MW * seconds,
    }
    return FrameEstimate(frame.frame, geometry, raster, seconds, gstages, rstages, traffic,
                         gpu_dynamic_energy(frame, cfg, ecfg, traffic), static, memory)
